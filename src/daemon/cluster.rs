//! A daemon as a node of a cluster (SPEC §12): every few seconds it sweeps up the work of
//! nodes whose lease lapsed, and stops its own runs that another node took over.
//!
//! - A node renews its lease every quarter of `cluster.lease` (the store's heartbeat thread).
//! - A sweep runs every tenth of the lease (at least every 5 s): runs of dead owners are
//!   recorded `interrupted` and queued again per their routine's `retry`; queued fires a dead
//!   node held in its window go back to the queue; the pump then reads the queue again.
//! - So another node takes a dead node's work over between `lease` and `lease` plus one sweep
//!   after the dead node's last heartbeat.
//! - A node whose own sweeps failed (the database was out of reach) waits one lease after it
//!   reaches the database again before it judges the others, which were cut off too.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::dispatch::Dispatcher;
use crate::store::StoreError;

/// How often a node sweeps, for a lease of `lease`.
pub fn sweep_interval(lease: Duration) -> Duration {
    (lease / 10).clamp(Duration::from_millis(100), Duration::from_secs(5))
}

/// Sweeps every `every` until `stop`. After the database failed a sweep (it restarted, the
/// network broke), this node judges no other node for one `lease`: they were cut off too, and
/// need that long to renew the heartbeats they could not write meanwhile.
pub async fn sweep_loop(dispatcher: Arc<Dispatcher>, every: Duration, lease: Duration, stop: CancellationToken) {
    // At start the database just answered: this node may judge at once.
    let now = tokio::time::Instant::now();
    let mut healthy_since = Some(now.checked_sub(lease).unwrap_or(now));
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(every) => {}
        }
        let judge = healthy_since.is_some_and(|at| at.elapsed() >= lease);
        let d = dispatcher.clone();
        match tokio::task::spawn_blocking(move || sweep(&d, judge)).await {
            Ok(Ok(came_back)) => {
                healthy_since.get_or_insert_with(tokio::time::Instant::now);
                if came_back {
                    dispatcher.look_again();
                }
            }
            Ok(Err(e)) => {
                healthy_since = None;
                tracing::error!(error = %e, "Could not sweep up the work of lost nodes; trying again.");
            }
            Err(e) => tracing::error!(error = %e, "The sweep for lost nodes failed; trying again."),
        }
    }
}

/// One sweep: with `judge`, the work of lost nodes is taken over; this node's own runs that
/// another node took are stopped in any case. Returns whether fires came back to the queue.
fn sweep(d: &Dispatcher, judge: bool) -> Result<bool, StoreError> {
    let store = &d.engine.store;
    let taken = store.taken_over(d.held_runs())?;
    if !taken.is_empty() {
        d.stop_taken_over(&taken);
    }
    if !judge {
        // Its success starts the one-lease wait after an outage, so it must have reached the
        // database: with no runs of its own to look up, `taken_over` asks nothing, and a sweep
        // that "succeeded" during the outage let this node judge the others moments after the
        // database came back, before they could renew their leases.
        store.reachable()?;
        return Ok(false);
    }
    let lost = store.interrupt_orphans()?;
    for id in &lost {
        tracing::warn!(
            run_id = id,
            "Run {id} was interrupted: the node running it stopped renewing its lease (it crashed, was killed or \
             lost the database)."
        );
    }
    let requeued = d.requeue_interrupted()?;
    let released = store.release_lost()?;
    if released > 0 {
        tracing::warn!(fires = released, "Queued fires held by a lost node were given back to the queue.");
    }
    Ok(!lost.is_empty() || !requeued.is_empty() || released > 0)
}
