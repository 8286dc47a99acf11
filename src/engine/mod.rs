//! The engine: one routine run end to end (SPEC §6).
//!
//! queued → running → render the prompt → build the agent with the
//! routine's overrides in routine mode → `process_message`, retried on
//! provider failures and bounded as a whole by `timeout` → silent token →
//! deliveries, each recorded with its own status → on_failure deliveries →
//! final status, output, tokens and iterations recorded.

mod context;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use std::time::Instant;
use tokio_util::sync::CancellationToken;

use chrono::Utc;
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedSender;

use crate::agent::{Agent, AgentError, AgentEvent, AgentOptions, StoreRecorder, approach_key};
use crate::config::{Config, DeliveryTarget, Env, ProcessEnv};
use crate::delivery::file::{self, FilePayload};
use crate::delivery::mail::{self, MailPayload, Mailer, SmtpOptions};
use crate::delivery::{Deliverer, Payload};
use crate::llm::{Message, Provider};
use crate::memory::Memory;
use crate::policy::{Grants, Policy, Redactor};
use crate::routine::template::Templates;
use crate::routine::{Overlap, Routine, Session, TriggerContext};
use crate::store::{
    DeliveryRow, DeliveryStatus, NewDelivery, NewRun, RunDetail, RunKind, RunOutcome, RunStatus, Store, StoreError,
};
use crate::tools::{Registry, ShellSettings, safe_env};

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("routine `{0}` is disabled; set `enabled: true` to run it")]
    Disabled(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Setup(String),
}

/// How one run ended.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RunReport {
    pub run_id: i64,
    pub routine: String,
    pub status: RunStatus,
    pub output: Option<String>,
    pub error: Option<String>,
    pub deliveries: Vec<DeliveryReport>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DeliveryReport {
    pub target: String,
    pub status: DeliveryStatus,
    pub error: Option<String>,
}

/// Options of one manual run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// `--var k=v`, added to (and overriding) the routine's `vars`.
    pub vars: BTreeMap<String, String>,
    pub no_deliver: bool,
    /// What the run is recorded as (default: a routine run). A heartbeat
    /// is silent when its reply is the ok token, loosely matched
    /// ([`crate::heartbeat::is_ok`]).
    pub kind: Option<RunKind>,
    /// A heartbeat's checklist: an all-is-well reply after checks is
    /// reviewed against it ([`crate::heartbeat::review_prompt`]).
    pub checklist: Option<String>,
}

/// How a heartbeat's all-is-well is checked.
#[derive(Debug, Clone, Copy)]
struct Verify<'a> {
    /// The ok token.
    token: &'a str,
    /// The checklist, for the review of an ok after checks.
    checklist: Option<&'a str>,
}

/// One delivery attempted again by [`Engine::retry_deliveries`].
#[derive(Debug, Clone)]
pub struct Retried {
    pub row: DeliveryRow,
    pub status: DeliveryStatus,
    pub error: Option<String>,
}

/// The mail transport of `config`: SMTP when `mail.smtp` is set (and
/// `transport` is not `outbox`), else `.eml` files in `data_dir/outbox`.
fn deliverer(config: &Config, env: &dyn Env) -> Result<Deliverer, EngineError> {
    let outbox = config.data_dir.join("outbox");
    let smtp = config
        .mail
        .as_ref()
        .filter(|m| m.transport != Some(crate::config::MailTransport::Outbox))
        .and_then(|m| m.smtp.as_ref());
    let mailer =
        match smtp {
            Some(s) => Mailer::smtp(SmtpOptions {
                host: s.host.clone(),
                port: s.port,
                security: match s.security {
                    crate::config::SmtpSecurity::Starttls => mail::Security::Starttls,
                    crate::config::SmtpSecurity::Tls => mail::Security::Tls,
                    crate::config::SmtpSecurity::None => mail::Security::None,
                },
                username: s.username_env.as_deref().and_then(|v| env.var(v)),
                password: s.password_env.as_deref().and_then(|v| env.var(v)),
                timeout: s.timeout.get(),
                extra_root_pem: match s.ca_file.as_ref().map(|f| match config.file.as_ref().and_then(|c| c.parent()) {
                    Some(dir) if f.is_relative() => dir.join(f),
                    _ => f.clone(),
                }) {
                    Some(f) => Some(std::fs::read(&f).map_err(|e| {
                        EngineError::Setup(format!("mail.smtp.ca_file: cannot read {}: {e}", f.display()))
                    })?),
                    None => None,
                },
            })
            .map_err(|e| EngineError::Setup(format!("mail.smtp: {e}")))?,
            None => Mailer::outbox(outbox.clone()),
        };
    Ok(Deliverer { mailer, outbox })
}

/// Stops a run early: the daemon's shutdown after its grace period, or a
/// newer fire with `overlap: replace`. Cheap to clone; clones share the
/// cancellation.
#[derive(Debug, Clone, Default)]
pub struct Cancel {
    token: CancellationToken,
    why: Arc<Mutex<Option<(&'static str, String)>>>,
}

impl Cancel {
    /// Cancels with a [`crate::store::reason`] and a message for the run's error.
    pub fn cancel(&self, reason: &'static str, message: impl Into<String>) {
        if let Ok(mut why) = self.why.lock() {
            why.get_or_insert((reason, message.into()));
        }
        self.token.cancel();
    }

    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    pub async fn cancelled(&self) {
        self.token.cancelled().await
    }

    fn reason(&self) -> (&'static str, String) {
        self.why.lock().ok().and_then(|w| w.clone()).unwrap_or(("shutdown", "the run was cancelled".into()))
    }
}

/// Everything runs share.
pub struct Engine {
    pub config: Config,
    pub store: Store,
    pub memory: Memory,
    pub provider: Arc<dyn Provider>,
    pub templates: Templates,
    pub redactor: Redactor,
    pub shell: ShellSettings,
    /// Model used when a routine sets none.
    pub model: String,
    pub deliverer: Deliverer,
}

impl Engine {
    /// The engine of `config`: opens the database (marking runs whose process
    /// died as `interrupted`), the memory, the templates, the secret redactor
    /// and the shell settings. `model` is used when a routine names none.
    pub fn open(config: Config, provider: Arc<dyn Provider>, model: impl Into<String>) -> Result<Engine, EngineError> {
        let store = open_store(&config)?;
        let memory = Memory::new(store.clone());
        let redactor = Redactor::new(config.secret_values(&ProcessEnv));
        let templates = Templates::new(&config.templates_dir);
        let shell = shell_settings(&config, &ProcessEnv);
        let deliverer = deliverer(&config, &ProcessEnv)?;
        Ok(Engine { config, store, memory, provider, templates, redactor, shell, model: model.into(), deliverer })
    }

    /// The template context of a run (delivery templates add `output` and `status`).
    pub fn context(
        &self,
        routine: &Routine,
        trigger: &TriggerContext,
        run_id: i64,
        attempt: u32,
        vars: &BTreeMap<String, String>,
    ) -> Value {
        context::build(routine, trigger, run_id, attempt, vars, Utc::now())
    }

    pub fn render_prompt(&self, routine: &Routine, ctx: &Value) -> Result<String, String> {
        let r = match (&routine.spec.prompt, &routine.spec.prompt_template) {
            (Some(p), _) => self.templates.render_str("prompt", p, ctx),
            (None, Some(f)) => self.templates.render_file(f, ctx),
            (None, None) => return Err(format!("routine `{}` has no prompt", routine.name)),
        };
        r.map_err(|e| e.to_string())
    }

    /// The agent of a routine: overrides applied, routine mode, grants.
    pub fn agent_for(&self, routine: &Routine) -> Result<Agent, EngineError> {
        let c = &self.config;
        let o = &routine.spec.agent;
        let mut opts = AgentOptions::new(o.model.clone().unwrap_or_else(|| self.model.clone()));
        opts.temperature = Some(o.temperature.unwrap_or(c.provider.temperature));
        opts.max_tokens = c.provider.max_tokens;
        opts.max_iterations = o.max_iterations.unwrap_or(c.agent.max_iterations);
        opts.history_limit = c.agent.history_limit;
        opts.tool_mode = c.provider.tool_calls;
        opts.language = c.language;
        opts.timezone = routine.zone;
        opts.shell = self.shell.clone();
        let autonomy = o.autonomy.unwrap_or(c.agent.autonomy);
        let mut policy =
            Policy::new(autonomy, &c.workspace, &c.forbidden_paths).map_err(|e| EngineError::Setup(e.to_string()))?;
        policy.allowed_commands = c.security.allowed_commands.clone();
        policy.allowed_hosts = c.security.allowed_hosts.clone();
        let mut tools = Registry::builtin();
        if let Some(list) = &o.tools {
            tools.retain(list);
        }
        let mut agent = Agent::new(self.provider.clone(), tools, Arc::new(policy), opts);
        agent.set_memory(Some(self.memory.clone()));
        agent.set_redactor(self.redactor.clone());
        agent.set_routine_name(&routine.name);
        agent.set_silent_token(Some(routine.spec.silent_token.clone()));
        agent.set_grants(Grants { tools: o.tools.clone().unwrap_or_default(), commands: o.allow_commands.clone() });
        Ok(agent)
    }

    /// Runs a routine once, end to end. `progress` receives tool status events.
    pub async fn run(
        &self,
        routine: &Routine,
        trigger: TriggerContext,
        opts: &RunOptions,
        progress: Option<UnboundedSender<AgentEvent>>,
    ) -> Result<RunReport, EngineError> {
        if !routine.spec.enabled {
            return Err(EngineError::Disabled(routine.name.clone()));
        }
        // Overlap with a run of this routine that is still active, in this
        // or another process (SPEC §5).
        let active = self.store.active_runs(&routine.name)?;
        if let Some((other, _)) = active.first() {
            match routine.spec.overlap {
                Overlap::Skip => {
                    let why = format!(
                        "run {other} of `{}` is still running (overlap: skip); this run was skipped",
                        routine.name
                    );
                    return self.skip(routine, &trigger, why);
                }
                Overlap::Queue if active.iter().any(|(_, s)| *s == RunStatus::Queued) => {
                    let why = format!(
                        "a run of `{}` is already waiting (overlap: queue keeps at most one); this run was skipped",
                        routine.name
                    );
                    return self.skip(routine, &trigger, why);
                }
                Overlap::Queue | Overlap::Replace | Overlap::Allow => {}
            }
        }
        let run_id = self.store.create_run(&NewRun {
            kind: opts.kind.unwrap_or(RunKind::Routine),
            routine: Some(routine.name.clone()),
            trigger: trigger.kind().into(),
            scheduled_for: trigger.scheduled_for(),
            status: RunStatus::Queued,
        })?;
        let detail = RunDetail {
            prompt: None,
            trigger_context: Some(trigger.to_stored()),
            attempt: 1,
            pid: Some(std::process::id()),
        };
        self.store.set_run_detail(run_id, &detail)?;
        if routine.spec.overlap == Overlap::Queue && !active.is_empty() {
            self.wait_for_earlier_runs(routine, run_id).await?;
        }
        self.execute(routine, run_id, trigger, 1, opts, progress, &Cancel::default()).await
    }

    /// Runs the queued run `run_id` of `routine` (attempt `attempt`): marks
    /// it running, renders, runs the agent, delivers and records. `cancel`
    /// stops it early; it is then recorded as `interrupted` with the reason
    /// given to [`Cancel::cancel`].
    #[allow(clippy::too_many_arguments)]
    pub async fn execute(
        &self,
        routine: &Routine,
        run_id: i64,
        trigger: TriggerContext,
        attempt: u32,
        opts: &RunOptions,
        progress: Option<UnboundedSender<AgentEvent>>,
        cancel: &Cancel,
    ) -> Result<RunReport, EngineError> {
        let mut detail = RunDetail {
            prompt: None,
            trigger_context: Some(trigger.to_stored()),
            attempt,
            pid: Some(std::process::id()),
        };
        self.store.start_run(run_id)?;
        let ctx = self.context(routine, &trigger, run_id, attempt, &opts.vars);

        let report = RunReport {
            run_id,
            routine: routine.name.clone(),
            status: RunStatus::Failed,
            output: None,
            error: None,
            deliveries: Vec::new(),
        };
        let mut outcome = RunOutcome {
            status: RunStatus::Failed,
            output: None,
            error: None,
            prompt_tokens: 0,
            completion_tokens: 0,
            iterations: 0,
            reason: None,
        };

        let prompt = match self.render_prompt(routine, &ctx) {
            Ok(p) => p,
            Err(e) => {
                outcome.error = Some(e);
                return self.finish(routine, &ctx, opts, report, outcome).await;
            }
        };
        detail.prompt = Some(self.redactor.redact(&prompt).into_owned());
        self.store.set_run_detail(run_id, &detail)?;

        let mut agent = match self.agent_for(routine) {
            // Beats and greetings repeat themselves: their turns would fill
            // memory, and recalled, teach a small model to answer the same
            // (the ok token without checking, yesterday's greeting).
            Ok(a) if matches!(opts.kind, Some(RunKind::Heartbeat | RunKind::Greeting)) => a.without_turn_memory(),
            Ok(a) => a,
            Err(e) => {
                outcome.error = Some(format!("cannot set up the agent: {e}"));
                return self.finish(routine, &ctx, opts, report, outcome).await;
            }
        };
        let recorder = Arc::new(StoreRecorder { store: self.store.clone(), run_id });
        agent.set_event_sink(Some(recorder));
        agent.set_progress(progress);
        if routine.spec.agent.session == Session::Persistent {
            if let Some(json) = self.store.session(&routine.name)? {
                if let Ok(history) = serde_json::from_str::<Vec<Message>>(&json) {
                    agent.set_history(history);
                }
            }
        }

        let deadline = Instant::now() + routine.spec.timeout.get();
        let verify_ok = (opts.kind == Some(RunKind::Heartbeat))
            .then(|| Verify { token: &routine.spec.silent_token, checklist: opts.checklist.as_deref() });
        let mut earlier = crate::agent::TurnStats::default();
        // Dropping the agent's future on timeout or cancellation kills the
        // process groups of its shell commands.
        let result = tokio::select! {
            r = tokio::time::timeout(
                routine.spec.timeout.get(),
                self.checked_attempts(routine, &mut agent, &prompt, run_id, &mut detail, deadline, verify_ok, &mut earlier),
            ) => Some(r),
            _ = cancel.cancelled() => None,
        };
        let t = agent.last_turn();
        outcome.prompt_tokens = t.prompt_tokens + earlier.prompt_tokens;
        outcome.completion_tokens = t.completion_tokens + earlier.completion_tokens;
        outcome.iterations = t.iterations + earlier.iterations;
        let Some(result) = result else {
            let (reason, why) = cancel.reason();
            outcome.status = RunStatus::Interrupted;
            outcome.reason = Some(reason);
            outcome.error = Some(why);
            return self.finish(routine, &ctx, opts, report, outcome).await;
        };
        match result {
            Err(_) => {
                outcome.status = RunStatus::TimedOut;
                outcome.error = Some(format!(
                    "the run did not finish within its timeout of {}; it was cancelled and its processes killed",
                    routine.spec.timeout
                ));
            }
            Ok(Err(e)) => outcome.error = Some(e.to_string()),
            Ok(Ok(reply)) => {
                let heartbeat = opts.kind == Some(RunKind::Heartbeat);
                let silent = if heartbeat {
                    crate::heartbeat::is_ok(&reply, &routine.spec.silent_token)
                } else {
                    reply.trim() == routine.spec.silent_token.trim()
                };
                outcome.status = if silent { RunStatus::Silent } else { RunStatus::Succeeded };
                outcome.output = Some(reply);
                if routine.spec.agent.session == Session::Persistent {
                    if let Ok(json) = serde_json::to_string(agent.history()) {
                        if let Err(e) = self.store.save_session(&routine.name, &json) {
                            tracing::warn!(routine = %routine.name, error = %e, "Could not save the session history.");
                        }
                    }
                }
                // Only a routine of the user's has an approach worth keeping.
                if !silent && matches!(opts.kind, None | Some(RunKind::Routine)) {
                    self.remember_approach(routine, run_id);
                }
            }
        }
        self.finish(routine, &ctx, opts, report, outcome).await
    }

    /// Records a run that did not start because of `overlap`.
    fn skip(&self, routine: &Routine, trigger: &TriggerContext, why: String) -> Result<RunReport, EngineError> {
        let run_id = self.store.create_run(&NewRun {
            kind: RunKind::Routine,
            routine: Some(routine.name.clone()),
            trigger: trigger.kind().into(),
            scheduled_for: trigger.scheduled_for(),
            status: RunStatus::Queued,
        })?;
        let outcome = RunOutcome {
            status: RunStatus::Skipped,
            output: None,
            error: Some(why.clone()),
            prompt_tokens: 0,
            completion_tokens: 0,
            iterations: 0,
            reason: Some(crate::store::reason::OVERLAP),
        };
        self.store.finish_run(run_id, &outcome)?;
        tracing::info!(routine = %routine.name, run_id, "{why}");
        Ok(RunReport {
            run_id,
            routine: routine.name.clone(),
            status: RunStatus::Skipped,
            output: None,
            error: Some(why),
            deliveries: Vec::new(),
        })
    }

    /// `overlap: queue`: waits until every earlier run of the routine has
    /// ended. Runs whose process died meanwhile are marked interrupted.
    async fn wait_for_earlier_runs(&self, routine: &Routine, run_id: i64) -> Result<(), EngineError> {
        loop {
            self.store.interrupt_orphans(&process_alive)?;
            let earlier = self.store.active_runs(&routine.name)?.into_iter().any(|(id, _)| id < run_id);
            if !earlier {
                return Ok(());
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }

    /// [`Engine::attempts`]; with `verify_ok` (a heartbeat), an "all is
    /// well" is checked: one that ran no tool at all is not believed, and
    /// the agent is asked once to do the checks (small models answer the
    /// token at once); one after checks is reviewed by a short model call
    /// that sees only the checklist and what the checks returned (small
    /// models answer the token even after reading an ERROR line). `earlier`
    /// receives the stats of the turns and calls before the last.
    #[allow(clippy::too_many_arguments)]
    async fn checked_attempts(
        &self,
        routine: &Routine,
        agent: &mut Agent,
        prompt: &str,
        run_id: i64,
        detail: &mut RunDetail,
        deadline: Instant,
        verify_ok: Option<Verify<'_>>,
        earlier: &mut crate::agent::TurnStats,
    ) -> Result<String, AgentError> {
        let mut reply = self.attempts(routine, agent, prompt, run_id, detail, deadline).await?;
        let Some(verify) = verify_ok else { return Ok(reply) };
        if !crate::heartbeat::is_ok(&reply, verify.token) {
            return Ok(reply);
        }
        if agent.last_turn().tool_calls == 0 && !agent.tool_specs().is_empty() {
            *earlier = agent.last_turn();
            let nudge = format!(
                "You answered {} without running any check. Do the first check now with a tool call, then the \
                 others, and then answer as asked.",
                verify.token
            );
            reply = self.attempts(routine, agent, &nudge, run_id, detail, deadline).await?;
        }
        if crate::heartbeat::is_ok(&reply, verify.token) {
            if let Some(checklist) = verify.checklist {
                if let Some(second) = self.review(agent, checklist, verify.token, run_id, earlier).await {
                    reply = second;
                }
            }
        }
        Ok(reply)
    }

    /// The review of an all-is-well beat (see [`Engine::checked_attempts`]):
    /// its reply, or `None` when there is nothing to review or the call
    /// failed (the beat's own answer stands). Recorded as a model call; its
    /// tokens are added to `earlier`.
    async fn review(
        &self,
        agent: &Agent,
        checklist: &str,
        token: &str,
        run_id: i64,
        earlier: &mut crate::agent::TurnStats,
    ) -> Option<String> {
        let prompt = crate::heartbeat::review_prompt(checklist, agent.history(), token)?;
        let request = crate::llm::ChatRequest {
            model: agent.options().model.clone(),
            messages: vec![
                crate::llm::Message::system("You review the results of checks against a checklist."),
                crate::llm::Message::user(prompt),
            ],
            tools: Arc::from(Vec::new()),
            temperature: Some(0.2),
            max_tokens: self.config.provider.max_tokens,
        };
        let started = Instant::now();
        let result = self.provider.chat(&request).await;
        let (status, detail, usage) = match &result {
            Ok(r) => ("ok", "review of what the checks returned".to_string(), r.usage),
            Err(e) => ("error", format!("review of what the checks returned: {e}"), Default::default()),
        };
        let recorded = self.store.record_event(
            run_id,
            &crate::store::NewEvent {
                kind: crate::store::EventKind::ModelCall,
                tool: None,
                status,
                arguments: None,
                detail: Some(&detail),
                prompt_tokens: Some(usage.prompt_tokens),
                completion_tokens: Some(usage.completion_tokens),
                duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            },
        );
        if let Err(e) = recorded {
            tracing::warn!(run_id, error = %e, "Could not record the heartbeat review.");
        }
        earlier.iterations += 1;
        earlier.prompt_tokens += usage.prompt_tokens;
        earlier.completion_tokens += usage.completion_tokens;
        match result {
            Ok(r) => r.content.map(|c| c.trim().to_string()).filter(|c| !c.is_empty()),
            Err(e) => {
                tracing::warn!(run_id, error = %e, "The heartbeat review failed; the beat's own answer stands.");
                None
            }
        }
    }

    /// `process_message`, retried on provider failures with backoff, within the deadline.
    async fn attempts(
        &self,
        routine: &Routine,
        agent: &mut Agent,
        prompt: &str,
        run_id: i64,
        detail: &mut RunDetail,
        deadline: Instant,
    ) -> Result<String, AgentError> {
        let retry = &routine.spec.retry;
        let mut attempt = 1;
        loop {
            match agent.process_message(prompt).await {
                Ok(reply) => return Ok(reply),
                Err(AgentError::Llm(e)) if e.is_retryable() && attempt < retry.attempts => {
                    let exp = retry.backoff.get().saturating_mul(1u32 << (attempt - 1).min(16));
                    let wait = e.retry_after().unwrap_or(exp).min(retry.max_backoff.get());
                    if Instant::now() + wait >= deadline {
                        return Err(AgentError::Llm(e));
                    }
                    tracing::warn!(routine = %routine.name, attempt, error = %e, wait_ms = wait.as_millis() as u64, "Run attempt failed, retrying.");
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                    detail.attempt = attempt;
                    let _ = self.store.set_run_detail(run_id, detail);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Delivers (or, on failure, runs on_failure deliveries) and records the outcome.
    async fn finish(
        &self,
        routine: &Routine,
        ctx: &Value,
        opts: &RunOptions,
        mut report: RunReport,
        outcome: RunOutcome,
    ) -> Result<RunReport, EngineError> {
        let failed = matches!(outcome.status, RunStatus::Failed | RunStatus::TimedOut);
        let targets: &[DeliveryTarget] = match outcome.status {
            RunStatus::Succeeded => &routine.spec.deliver,
            _ if failed => &routine.spec.on_failure.deliver,
            _ => &[],
        };
        if !opts.no_deliver {
            let mut dctx = ctx.clone();
            dctx["output"] = json!(outcome.output.clone().or_else(|| outcome.error.clone()).unwrap_or_default());
            dctx["status"] = json!(outcome.status.as_str());
            dctx["error"] = json!(outcome.error.clone().unwrap_or_default());
            let list = if failed { "on_failure.deliver" } else { "deliver" };
            for (i, target) in targets.iter().enumerate() {
                let label = format!("{list}[{i}]");
                let seq = u32::try_from(i).unwrap_or(u32::MAX);
                report.deliveries.push(self.deliver(report.run_id, seq, failed, &label, target, &dctx).await);
            }
        }
        self.store.finish_run(report.run_id, &outcome)?;
        report.status = outcome.status;
        report.output = outcome.output;
        report.error = outcome.error;
        Ok(report)
    }

    async fn deliver(
        &self,
        run_id: i64,
        seq: u32,
        on_failure: bool,
        label: &str,
        target: &DeliveryTarget,
        ctx: &Value,
    ) -> DeliveryReport {
        let payload = match self.render_delivery(label, target, ctx, run_id, seq) {
            Ok(p) => p,
            Err((shown, e)) => {
                tracing::warn!(run_id, target = %shown, error = %e, "Delivery failed.");
                let _ = self
                    .store
                    .add_delivery(&NewDelivery {
                        run_id,
                        seq,
                        kind: kind_of(target),
                        target: &shown,
                        on_failure,
                        payload: "{}",
                    })
                    .and_then(|id| self.store.set_delivery(id, DeliveryStatus::Failed, Some(&e)));
                return DeliveryReport { target: shown, status: DeliveryStatus::Failed, error: Some(e) };
            }
        };
        let target_text = payload.target();
        let json = serde_json::to_string(&payload).unwrap_or_else(|_| "{}".into());
        let id = match self.store.add_delivery(&NewDelivery {
            run_id,
            seq,
            kind: payload.kind(),
            target: &target_text,
            on_failure,
            payload: &json,
        }) {
            Ok(id) => id,
            Err(e) => {
                return DeliveryReport {
                    target: target_text,
                    status: DeliveryStatus::Failed,
                    error: Some(e.to_string()),
                };
            }
        };
        // Recorded before the attempt: a process that dies between sending
        // and recording leaves `sending`, which is never sent again blindly.
        let _ = self.store.set_delivery_sending(id);
        let (status, error) = match payload.deliver(&self.deliverer).await {
            Ok(_) => (DeliveryStatus::Delivered, None),
            Err(e) => {
                tracing::warn!(run_id, target = %target_text, error = %e, "Delivery failed.");
                (DeliveryStatus::Failed, Some(e))
            }
        };
        let _ = self.store.set_delivery(id, status, error.as_deref());
        DeliveryReport { target: target_text, status, error }
    }

    /// The payload of one delivery, or what to show as its target and why it failed.
    fn render_delivery(
        &self,
        label: &str,
        target: &DeliveryTarget,
        ctx: &Value,
        run_id: i64,
        seq: u32,
    ) -> Result<Payload, (String, String)> {
        match target {
            DeliveryTarget::File(f) => {
                let shown = self
                    .templates
                    .render_str(&format!("{label}.file.path"), &f.path, ctx)
                    .map_err(|e| (f.path.clone(), e.to_string()))?;
                let shown = shown.trim().to_string();
                let path: PathBuf = file::resolve(&self.config.workspace, &self.config.forbidden_paths, &shown)
                    .map_err(|e| (shown.clone(), e))?;
                let content = match &f.template {
                    Some(t) => self.templates.render_file(t, ctx).map_err(|e| (shown.clone(), e.to_string()))?,
                    None => {
                        let mut out = ctx["output"].as_str().unwrap_or("").to_string();
                        if !out.ends_with('\n') {
                            out.push('\n');
                        }
                        out
                    }
                };
                Ok(Payload::File(FilePayload { path, shown, mode: f.mode.into(), content }))
            }
            DeliveryTarget::Mail(m) => {
                let shown = describe_target(target);
                let fail = |e: String| (shown.clone(), e);
                let render = |field: &str, text: &str| {
                    self.templates.render_str(&format!("{label}.mail.{field}"), text, ctx).map_err(|e| e.to_string())
                };
                let output = ctx["output"].as_str().unwrap_or("").to_string();
                let name = ctx["routine"]["name"].as_str().unwrap_or("routine").to_string();
                let subject = match &m.subject {
                    Some(s) => render("subject", s).map_err(fail)?.trim().to_string(),
                    None => format!("{name}: {}", ctx["status"].as_str().unwrap_or("done")),
                };
                let text = match &m.template {
                    Some(t) => self.templates.render_file(t, ctx).map_err(|e| fail(e.to_string()))?,
                    None => output.clone(),
                };
                let html = match &m.html_template {
                    Some(t) => Some(self.templates.render_file(t, ctx).map_err(|e| fail(e.to_string()))?),
                    None => None,
                };
                let attachment = m.attach_output.then(|| mail::Attachment {
                    filename: format!("{name}.md"),
                    content_type: "text/markdown; charset=utf-8".into(),
                    content: output,
                });
                let from = self.mail_from();
                // Fixed at the first attempt and stored with the payload; the
                // random part keeps ids unique across databases.
                let message_id =
                    mail::message_id(run_id, seq, &from).replacen('@', &format!(".{:08x}@", rand::random::<u32>()), 1);
                Ok(Payload::Mail(Box::new(MailPayload {
                    from,
                    to: m.to.clone(),
                    cc: m.cc.clone(),
                    bcc: m.bcc.clone(),
                    subject,
                    text,
                    html,
                    attachment,
                    message_id,
                    date: mail::rfc2822_now(),
                })))
            }
        }
    }

    /// The sender of mail deliveries: `mail.from`, or routines@localhost.
    fn mail_from(&self) -> String {
        self.config.mail.as_ref().map_or_else(|| "Routines <routines@localhost>".to_string(), |m| m.from.clone())
    }

    /// Attempts deliveries again from their stored payloads, without the
    /// agent: those `pending` or `failed` for which `due` says yes. One left
    /// `sending` (the process died during its attempt) may have arrived, so
    /// it is not attempted again: it becomes `uncertain`, with a mail kept
    /// in the outbox for a person to check.
    pub async fn retry_deliveries(
        &self,
        due: &(dyn Fn(&DeliveryRow) -> bool + Sync),
    ) -> Result<Vec<Retried>, EngineError> {
        let mut done = Vec::new();
        for d in self.store.undelivered()? {
            // A run still alive (in this or another process) owns its
            // pending and in-flight deliveries.
            let owner = self.store.run_detail(d.run_id)?.and_then(|r| r.pid);
            let in_progress = owner.is_some_and(|pid| pid == std::process::id() || process_alive(pid))
                && matches!(d.status, DeliveryStatus::Pending | DeliveryStatus::Sending)
                && self
                    .store
                    .get_run(d.run_id)?
                    .is_some_and(|r| matches!(r.status, RunStatus::Queued | RunStatus::Running));
            if in_progress {
                continue;
            }
            let payload = serde_json::from_str::<Payload>(&d.payload);
            if d.status == DeliveryStatus::Sending {
                let mut why = "its attempt was cut off by a stop of the process after it may have been delivered; \
                               not attempted again, so it is never delivered twice"
                    .to_string();
                if let Ok(Payload::Mail(m)) = &payload {
                    if let Ok(path) = mail::write_eml(&self.deliverer.outbox, m) {
                        why.push_str(&format!("; the message is kept in {}", path.display()));
                    }
                }
                self.store.set_delivery(d.id, DeliveryStatus::Uncertain, Some(&why))?;
                done.push(Retried { row: d, status: DeliveryStatus::Uncertain, error: Some(why) });
                continue;
            }
            if !due(&d) {
                continue;
            }
            let outcome = match payload {
                Ok(payload) => {
                    self.store.set_delivery_sending(d.id)?;
                    payload.deliver(&self.deliverer).await
                }
                Err(_) => Err(format!(
                    "{} delivery to {} was never rendered (its template failed); fix the routine and run it again",
                    d.kind, d.target
                )),
            };
            let (status, error) = match outcome {
                Ok(_) => (DeliveryStatus::Delivered, None),
                Err(e) => (DeliveryStatus::Failed, Some(e)),
            };
            self.store.set_delivery(d.id, status, error.as_deref())?;
            done.push(Retried { row: d, status, error });
        }
        Ok(done)
    }

    /// After a successful run, the tool calls it made become the approach
    /// offered to the next run (memory `routine:<name>:approach`).
    fn remember_approach(&self, routine: &Routine, run_id: i64) {
        let Ok(events) = self.store.run_events(run_id) else { return };
        let steps: Vec<String> = events
            .iter()
            .filter(|e| e.event_kind() == Some(crate::store::EventKind::ToolCall) && e.status == "success")
            .map(|e| format!("- {} {}", e.tool.as_deref().unwrap_or("?"), e.arguments.as_deref().unwrap_or("{}")))
            .collect();
        if steps.is_empty() {
            return;
        }
        let text = format!("Tool calls of the last successful run:\n{}", steps.join("\n"));
        if let Err(e) =
            self.memory.store(&approach_key(&routine.name), &self.redactor.redact(&text), crate::memory::CORE)
        {
            tracing::warn!(routine = %routine.name, error = %e, "Could not store the approach memory.");
        }
    }
}

/// Opens the database of `config` and marks runs whose process died as
/// `interrupted`.
pub fn open_store(config: &Config) -> Result<Store, StoreError> {
    let store = Store::open(&config.database_path())?;
    for id in store.interrupt_orphans(&process_alive)? {
        tracing::warn!(
            run_id = id,
            "Run {id} was interrupted: the process running it stopped; recorded as interrupted."
        );
    }
    Ok(store)
}

/// The shell tool's settings of a config: its timeout, and a clean
/// environment plus the variables `security.shell_env` passes through.
pub fn shell_settings(c: &Config, env: &dyn Env) -> ShellSettings {
    let passed: Vec<(String, String)> =
        c.security.shell_env.iter().filter_map(|name| env.var(name).map(|v| (name.clone(), v))).collect();
    ShellSettings { timeout: c.agent.shell_timeout.get(), env: safe_env(env.var("HOME").as_deref(), &passed) }
}

/// Whether a process with this id exists (signal 0 checks without sending).
pub fn process_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else { return false };
    // SAFETY: signal 0 only checks whether the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

fn kind_of(t: &DeliveryTarget) -> &'static str {
    match t {
        DeliveryTarget::File(_) => "file",
        DeliveryTarget::Mail(_) => "mail",
    }
}

fn describe_target(t: &DeliveryTarget) -> String {
    match t {
        DeliveryTarget::File(f) => f.path.clone(),
        DeliveryTarget::Mail(m) => m.to.join(", "),
    }
}
