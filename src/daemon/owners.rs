//! Runs of an owner that was still alive when the daemon started. A daemon killed as PID 1 of a
//! container and started again at once finds the old process still exiting: its owner lock is
//! held, so its runs are judged alive at start, and nothing judged them again, leaving them
//! `running` for good. For each such owner a thread waits on its lock (an event: the kernel
//! lets it go when the process ends); then the runs are judged again, and those interrupted
//! are queued as their next attempt per `retry`, as at start. On PostgreSQL the cluster's sweep
//! does this by leases (`cluster.rs`).

use std::sync::Arc;

use tokio::sync::mpsc::unbounded_channel;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::dispatch::Dispatcher;
use crate::store::StoreError;

/// Starts waiting on every live foreign owner of an unfinished run; `None` when there is none.
pub fn watch(dispatcher: Arc<Dispatcher>, stop: CancellationToken) -> Result<Option<JoinHandle<()>>, StoreError> {
    let store = dispatcher.engine.store.clone();
    let owners = store.live_foreign_owners()?;
    if owners.is_empty() {
        return Ok(None);
    }
    tracing::info!(owners = owners.len(), "Runs of a process still ending are judged again once it has ended.");
    let (gone_tx, mut gone) = unbounded_channel::<i64>();
    for owner in owners {
        let (store, gone_tx) = (store.clone(), gone_tx.clone());
        // A plain thread, not the blocking pool: a daemon that stops first must not wait on it.
        let started = std::thread::Builder::new().name("owner-wait".into()).spawn(move || {
            if let Err(e) = store.wait_for_owner(owner) {
                tracing::warn!(owner, error = %e, "Cannot wait for the owner of earlier runs; they are judged again now.");
            }
            let _ = gone_tx.send(owner);
        });
        if let Err(e) = started {
            tracing::warn!(owner, error = %e, "Cannot start a thread to wait for the owner of earlier runs.");
        }
    }
    drop(gone_tx);
    Ok(Some(tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                owner = gone.recv() => {
                    let Some(_) = owner else { return };
                    judge_again(&dispatcher).await;
                }
            }
        }
    })))
}

/// Interrupts the runs whose owner is gone now and queues them again per `retry`.
async fn judge_again(dispatcher: &Arc<Dispatcher>) {
    let d = dispatcher.clone();
    let judged = tokio::task::spawn_blocking(move || -> Result<usize, StoreError> {
        let lost = d.engine.store.interrupt_orphans()?;
        for id in &lost {
            tracing::warn!(
                run_id = id,
                "Run {id} was interrupted: the process running it ended after this daemon started."
            );
        }
        Ok(d.requeue_interrupted()?.len())
    })
    .await;
    match judged {
        Ok(Ok(requeued)) if requeued > 0 => dispatcher.look_again(),
        Ok(Ok(_)) => {}
        Ok(Err(e)) => tracing::warn!(error = %e, "Could not judge the runs of an ended process again."),
        Err(e) => tracing::warn!(error = %e, "Judging the runs of an ended process again stopped."),
    }
}
