//! The agent: a ReAct tool-calling loop over a [`Provider`].
//!
//! One message in, one reply out. Each turn: memory recall → system prompt →
//! model call with tool specs → each tool call checked by the policy (and
//! confirmed where needed), run, and fed back → repeat until the model
//! answers or `max_iterations` model calls are spent. The turn is built
//! aside and joins the history only when it completes, so a cancelled or
//! failed turn leaves the history as it was.

mod again;
mod answer;
mod approach;
pub mod assists;
pub mod attach;
mod budget;
mod capped;
mod code_check;
mod comparison;
mod count_only;
mod count_word;
mod counted;
mod difference;
mod dispatch;
mod edit_check;
pub mod events;
mod evidence;
mod false_comparison;
mod fields;
mod git_call;
mod git_log;
mod grounding;
mod guard;
mod history;
mod holds;
mod hygiene;
mod items;
mod looked;
mod named;
mod outcome;
mod payload;
pub mod prompt;
mod python;
mod questions;
mod quoted;
mod read_value;
mod record;
mod records;
mod reply;
mod select;
mod setup;
mod side;
mod since_last;
mod state_value;
mod threshold;
mod turn;
mod unchanged;
mod unit_limit;
mod value_stated;
mod whole_word;
mod window;
mod write_check;
mod zero_count;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use futures::future::BoxFuture;
use tokio::sync::mpsc::UnboundedSender;

use crate::config::routine_file::FirstCall;
use crate::config::{Language, ToolCallMode};
use crate::llm::{LlmError, Message, Provider, ToolSpec};
use crate::memory::Memory;
use crate::policy::{Grants, Policy, Redactor};
use crate::tools::{self, AgentFacts, Registry, Shell, Tool, ToolContext};

pub use attach::{AttachError, Attachment};
pub use budget::TooLarge;
pub use code_check::{SilenceTask, Verdict};
pub use events::{AgentEvent, CallRecord, EventSink, RunEvent, RunGuard, Standing, ToolStatus, TurnStats};
pub use guard::StoreGuard;
pub use hygiene::BadReply;
pub use outcome::{TASK_FAILED, Unfinished};
pub use prompt::{LoadedSkill, RoutineContext, SkillsPrompt};
pub use record::StoreRecorder;
pub use reply::{ReplyCheck, Review, SilentToken, review_prompt};
pub use setup::{AgentSetup, SetupError, shell_settings};

/// A person's answer to "run this?".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirmation {
    /// `y`: this once.
    Yes,
    /// `N`: refuse.
    No,
    /// `a`: this approval key for the rest of the session.
    Always,
}

/// What the confirm function is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfirmRequest {
    pub tool: String,
    pub summary: String,
    pub approval_key: String,
    pub arguments: String,
}

pub type ConfirmFn = Arc<dyn Fn(ConfirmRequest) -> BoxFuture<'static, Confirmation> + Send + Sync>;
pub type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Llm(#[from] LlmError),
    #[error("tool {tool} failed and the turn cannot go on: {message}")]
    Fatal { tool: String, message: String },
    /// The final reply was not an answer (empty, a tool call written as text), also after the
    /// model was asked once more.
    #[error("the model gave no usable final answer: {}, also when asked once more", .0.describe())]
    NoAnswer(BadReply),
    /// Another process has the run now; this one takes no step more.
    #[error("{0}")]
    Lost(String),
    /// A request does not fit the model's context window (`budget.rs`).
    #[error(transparent)]
    Context(#[from] TooLarge),
    /// A routine turn ended without an answer to deliver (`outcome.rs`).
    #[error(transparent)]
    Unfinished(#[from] Unfinished),
}

/// Retries of a read-only tool call after a transient failure, unless a routine sets
/// `agent.tool_retries`.
pub const DEFAULT_TOOL_RETRIES: u32 = 2;

/// Settings of one agent.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    pub model: String,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
    /// `provider.context_window`; `None`: what the server reports, else the default
    /// (`budget.rs`).
    pub context_window: Option<u32>,
    pub max_iterations: u32,
    pub history_limit: usize,
    pub tool_mode: ToolCallMode,
    pub language: Language,
    pub timezone: Tz,
    /// Cap of one tool result, in characters.
    pub max_result_chars: usize,
    /// Recalled memories put into the prompt.
    pub recall_limit: usize,
    /// Store a summary of each turn in memory.
    pub remember_turns: bool,
    /// Timeout and environment of the shell tool.
    pub shell: crate::tools::ShellSettings,
    /// Whether the first model call of a turn must call a tool (`agent.first_call`; routine
    /// runs with tools default to [`FirstCall::Tool`]).
    pub first_call: FirstCall,
    /// Retries of a read-only tool call that failed for a passing reason.
    pub tool_retries: u32,
    /// The wait before the first such retry, doubled for each next one.
    pub tool_retry_backoff: Duration,
    /// Which assists step in (`agent.assist`, `agent.assist_off`).
    pub assists: assists::Assists,
}

impl AgentOptions {
    pub fn new(model: impl Into<String>) -> Self {
        AgentOptions {
            model: model.into(),
            temperature: None,
            max_tokens: None,
            context_window: None,
            max_iterations: 10,
            history_limit: 50,
            tool_mode: ToolCallMode::Native,
            language: Language::En,
            timezone: Tz::UTC,
            max_result_chars: crate::tools::MAX_RESULT_CHARS,
            recall_limit: 5,
            remember_turns: true,
            shell: crate::tools::ShellSettings::default(),
            first_call: FirstCall::Auto,
            tool_retries: DEFAULT_TOOL_RETRIES,
            tool_retry_backoff: Duration::from_millis(500),
            assists: assists::Assists::default(),
        }
    }
}

pub struct Agent {
    provider: Arc<dyn Provider>,
    tools: Registry,
    memory: Option<Memory>,
    policy: Arc<Policy>,
    opts: AgentOptions,
    history: Vec<Message>,
    routine: Option<RoutineContext>,
    grants: Grants,
    confirm: Option<ConfirmFn>,
    approvals: HashSet<String>,
    sink: Option<Arc<dyn EventSink>>,
    /// Asked before each model and tool call (`guard.rs`).
    guard: Option<Arc<dyn RunGuard>>,
    /// A routine turn whose prompt carries a webhook's data is first asked the answer from it
    /// (`payload.rs`).
    from_payload: bool,
    clock: Clock,
    last: TurnStats,
    /// The tool calls of the last completed turn.
    last_calls: Vec<CallRecord>,
    /// Specs of the tools the policy exposes, built once.
    specs: Arc<[ToolSpec]>,
    redactor: Arc<Redactor>,
    /// Tool status events of the non-streaming path (`routines run`).
    progress: Option<UnboundedSender<AgentEvent>>,
    /// The Skills section of the system prompt.
    skills: Option<Arc<SkillsPrompt>>,
    /// Folders outside the workspace that `file_read` may read (the skills' folders).
    read_roots: Arc<[PathBuf]>,
    /// Images for the next message (see `attach.rs`).
    images: Vec<Attachment>,
}

impl Agent {
    pub fn new(provider: Arc<dyn Provider>, tools: Registry, policy: Arc<Policy>, opts: AgentOptions) -> Self {
        let specs: Arc<[ToolSpec]> =
            tools.iter().filter(|t| policy.exposes(t.effect())).map(|t| t.spec()).collect::<Vec<_>>().into();
        Agent {
            specs,
            redactor: Arc::new(Redactor::default()),
            progress: None,
            provider,
            tools,
            memory: None,
            policy,
            opts,
            history: Vec::new(),
            routine: None,
            grants: Grants::default(),
            confirm: None,
            approvals: HashSet::new(),
            sink: None,
            guard: None,
            from_payload: false,
            clock: Arc::new(Utc::now),
            last: TurnStats::default(),
            last_calls: Vec::new(),
            skills: None,
            read_roots: Arc::new([]),
            images: Vec::new(),
        }
    }

    pub fn set_memory(&mut self, memory: Option<Memory>) {
        self.memory = memory;
    }

    /// The Skills section of the system prompt: the skills the `skill` tool can load, and the
    /// bodies loaded into the prompt (a routine's `skills:`). Empty: no section.
    pub fn set_skills(&mut self, skills: SkillsPrompt) {
        self.skills = (!skills.is_empty()).then(|| Arc::new(skills));
    }

    /// Folders outside the workspace that `file_read` may read inside (the skills' folders).
    pub fn set_read_roots(&mut self, roots: Vec<PathBuf>) {
        self.read_roots = roots.into();
    }

    /// Puts the agent in routine mode: the system prompt gains the Routine
    /// execution section, and approval comes only from the routine's grants.
    /// The agent, storing no summary of its turns in memory (it still
    /// recalls and may store through its tools).
    pub fn without_turn_memory(mut self) -> Self {
        self.opts.remember_turns = false;
        self
    }

    pub fn set_routine_name(&mut self, name: &str) {
        let silent_token = self.routine.as_ref().and_then(|r| r.silent_token.clone());
        self.routine = Some(RoutineContext { name: name.to_string(), silent_token, approach: Vec::new() });
    }

    /// The silent token of the routine (a reply equal to it delivers nothing).
    pub fn set_silent_token(&mut self, token: Option<String>) {
        if let Some(r) = &mut self.routine {
            r.silent_token = token;
        }
    }

    /// Whether the first model call of a turn must call a tool (`agent.first_call`).
    pub fn set_first_call(&mut self, rule: FirstCall) {
        self.opts.first_call = rule;
    }

    /// What an unattended routine approved in advance. The model is then offered only the tools
    /// a call to which could be allowed (`Policy::offers`: under `supervised`, no mutating tool
    /// the routine did not pre-approve, no `shell` without a command it may run), and the `shell`
    /// spec names those commands (see `tools::describe_shell`).
    pub fn set_grants(&mut self, grants: Grants) {
        let runnable = self.policy.runnable_commands(&grants);
        let offered = |s: &ToolSpec| {
            let by_command = s.name == <Shell as Tool>::NAME;
            self.tools.get(&s.name).is_none_or(|t| self.policy.offers(&s.name, t.effect(), by_command, &grants))
        };
        let specs: Vec<ToolSpec> = self
            .specs
            .iter()
            .filter(|s| offered(s))
            .cloned()
            .map(|mut s| {
                if s.name == <Shell as Tool>::NAME {
                    tools::describe_shell(&mut s, &runnable);
                }
                s
            })
            .collect();
        self.specs = specs.into();
        self.grants = grants;
    }

    /// Who answers `[y/N/a]`; without one, mutating tools that need approval
    /// are refused unless granted.
    pub fn set_confirm_fn(&mut self, confirm: Option<ConfirmFn>) {
        self.confirm = confirm;
    }

    /// Secret values to remove from tool results, run events and memory.
    pub fn set_redactor(&mut self, redactor: Redactor) {
        self.redactor = Arc::new(redactor);
    }

    /// Receives tool status events (not text) while `process_message` runs.
    pub fn set_progress(&mut self, progress: Option<UnboundedSender<AgentEvent>>) {
        self.progress = progress;
    }

    pub fn set_event_sink(&mut self, sink: Option<Arc<dyn EventSink>>) {
        self.sink = sink;
    }

    /// Asks the first request of a routine turn for the answer from the webhook data fenced in
    /// its prompt, where the task's own words need no tool (`payload.rs`). For a routine that
    /// lists no tools and runs no commands: the engine decides.
    pub fn set_answer_from_payload(&mut self, on: bool) {
        self.from_payload = on;
    }

    /// Asked before every model call and tool call: a run another node took over stops.
    pub fn set_run_guard(&mut self, guard: Option<Arc<dyn RunGuard>>) {
        self.guard = guard;
    }

    pub fn set_clock(&mut self, clock: Clock) {
        self.clock = clock;
    }

    /// Replaces the history (a persistent session); it is repaired and
    /// trimmed to `history_limit`.
    pub fn set_history(&mut self, mut history: Vec<Message>) {
        history::repair(&mut history);
        history::trim(&mut history, self.opts.history_limit);
        self.history = history;
    }

    pub fn history(&self) -> &[Message] {
        &self.history
    }

    pub fn options(&self) -> &AgentOptions {
        &self.opts
    }

    /// Totals of the last completed turn.
    pub fn last_turn(&self) -> TurnStats {
        self.last
    }

    /// The tool calls of the last completed turn, in order, with how each was answered.
    pub fn last_calls(&self) -> &[CallRecord] {
        &self.last_calls
    }

    /// Tools the model is shown under the current policy.
    pub fn tool_specs(&self) -> Arc<[ToolSpec]> {
        self.specs.clone()
    }

    /// The system prompt the next message would get (for `--dry-run`).
    pub fn system_prompt(&self, message: &str) -> String {
        let specs = self.tool_specs();
        let recalled = self.recall(message);
        self.build_prompt(&specs, &recalled, message)
    }

    /// Runs one message to its final reply (the unattended path).
    pub async fn process_message(&mut self, message: &str) -> Result<String, AgentError> {
        let progress = self.progress.clone();
        if self.opts.assists.off() {
            return self.run_plain_turn(message, None, progress.as_ref()).await;
        }
        self.run_turn(message, None, progress.as_ref()).await
    }

    /// Runs one message, sending text deltas and tool status events to `tx`
    /// as they happen (the chat path). Returns the final reply too.
    pub async fn process_message_stream(
        &mut self,
        message: &str,
        tx: UnboundedSender<AgentEvent>,
    ) -> Result<String, AgentError> {
        if self.opts.assists.off() {
            return self.run_plain_turn(message, Some(&tx), Some(&tx)).await;
        }
        self.run_turn(message, Some(&tx), Some(&tx)).await
    }

    fn tool_context(&self) -> ToolContext {
        ToolContext {
            workspace: self.policy.workspace().to_path_buf(),
            policy: self.policy.clone(),
            memory: self.memory.clone(),
            language: self.opts.language,
            redactor: self.redactor.clone(),
            shell: self.opts.shell.clone(),
            read_roots: self.read_roots.clone(),
            facts: AgentFacts {
                model: self.opts.model.clone(),
                autonomy: Some(self.policy.autonomy),
                routine: self.routine.as_ref().map(|r| r.name.clone()),
                tools: self.specs.iter().map(|t| t.name.clone()).collect(),
                timezone: self.opts.timezone.name().to_string(),
            },
        }
    }

    fn recall(&self, message: &str) -> Vec<crate::memory::MemoryEntry> {
        let Some(m) = &self.memory else { return Vec::new() };
        // A routine sends the same prompt every run, so summaries of its
        // earlier turns would always match, and small models copy them
        // instead of doing the task. Routines get stored facts (and their
        // approach memory); chat gets conversation summaries too.
        let routine_mode = self.routine.is_some();
        let limit = if routine_mode { self.opts.recall_limit * 4 } else { self.opts.recall_limit };
        match m.recall(message, limit) {
            Ok(found) if routine_mode => found
                .into_iter()
                .filter(|e| e.category != crate::memory::CONVERSATION && !e.key.starts_with("routine:"))
                .take(self.opts.recall_limit)
                .collect(),
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(error = %e, "Memory recall failed; going on without it.");
                Vec::new()
            }
        }
    }

    fn build_prompt(&self, specs: &[ToolSpec], recalled: &[crate::memory::MemoryEntry], message: &str) -> String {
        let workspace = self.policy.workspace();
        let identity = identity_files(workspace);
        let mut routine = self.routine.clone();
        if let Some(r) = routine.as_mut() {
            if let Some(m) = &self.memory {
                // Only names of the tools offered now, whatever the entry holds (`approach.rs`).
                let offered: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
                let stored = m.get(&approach_key(&r.name)).ok().flatten();
                r.approach = stored.map(|e| approach::offered_steps(&e.content, &offered)).unwrap_or_default();
            }
            // The silent rule is stated only for tasks that mention the
            // token: small models otherwise answer with it instead of
            // doing the task. A reply equal to it is silent either way.
            if r.silent_token.as_deref().is_some_and(|t| !message.contains(t)) {
                r.silent_token = None;
            }
        }
        prompt::system_prompt(&prompt::PromptInput {
            language: self.opts.language,
            autonomy: self.policy.autonomy,
            tools: specs,
            tool_mode: self.opts.tool_mode,
            recalled,
            workspace,
            now: (self.clock)().with_timezone(&self.opts.timezone),
            identity_files: &identity,
            routine: routine.as_ref(),
            skills: self.skills.as_deref(),
        })
    }
}

/// Memory key of a routine's last successful approach.
pub fn approach_key(routine: &str) -> String {
    format!("routine:{routine}:approach")
}

/// Largest identity file read into the prompt.
const MAX_IDENTITY_BYTES: u64 = 64 * 1024;

/// USER.md, SOUL.md and AGENT.md from the workspace, where present. Each is read only inside
/// the workspace, symlinks resolved, as a regular file: one that a checkout made a link to
/// `/proc/self/environ` or any outside file is left out with a warning.
fn identity_files(workspace: &std::path::Path) -> Vec<(String, String)> {
    let Ok(root) = workspace.canonicalize() else { return Vec::new() };
    ["USER.md", "SOUL.md", "AGENT.md"]
        .iter()
        .filter_map(|name| {
            let path: PathBuf = root.join(name);
            let bytes = match crate::skills::read::read_inside(&root, &path, MAX_IDENTITY_BYTES) {
                Ok(bytes) => bytes,
                Err(crate::skills::read::ReadError::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    return None;
                }
                Err(e) => {
                    tracing::warn!(file = name, error = %e, "Identity file left out of the prompt.");
                    return None;
                }
            };
            let text = String::from_utf8_lossy(&bytes).into_owned();
            (!text.trim().is_empty()).then(|| ((*name).to_string(), text))
        })
        .collect()
}
