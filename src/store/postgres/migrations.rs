//! Applies the schema's migrations ([`crate::store::schema::MIGRATIONS`], their `postgres`
//! text, the same versions as SQLite's) to a PostgreSQL database.
//!
//! Each migration runs in one transaction holding a transaction-level advisory lock, and
//! reads the version again under it, so processes opening the same database at once apply
//! each migration once.

use chrono::Utc;

use super::{Client, Pg};
use crate::store::schema::{MIGRATIONS, Migration};
use crate::store::{StoreError, to_db_time};

/// The key of the advisory lock that serializes migrations.
const MIGRATION_LOCK: i64 = 0x726f_7574_696e_6573; // "routines"

/// Applies every migration newer than the database, one transaction each, and returns the
/// resulting version. Refuses a database newer than this binary.
pub(crate) fn migrate(pg: &Pg) -> Result<i64, StoreError> {
    apply(pg, MIGRATIONS)
}

/// [`migrate`] against an explicit list (tests use their own lists).
pub(crate) fn apply(pg: &Pg, migrations: &'static [Migration]) -> Result<i64, StoreError> {
    pg.call(move |mut c| async move {
        c.batch_execute("CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, applied_at TEXT)")
            .await
            .or_else(|e| if super::is_unique_violation(&e) { Ok(()) } else { Err(e) })?;
        let supported = migrations.last().map_or(0, |m| m.version);
        let found = current(&c).await?;
        if found > supported {
            return Err(StoreError::NewerSchema { found, supported });
        }
        let mut version = found;
        let mut applied = 0;
        for &Migration { version: v, postgres: sql, .. } in migrations.iter().filter(|m| m.version > found) {
            let step = async {
                let tx = c.transaction().await?;
                tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).await?;
                let row = tx.query_one("SELECT COALESCE(MAX(version), 0) FROM schema_migrations", &[]).await?;
                if row.try_get::<_, i64>(0)? >= v {
                    return Ok(false);
                }
                tx.batch_execute(sql).await?;
                tx.execute(
                    "INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)",
                    &[&v, &to_db_time(Utc::now())],
                )
                .await?;
                tx.commit().await?;
                Ok::<_, tokio_postgres::Error>(true)
            };
            match step.await {
                Ok(true) => {
                    tracing::debug!(version = v, "applied database migration");
                    applied += 1;
                }
                Ok(false) => {}
                Err(cause) => return Err(StoreError::PostgresMigration { version: v, cause }),
            }
            version = v;
        }
        crate::store::migrations::log_applied(found, version, applied);
        Ok(version)
    })
}

/// Highest applied version (0 when none).
pub(crate) fn current_version(pg: &Pg) -> Result<i64, StoreError> {
    pg.call(|c| async move { current(&c).await })
}

async fn current(c: &Client) -> Result<i64, StoreError> {
    let row = c.query_one("SELECT COALESCE(MAX(version), 0) FROM schema_migrations", &[]).await?;
    Ok(row.try_get(0)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Migration 9 on PostgreSQL: the rows stay, each gets its run's process, and the
    /// identity of a delivery becomes (run, seq, list).
    #[test]
    fn migration_9_keeps_the_deliveries_and_gives_them_their_runs_owner() {
        use crate::store::testing::server;
        use crate::store::{DatabaseUrl, DeliveryStatus, NewDelivery, Store};

        let url = DatabaseUrl::parse("TEST", &server::fresh_database()).unwrap();
        let pg = Pg::connect(&url).unwrap();
        assert_eq!(apply(&pg, &MIGRATIONS[..8]).unwrap(), 8);
        pg.call(|c| async move {
            c.batch_execute(
                "INSERT INTO runs (id, kind, routine, trigger, status, created_at, owner, pid)
                 VALUES (7, 'routine', 'report', 'manual', 'succeeded', '2026-01-01T00:00:00.000Z', 42, 4242);
                 INSERT INTO deliveries (run_id, seq, kind, target, on_failure, payload, status, attempts, created_at,
                                         updated_at, permanent)
                 VALUES (7, 0, 'mail', 'ops@example.com', FALSE, '{}', 'failed', 3, '2026-01-01T00:00:00.000Z',
                         '2026-01-01T00:00:01.000Z', TRUE);",
            )
            .await?;
            Ok(())
        })
        .unwrap();
        drop(pg);
        let store = Store::open_postgres(&url, None).unwrap();
        let row = store.deliveries(7).unwrap().remove(0);
        assert_eq!(
            (row.seq, row.status, row.attempts, row.permanent, row.owner, row.pid),
            (0, DeliveryStatus::Failed, 3, true, Some(42), Some(4242))
        );
        let delivery = |on_failure| NewDelivery {
            run_id: 7,
            seq: 0,
            kind: "file",
            target: "out.md",
            on_failure,
            payload: "{}",
            acted_on: &[],
            failed: None,
        };
        assert!(store.add_delivery(&delivery(false)).is_err());
        store.add_delivery(&delivery(true)).unwrap();
    }
}
