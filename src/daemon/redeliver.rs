//! The daemon's delivery retries: deliveries that failed (or were left
//! `pending` by a process that stopped) are attempted again with backoff,
//! until they arrive or run out of attempts; one whose attempt a stopped
//! process cut off is judged at once (see `Deliverer::retry`); `routines
//! deliver --retry` attempts the rest by hand.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::engine::Engine;
use crate::store::{DeliveryRow, DeliveryStatus};

/// When deliveries are attempted again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// How often the daemon looks for deliveries to attempt again.
    pub tick: Duration,
    /// The wait after the first failed attempt; it doubles per attempt.
    pub first: Duration,
    /// The longest wait between attempts.
    pub max: Duration,
    /// Attempts after which a delivery waits for `routines deliver --retry`.
    pub max_attempts: u32,
}

impl Default for Backoff {
    /// Every 30 s, waits of 1 minute doubling to an hour, 20 attempts
    /// (about 15 hours of trying).
    fn default() -> Self {
        Backoff {
            tick: Duration::from_secs(30),
            first: Duration::from_secs(60),
            max: Duration::from_secs(3600),
            max_attempts: 20,
        }
    }
}

impl Backoff {
    /// Whether a delivery is due for another attempt at `now`: never
    /// attempted, or failed and its wait has passed.
    pub fn due(&self, d: &DeliveryRow, now: DateTime<Utc>) -> bool {
        match d.status {
            DeliveryStatus::Pending => true,
            DeliveryStatus::Failed if d.attempts < self.max_attempts => {
                let doublings = d.attempts.saturating_sub(1).min(20);
                let wait = self.first.saturating_mul(1 << doublings).min(self.max);
                d.updated_at + chrono::Duration::from_std(wait).unwrap_or(chrono::Duration::MAX) <= now
            }
            _ => false,
        }
    }
}

/// Attempts due deliveries every `backoff.tick` until `stop` (and once at
/// start, for what a stopped process left behind).
pub async fn run_loop(engine: Arc<Engine>, clock: Arc<dyn Clock>, backoff: Backoff, stop: CancellationToken) {
    loop {
        let now = clock.now();
        // A permanent failure waits for a person: `routines deliver --retry` after a fix.
        match engine.deliverer.retry(&|d| !d.permanent && backoff.due(d, now)).await {
            Ok(done) => {
                for r in done {
                    tracing::info!(
                        run_id = r.row.run_id,
                        target = %r.row.target,
                        status = %r.status.as_str(),
                        error = r.error.as_deref().unwrap_or(""),
                        "Delivery attempted again."
                    );
                }
            }
            Err(e) => tracing::error!(error = %e, "Could not retry deliveries."),
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff.tick) => {}
            _ = stop.cancelled() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(status: DeliveryStatus, attempts: u32, updated_at: &str) -> DeliveryRow {
        DeliveryRow {
            id: 1,
            run_id: 1,
            seq: 0,
            kind: "mail".into(),
            target: "ops@example.com".into(),
            on_failure: false,
            payload: "{}".into(),
            status,
            attempts,
            error: None,
            updated_at: t(updated_at),
            permanent: false,
            owner: None,
            pid: None,
        }
    }

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn waits_double_from_a_minute_to_an_hour_and_stop_after_the_last_attempt() {
        let b = Backoff::default();
        let failed_at = "2026-03-02T10:00:00Z";
        let due_after = |attempts| {
            (0..=120).find(|m| {
                b.due(&row(DeliveryStatus::Failed, attempts, failed_at), t(failed_at) + chrono::Duration::minutes(*m))
            })
        };
        assert_eq!(due_after(1), Some(1));
        assert_eq!(due_after(2), Some(2));
        assert_eq!(due_after(4), Some(8));
        assert_eq!(due_after(7), Some(60));
        assert_eq!(due_after(19), Some(60));
        assert_eq!(due_after(20), None);
        assert!(b.due(&row(DeliveryStatus::Pending, 0, failed_at), t(failed_at)));
        for s in [DeliveryStatus::Delivered, DeliveryStatus::Sending, DeliveryStatus::Uncertain] {
            assert!(!b.due(&row(s, 1, failed_at), t("2027-01-01T00:00:00Z")), "{s:?}");
        }
    }
}
