//! Deliveries recorded and attempted: those of a finished run, and those attempted again later
//! from their recorded payloads.

use serde_json::{Value, json};

use super::render::kind_of;
use super::{Deliverer, DeliveryError, Payload};
use crate::config::DeliveryTarget;
use crate::routine::Routine;
use crate::store::{DeliveryRow, DeliveryStatus, NewDelivery, RunOutcome, RunStatus, StoreError};

/// How one delivery of a run ended.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DeliveryReport {
    pub target: String,
    pub status: DeliveryStatus,
    pub error: Option<String>,
}

/// One delivery attempted again by [`Deliverer::retry`].
#[derive(Debug, Clone)]
pub struct Retried {
    pub row: DeliveryRow,
    pub status: DeliveryStatus,
    pub error: Option<String>,
}

impl Deliverer {
    /// The deliveries of run `run_id` of `routine`, which ended with `outcome`: `deliver` after
    /// a success, `on_failure.deliver` after a failure or timeout, none otherwise. `ctx` is the
    /// run's template context; `output`, `status` and `error` are added to it. Each delivery is
    /// rendered, recorded and attempted, in order.
    pub async fn deliver_outcome(
        &self,
        routine: &Routine,
        run_id: i64,
        outcome: &RunOutcome,
        ctx: &Value,
    ) -> Vec<DeliveryReport> {
        let failed = matches!(outcome.status, RunStatus::Failed | RunStatus::TimedOut);
        let targets: &[DeliveryTarget] = match outcome.status {
            RunStatus::Succeeded => &routine.spec.deliver,
            _ if failed => &routine.spec.on_failure.deliver,
            _ => &[],
        };
        let mut ctx = ctx.clone();
        ctx["output"] = json!(outcome.output.clone().or_else(|| outcome.error.clone()).unwrap_or_default());
        ctx["status"] = json!(outcome.status.as_str());
        ctx["error"] = json!(outcome.error.clone().unwrap_or_default());
        let list = if failed { "on_failure.deliver" } else { "deliver" };
        let mut reports = Vec::with_capacity(targets.len());
        for (i, target) in targets.iter().enumerate() {
            let label = format!("{list}[{i}]");
            let seq = u32::try_from(i).unwrap_or(u32::MAX);
            reports.push(self.deliver(run_id, seq, failed, &label, target, &ctx).await);
        }
        reports
    }

    /// Renders one delivery, records it with its payload, and attempts it.
    async fn deliver(
        &self,
        run_id: i64,
        seq: u32,
        on_failure: bool,
        label: &str,
        target: &DeliveryTarget,
        ctx: &Value,
    ) -> DeliveryReport {
        let payload = match self.render(label, target, ctx, run_id, seq) {
            Ok(p) => p,
            Err((shown, e)) => {
                tracing::warn!(run_id, target = %shown, error = %e, "Delivery failed.");
                let e = self.clean(e.to_string());
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
                    // A target that cannot be rendered will not render on a retry either.
                    .and_then(|id| self.store.finish_delivery(id, DeliveryStatus::Failed, Some(&e), true));
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
        let (status, error, permanent) = match payload.deliver(self).await {
            Ok(_) => (DeliveryStatus::Delivered, None, false),
            Err(e) => {
                tracing::warn!(run_id, target = %target_text, error = %e, retryable = e.retryable(), "Delivery failed.");
                (DeliveryStatus::Failed, Some(self.clean(e.to_string())), !e.retryable())
            }
        };
        let _ = self.store.finish_delivery(id, status, error.as_deref(), permanent);
        DeliveryReport { target: target_text, status, error }
    }

    /// Attempts deliveries again from their stored payloads, without the agent: those `pending`
    /// or `failed` for which `due` says yes. A delivery whose run is still in progress (its
    /// process still runs it) is left to that run. One left `sending` (the
    /// process died during its attempt) may have arrived, so it is not attempted again: it
    /// becomes `uncertain`, with a mail kept in the outbox for a person to check.
    pub async fn retry(&self, due: &(dyn Fn(&DeliveryRow) -> bool + Sync)) -> Result<Vec<Retried>, StoreError> {
        let mut done = Vec::new();
        for d in self.store.undelivered()? {
            // A run still alive (in this or another process) owns its
            // pending and in-flight deliveries.
            let detail = self.store.run_detail(d.run_id)?;
            let in_progress = detail
                .is_some_and(|r| (r.owner.is_some() || r.pid.is_some()) && self.store.owner_alive(r.owner, r.pid))
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
                    if let Ok(path) = super::mail::write_eml(&self.outbox, m) {
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
                    payload.deliver(self).await
                }
                Err(_) => Err(DeliveryError::NotRendered { kind: d.kind.clone(), target: d.target.clone() }),
            };
            let (status, error, permanent) = match outcome {
                Ok(_) => (DeliveryStatus::Delivered, None, false),
                Err(e) => (DeliveryStatus::Failed, Some(e.to_string()), !e.retryable()),
            };
            self.store.finish_delivery(d.id, status, error.as_deref(), permanent)?;
            done.push(Retried { row: d, status, error });
        }
        Ok(done)
    }
}
