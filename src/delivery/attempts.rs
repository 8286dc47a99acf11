//! Recorded deliveries attempted: those of a run that just ended, and those attempted again
//! later from their recorded payloads, without the agent, deliveries whose attempt was cut off
//! by a process that died among them.
//!
//! Every attempt is claimed in the database before it starts (`Store::claim_delivery`: the row
//! becomes `sending`, owned by this process, only if nobody changed it since it was read) and
//! finished after it (`delivered`, `failed`, or `uncertain` for a mail the server may have
//! taken). So two processes never attempt one delivery, and a restart knows which attempt may
//! have been under way when a process died.

use super::{Deliverer, DeliveryError, Payload};
use crate::store::{DeliveryRow, DeliveryStatus, Recorded, StoreError};

/// How one delivery of a run ended.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DeliveryReport {
    pub target: String,
    pub status: DeliveryStatus,
    pub error: Option<String>,
    /// A mail delivered to the outbox folder as an `.eml` file because no SMTP server is
    /// configured: it waits there and has reached no one.
    pub in_outbox: bool,
}

/// One delivery attempted again by [`Deliverer::retry`].
#[derive(Debug, Clone)]
pub struct Retried {
    pub row: DeliveryRow,
    pub status: DeliveryStatus,
    pub error: Option<String>,
    /// Delivered to the outbox folder only, as [`DeliveryReport::in_outbox`].
    pub in_outbox: bool,
}

/// The command that sends an uncertain delivery again.
const RETRY_UNCERTAIN: &str = "routines deliver --retry --uncertain";

/// How one claimed attempt ended: the status recorded and the error, if any.
type Ended = (DeliveryStatus, Option<String>);

/// Why a delivery whose attempt was cut off is not attempted again.
const CUT_OFF: &str = "its attempt was cut off by a stop of the process after it may have been delivered; \
                       not attempted again, so it is never delivered twice";

impl Deliverer {
    /// Attempts the deliveries of a run, recorded with its end (`Store::end_run`), in order:
    /// each new one is claimed, attempted and finished. One that an earlier attempt of the run
    /// had recorded already is not attempted here: a delivered one is never delivered again, and
    /// any other is left to the retries (the daemon's, `routines deliver --retry`), which know
    /// what to do with an attempt that was cut off.
    pub async fn attempt_recorded(&self, recorded: Vec<Recorded>) -> Vec<DeliveryReport> {
        let mut reports = Vec::with_capacity(recorded.len());
        for Recorded { row, new } in recorded {
            let (status, error) = if !new {
                earlier(&row)
            } else if row.status != DeliveryStatus::Pending {
                // Recorded failed: its target did not render.
                (row.status, row.error.clone())
            } else {
                match self.attempt(&row, false).await {
                    Ok(Some(ended)) => ended,
                    Ok(None) => (DeliveryStatus::Sending, Some("another process claimed its attempt".into())),
                    Err(e) => {
                        tracing::error!(run_id = row.run_id, target = %row.target, error = %e, "Could not record a delivery's attempt.");
                        (row.status, Some(format!("its attempt could not be recorded: {e}")))
                    }
                }
            };
            let in_outbox = self.in_outbox(&row, status);
            reports.push(DeliveryReport { target: row.target, status, error, in_outbox });
        }
        reports
    }

    /// Attempts deliveries again from their stored payloads, without the agent: those `pending`,
    /// `failed` or `uncertain` for which `due` says yes. One `pending` or `sending` whose process
    /// still runs (this one included) is that process's to attempt. One left `sending` by a
    /// process that is gone was cut off during its attempt: see [`Deliverer::cut_off`].
    pub async fn retry(&self, due: &(dyn Fn(&DeliveryRow) -> bool + Sync)) -> Result<Vec<Retried>, StoreError> {
        let mut done = Vec::new();
        for d in self.store.undelivered()? {
            let claimed = matches!(d.status, DeliveryStatus::Pending | DeliveryStatus::Sending);
            if claimed && self.store.owner_alive(d.owner, d.pid) {
                continue;
            }
            let ended = if d.status == DeliveryStatus::Sending {
                self.cut_off(&d).await?
            } else if due(&d) {
                self.attempt(&d, false).await?
            } else {
                continue;
            };
            if let Some((status, error)) = ended {
                let in_outbox = self.in_outbox(&d, status);
                done.push(Retried { row: d, status, error, in_outbox });
            }
        }
        Ok(done)
    }

    /// Whether `row`, ended `status`, is a mail that only reached the outbox folder: delivered
    /// while no SMTP server is configured.
    fn in_outbox(&self, row: &DeliveryRow, status: DeliveryStatus) -> bool {
        status == DeliveryStatus::Delivered
            && row.kind == "mail"
            && matches!(self.mailer.transport(), super::mail::Transport::Outbox(_))
    }

    /// A delivery left `sending` by a process that is gone: its attempt was cut off, before or
    /// after it arrived, and nothing can tell which. One that can be made again without ever
    /// arriving twice ([`Payload::repeatable`]) is attempted again at once; any other becomes
    /// `uncertain`, a mail kept in the outbox, for a person to check and send again with
    /// `routines deliver --retry --uncertain`. `None` when another process settled it first.
    async fn cut_off(&self, d: &DeliveryRow) -> Result<Option<Ended>, StoreError> {
        let payload = serde_json::from_str::<Payload>(&d.payload);
        if payload.as_ref().is_ok_and(|p| p.repeatable(self)) {
            return self.attempt(d, true).await;
        }
        let mut why = CUT_OFF.to_string();
        if let Ok(Payload::Mail(m)) = &payload {
            if let Ok(path) = super::mail::write_eml(&self.outbox, m) {
                why.push_str(&format!("; the message is kept in {}", path.display()));
            }
        }
        why.push_str(&format!("; check whether it arrived, and to send it again run `{RETRY_UNCERTAIN}`"));
        Ok(self.store.mark_uncertain(d, &why)?.then_some((DeliveryStatus::Uncertain, Some(why))))
    }

    /// One attempt of the delivery `seen` (as it was read): claimed, attempted, finished.
    /// `again` after a cut-off attempt (see [`Payload::deliver_again`]). `None` when another
    /// process claimed it first: then it is not attempted here.
    async fn attempt(&self, seen: &DeliveryRow, again: bool) -> Result<Option<Ended>, StoreError> {
        if !self.store.claim_delivery(seen)? {
            return Ok(None);
        }
        let outcome = match serde_json::from_str::<Payload>(&seen.payload) {
            Ok(payload) if again => payload.deliver_again(self).await,
            Ok(payload) => payload.deliver(self).await,
            Err(_) => Err(DeliveryError::NotRendered { kind: seen.kind.clone(), target: seen.target.clone() }),
        };
        let (status, error, permanent) = match outcome {
            Ok(_) => (DeliveryStatus::Delivered, None, false),
            Err(e) if e.uncertain() => {
                tracing::warn!(run_id = seen.run_id, target = %seen.target, error = %e, "Delivery uncertain: it may have arrived.");
                let why = format!("{e}; check whether it arrived, and to send it again run `{RETRY_UNCERTAIN}`");
                (DeliveryStatus::Uncertain, Some(self.clean(why)), false)
            }
            Err(e) => {
                tracing::warn!(run_id = seen.run_id, target = %seen.target, error = %e, retryable = e.retryable(), "Delivery failed.");
                (DeliveryStatus::Failed, Some(self.clean(e.to_string())), !e.retryable())
            }
        };
        self.store.finish_delivery(seen.id, status, error.as_deref(), permanent)?;
        Ok(Some((status, error)))
    }
}

/// What a run reports of a delivery that an earlier attempt of it recorded.
fn earlier(row: &DeliveryRow) -> Ended {
    match row.status {
        DeliveryStatus::Delivered => {
            tracing::info!(run_id = row.run_id, target = %row.target, "Delivered by an earlier attempt of the run; not delivered again.");
            (DeliveryStatus::Delivered, None)
        }
        status => {
            let before = row.error.as_deref().map(|e| format!(": {e}")).unwrap_or_default();
            let why = format!(
                "recorded {} by an earlier attempt of this run{before}; left to the delivery retries",
                status.as_str()
            );
            (status, Some(why))
        }
    }
}
