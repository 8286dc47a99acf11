//! A routine file as written (SPEC §4): the serde types, strict
//! (`deny_unknown_fields`), each default next to its field.
//!
//! They live with the config because `routines.yaml` may hold routines
//! inline (`routines:`), so the config file's schema includes them and
//! one pass over it reports every problem at once. `crate::routine` checks
//! them and resolves them into the routines the engine runs (and
//! re-exports these types).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::{Autonomy, DeliveryTarget, Duration};

/// A routine file as written.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RoutineFile {
    /// `[a-z0-9][a-z0-9_-]*`; default: the file stem.
    pub name: Option<String>,
    pub description: Option<String>,
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Triggers; `manual` is always implied.
    #[serde(default, rename = "on")]
    pub triggers: Vec<TriggerSpec>,
    /// The prompt, a minijinja template.
    pub prompt: Option<String>,
    /// A prompt template file in `templates_dir`, instead of `prompt`.
    pub prompt_template: Option<String>,
    #[serde(default)]
    pub vars: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    pub agent: AgentOverrides,
    /// Skills (SPEC §10) whose SKILL.md bodies go into this routine's system prompt.
    #[serde(default)]
    pub skills: Vec<String>,
    /// Images sent with the prompt: globs relative to the workspace, or templates such as
    /// `{{ trigger.path }}` (png, jpeg, webp, gif; 5 MB each, 8 per run). Needs `provider.vision`.
    #[serde(default)]
    pub attach: Vec<String>,
    /// `agent`: written by the `schedule` tool, which may change or remove it; a file without
    /// it is the user's and the tool leaves it alone.
    pub created_by: Option<CreatedBy>,
    /// Bound of the whole run, retries included.
    #[serde(default = "default_timeout")]
    pub timeout: Duration,
    #[serde(default)]
    pub overlap: Overlap,
    #[serde(default)]
    pub catch_up: CatchUp,
    #[serde(default = "default_catch_up_window")]
    pub catch_up_window: Duration,
    #[serde(default = "zero")]
    pub jitter: Duration,
    #[serde(default)]
    pub retry: RetrySpec,
    /// A final reply equal to it delivers nothing (status `silent`).
    #[serde(default = "default_silent_token")]
    pub silent_token: String,
    #[serde(default)]
    pub deliver: Vec<DeliveryTarget>,
    #[serde(default)]
    pub on_failure: OnFailure,
}

/// What a routine file with only the given keys means: the same defaults
/// serde fills in, for routines built in code (the heartbeat, greetings).
impl Default for RoutineFile {
    fn default() -> Self {
        RoutineFile {
            name: None,
            description: None,
            enabled: yes(),
            triggers: Vec::new(),
            prompt: None,
            prompt_template: None,
            vars: BTreeMap::new(),
            agent: AgentOverrides::default(),
            skills: Vec::new(),
            attach: Vec::new(),
            created_by: None,
            timeout: default_timeout(),
            overlap: Overlap::default(),
            catch_up: CatchUp::default(),
            catch_up_window: default_catch_up_window(),
            jitter: zero(),
            retry: RetrySpec::default(),
            silent_token: default_silent_token(),
            deliver: Vec::new(),
            on_failure: OnFailure::default(),
        }
    }
}

fn yes() -> bool {
    true
}
fn default_timeout() -> Duration {
    Duration::from_secs(600)
}
fn default_catch_up_window() -> Duration {
    Duration::from_secs(86_400)
}
fn zero() -> Duration {
    Duration::from_secs(0)
}
fn default_silent_token() -> String {
    "NO_REPLY".into()
}

/// Who wrote a routine file, when it was not the user by hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CreatedBy {
    /// The agent, through the `schedule` tool.
    Agent,
}

/// One trigger: exactly one of `cron`, `every`, `at`, `file`, `webhook`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TriggerSpec {
    /// 5 or 6 fields (seconds optional), `L W #`, `@daily`...
    pub cron: Option<String>,
    /// Zone of a `cron` trigger; default: the engine's `timezone`.
    pub timezone: Option<String>,
    pub every: Option<Duration>,
    /// An RFC 3339 time with offset, e.g. 2026-12-01T09:00:00+01:00.
    pub at: Option<String>,
    pub file: Option<FileTrigger>,
    pub webhook: Option<WebhookTrigger>,
}

impl TriggerSpec {
    /// The kinds it sets (`cron`, `every`, `at`, `file`, `webhook`): exactly one when valid.
    pub fn kinds(&self) -> Vec<&'static str> {
        [
            self.cron.as_ref().map(|_| "cron"),
            self.every.as_ref().map(|_| "every"),
            self.at.as_ref().map(|_| "at"),
            self.file.as_ref().map(|_| "file"),
            self.webhook.as_ref().map(|_| "webhook"),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileTrigger {
    /// Globs relative to the workspace.
    pub paths: Vec<String>,
    #[serde(default = "default_file_events")]
    pub events: Vec<FileEvent>,
    #[serde(default = "default_debounce")]
    pub debounce: Duration,
    /// Look for changes this often instead of waiting for events from the
    /// file system (network and FUSE file systems that send none).
    pub poll: Option<Duration>,
}

fn default_file_events() -> Vec<FileEvent> {
    vec![FileEvent::Create, FileEvent::Modify]
}
fn default_debounce() -> Duration {
    Duration::from_secs(2)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileEvent {
    Create,
    Modify,
    Remove,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookTrigger {
    /// URL path under `server.listen`, e.g. /hooks/deploy.
    pub path: String,
    /// Variable holding the HMAC-SHA256 secret (`X-Signature-256: sha256=<hex>`).
    pub secret_env: Option<String>,
    /// Variable holding a bearer token (`Authorization: Bearer <token>`).
    pub token_env: Option<String>,
    /// `none` to accept unauthenticated requests on purpose.
    pub auth: Option<WebhookAuth>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WebhookAuth {
    None,
}

/// Overrides of the engine's agent and provider settings for one routine.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentOverrides {
    pub model: Option<String>,
    pub temperature: Option<f32>,
    pub max_iterations: Option<u32>,
    pub autonomy: Option<Autonomy>,
    /// The tools this routine's agent gets (and, unattended, the approval of them).
    pub tools: Option<Vec<String>>,
    /// Commands pre-approved for this unattended routine.
    #[serde(default)]
    pub allow_commands: Vec<String>,
    #[serde(default)]
    pub session: Session,
    /// Whether the first model call of a run must call a tool; default `tool` when the routine
    /// has tools.
    pub first_call: Option<FirstCall>,
    /// Retries of a read-only tool call (file_read, file_list, http_request GET, memory_recall)
    /// that failed for a reason that may pass (a timeout, a 5xx, a reset connection); default 2.
    pub tool_retries: Option<u32>,
    /// How far the engine assists the model in this routine's runs (SPEC §13); default the
    /// engine's `agent.assist`.
    pub assist: Option<crate::config::AssistLevel>,
    /// Assists turned off by name in this routine's runs, beside the engine's `agent.assist_off`.
    #[serde(default)]
    pub assist_off: Vec<String>,
    /// Whether a run fired by a webhook or a file event (whose prompt may carry what an outsider
    /// wrote) gets the `schedule` tool; default no: untrusted input creates no lasting routine.
    #[serde(default)]
    pub schedule_from_triggers: bool,
}

/// What the first model call of a routine run may answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FirstCall {
    /// It must call a tool (`tool_choice: required`, or an instruction where the provider
    /// refuses that), so the answer rests on what a tool returned.
    #[default]
    Tool,
    /// The model decides.
    Auto,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Session {
    /// A fresh history each run.
    #[default]
    Isolated,
    /// The history carries over from run to run.
    Persistent,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Overlap {
    #[default]
    Skip,
    Queue,
    Replace,
    Allow,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CatchUp {
    #[default]
    Latest,
    All,
    None,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetrySpec {
    /// Attempts in all, the first included.
    #[serde(default = "default_attempts")]
    pub attempts: u32,
    #[serde(default = "default_backoff")]
    pub backoff: Duration,
    #[serde(default = "default_max_backoff")]
    pub max_backoff: Duration,
}

impl Default for RetrySpec {
    fn default() -> Self {
        RetrySpec { attempts: default_attempts(), backoff: default_backoff(), max_backoff: default_max_backoff() }
    }
}

fn default_attempts() -> u32 {
    3
}
fn default_backoff() -> Duration {
    Duration::from_secs(10)
}
fn default_max_backoff() -> Duration {
    Duration::from_secs(300)
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OnFailure {
    #[serde(default)]
    pub deliver: Vec<DeliveryTarget>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_what_an_empty_routine_file_means() {
        let empty: RoutineFile = serde_json::from_value(serde_json::json!({})).unwrap();
        assert_eq!(format!("{:?}", RoutineFile::default()), format!("{empty:?}"));
    }
}
