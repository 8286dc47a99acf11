//! Paused routines (`routines pause` / `routines resume`, SPEC §2): a row of
//! `routine_state` with `paused_at` set. The daemon asks at every fire, so a
//! pause or a resume from another process counts from the next fire on.

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, params};

use super::{Store, StoreError, opt_time_column, reason, to_db_time};

impl Store {
    /// Pauses `routine` from `at` on; an already paused routine keeps its first `paused_at`.
    /// Returns when it was paused.
    pub fn pause(&self, routine: &str, at: DateTime<Utc>) -> Result<DateTime<Utc>, StoreError> {
        let now = to_db_time(at);
        if let Some(pg) = self.postgres() {
            pg.pause(routine, now)?;
            return Ok(self.paused_at(routine)?.unwrap_or(at));
        }
        self.with_conn(|c| {
            c.execute(
                "INSERT INTO routine_state (routine, paused_at, updated_at) VALUES (?1, ?2, ?2)
                 ON CONFLICT (routine) DO UPDATE SET paused_at = COALESCE(paused_at, ?2), updated_at = ?2",
                params![routine, now],
            )
        })?;
        Ok(self.paused_at(routine)?.unwrap_or(at))
    }

    /// Resumes `routine`; returns when it had been paused (`None`: it was not).
    pub fn resume(&self, routine: &str, at: DateTime<Utc>) -> Result<Option<DateTime<Utc>>, StoreError> {
        let since = self.paused_at(routine)?;
        if let Some(pg) = self.postgres() {
            pg.resume(routine, to_db_time(at))?;
            return Ok(since);
        }
        self.with_conn(|c| {
            c.execute(
                "UPDATE routine_state SET paused_at = NULL, updated_at = ?2 WHERE routine = ?1",
                params![routine, to_db_time(at)],
            )
        })?;
        Ok(since)
    }

    /// When `routine` was paused, or `None` while it is active.
    pub fn paused_at(&self, routine: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        if let Some(pg) = self.postgres() {
            return pg.paused_at(routine);
        }
        self.with_conn(|c| {
            c.query_row("SELECT paused_at FROM routine_state WHERE routine = ?1", [routine], |r| opt_time_column(r, 0))
                .optional()
                .map(Option::flatten)
        })
    }

    /// The scheduled instants of `routine` recorded skipped because it was paused, from
    /// `since` on, oldest first.
    pub fn skipped_while_paused(&self, routine: &str, since: DateTime<Utc>) -> Result<Vec<DateTime<Utc>>, StoreError> {
        if let Some(pg) = self.postgres() {
            return pg.skipped_while_paused(routine, to_db_time(since));
        }
        self.with_conn(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT scheduled_for FROM runs
                 WHERE routine = ?1 AND status = 'skipped' AND reason = ?2 AND scheduled_for IS NOT NULL
                   AND scheduled_for >= ?3
                 ORDER BY scheduled_for",
            )?;
            let rows =
                stmt.query_map(params![routine, reason::PAUSED, to_db_time(since)], |r| opt_time_column(r, 0))?;
            rows.filter_map(|r| r.transpose()).collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::store::testing::{each_backend, reopen};

    #[test]
    fn a_pause_survives_reopening_and_a_second_pause_keeps_the_first_time() {
        each_backend(|_kind, dir, first| {
            let t1 = Utc.with_ymd_and_hms(2026, 11, 1, 8, 0, 0).unwrap();
            let t2 = Utc.with_ymd_and_hms(2026, 11, 2, 8, 0, 0).unwrap();
            assert_eq!(first.pause("a", t1).unwrap(), t1);
            assert_eq!(first.pause("a", t2).unwrap(), t1);
            let store = reopen(&first, dir);
            drop(first);
            assert_eq!(store.paused_at("a").unwrap(), Some(t1));
            assert!(store.paused_routines().unwrap().contains("a"));
            assert_eq!(store.resume("a", t2).unwrap(), Some(t1));
            assert_eq!(store.paused_at("a").unwrap(), None);
            assert_eq!(store.resume("b", t2).unwrap(), None);
        });
    }
}
