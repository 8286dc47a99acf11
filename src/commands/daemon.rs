//! `routines daemon`: every trigger until SIGINT or SIGTERM.

use std::sync::Arc;

use routines::clock::SystemClock;
use routines::config::Config;
use routines::daemon::DaemonError;
use routines::daemon::lock::DaemonLock;
use routines::daemon::service;
use tokio::signal::unix::{SignalKind, signal};

use crate::app::{Error, engine, routines};

pub async fn run(config: Config) -> Result<(), Error> {
    let lock = DaemonLock::acquire(&config.data_dir).map_err(DaemonError::from)?;
    let loaded = routines(&config);
    let engine = engine(config, true)?;
    let mut terminate = signal(SignalKind::terminate()).map_err(Error::Signals)?;
    let mut interrupt = signal(SignalKind::interrupt()).map_err(Error::Signals)?;
    let stop = async move {
        tokio::select! {
            _ = terminate.recv() => tracing::info!("SIGTERM received."),
            _ = interrupt.recv() => tracing::info!("SIGINT received."),
        }
    };
    service::run(engine, loaded, Arc::new(SystemClock), stop).await?;
    drop(lock);
    Ok(())
}
