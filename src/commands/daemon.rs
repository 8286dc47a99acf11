//! `routines daemon`: every trigger until SIGINT or SIGTERM.

use std::sync::Arc;

use routines::clock::SystemClock;
use routines::config::Config;
use routines::daemon::DaemonError;
use routines::daemon::lock::DaemonLock;
use routines::daemon::{announce, service};
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

use crate::app::{Error, engine, routines};

pub async fn run(config: Config) -> Result<(), Error> {
    // One daemon per SQLite database: the data folder's lock. On PostgreSQL the daemons of a
    // cluster coordinate in the database, also when they share a data folder.
    let shared = config.store_url(&routines::config::ProcessEnv).is_some();
    let lock = if shared { None } else { Some(DaemonLock::acquire(&config.data_dir).map_err(DaemonError::from)?) };
    let loaded = routines(&config);
    let engine = engine(config, true)?;
    let mut terminate = signal(SignalKind::terminate()).map_err(Error::Signals)?;
    let mut interrupt = signal(SignalKind::interrupt()).map_err(Error::Signals)?;
    // The first SIGTERM or SIGINT stops in order; a second one cuts the grace period short.
    let (stop, hurry) = (CancellationToken::new(), CancellationToken::new());
    let (stop_tx, hurry_tx) = (stop.clone(), hurry.clone());
    tokio::spawn(async move {
        for n in 0..2 {
            tokio::select! {
                _ = terminate.recv() => tracing::info!("SIGTERM received."),
                _ = interrupt.recv() => tracing::info!("SIGINT received."),
            }
            if n == 0 {
                announce("routines daemon: stopping; runs get their grace period (signal again to stop at once)");
                stop_tx.cancel();
            } else {
                announce("routines daemon: stopping at once; running runs are interrupted and queued again");
                hurry_tx.cancel();
            }
        }
    });
    service::run(engine, loaded, Arc::new(SystemClock), stop.cancelled_owned(), hurry).await?;
    drop(lock);
    Ok(())
}
