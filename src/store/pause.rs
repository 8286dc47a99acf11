//! Paused routines (`routines pause` / `routines resume`, SPEC §2): a row of
//! `routine_state` with `paused_at` set. The daemon asks at every fire, so a
//! pause or a resume from another process counts from the next fire on.
//!
//! The fires of a paused routine are recorded `skipped` (reason `paused`), one row per stretch
//! of the pause rather than one each: a fire while the routine's newest run is such a row of
//! the same pause adds itself to it (`fires`, `last_fire`, `finished_at`, and the row's message
//! says how many and until when). A paused 20-second routine thus adds one row, not 4,300 a
//! day; any other run of the routine (by hand) ends the stretch, and the next fire starts one.

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, params};

use super::{Store, StoreError, opt_time_column, reason, to_db_time};

/// A fire of a paused routine, for [`Store::record_paused_fire`].
#[derive(Debug, Clone, Copy)]
pub struct PausedFire<'a> {
    pub routine: &'a str,
    pub trigger: &'a str,
    pub scheduled_for: Option<DateTime<Utc>>,
    /// Why it did not run (the message of the row).
    pub why: &'a str,
}

/// The newest run of a routine when it is a stretch of the current pause: `(id, fires, newest
/// instant)`. The same statement on both backends (`{p}`: the placeholder of the routine).
pub(crate) fn span_sql(p: &str) -> String {
    format!(
        "SELECT r.id, COALESCE(r.fires, 1), COALESCE(r.last_fire, r.scheduled_for),
                COALESCE(r.status = 'skipped' AND r.reason = 'paused'
                    AND r.created_at >= (SELECT paused_at FROM routine_state WHERE routine = {p}), FALSE)
         FROM runs r WHERE r.routine = {p} ORDER BY r.id DESC LIMIT 1"
    )
}

/// The message of a stretch of `fires` fires, the last at `now`.
pub(crate) fn span_message(why: &str, fires: i64, now: &str) -> String {
    if fires <= 1 { why.to_string() } else { format!("{why} ({fires} fires skipped while paused, the last at {now})") }
}

/// Whether a fire at `at` was already counted in a stretch whose newest instant is `newest`.
pub(crate) fn already_counted(at: Option<&str>, newest: Option<&str>) -> bool {
    matches!((at, newest), (Some(at), Some(newest)) if at <= newest)
}

/// A new stretch of a pause: the `skipped` row of its first fire.
pub(crate) const SPAN_INSERT: &str = "INSERT INTO runs (kind, routine, trigger, scheduled_for, status, created_at,
        finished_at, error, reason, fires, last_fire)
    VALUES ('routine', {1}, {2}, {3}, 'skipped', {4}, {4}, {5}, 'paused', 1, {3})
    ON CONFLICT DO NOTHING RETURNING id";

/// A fire added to a stretch: `(id, fires, newest instant or NULL, finished_at, message)`.
pub(crate) const SPAN_UPDATE: &str = "UPDATE runs SET fires = {2}, last_fire = COALESCE({3}, last_fire),
        finished_at = {4}, error = {5} WHERE id = {1}";

/// [`SPAN_INSERT`] or [`SPAN_UPDATE`] with each backend's placeholders (`?N` or `$N`).
pub(crate) fn placeholders(sql: &str, sigil: char) -> String {
    (1..=5).fold(sql.to_string(), |s, n| s.replace(&format!("{{{n}}}"), &format!("{sigil}{n}")))
}

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

    /// How many fires of `routine` were recorded skipped because it was paused, from `since`
    /// on (the stretches of that pause, each counted by its fires).
    pub fn skipped_while_paused(&self, routine: &str, since: DateTime<Utc>) -> Result<u64, StoreError> {
        if let Some(pg) = self.postgres() {
            return pg.skipped_while_paused(routine, to_db_time(since));
        }
        let n: i64 = self.with_conn(|c| {
            c.query_row(
                "SELECT COALESCE(SUM(COALESCE(fires, 1)), 0) FROM runs
                 WHERE routine = ?1 AND status = 'skipped' AND reason = ?2 AND created_at >= ?3",
                params![routine, reason::PAUSED, to_db_time(since)],
                |r| r.get(0),
            )
        })?;
        Ok(super::from_db_int(n))
    }

    /// Records a fire of a paused routine: added to the stretch of the pause its newest run is,
    /// else as a new `skipped` row. Returns the row's id, or `None` when the fire's instant was
    /// already recorded (by this process or another).
    pub fn record_paused_fire(&self, fire: &PausedFire<'_>) -> Result<Option<i64>, StoreError> {
        let why = self.clean(fire.why).into_owned();
        let at = fire.scheduled_for.map(to_db_time);
        let now = to_db_time(Utc::now());
        if let Some(pg) = self.postgres() {
            return pg.record_paused_fire(fire.routine.into(), fire.trigger.into(), at, why, now);
        }
        self.with_conn(|c| {
            let tx = rusqlite::Transaction::new_unchecked(c, rusqlite::TransactionBehavior::Immediate)?;
            let span: Option<(i64, i64, Option<String>, bool)> = tx
                .query_row(&span_sql("?1"), [fire.routine], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .optional()?;
            let id = match span {
                Some((id, fires, newest, true)) => {
                    if already_counted(at.as_deref(), newest.as_deref()) {
                        return Ok(None);
                    }
                    let message = span_message(&why, fires + 1, &now);
                    tx.execute(&placeholders(SPAN_UPDATE, '?'), params![id, fires + 1, at, now, message])?;
                    Some(id)
                }
                _ => tx
                    .query_row(
                        &placeholders(SPAN_INSERT, '?'),
                        params![fire.routine, fire.trigger, at, now, why],
                        |r| r.get(0),
                    )
                    .optional()?,
            };
            tx.commit()?;
            Ok(id)
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
