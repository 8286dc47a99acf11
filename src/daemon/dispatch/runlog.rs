//! The daemon's line per run start and end, as a service logs (SPEC §11): routine, run id,
//! trigger, attempt; at the end also status, duration, model calls and tokens, at INFO, and at
//! WARN with the (redacted) error for a run that failed or was interrupted. Both log formats
//! carry the same fields; the text line reads on its own in `journalctl`.

use std::time::Duration;

use crate::engine::{Engine, RunReport};
use crate::store::{EventKind, RunStatus};

/// A run is about to start.
pub(super) fn started(routine: &str, run_id: i64, trigger: &str, attempt: u32) {
    tracing::info!(routine, run_id, trigger, attempt, "Run {run_id} of {routine} started ({trigger}).");
}

/// A run ended: its line, with what the store recorded of it.
pub(super) fn finished(engine: &Engine, report: &RunReport, trigger: &str, took: Duration) {
    let (routine, run_id, status) = (report.routine.as_str(), report.run_id, report.status.as_str());
    let row = engine.store.get_run(run_id).ok().flatten();
    let (prompt, completion) = row.as_ref().map_or((0, 0), |r| (r.prompt_tokens, r.completion_tokens));
    let model_calls = engine
        .store
        .run_events(run_id)
        .map(|events| events.iter().filter(|e| e.event_kind() == Some(EventKind::ModelCall)).count())
        .unwrap_or(0);
    let duration = format!("{:.1}s", took.as_secs_f64());
    let tokens = prompt + completion;
    // One field list for both levels; a failure adds its error and a hint.
    macro_rules! end_line {
        ($level:ident, $($rest:tt)*) => {
            tracing::$level!(
                routine,
                run_id,
                trigger,
                status,
                duration = %duration,
                model_calls,
                tokens,
                prompt_tokens = prompt,
                completion_tokens = completion,
                $($rest)*
            )
        };
    }
    match report.status {
        RunStatus::Succeeded | RunStatus::Silent | RunStatus::Skipped => {
            end_line!(info, "Run {run_id} of {routine} {status} in {duration}.")
        }
        _ => {
            let error = engine.redactor.redact(report.error.as_deref().unwrap_or("no error was recorded"));
            let hint = format!("`routines show {run_id}` has each model and tool call of the run");
            end_line!(warn, error = %error, hint = %hint, "Run {run_id} of {routine} {status} in {duration}: {error}")
        }
    }
}
