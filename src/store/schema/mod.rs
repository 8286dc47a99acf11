//! The database schema as data: one list of migrations for both backends, each with its
//! version, what it does, and its SQLite and PostgreSQL text side by side (`sqlite.rs`,
//! `postgres.rs`). SQLite's applier is `store/migrations.rs`, PostgreSQL's
//! `store/postgres/migrations.rs`; both record each applied version in `schema_migrations`, so
//! a schema version means one schema whatever the backend.
//!
//! Versions start at 1 and increase by one. Both backends have always had the same numbering
//! (PostgreSQL arrived with SQLite's versions 1 to 8 mirrored), so one list keeps what every
//! existing database recorded. A migration, once released, is never edited (add a new one
//! instead). A change that one backend needs and the other does not still takes the next
//! version on both: the other's text is a SQL comment saying why it has nothing to do, so the
//! versions stay one sequence.

mod postgres;
mod sqlite;

/// One step of the schema, in both dialects.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// The version a database records once this step is applied.
    pub version: i64,
    /// What the step does, in a few words.
    pub name: &'static str,
    /// The step on SQLite.
    pub sqlite: &'static str,
    /// The step on PostgreSQL.
    pub postgres: &'static str,
}

/// Every migration this binary knows, in ascending version order.
pub const MIGRATIONS: &[Migration] = &[
    step(1, "runs, run events and memories", sqlite::V1_INITIAL, postgres::V1_INITIAL),
    step(2, "routine runs, deliveries and sessions", sqlite::V2_ROUTINE_RUNS, postgres::V2_ROUTINE_RUNS),
    step(3, "schedule state and skip reasons", sqlite::V3_DAEMON, postgres::V3_DAEMON),
    step(4, "greeting plans", sqlite::V4_GREETINGS, postgres::V4_GREETINGS),
    step(5, "status page state and hourly counts", sqlite::V5_STATUS_PAGE, postgres::V5_STATUS_PAGE),
    step(6, "run owners", sqlite::V6_OWNER, postgres::V6_OWNER),
    step(7, "deliveries that failed for good", sqlite::V7_PERMANENT, postgres::V7_PERMANENT),
    step(8, "a run's earlier attempts", sqlite::V8_EARLIER, postgres::V8_EARLIER),
    step(9, "deliveries claimed per attempt", sqlite::V9_DELIVERY_CLAIMS, postgres::V9_DELIVERY_CLAIMS),
    step(10, "index of queued runs", sqlite::V10_QUEUED, postgres::V10_QUEUED),
    step(11, "fire keys and cluster nodes", sqlite::V11_CLUSTER, postgres::V11_CLUSTER),
    step(12, "since when a node is live", sqlite::V12_LIVE_SINCE, postgres::V12_LIVE_SINCE),
    step(13, "paused fires as stretches", sqlite::V13_PAUSED_SPANS, postgres::V13_PAUSED_SPANS),
];

const fn step(version: i64, name: &'static str, sqlite: &'static str, postgres: &'static str) -> Migration {
    Migration { version, name, sqlite, postgres }
}

/// Highest schema version this binary understands, on either backend.
pub fn latest_version() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing::{each_backend, text_rows};

    #[test]
    fn versions_start_at_one_and_increase_by_one() {
        let versions: Vec<i64> = MIGRATIONS.iter().map(|m| m.version).collect();
        let expected: Vec<i64> = (1..=MIGRATIONS.len() as i64).collect();
        assert_eq!(versions, expected);
        assert_eq!(latest_version(), MIGRATIONS.len() as i64);
    }

    #[test]
    fn every_migration_is_named_and_written_in_both_dialects() {
        for m in MIGRATIONS {
            assert!(!m.name.trim().is_empty(), "migration {} has no name", m.version);
            assert!(!m.sqlite.trim().is_empty(), "migration {} ({}) has no SQLite text", m.version, m.name);
            assert!(!m.postgres.trim().is_empty(), "migration {} ({}) has no PostgreSQL text", m.version, m.name);
        }
    }

    /// A fresh database of each backend applies every step of the one list and ends at its
    /// last version.
    #[test]
    fn both_backends_reach_the_last_version() {
        let expected: Vec<Vec<Option<String>>> = MIGRATIONS.iter().map(|m| vec![Some(m.version.to_string())]).collect();
        each_backend(|kind, _, store| {
            assert_eq!(store.schema_version().unwrap(), latest_version(), "{kind:?}");
            let applied = text_rows(&store, "SELECT version FROM schema_migrations ORDER BY version");
            assert_eq!(applied, expected, "{kind:?}");
        });
    }
}
