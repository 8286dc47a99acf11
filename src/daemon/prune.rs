//! The daemon keeps the history within `history.max_age` and `history.max_runs_per_routine`
//! (SPEC §3, §9): a pruning pass at start and once an hour after, on a blocking thread, so a
//! pass that deletes many runs never holds up the timer loop. One wake-up an hour is all it
//! costs an idle daemon.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::engine::Engine;

/// How often the history is pruned after the pass at start.
pub const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// Prunes at once, then every `every`, until `stop`.
pub async fn run_loop(engine: Arc<Engine>, every: Duration, stop: CancellationToken) {
    loop {
        let pass = engine.clone();
        match tokio::task::spawn_blocking(move || pass.prune_history()).await {
            Ok(Ok(0)) => {}
            Ok(Ok(n)) => tracing::info!(
                pruned = n,
                max_age = %engine.config.history.max_age,
                max_runs_per_routine = engine.config.history.max_runs_per_routine,
                "Pruned {n} run(s) from the history."
            ),
            Ok(Err(e)) => tracing::warn!(error = %e, "Could not prune the run history; trying again in an hour."),
            Err(e) => tracing::warn!(error = %e, "The history pruning pass stopped."),
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.cancelled() => return,
        }
    }
}
