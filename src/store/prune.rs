//! Bounded history (SPEC §3 `history`, §9): runs older than `history.max_age` and those beyond
//! the newest `history.max_runs_per_routine` of each routine are deleted, with their events and
//! deliveries (both cascade from `runs`) and their share of the charts' hourly counts (the
//! `run_hours` triggers).
//!
//! A run is never pruned while something may still happen to it: it is queued or running, it
//! was interrupted by a crash or a stop and may be queued again, or one of its deliveries is
//! waiting, being sent, uncertain, or failed and not yet given up for good. Such a run is kept
//! past both limits until that ends, and still counts among the newest of its routine.
//!
//! The candidates are read in one pass; they are then deleted in small transactions, each
//! statement checking again that the run may go, so other writers are never held for long
//! and a delivery queued again since the read keeps its run.

use std::time::Duration;

use chrono::{DateTime, Utc};
use rusqlite::params;

use super::{Store, StoreError, to_db_time};

/// How many runs one transaction deletes.
pub(crate) const PRUNE_BATCH: usize = 500;

/// The limits of [`Store::prune_history`]; a zero turns its limit off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryLimits {
    /// Runs that ended (or were created) longer ago than this go.
    pub max_age: Duration,
    /// Per routine (and kind), runs beyond the newest this many go.
    pub max_runs_per_routine: u32,
}

/// The condition under which a run may be deleted (the table is `runs`, aliased `r`).
pub(crate) const PRUNABLE: &str = "r.status NOT IN ('queued', 'running')
    AND NOT (r.status = 'interrupted' AND r.reason IN ('crash', 'shutdown'))
    AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.run_id = r.id
        AND (d.status IN ('pending', 'sending', 'uncertain') OR (d.status = 'failed' AND NOT d.permanent)))";

/// The runs that the limits select: older than the cutoff (`?1`/`$1`; by when they ended,
/// else were created), or ranked past the newest `?2`/`$2` of their routine and kind. The
/// rank counts every run, kept ones included. Written once for both backends (`{p1}`,
/// `{p2}`: each one's placeholders).
pub(crate) fn candidates_sql(p1: &str, p2: &str) -> String {
    format!(
        "SELECT r.id FROM runs r
         LEFT JOIN (SELECT id, ROW_NUMBER() OVER (PARTITION BY kind, routine ORDER BY id DESC) AS pos
                    FROM runs WHERE routine IS NOT NULL) ranked ON ranked.id = r.id
         WHERE ({p1} IS NOT NULL AND COALESCE(r.finished_at, r.created_at) < {p1})
            OR ({p2} > 0 AND ranked.pos > {p2})
         ORDER BY r.id"
    )
}

impl HistoryLimits {
    /// The cutoff instant at `now`, `None` when `max_age` is off (or reaches before any time).
    pub(crate) fn cutoff(&self, now: DateTime<Utc>) -> Option<String> {
        if self.max_age.is_zero() {
            return None;
        }
        let age = chrono::Duration::from_std(self.max_age).ok()?;
        now.checked_sub_signed(age).map(to_db_time)
    }
}

impl Store {
    /// Deletes the runs beyond `limits` at `now` (see the module), with everything that hangs
    /// off them. Returns how many runs were deleted.
    pub fn prune_history(&self, limits: HistoryLimits, now: DateTime<Utc>) -> Result<u64, StoreError> {
        let cutoff = limits.cutoff(now);
        let max_runs = i64::from(limits.max_runs_per_routine);
        if cutoff.is_none() && max_runs == 0 {
            return Ok(0);
        }
        if let Some(pg) = self.postgres() {
            return pg.prune_history(cutoff, max_runs);
        }
        let ids: Vec<i64> = self.with_conn(|c| {
            let mut stmt = c.prepare(&candidates_sql("?1", "?2"))?;
            let rows = stmt.query_map(params![cutoff, max_runs], |r| r.get(0))?;
            rows.collect()
        })?;
        let mut deleted = 0u64;
        for chunk in ids.chunks(PRUNE_BATCH) {
            deleted += self.with_conn(|c| {
                let tx = c.unchecked_transaction()?;
                let mut n = 0u64;
                {
                    let mut stmt =
                        tx.prepare_cached(&format!("DELETE FROM runs AS r WHERE r.id = ?1 AND {PRUNABLE}"))?;
                    for id in chunk {
                        n += stmt.execute([id])? as u64;
                    }
                }
                tx.commit()?;
                Ok(n)
            })?;
        }
        Ok(deleted)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
#[path = "prune_tests.rs"]
mod tests;
