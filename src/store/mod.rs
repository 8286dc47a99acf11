//! The engine's state: runs, run events, deliveries, schedule state and long-term memory,
//! in one SQLite file (the default) or in PostgreSQL ([`Location`]).
//!
//! [`Store`] is one type with two backends. Each public method does its checks and
//! redaction once, then runs the SQLite statements written beside it in this folder, or the
//! PostgreSQL ones of [`postgres`] (a backend is a folder; the statements differ in spelling
//! only, and one conformance suite runs against both).
//!
//! On SQLite the store owns one connection behind a mutex; clones share it. Opening a
//! store sets the pragmas (WAL journal, `busy_timeout` 5 s, foreign keys on,
//! `synchronous = NORMAL`) and applies pending migrations from
//! [`schema::MIGRATIONS`] (one list, both dialects), each in its own transaction. Applied versions
//! are recorded in the `schema_migrations` table (not `PRAGMA user_version`).
//!
//! Timestamps are stored as RFC 3339 text in UTC with millisecond precision
//! and a `Z` suffix (see [`to_db_time`]), so text order is time order.

mod claim;
mod cluster;
mod deliveries;
mod greetings;
mod history;
mod location;
pub mod migrations;
mod orphans;
pub(crate) mod pause;
pub mod postgres;
pub(crate) mod prune;
mod queue;
mod runs;
mod schedule;
pub mod schema;
mod scrub;
mod status;
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
pub(crate) mod testing;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use rusqlite::Connection;
use rusqlite::types::Type;

pub use claim::Claim;
pub use cluster::NodeRow;
pub use deliveries::{DeliveryRow, DeliveryStatus, NewDelivery, Recorded};
pub use greetings::GreetingRun;
pub use history::{RunDetail, RunFilter};
pub use location::{DatabaseUrl, Location};
pub use orphans::process_alive;
pub use pause::PausedFire;
pub use prune::HistoryLimits;
pub use queue::{QueuedFire, StoredTrigger};
pub use runs::{EventKind, EventRow, NewEvent, NewRun, RunKind, RunOutcome, RunRow, RunStatus, UnknownVariant};
pub use schedule::{FireClaim, NewFire, SkipCounts, reason};
pub use scrub::Scrub;
pub use status::{ATTENTION_STATUSES, DayStatusCount, RunBrief, RunExtra, RunMark, RunPage, RunPageQuery};

/// How long a statement waits for another process's lock before failing.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Errors from opening or using the database.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "could not create the database directory {}: {cause}; check that data_dir points to a \
         location this user may write to",
        path.display()
    )]
    CreateDir { path: PathBuf, cause: std::io::Error },
    #[error(
        "could not open the database {}: {cause}; check the file's permissions, that it is an \
         SQLite database, and that data_dir points to a writable directory",
        path.display()
    )]
    Open { path: PathBuf, cause: rusqlite::Error },
    #[error(
        "database migration to schema version {version} failed: {cause}; the database was left \
         at the previous version; restore a backup or report this as a bug"
    )]
    Migration { version: i64, cause: rusqlite::Error },
    #[error(
        "the database uses schema version {found} but this build of routines supports at most \
         version {supported}; upgrade routines, or point data_dir at a different database"
    )]
    NewerSchema { found: i64, supported: i64 },
    #[error(
        "routine {routine:?} already has a run scheduled for {}; this fire was already recorded, \
         so it is not started twice",
        to_db_time(*scheduled_for)
    )]
    DuplicateFire { routine: String, scheduled_for: DateTime<Utc> },
    #[error("run {0} does not exist in the database")]
    RunNotFound(i64),
    #[error(
        "the database connection is unusable because a thread panicked while using it; \
         restart routines"
    )]
    Poisoned,
    #[error("database operation failed: {0}{note}", note = full_disk_note(.0))]
    Sqlite(#[from] rusqlite::Error),
    #[error("database operation failed: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    #[error(
        "${var} holds {url}, which is not a PostgreSQL URL; set it to postgres://USER:PASSWORD@HOST/DATABASE, \
         or unset it to keep the state in SQLite in data_dir"
    )]
    BadUrl { var: String, url: String },
    #[error("the PostgreSQL URL {url} cannot be used: {why}; check its host, port, user and options")]
    BadPostgresUrl { url: String, why: String },
    #[error(
        "cannot reach the PostgreSQL database {url}: {why}; check that the server runs and accepts \
         connections from this machine, and the user, password and database in the URL"
    )]
    PostgresUnavailable { url: String, why: String },
    #[error(
        "PostgreSQL migration to schema version {version} failed: {cause}; the database was left at the \
         previous version; check that the user may create tables, or report this as a bug"
    )]
    PostgresMigration { version: i64, cause: tokio_postgres::Error },
    #[error("a value in the database is unreadable: {0}; it was written by another program or edited by hand")]
    Unreadable(String),
    /// The run's node lost its lease and another node took the run over (SPEC §12).
    #[error(
        "run {0} was taken over by another node after this node's lease lapsed (its heartbeat did not reach the \
         database in time); this attempt's result is not recorded and nothing is delivered for it"
    )]
    TakenOver(i64),
    /// A caller asked for the SQLite connection of a PostgreSQL store.
    #[error("internal error: SQLite access asked of a PostgreSQL store (a bug in routines; please report it)")]
    NotSqlite,
    /// A write done for several callers at once failed; each gets this.
    #[error("{0}")]
    Batch(String),
    /// The SQLite file was deleted or replaced under this process: what is written now would go
    /// to a file nobody reads again.
    #[error("{0}; no work is taken into it")]
    Gone(String),
}

/// Names the cause where SQLite only says "database or disk is full".
fn full_disk_note(e: &rusqlite::Error) -> &'static str {
    match e {
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::DiskFull => {
            " (the data folder's disk is full; free space there)"
        }
        _ => "",
    }
}

impl StoreError {
    /// Whether the failure may pass by itself (a full disk, a busy or locked database, an I/O
    /// error): the write is worth trying again.
    pub fn is_transient(&self) -> bool {
        use rusqlite::ErrorCode as C;
        match self {
            StoreError::Sqlite(rusqlite::Error::SqliteFailure(f, _)) => {
                matches!(f.code, C::DiskFull | C::DatabaseBusy | C::DatabaseLocked | C::SystemIoFailure)
            }
            StoreError::Postgres(e) => postgres::is_transient(e),
            StoreError::Batch(_) | StoreError::PostgresUnavailable { .. } => true,
            _ => false,
        }
    }

    /// The exit code of a command stopped by it: 1, a failure; each message says what to do.
    pub fn exit_code(&self) -> u8 {
        1
    }
}

impl Store {
    /// Whether the SQLite file at the store's path is still the one it opened. Deleted or
    /// replaced (another inode) under a running process, every write would go to the open,
    /// unlinked file: asked before work is accepted, so no fire is acknowledged into it.
    /// Always `Ok` for PostgreSQL and in-memory stores.
    pub fn still_there(&self) -> Result<(), StoreError> {
        let Some(opened) = self.file else { return Ok(()) };
        let shown = self.path.display();
        match std::fs::metadata(&self.path) {
            Ok(m) if (m.dev(), m.ino()) == opened => Ok(()),
            Ok(_) => Err(StoreError::Gone(format!("the database file {shown} was replaced by another file"))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(StoreError::Gone(format!("the database file {shown} was deleted")))
            }
            Err(e) => Err(StoreError::Gone(format!("the database file {shown} cannot be read: {e}"))),
        }
    }
}

/// Handle to the database. Cheap to clone; clones share one connection (SQLite) or one
/// pool (PostgreSQL).
#[derive(Clone)]
pub struct Store {
    backend: Backend,
    /// The SQLite file (`:memory:` for an in-memory store), or, for PostgreSQL, the local data
    /// folder's `routines.db` path, beside which this machine's owner locks live.
    path: PathBuf,
    /// What written text passes through ([`Store::with_scrub`]).
    scrub: Option<Arc<dyn Scrub>>,
    /// The SQLite file's device and inode when it was opened ([`Store::still_there`]).
    file: Option<(u64, u64)>,
}

#[derive(Clone)]
enum Backend {
    Sqlite(Arc<Mutex<Connection>>),
    Postgres(postgres::Pg),
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.backend {
            Backend::Sqlite(_) => f.debug_struct("Store").field("path", &self.path).finish(),
            Backend::Postgres(pg) => f.debug_struct("Store").field("url", pg.url()).finish(),
        }
    }
}

impl Store {
    /// Opens (creating if needed) the database at `path`, creating parent
    /// directories, setting pragmas and applying pending migrations.
    ///
    /// Fails with [`StoreError::NewerSchema`] if the file was written by a
    /// newer build with migrations this one does not know.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|cause| StoreError::CreateDir { path: parent.to_path_buf(), cause })?;
        }
        let open_err = |cause| StoreError::Open { path: path.to_path_buf(), cause };
        let mut conn = Connection::open(path).map_err(open_err)?;
        configure(&conn, true).map_err(open_err)?;
        let version = migrations::migrate(&mut conn)?;
        tracing::debug!(path = %path.display(), version, "opened database");
        let file = std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()));
        Ok(Store { backend: Backend::Sqlite(Arc::new(Mutex::new(conn))), path: path.to_path_buf(), scrub: None, file })
    }

    /// Opens the store at `location`: [`Store::open`] for SQLite, [`Store::open_postgres`]
    /// for PostgreSQL.
    pub fn open_at(location: &Location) -> Result<Store, StoreError> {
        match location {
            Location::Sqlite(path) => Store::open(path),
            Location::Postgres { url, data_dir } => Store::open_postgres(url, Some(data_dir)),
        }
    }

    /// Connects to the PostgreSQL database at `url` and applies pending migrations. With a
    /// `data_dir`, this machine's processes own their runs through locks in it (see
    /// `store/orphans.rs`); without one, through their pids.
    pub fn open_postgres(url: &DatabaseUrl, data_dir: Option<&Path>) -> Result<Store, StoreError> {
        let pg = postgres::Pg::connect(url)?;
        let version = postgres::migrations::migrate(&pg)?;
        tracing::debug!(url = %url, version, "opened database");
        let path = data_dir.map_or_else(|| PathBuf::from(":memory:"), |d| d.join("routines.db"));
        Ok(Store { backend: Backend::Postgres(pg), path, scrub: None, file: None })
    }

    /// The PostgreSQL backend, when this store uses it.
    pub fn postgres(&self) -> Option<&postgres::Pg> {
        match &self.backend {
            Backend::Postgres(pg) => Some(pg),
            Backend::Sqlite(_) => None,
        }
    }

    /// A private in-memory database with all migrations applied (for tests).
    pub fn open_in_memory() -> Result<Store, StoreError> {
        let path = PathBuf::from(":memory:");
        let open_err = |cause| StoreError::Open { path: path.clone(), cause };
        let mut conn = Connection::open_in_memory().map_err(open_err)?;
        configure(&conn, false).map_err(open_err)?;
        migrations::migrate(&mut conn)?;
        Ok(Store { backend: Backend::Sqlite(Arc::new(Mutex::new(conn))), path, scrub: None, file: None })
    }

    /// The SQLite database file's path (`:memory:` for an in-memory store); `None` for
    /// PostgreSQL.
    pub fn path(&self) -> Option<&Path> {
        matches!(self.backend, Backend::Sqlite(_)).then_some(self.path.as_path())
    }

    /// Highest migration version applied to this database.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        match &self.backend {
            Backend::Postgres(pg) => postgres::migrations::current_version(pg),
            Backend::Sqlite(_) => self.with_conn(migrations::current_version),
        }
    }

    /// Runs `f` with exclusive use of the SQLite connection. For multi-statement
    /// atomic work, open a transaction inside `f` with
    /// `conn.unchecked_transaction()`. A PostgreSQL store answers [`StoreError::NotSqlite`].
    pub fn with_conn<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, StoreError> {
        let Backend::Sqlite(conn) = &self.backend else { return Err(StoreError::NotSqlite) };
        let guard = conn.lock().map_err(|_| StoreError::Poisoned)?;
        Ok(f(&guard)?)
    }
}

/// Sets the connection pragmas. `wal` is false for in-memory databases,
/// which cannot use WAL.
///
/// Switching a database to WAL takes an exclusive lock for which SQLite does not always call
/// the busy handler: twenty processes opening a new database at once saw "database is locked"
/// here. The mode is therefore only set when it is not WAL already, and a busy answer is
/// tried again for up to [`BUSY_TIMEOUT`].
fn configure(conn: &Connection, wal: bool) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    if wal {
        let started = std::time::Instant::now();
        loop {
            match set_wal(conn) {
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if matches!(e.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
                        && started.elapsed() < BUSY_TIMEOUT =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                other => {
                    other?;
                    break;
                }
            }
        }
    }
    conn.pragma_update(None, "foreign_keys", true)?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    Ok(())
}

/// Puts the database in WAL mode unless it is already.
fn set_wal(conn: &Connection) -> rusqlite::Result<()> {
    let current: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0))?;
    if current.eq_ignore_ascii_case("wal") {
        return Ok(());
    }
    let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(mode, "SQLite refused WAL journal mode (is the database on a network filesystem?)");
    }
    Ok(())
}

/// Formats a timestamp the way the database stores it:
/// `2025-01-31T08:00:00.000Z`.
pub fn to_db_time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Reads a NOT NULL timestamp column written by [`to_db_time`].
pub fn time_column(row: &rusqlite::Row<'_>, idx: usize) -> rusqlite::Result<DateTime<Utc>> {
    let text: String = row.get(idx)?;
    parse_time(idx, &text)
}

/// Reads a nullable timestamp column written by [`to_db_time`].
pub fn opt_time_column(row: &rusqlite::Row<'_>, idx: usize) -> rusqlite::Result<Option<DateTime<Utc>>> {
    let text: Option<String> = row.get(idx)?;
    text.map(|t| parse_time(idx, &t)).transpose()
}

fn parse_time(idx: usize, text: &str) -> rusqlite::Result<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(idx, Type::Text, Box::new(e)))
}

/// u64 counters are stored as SQLite integers; saturate instead of wrapping.
pub(crate) fn to_db_int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Reads back a counter written by [`to_db_int`]; negatives become 0.
pub(crate) fn from_db_int(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn table_names(store: &Store) -> Vec<String> {
        store
            .with_conn(|c| {
                let mut stmt = c.prepare(
                    "SELECT name FROM sqlite_master WHERE type = 'table' \
                     AND name NOT LIKE 'memories_fts_%' AND name NOT LIKE 'sqlite_%' ORDER BY name",
                )?;
                stmt.query_map([], |r| r.get(0))?.collect()
            })
            .unwrap()
    }

    #[test]
    fn open_creates_parent_dirs_and_applies_migrations_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/deeper/routines.db");
        let store = Store::open(&path).unwrap();
        assert!(path.exists());
        assert_eq!(store.path(), Some(path.as_path()));
        assert_eq!(store.schema_version().unwrap(), schema::latest_version());
        assert_eq!(
            table_names(&store),
            [
                "deliveries",
                "greeting_plans",
                "memories",
                "memories_fts",
                "nodes",
                "routine_state",
                "run_events",
                "run_hours",
                "runs",
                "schedule_state",
                "schema_migrations",
                "sessions"
            ]
        );
        drop(store);

        // Reopening applies nothing new and keeps the data.
        let store = Store::open(&path).unwrap();
        let rows: Vec<i64> = store
            .with_conn(|c| {
                let mut s = c.prepare("SELECT version FROM schema_migrations ORDER BY version")?;
                s.query_map([], |r| r.get(0))?.collect()
            })
            .unwrap();
        let expected: Vec<i64> = schema::MIGRATIONS.iter().map(|m| m.version).collect();
        assert_eq!(rows, expected);
    }

    #[test]
    fn pragmas_are_set() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("r.db")).unwrap();
        let (mode, fk, sync, timeout): (String, i64, i64, i64) = store
            .with_conn(|c| {
                Ok((
                    c.pragma_query_value(None, "journal_mode", |r| r.get(0))?,
                    c.pragma_query_value(None, "foreign_keys", |r| r.get(0))?,
                    c.pragma_query_value(None, "synchronous", |r| r.get(0))?,
                    c.pragma_query_value(None, "busy_timeout", |r| r.get(0))?,
                ))
            })
            .unwrap();
        assert_eq!((mode.as_str(), fk, sync, timeout), ("wal", 1, 1, 5000));
    }

    #[test]
    fn newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        let store = Store::open(&path).unwrap();
        let future = schema::latest_version() + 3;
        store
            .with_conn(|c| c.execute("INSERT INTO schema_migrations (version, applied_at) VALUES (?1, 'x')", [future]))
            .unwrap();
        drop(store);
        match Store::open(&path) {
            Err(StoreError::NewerSchema { found, supported }) => {
                assert_eq!((found, supported), (future, schema::latest_version()));
            }
            other => panic!("expected NewerSchema, got {other:?}"),
        }
    }

    #[test]
    fn failed_migration_rolls_back_and_names_version() {
        let mut conn = Connection::open_in_memory().unwrap();
        let step = |version, sqlite| schema::Migration { version, name: "test", sqlite, postgres: "" };
        let list = &[step(1, "CREATE TABLE a (x INTEGER);"), step(2, "CREATE TABLE b (y INTEGER); THIS IS NOT SQL;")];
        match migrations::apply(&mut conn, list) {
            Err(StoreError::Migration { version, .. }) => assert_eq!(version, 2),
            other => panic!("expected Migration error, got {other:?}"),
        }
        assert_eq!(migrations::current_version(&conn).unwrap(), 1);
        let b_exists: i64 =
            conn.query_row("SELECT COUNT(*) FROM sqlite_master WHERE name = 'b'", [], |r| r.get(0)).unwrap();
        assert_eq!(b_exists, 0);
    }

    #[test]
    fn open_error_names_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("not-a-db");
        std::fs::write(&path, b"this is plainly not an sqlite file, it is text").unwrap();
        let err = Store::open(&path).unwrap_err();
        assert!(matches!(err, StoreError::Open { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert!(msg.contains("data_dir"), "{msg}");
    }

    #[test]
    fn poisoned_lock_is_an_error() {
        let store = Store::open_in_memory().unwrap();
        let clone = store.clone();
        let joined = std::thread::spawn(move || {
            let _ = clone.with_conn(|_| -> rusqlite::Result<()> { panic!("boom") });
        })
        .join();
        assert!(joined.is_err());
        assert!(matches!(store.with_conn(|_| Ok(())), Err(StoreError::Poisoned)));
    }

    #[test]
    fn time_round_trips_with_millis() {
        let t = Utc.with_ymd_and_hms(2025, 1, 31, 8, 0, 5).unwrap() + chrono::Duration::milliseconds(42);
        assert_eq!(to_db_time(t), "2025-01-31T08:00:05.042Z");
        let store = Store::open_in_memory().unwrap();
        let back = store.with_conn(|c| c.query_row("SELECT ?1", [to_db_time(t)], |r| time_column(r, 0))).unwrap();
        assert_eq!(back, t);
    }
}
