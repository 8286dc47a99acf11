//! The engine: one routine run end to end (SPEC §6).
//!
//! queued → running → render the prompt → build the agent with the
//! routine's overrides in routine mode → `process_message`, retried on
//! provider failures and bounded as a whole by `timeout` → the reply check
//! (the routine's silent token, or the caller's; `reply.rs`) → final status,
//! output, tokens and iterations recorded together with the deliveries owed
//! (`deliver`, or `on_failure.deliver`), each with its own status → the
//! delivery stage (`crate::delivery`) attempts them. What a run does while another of its routine is active is
//! decided by [`crate::routine::overlap`].

mod cancel;
mod error;
mod reply;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;

use crate::agent::{
    Agent, AgentError, AgentEvent, AgentSetup, ReplyCheck, StoreGuard, StoreRecorder, TurnStats, shell_settings,
};
use crate::config::routine_file::FirstCall;
use crate::config::{Config, ProcessEnv};
use crate::delivery::Deliverer;
use crate::llm::{Message, Provider};
use crate::memory::Memory;
use crate::policy::Redactor;
use crate::routine::overlap::{self, Activity, Admission};
use crate::routine::template::Templates;
use crate::routine::{Routine, Session, TriggerContext};
use crate::store::{Claim, Location, NewDelivery, NewRun, Recorded, RunKind, RunOutcome, RunStatus, Store, StoreError};
use crate::tools::ShellSettings;

pub use crate::delivery::DeliveryReport;
pub use crate::routine::context::PromptError;
pub use cancel::Cancel;
pub use error::EngineError;

/// Refuses a routine with `enabled: false` ([`EngineError::Disabled`], exit code 3). Manual runs
/// check it before anything else is set up.
pub fn ensure_enabled(routine: &Routine) -> Result<(), EngineError> {
    if routine.spec.enabled {
        Ok(())
    } else {
        Err(EngineError::Disabled { routine: routine.name.clone(), file: routine.file.clone() })
    }
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

/// Options of one run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// `--var k=v`, added to (and overriding) the routine's `vars`.
    pub vars: BTreeMap<String, String>,
    pub no_deliver: bool,
    /// What the run is recorded as (default: a routine run).
    pub kind: Option<RunKind>,
    /// How the reply is judged (default: [`crate::agent::SilentToken`] with the routine's
    /// silent token).
    pub reply_check: Option<Arc<dyn ReplyCheck>>,
    /// The instant the run takes as the current time: the agent's prompt and the dates it
    /// compares, and the template context's `now` (an eval task's `now`, so that a task about
    /// "in how many days" has one right answer on any day). Default the wall clock. Shell
    /// commands and the run's records keep the machine's clock.
    pub now: Option<DateTime<Utc>>,
}

/// Everything runs share.
pub struct Engine {
    pub config: Config,
    pub store: Store,
    pub memory: Memory,
    pub provider: Arc<dyn Provider>,
    pub templates: Arc<Templates>,
    pub redactor: Redactor,
    pub shell: ShellSettings,
    /// Model used when a routine sets none.
    pub model: String,
    /// The delivery stage.
    pub deliverer: Deliverer,
}

/// How long the end of a run is retried before the error is given up to the caller.
const END_WRITE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(600);

impl Engine {
    /// The engine of `config`: opens the database (marking runs whose process
    /// died as `interrupted`), the memory, the templates, the secret redactor,
    /// the shell settings and the delivery stage. `model` is used when a
    /// routine names none.
    pub fn open(config: Config, provider: Arc<dyn Provider>, model: impl Into<String>) -> Result<Engine, EngineError> {
        let redactor = Redactor::for_config(&config, &ProcessEnv);
        let location = Location::resolve(&config.store.url_env, config.store_url(&ProcessEnv), config.database_path())?;
        let store = Store::open_recovering_at(&location)?.with_scrub(Arc::new(redactor.clone()));
        store.set_cluster(config.cluster.lease.get(), config.cluster.max_skew().get());
        let memory = Memory::new(store.clone());
        let templates = Arc::new(Templates::new(&config.templates_dir));
        let shell = shell_settings(&config, &ProcessEnv);
        let deliverer = Deliverer::open(&config, &ProcessEnv, store.clone(), templates.clone())?;
        Ok(Engine { config, store, memory, provider, templates, redactor, shell, model: model.into(), deliverer })
    }

    /// Prunes the history to `history.max_age` and `history.max_runs_per_routine` (see
    /// `store/prune.rs`: a run whose deliveries are pending, or that is queued or running, is
    /// kept). Returns how many runs were deleted.
    pub fn prune_history(&self) -> Result<u64, crate::store::StoreError> {
        let h = &self.config.history;
        let limits =
            crate::store::HistoryLimits { max_age: h.max_age.get(), max_runs_per_routine: h.max_runs_per_routine };
        self.store.prune_history(limits, Utc::now())
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
        crate::routine::context::build(routine, trigger, run_id, attempt, vars, Utc::now())
    }

    /// The routine's prompt, rendered with `ctx`, untrusted trigger data fenced and checked
    /// (`context.rs`).
    pub fn render_prompt(&self, routine: &Routine, ctx: &Value) -> Result<String, PromptError> {
        Ok(crate::routine::context::render_prompt(&self.templates, routine, ctx, self.config.language)?.text)
    }

    /// The entries of the routine's `attach`, rendered with `ctx`: globs and paths of images.
    pub fn render_attach(&self, routine: &Routine, ctx: &Value) -> Result<Vec<String>, PromptError> {
        let mut out = Vec::with_capacity(routine.spec.attach.len());
        for (i, entry) in routine.spec.attach.iter().enumerate() {
            out.push(self.templates.render_str(&format!("attach[{i}]"), entry, ctx)?);
        }
        Ok(out)
    }

    /// The agent of a routine: overrides applied, routine mode, grants.
    pub fn agent_for(&self, routine: &Routine) -> Result<Agent, EngineError> {
        self.agent_fired(routine, &TriggerContext::Manual)
    }

    /// [`Engine::agent_for`] of a run fired by `trigger`: a webhook or a file event brings data
    /// an outsider wrote, and such a run gets no `schedule` tool unless the routine says
    /// `agent.schedule_from_triggers` (`AgentSetup::build_fired`).
    pub fn agent_fired(&self, routine: &Routine, trigger: &TriggerContext) -> Result<Agent, EngineError> {
        if self.config.security.sandbox == crate::sandbox::SandboxMode::None {
            tracing::warn!(
                routine = %routine.name,
                "security.sandbox is none: shell commands of this run have no OS sandbox."
            );
        }
        let setup = AgentSetup {
            config: &self.config,
            provider: self.provider.clone(),
            model: &self.model,
            memory: &self.memory,
            redactor: &self.redactor,
            shell: &self.shell,
        };
        // Data given by hand stands in for a request or a file event: the run is tried as it
        // would run when they fire.
        let outside =
            matches!(trigger, TriggerContext::Webhook(_) | TriggerContext::File(_) | TriggerContext::ManualWith(_));
        Ok(setup.build_fired(Some(routine), outside)?)
    }

    /// Runs a routine once, end to end. `progress` receives tool status events.
    pub async fn run(
        &self,
        routine: &Routine,
        trigger: TriggerContext,
        opts: &RunOptions,
        progress: Option<UnboundedSender<AgentEvent>>,
    ) -> Result<RunReport, EngineError> {
        ensure_enabled(routine)?;
        // Overlap with a run of this routine that is still active, in this or another process
        // (SPEC §5), decided and claimed in one step in the database.
        let mut admission = Admission::Start;
        let new = NewRun {
            kind: opts.kind.unwrap_or(RunKind::Routine),
            routine: Some(routine.name.clone()),
            trigger: trigger.kind().into(),
            scheduled_for: trigger.scheduled_for(),
            status: RunStatus::Queued,
        };
        let claim = self.store.claim_run(&new, &trigger.to_stored(), |active| {
            let activity = Activity {
                active: !active.is_empty(),
                run: active.first().map(|(id, _)| *id),
                waiting: active.iter().any(|(_, s)| *s == RunStatus::Queued),
            };
            admission = overlap::admit(&routine.name, routine.spec.overlap, activity, false);
            match &admission {
                Admission::Skip(why) => Some(why.to_string()),
                _ => None,
            }
        })?;
        let run_id = match claim {
            Claim::Queued(id) => id,
            Claim::Skipped { id, why } => {
                tracing::info!(routine = %routine.name, run_id = id, "{why}");
                return Ok(RunReport {
                    run_id: id,
                    routine: routine.name.clone(),
                    status: RunStatus::Skipped,
                    output: None,
                    error: Some(why),
                    deliveries: Vec::new(),
                });
            }
        };
        if admission == Admission::Queue {
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
        self.store.start_run(run_id)?;
        self.store.set_attempt(run_id, attempt)?;
        let now = opts.now.unwrap_or_else(Utc::now);
        let ctx = crate::routine::context::build(routine, &trigger, run_id, attempt, &opts.vars, now);
        let mut outcome = RunOutcome::new(RunStatus::Failed, None);

        let prompt = match crate::routine::context::render_prompt(&self.templates, routine, &ctx, self.config.language)
        {
            Ok(p) => {
                crate::routine::context::record_findings(&self.store, run_id, &p.findings);
                p.text
            }
            Err(e) => {
                outcome.error = Some(e.to_string());
                return self.finish(routine, run_id, &ctx, opts, outcome).await;
            }
        };
        self.store.set_prompt(run_id, &self.redactor.redact(&prompt))?;

        let mut agent = match self.agent_fired(routine, &trigger) {
            // Beats and greetings repeat themselves: their turns would fill
            // memory, and recalled, teach a small model to answer the same
            // (the ok token without checking, yesterday's greeting).
            Ok(a) if matches!(opts.kind, Some(RunKind::Heartbeat | RunKind::Greeting)) => a.without_turn_memory(),
            Ok(a) => a,
            Err(e) => {
                outcome.error = Some(format!("cannot set up the agent: {e}"));
                return self.finish(routine, run_id, &ctx, opts, outcome).await;
            }
        };
        // A webhook's data is already in the prompt: holding the first call to a tool would make
        // the model act before it answers, on text an outsider wrote (a 1.5B model stored or
        // wrote made-up notes, then summarized worse). Unless the routine asks for it.
        if routine.spec.agent.first_call.is_none() && crate::routine::context::carries_webhook_data(&ctx, &prompt) {
            agent.set_first_call(FirstCall::Auto);
            // A routine given no tools and no commands to run is first asked the answer from
            // the data itself, where its task needs no tool (`agent/payload.rs`).
            agent.set_answer_from_payload(
                routine.spec.agent.tools.is_none() && routine.spec.agent.allow_commands.is_empty(),
            );
        }
        if let Some(now) = opts.now {
            agent.set_clock(Arc::new(move || now));
        }
        agent.set_event_sink(Some(Arc::new(StoreRecorder { store: self.store.clone(), run_id })));
        if self.store.is_shared() {
            agent.set_run_guard(Some(Arc::new(StoreGuard { store: self.store.clone(), run_id })));
        }
        agent.set_progress(progress);
        // Images are found and checked before any model call; a problem fails the run.
        if !routine.spec.attach.is_empty() {
            let failure = match self.render_attach(routine, &ctx) {
                Err(e) => Some(e.to_string()),
                Ok(patterns) => match agent.find_images(&patterns) {
                    Ok(images) => {
                        agent.attach_images(images);
                        None
                    }
                    Err(e) => Some(e.to_string()),
                },
            };
            if let Some(e) = failure {
                outcome.error = Some(format!("attach: {e}"));
                return self.finish(routine, run_id, &ctx, opts, outcome).await;
            }
        }
        if routine.spec.agent.session == Session::Persistent {
            if let Some(json) = self.store.session(&routine.name)? {
                if let Ok(history) = serde_json::from_str::<Vec<Message>>(&json) {
                    agent.set_history(history);
                }
            }
        }

        let deadline = Instant::now() + routine.spec.timeout.get();
        let check = reply::check_of(routine, opts, &prompt);
        let mut earlier = TurnStats::default();
        // Dropping the agent's future on timeout or cancellation kills the
        // process groups of its shell commands.
        let result = tokio::select! {
            r = tokio::time::timeout(
                routine.spec.timeout.get(),
                self.checked_attempts(routine, &mut agent, &prompt, run_id, deadline, &*check, &mut earlier),
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
            return self.finish(routine, run_id, &ctx, opts, outcome).await;
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
                let silent = check.is_silent(&reply);
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
                    agent.remember_approach(&self.store, run_id);
                }
            }
        }
        self.finish(routine, run_id, &ctx, opts, outcome).await
    }

    /// Records a new run of the routine `name`, queued and owned by this process at attempt 1,
    /// with the context of its trigger. The context is written here, once; [`Engine::execute`]
    /// does not write it again (the daemon's claim writes it for the fires it queues).
    pub fn queue_run(&self, name: &str, kind: RunKind, trigger: &TriggerContext) -> Result<i64, StoreError> {
        let run_id = self.store.create_run(&NewRun {
            kind,
            routine: Some(name.into()),
            trigger: trigger.kind().into(),
            scheduled_for: trigger.scheduled_for(),
            status: RunStatus::Queued,
        })?;
        self.store.set_trigger_context(run_id, &trigger.to_stored())?;
        self.store.set_attempt(run_id, 1)?;
        Ok(run_id)
    }

    /// `overlap: queue`: waits until every earlier run of the routine has
    /// ended. Runs whose process died meanwhile are marked interrupted.
    async fn wait_for_earlier_runs(&self, routine: &Routine, run_id: i64) -> Result<(), EngineError> {
        loop {
            self.store.interrupt_orphans()?;
            let earlier = self.store.active_runs(&routine.name)?.into_iter().any(|(id, _)| id < run_id);
            if !earlier {
                return Ok(());
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }

    /// `process_message`, retried on provider failures with backoff, within the deadline.
    pub(super) async fn attempts(
        &self,
        routine: &Routine,
        agent: &mut Agent,
        prompt: &str,
        run_id: i64,
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
                    if let Err(e) = self.store.set_attempt(run_id, attempt) {
                        tracing::warn!(routine = %routine.name, run_id, error = %e, "Could not record the attempt.");
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Writes a run's end together with its deliveries (`Store::end_run`: one transaction, so
    /// either the run is recorded ended with every delivery it owes, or neither). A write that
    /// fails for a reason that may pass (a full disk, a busy database) is tried again with
    /// backoff for up to [`END_WRITE_PATIENCE`]: a run whose end is not recorded stays `running`
    /// and would be taken for a crash and run again. Nothing has been delivered yet when this
    /// fails, so that second run is the only one that delivers.
    async fn record_end(
        &self,
        run_id: i64,
        outcome: &RunOutcome,
        deliveries: &[NewDelivery<'_>],
    ) -> Result<Vec<Recorded>, StoreError> {
        let started = Instant::now();
        let mut wait = std::time::Duration::from_millis(250);
        loop {
            match self.store.end_run(run_id, outcome, deliveries) {
                Ok(recorded) => return Ok(recorded),
                Err(e) if e.is_transient() && started.elapsed() < END_WRITE_PATIENCE => {
                    tracing::error!(run_id, error = %e, "Cannot record the end of the run; trying again in {wait:?}.");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(std::time::Duration::from_secs(10));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Records the outcome with the deliveries it owes (`deliver`, or `on_failure.deliver` after
    /// a failure), then attempts them. A process that dies after the end is recorded leaves a
    /// finished run, never run again, whose deliveries the retries attempt or, when an attempt
    /// was under way, judge (`delivery/attempts.rs`).
    async fn finish(
        &self,
        routine: &Routine,
        run_id: i64,
        ctx: &Value,
        opts: &RunOptions,
        mut outcome: RunOutcome,
    ) -> Result<RunReport, EngineError> {
        // What the run reports, delivers and records carries no secret.
        for text in [&mut outcome.output, &mut outcome.error].into_iter().flatten() {
            if let std::borrow::Cow::Owned(clean) = self.redactor.redact(text) {
                *text = clean;
            }
        }
        let planned = if opts.no_deliver { Vec::new() } else { self.deliverer.plan(routine, run_id, &outcome, ctx) };
        let rows: Vec<NewDelivery<'_>> = planned.iter().map(|p| p.row(run_id)).collect();
        let recorded = self.record_end(run_id, &outcome, &rows).await?;
        let deliveries = self.deliverer.attempt_recorded(recorded).await;
        Ok(RunReport {
            run_id,
            routine: routine.name.clone(),
            status: outcome.status,
            output: outcome.output,
            error: outcome.error,
            deliveries,
        })
    }
}
