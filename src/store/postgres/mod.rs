//! The PostgreSQL backend: tokio-postgres connections in a deadpool pool, behind the same
//! synchronous [`Store`](super::Store) methods as SQLite.
//!
//! **A sync facade over an async driver.** The store's methods are synchronous and are called
//! both from plain threads and from inside tokio tasks, on multi-thread and current-thread
//! runtimes alike. Calling `block_on` inside a runtime panics, and `block_in_place` panics on a
//! current-thread runtime, so neither can serve every caller. Instead the pool lives on its
//! own runtime, on its own thread ([`Pg::connect`]): a store call sends the work there as a
//! future and waits for the answer on a std channel, blocking its caller briefly, as the SQLite
//! backend does under its mutex. The runtime is dropped on its own thread when the last clone
//! of the store goes away, never inside another runtime.

pub mod cluster;
mod deliveries;
mod history;
pub mod migrations;
mod paused;
mod prune;
mod queue;
mod rows;
mod runs;
mod schedule;
mod status;
mod tls;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, PoolError, RecyclingMethod, Runtime};
use tokio_postgres::error::SqlState;

use super::{DatabaseUrl, StoreError};

pub(crate) use deliveries::OwnedDelivery;
pub use rows::{opt_time, time};
pub(crate) use runs::{OwnedEnd, OwnedEvent};
pub(crate) use schedule::OwnedFire;

/// A pooled connection, as the work sent by [`Pg::call`] receives it.
pub type Client = deadpool_postgres::Object;

/// Connections kept open by one process.
const POOL_SIZE: usize = 8;
/// How long a call waits for a free connection, or for a new one to be made.
const POOL_WAIT: Duration = Duration::from_secs(30);

/// Handle to the pool; cheap to clone, clones share it.
#[derive(Clone)]
pub struct Pg {
    inner: Arc<Inner>,
}

struct Inner {
    runtime: tokio::runtime::Handle,
    pool: Pool,
    url: DatabaseUrl,
    /// This process as a node of the cluster (see `cluster.rs`).
    presence: std::sync::Mutex<cluster::Presence>,
    /// Dropped with the last handle: the runtime's thread then ends, and drops the runtime.
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Pg {
    /// Starts the pool's runtime thread and checks that the database answers. Nothing here
    /// logs or returns the password (see [`DatabaseUrl`]).
    pub fn connect(url: &DatabaseUrl) -> Result<Pg, StoreError> {
        let bad = |why: String| StoreError::BadPostgresUrl { url: url.to_string(), why: url.scrub(&why) };
        let (plain, tls) = tls::split(url.expose()).map_err(|e| bad(e.to_string()))?;
        let config: tokio_postgres::Config = plain.parse().map_err(|e: tokio_postgres::Error| bad(e.to_string()))?;
        let connector = tls::connector(&tls).map_err(|e| bad(e.to_string()))?;
        let manager =
            Manager::from_config(config, connector, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(POOL_WAIT))
            .create_timeout(Some(POOL_WAIT))
            .build()
            .map_err(|e| StoreError::PostgresUnavailable { url: url.to_string(), why: url.scrub(&e.to_string()) })?;
        let (runtime, stop) = spawn_runtime().map_err(|e| StoreError::PostgresUnavailable {
            url: url.to_string(),
            why: format!("could not start the database thread: {e}"),
        })?;
        let pg = Pg {
            inner: Arc::new(Inner {
                runtime,
                pool,
                url: url.clone(),
                presence: std::sync::Mutex::new(cluster::Presence::default()),
                _stop: stop,
            }),
        };
        // The server's refusal at the start (no `pg_hba.conf` entry, a wrong password, no such
        // database) is why the database cannot be reached, said as such with its hint.
        pg.ping().map_err(|e| match e {
            StoreError::Postgres(e) => match e.as_db_error() {
                Some(db) => StoreError::PostgresUnavailable {
                    url: url.to_string(),
                    why: url.scrub(&format!("the server refused: {} {}", db.severity(), db.message())),
                },
                None => StoreError::Postgres(e),
            },
            other => other,
        })?;
        Ok(pg)
    }

    /// Whether the database answers now: one `SELECT 1` on a pooled connection.
    pub(crate) fn ping(&self) -> Result<(), StoreError> {
        self.call(|c| async move {
            c.simple_query("SELECT 1").await?;
            Ok(())
        })
    }

    /// The URL, password redacted.
    pub fn url(&self) -> &DatabaseUrl {
        &self.inner.url
    }

    /// Runs `work` with a pooled connection on the pool's runtime and waits for its result.
    /// Blocks the calling thread (also a tokio worker) until the database answers; must not be
    /// called from inside `work`.
    pub fn call<T, F, Fut>(&self, work: F) -> Result<T, StoreError>
    where
        F: FnOnce(Client) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, StoreError>> + Send + 'static,
        T: Send + 'static,
    {
        let pool = self.inner.pool.clone();
        let url = self.inner.url.clone();
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.inner.runtime.spawn(async move {
            let result = match pool.get().await {
                Ok(client) => work(client).await,
                Err(e) => Err(pool_error(&url, e)),
            };
            let _ = tx.send(result);
        });
        rx.recv().map_err(|_| StoreError::PostgresUnavailable {
            url: self.inner.url.to_string(),
            why: "the database thread stopped".into(),
        })?
    }
}

/// A connection taken out of the pool with a transaction open on it, between two calls
/// (see `runs.rs`, `claim_run`). Dropped without [`Pg::call_held`], its connection is closed
/// rather than returned to the pool, so the server rolls the transaction back.
pub(super) struct Held(Option<Client>);

impl Held {
    pub(super) fn new(client: Client) -> Held {
        Held(Some(client))
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(client) = self.0.take() {
            drop(deadpool_postgres::Object::take(client));
        }
    }
}

impl Pg {
    /// [`Pg::call`] on the connection `held` holds instead of one from the pool. `work` must
    /// end the transaction (COMMIT or ROLLBACK) before it returns the connection to the pool.
    pub(super) fn call_held<T, F, Fut>(&self, mut held: Held, work: F) -> Result<T, StoreError>
    where
        F: FnOnce(Client) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, StoreError>> + Send + 'static,
        T: Send + 'static,
    {
        let Some(client) = held.0.take() else {
            return Err(StoreError::PostgresUnavailable {
                url: self.inner.url.to_string(),
                why: "a held connection was used twice (a bug)".into(),
            });
        };
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.inner.runtime.spawn(async move {
            let _ = tx.send(work(client).await);
        });
        rx.recv().map_err(|_| StoreError::PostgresUnavailable {
            url: self.inner.url.to_string(),
            why: "the database thread stopped".into(),
        })?
    }
}

/// A current-thread runtime on a thread of its own, kept until the sender is dropped.
fn spawn_runtime() -> std::io::Result<(tokio::runtime::Handle, tokio::sync::oneshot::Sender<()>)> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let handle = runtime.handle().clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    std::thread::Builder::new().name("routines-postgres".into()).spawn(move || {
        runtime.block_on(async {
            let _ = stopped.await;
        });
    })?;
    Ok((handle, stop))
}

fn pool_error(url: &DatabaseUrl, e: PoolError) -> StoreError {
    match e {
        PoolError::Backend(e) if e.as_db_error().is_some() => StoreError::Postgres(e),
        other => {
            // The causes too: "error performing TLS handshake" says nothing without "invalid
            // peer certificate: UnknownIssuer".
            let mut why = other.to_string();
            let mut source = std::error::Error::source(&other);
            while let Some(cause) = source {
                let text = cause.to_string();
                if !why.contains(&text) {
                    why = format!("{why}: {text}");
                }
                source = cause.source();
            }
            if why.contains("TLS handshake") {
                why.push_str(" (check sslmode and sslrootcert in the URL)");
            }
            StoreError::PostgresUnavailable { url: url.to_string(), why: url.scrub(&why) }
        }
    }
}

/// Whether a PostgreSQL error may pass by itself: the write is worth trying again.
pub(super) fn is_transient(e: &tokio_postgres::Error) -> bool {
    let Some(code) = e.code() else { return e.is_closed() || e.as_db_error().is_none() };
    [
        SqlState::T_R_SERIALIZATION_FAILURE,
        SqlState::T_R_DEADLOCK_DETECTED,
        SqlState::TOO_MANY_CONNECTIONS,
        SqlState::DISK_FULL,
        SqlState::ADMIN_SHUTDOWN,
        SqlState::CANNOT_CONNECT_NOW,
        SqlState::LOCK_NOT_AVAILABLE,
    ]
    .contains(code)
}

/// Whether `e` is a unique violation.
pub(super) fn is_unique_violation(e: &tokio_postgres::Error) -> bool {
    e.code() == Some(&SqlState::UNIQUE_VIOLATION)
}

/// Whether `e` is a foreign-key violation.
pub(super) fn is_foreign_key_violation(e: &tokio_postgres::Error) -> bool {
    e.code() == Some(&SqlState::FOREIGN_KEY_VIOLATION)
}
