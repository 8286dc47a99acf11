//! `routines daemon`: every trigger until SIGINT or SIGTERM.

use std::process::ExitCode;
use std::sync::Arc;

use routines::config::Config;
use routines::daemon::clock::SystemClock;
use routines::daemon::lock::DaemonLock;
use routines::daemon::service;
use tokio::signal::unix::{SignalKind, signal};

use crate::app::{engine, routines};

pub async fn run(config: Config) -> anyhow::Result<ExitCode> {
    let lock = DaemonLock::acquire(&config.data_dir)?;
    let loaded = routines(&config);
    let engine = engine(config, true)?;
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let stop = async move {
        tokio::select! {
            _ = terminate.recv() => tracing::info!("SIGTERM received."),
            _ = interrupt.recv() => tracing::info!("SIGINT received."),
        }
    };
    service::run(engine, loaded, Arc::new(SystemClock), stop).await?;
    drop(lock);
    Ok(ExitCode::SUCCESS)
}
