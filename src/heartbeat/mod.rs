//! Heartbeat check-ins (SPEC §7): every `heartbeat.every`, inside
//! `active_hours`, the agent goes through the checklist file with memory
//! recall and says only what needs attention. Outside active hours, and
//! with an empty or missing checklist, no model call is made: the beat is
//! recorded as skipped with the reason.

mod error;
pub mod greeting;
mod reply;

use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;

use crate::clock::{Clock, sleep_for};
use crate::config::{Config, Duration};
use crate::engine::{Engine, RunOptions, RunReport};
use crate::routine::reserved::{GREETING, HEARTBEAT as NAME};
use crate::routine::schedule::Every;
use crate::routine::{Overlap, Routine, RoutineFile, TriggerContext};
use crate::skills::read::{ReadError, read_inside};
use crate::store::{NewRun, RunKind, RunOutcome, RunStatus};

pub use error::HeartbeatError;
pub use reply::{OkCheck, is_ok, review_prompt};

/// Why a beat made no model call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Quiet {
    OutsideActiveHours { local: String, window: String },
    NoChecklist(PathBuf),
    EmptyChecklist(PathBuf),
}

impl std::fmt::Display for Quiet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Quiet::OutsideActiveHours { local, window } => {
                write!(f, "outside active hours ({window}); it is {local}: no model call")
            }
            Quiet::NoChecklist(p) => write!(f, "the checklist {} does not exist: no model call", p.display()),
            Quiet::EmptyChecklist(p) => write!(f, "the checklist {} is empty: no model call", p.display()),
        }
    }
}

/// The checklist file of the config (relative paths from the config's folder).
pub fn checklist_path(config: &Config) -> PathBuf {
    let p = &config.heartbeat.checklist;
    match config.file.as_ref().and_then(|f| f.parent()) {
        Some(dir) if p.is_relative() => dir.join(p),
        _ => p.clone(),
    }
}

/// What the next beat would do at `now`: the checklist text, or why it
/// stays quiet. `force` ignores active hours.
pub fn prepare(config: &Config, now: DateTime<Utc>, force: bool) -> Result<Result<String, Quiet>, HeartbeatError> {
    let hb = &config.heartbeat;
    if let (Some(hours), Some(window), false) = (&hb.active_hours, hb.active_window()?, force) {
        let local = now.with_timezone(&config.timezone);
        if !window.contains(local.time()) {
            return Ok(Err(Quiet::OutsideActiveHours {
                local: local.format("%H:%M %Z").to_string(),
                window: format!("{}–{} {}", hours.start, hours.end, config.timezone.name()),
            }));
        }
    }
    let path = checklist_path(config);
    match read_checklist(config, &path) {
        Ok(text) if text.trim().is_empty() => Ok(Err(Quiet::EmptyChecklist(path))),
        Ok(text) => Ok(Ok(text)),
        Err(ReadError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Ok(Err(Quiet::NoChecklist(path)))
        }
        Err(ReadError::Io { source, .. }) => Err(HeartbeatError::Checklist { path, source }),
        Err(refused) => Err(HeartbeatError::ChecklistRefused(refused)),
    }
}

/// Largest checklist read: a checklist is a page of Markdown.
const MAX_CHECKLIST_BYTES: u64 = 256 * 1024;

/// The checklist's text, read only where it was put: inside the workspace when it lies there
/// (else inside its own folder), symlinks resolved, a regular file. A checklist that a
/// checkout turned into a link to `/proc/self/environ` or any outside file is refused.
fn read_checklist(config: &Config, path: &std::path::Path) -> Result<String, ReadError> {
    let io = |source| ReadError::Io { path: path.to_path_buf(), source };
    let workspace = config.workspace.canonicalize().map_err(io)?;
    let folder = path.parent().unwrap_or(std::path::Path::new("/"));
    let root = match folder.canonicalize() {
        Ok(dir) if dir.starts_with(&workspace) => workspace,
        Ok(dir) => dir,
        Err(source) => return Err(io(source)),
    };
    let bytes = read_inside(&root, path, MAX_CHECKLIST_BYTES)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The lean prompt of a beat. The checklist comes first and the ok token
/// last: a small model told early that it may answer the token answers it
/// without doing the checks.
fn prompt(checklist: &str, token: &str) -> String {
    format!(
        "Heartbeat check-in. Do these checks one at a time. Each check is one tool call; after its result, \
         go on with the next check.\n\n\
         {}\n\n\
         After the last check, reply briefly with only what needs the user's attention. \
         If nothing does, reply with exactly {token}.",
        checklist.trim_end()
    )
}

/// The routine a beat runs as: the heartbeat's deliveries, the ok token as
/// the silent token, a fresh history each beat (so a long-running daemon's
/// prompt does not grow).
fn routine(config: &Config, checklist: &str) -> Routine {
    let hb = &config.heartbeat;
    let spec = RoutineFile {
        prompt: Some(prompt(checklist, &hb.ok_token)),
        silent_token: hb.ok_token.clone(),
        timeout: Duration::from_secs(10 * 60),
        overlap: Overlap::Skip,
        ..RoutineFile::default()
    };
    builtin_routine(config, NAME, spec)
}

/// A built-in routine (the heartbeat, greetings): `spec` named `name`, in
/// the engine's zone, delivering to `heartbeat.deliver`.
fn builtin_routine(config: &Config, name: &str, spec: RoutineFile) -> Routine {
    let spec = RoutineFile { name: Some(name.into()), deliver: config.heartbeat.deliver.clone(), ..spec };
    Routine {
        name: name.into(),
        file: config.file.clone().unwrap_or_default(),
        zone: config.timezone,
        spec,
        time_triggers: Vec::new(),
    }
}

/// One beat now. A quiet beat is recorded `skipped` with its reason and
/// calls no model; otherwise the agent runs and delivers unless all is well.
pub async fn beat(
    engine: &Engine,
    now: DateTime<Utc>,
    force: bool,
    trigger: &str,
) -> Result<RunReport, HeartbeatError> {
    let checklist = match prepare(&engine.config, now, force)? {
        Ok(text) => text,
        Err(quiet) => return record_quiet(engine, &quiet, trigger),
    };
    let routine = routine(&engine.config, &checklist);
    // The prompt is the checklist itself; `{{` in it is not a template.
    let mut routine = routine;
    routine.spec.prompt = Some(format!("{{% raw %}}{}{{% endraw %}}", routine.spec.prompt.unwrap_or_default()));
    let check = OkCheck { token: routine.spec.silent_token.clone(), checklist };
    let opts =
        RunOptions { kind: Some(RunKind::Heartbeat), reply_check: Some(Arc::new(check)), ..RunOptions::default() };
    let trigger = if trigger == "manual" { TriggerContext::Manual } else { TriggerContext::Heartbeat };
    Ok(engine.run(&routine, trigger, &opts, None).await?)
}

fn record_quiet(engine: &Engine, quiet: &Quiet, trigger: &str) -> Result<RunReport, HeartbeatError> {
    let skipped = Skipped { kind: RunKind::Heartbeat, trigger, scheduled_for: None, reason: "quiet" };
    let run_id = skipped
        .record(engine, &quiet.to_string())?
        .ok_or(HeartbeatError::Bug("a quiet beat has no instant, so it cannot have been recorded already"))?;
    Ok(skipped_report(NAME, run_id, quiet.to_string()))
}

/// A built-in run that makes no model call, to record as `skipped`.
struct Skipped<'a> {
    kind: RunKind,
    trigger: &'a str,
    scheduled_for: Option<DateTime<Utc>>,
    reason: &'static str,
}

impl Skipped<'_> {
    /// Records it with `why`; `None` when its instant was recorded already.
    fn record(&self, engine: &Engine, why: &str) -> Result<Option<i64>, HeartbeatError> {
        let name = if self.kind == RunKind::Greeting { GREETING } else { NAME };
        let run_id = match engine.store.create_run(&NewRun {
            kind: self.kind,
            routine: Some(name.into()),
            trigger: self.trigger.into(),
            scheduled_for: self.scheduled_for,
            status: RunStatus::Queued,
        }) {
            Ok(id) => id,
            Err(crate::store::StoreError::DuplicateFire { .. }) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        engine.store.finish_run(run_id, &RunOutcome::skipped(self.reason, why))?;
        Ok(Some(run_id))
    }
}

/// The report of a run that was skipped because of `why`.
fn skipped_report(name: &str, run_id: i64, why: String) -> RunReport {
    RunReport {
        run_id,
        routine: name.into(),
        status: RunStatus::Skipped,
        output: None,
        error: Some(why),
        deliveries: Vec::new(),
    }
}

/// Beats every `heartbeat.every` until `stop`, at multiples of it since the
/// epoch on the injected clock; a beat outside active hours or without a
/// checklist is recorded skipped and calls no model.
pub async fn run_loop(engine: Arc<Engine>, clock: Arc<dyn Clock>, stop: CancellationToken) {
    let every = Every::new(engine.config.heartbeat.every.get().max(std::time::Duration::from_secs(1)));
    loop {
        let Some(next) = every.next_after(clock.now()) else { return };
        while clock.now() < next {
            tokio::select! {
                _ = tokio::time::sleep(sleep_for(clock.now(), Some(next))) => {}
                _ = stop.cancelled() => return,
            }
        }
        match beat(&engine, clock.now(), false, "heartbeat").await {
            Ok(r) => tracing::info!(run_id = r.run_id, status = %r.status, "Heartbeat."),
            Err(e) => tracing::error!(error = %e, "The heartbeat could not run."),
        }
    }
}
