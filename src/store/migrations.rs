//! Applies the schema's migrations ([`super::schema::MIGRATIONS`], their `sqlite` text) to the
//! engine's SQLite database. Applied versions are recorded in the `schema_migrations` table
//! (`version INTEGER PRIMARY KEY, applied_at TEXT`), not in `PRAGMA user_version`; each
//! migration and its bookkeeping row are committed in one transaction, so a failed migration
//! leaves no trace.

use chrono::Utc;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::schema::{MIGRATIONS, Migration};
use super::{StoreError, to_db_time};

/// Highest applied version (0 when none). Needs the `schema_migrations`
/// table, which [`apply`] creates.
pub(crate) fn current_version(conn: &Connection) -> rusqlite::Result<i64> {
    let v: Option<i64> =
        conn.query_row("SELECT MAX(version) FROM schema_migrations", [], |r| r.get(0)).optional()?.flatten();
    Ok(v.unwrap_or(0))
}

/// Applies every migration newer than the database, one transaction each.
/// Returns the resulting version. Refuses a database newer than this binary.
pub(crate) fn migrate(conn: &mut Connection) -> Result<i64, StoreError> {
    apply(conn, MIGRATIONS)
}

/// [`migrate`] against an explicit list (tests use their own lists).
pub(crate) fn apply(conn: &mut Connection, migrations: &[Migration]) -> Result<i64, StoreError> {
    let supported = migrations.last().map_or(0, |m| m.version);
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
             version    INTEGER PRIMARY KEY,
             applied_at TEXT
         );",
    )?;
    let found = current_version(conn)?;
    if found > supported {
        return Err(StoreError::NewerSchema { found, supported });
    }
    let mut version = found;
    let mut applied = 0;
    for &Migration { version: v, sqlite: sql, .. } in migrations.iter().filter(|m| m.version > found) {
        // IMMEDIATE takes the write lock up front, and the version is read
        // again under it, so two processes opening the same file at once
        // cannot both apply a migration.
        let run = |conn: &mut Connection| -> rusqlite::Result<bool> {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            if current_version(&tx)? >= v {
                return Ok(false);
            }
            tx.execute_batch(sql)?;
            tx.execute(
                "INSERT INTO schema_migrations (version, applied_at) VALUES (?1, ?2)",
                params![v, to_db_time(Utc::now())],
            )?;
            tx.commit()?;
            Ok(true)
        };
        if run(conn).map_err(|cause| StoreError::Migration { version: v, cause })? {
            tracing::debug!(version = v, "applied database migration");
            applied += 1;
        }
        version = v;
    }
    log_applied(found, version, applied);
    Ok(version)
}

/// One line for a schema brought up to date at open: a new database is created at `version`,
/// an older one is migrated from `found` (each step is logged at DEBUG).
pub(crate) fn log_applied(found: i64, version: i64, applied: usize) {
    match (applied, found) {
        (0, _) => {}
        (_, 0) => tracing::info!(version, "Created the database schema (version {version})."),
        _ => tracing::info!(from = found, version, "Migrated the database schema from version {found} to {version}."),
    }
}
