//! The deliveries of a run's outcome, rendered into rows that are recorded with the run's end
//! (`Store::end_run`) before any of them is attempted.

use serde_json::{Value, json};

use super::Deliverer;
use super::render::kind_of;
use crate::config::DeliveryTarget;
use crate::routine::Routine;
use crate::store::{NewDelivery, RunOutcome, RunStatus};

/// One delivery of a run, rendered: what its row records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    seq: u32,
    on_failure: bool,
    kind: &'static str,
    /// What a person reads: the path, the addresses.
    target: String,
    /// The payload as JSON (`{}` when it did not render).
    payload: String,
    /// Its fields the engine acts on, stored unredacted ([`super::Payload::acted_on`]).
    acted_on: &'static [&'static str],
    /// Why it did not render; such a delivery is recorded failed for good.
    failed: Option<String>,
}

impl Planned {
    /// The row to record for run `run_id`.
    pub fn row(&self, run_id: i64) -> NewDelivery<'_> {
        NewDelivery {
            run_id,
            seq: self.seq,
            kind: self.kind,
            target: &self.target,
            on_failure: self.on_failure,
            payload: &self.payload,
            acted_on: self.acted_on,
            failed: self.failed.as_deref(),
        }
    }
}

impl Deliverer {
    /// The deliveries of run `run_id` of `routine`, which ended with `outcome`: `deliver` after
    /// a success, `on_failure.deliver` after a failure or timeout, none otherwise. `ctx` is the
    /// run's template context; `output`, `status` and `error` are added to it. Each is rendered
    /// here, once: its payload (a mail's Message-ID and date included) is what every attempt
    /// sends.
    pub fn plan(&self, routine: &Routine, run_id: i64, outcome: &RunOutcome, ctx: &Value) -> Vec<Planned> {
        let on_failure = matches!(outcome.status, RunStatus::Failed | RunStatus::TimedOut);
        let targets: &[DeliveryTarget] = match outcome.status {
            RunStatus::Succeeded => &routine.spec.deliver,
            _ if on_failure => &routine.spec.on_failure.deliver,
            _ => &[],
        };
        let mut ctx = ctx.clone();
        ctx["output"] = json!(outcome.output.clone().or_else(|| outcome.error.clone()).unwrap_or_default());
        ctx["status"] = json!(outcome.status.as_str());
        ctx["error"] = json!(outcome.error.clone().unwrap_or_default());
        let list = if on_failure { "on_failure.deliver" } else { "deliver" };
        let mut planned = Vec::with_capacity(targets.len());
        for (i, target) in targets.iter().enumerate() {
            let label = format!("{list}[{i}]");
            let seq = u32::try_from(i).unwrap_or(u32::MAX);
            planned.push(match self.render(&label, target, &ctx, run_id, seq) {
                Ok(payload) => Planned {
                    seq,
                    on_failure,
                    kind: payload.kind(),
                    target: payload.target(),
                    payload: serde_json::to_string(&payload).unwrap_or_else(|_| "{}".into()),
                    acted_on: payload.acted_on(),
                    failed: None,
                },
                Err((shown, e)) => {
                    tracing::warn!(run_id, target = %shown, error = %e, "Delivery failed.");
                    // A target that cannot be rendered will not render on a retry either.
                    Planned {
                        seq,
                        on_failure,
                        kind: kind_of(target),
                        target: shown,
                        payload: "{}".into(),
                        acted_on: &[],
                        failed: Some(self.clean(e.to_string())),
                    }
                }
            });
        }
        planned
    }
}
