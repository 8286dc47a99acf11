//! The listener's accept loop, built for clients that misbehave: a request's headers must
//! arrive within [`Limits::read_timeout`] and the whole request (body included) be answered
//! within it too (else 408), at most [`Limits::max_connections`] connections are open at once
//! (one more is closed at once), and running out of file descriptors pauses accepting instead
//! of failing every request. At start the soft limit of open files is raised to the hard one,
//! so a burst of idle connections does not starve `/healthz`, the database or the watchers.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::IntoResponse;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::sync::Semaphore;

/// What the listener allows a client.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Time to send the headers, and to send the body and get the answer.
    pub read_timeout: Duration,
    /// Connections open at once.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { read_timeout: Duration::from_secs(10), max_connections: 512 }
    }
}

/// Raises the soft limit of open files to the hard limit; returns the soft limit now in force.
pub fn raise_open_files_limit() -> u64 {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit read and write the struct given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 0;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit = raised;
            }
        }
    }
    limit.rlim_cur
}

/// Serves `router` on `listener` until `shutdown` completes, then stops accepting connections
/// and returns once the requests in flight have been answered (at most 10 s more).
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    limits: Limits,
) -> std::io::Result<()> {
    if let Ok(address) = listener.local_addr() {
        tracing::info!(%address, max_connections = limits.max_connections, "Webhook listener started.");
    }
    let timeout = limits.read_timeout;
    let router = router.layer(axum::middleware::from_fn(move |request: Request, next: Next| async move {
        match tokio::time::timeout(timeout, next.run(request)).await {
            Ok(response) => response,
            Err(_) => (StatusCode::REQUEST_TIMEOUT, "the request was not sent in time\n").into_response(),
        }
    }));
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(timeout).keep_alive(true);
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // EMFILE and the like: wait for connections to close rather than spin.
                    tracing::warn!(error = %e, "Cannot accept a connection; pausing accepts briefly.");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::warn!(max = limits.max_connections, "Too many open connections; one more was closed.");
            drop(stream);
            continue;
        };
        let service = TowerToHyperService::new(router.clone());
        let connection = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            let _ = connection.await;
            drop(slot);
        });
    }
    let _ = tokio::time::timeout(Duration::from_secs(10), graceful.shutdown()).await;
    Ok(())
}
