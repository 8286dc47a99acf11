//! Work of processes that died, taken up by this daemon: at start, and in a cluster at every
//! sweep (`daemon/cluster.rs`), also for runs of other nodes whose lease lapsed.

use std::sync::Arc;

use super::Dispatcher;
use crate::store::{StoreError, reason};

impl Dispatcher {
    /// Queues again, as their next attempt, the fires interrupted by a crash, a stop or a lost
    /// node, where `retry` allows it and their instant is still inside `catch_up_window`; the
    /// others are marked not retried. Returns the runs queued again.
    pub fn requeue_interrupted(&self) -> Result<Vec<i64>, StoreError> {
        let now = self.clock.now();
        let requeued = self.engine.store.requeue_interrupted(&|name, attempt, scheduled_for| {
            let Some(r) = self.routine(name) else { return false };
            let window = chrono::Duration::from_std(r.spec.catch_up_window.get()).unwrap_or(chrono::Duration::MAX);
            let fresh = scheduled_for.is_none_or(|at| now.signed_duration_since(at) <= window);
            r.spec.enabled && attempt < r.spec.retry.attempts && fresh
        })?;
        for id in &requeued {
            tracing::warn!(run_id = id, "Run {id} was interrupted; it is queued again as its next attempt.");
        }
        Ok(requeued)
    }

    /// Reads the whole queue again now: fires were queued or given back behind the cursor.
    pub fn look_again(self: &Arc<Self>) {
        if let Ok(mut state) = self.state.lock() {
            state.look_again();
        }
        self.wake_pump();
    }

    /// The runs this daemon holds the turn of or runs now.
    pub fn held_runs(&self) -> Vec<i64> {
        self.state
            .lock()
            .map(|s| s.lanes.values().flat_map(|l| l.running.keys().copied()).collect())
            .unwrap_or_default()
    }

    /// Stops runs another node took over: this node's lease lapsed, so they run there now.
    pub fn stop_taken_over(&self, runs: &[i64]) {
        let Ok(state) = self.state.lock() else { return };
        for lane in state.lanes.values() {
            for (id, cancel) in &lane.running {
                if runs.contains(id) {
                    tracing::error!(
                        run_id = id,
                        "Run {id} was taken over by another node while this node could not renew its lease; it \
                         stops here."
                    );
                    cancel.cancel(reason::TAKEN_OVER, "another node took the run over after this node's lease lapsed");
                }
            }
        }
    }
}
