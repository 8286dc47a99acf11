//! What the daemon keeps across restarts: the last scheduled instant of each
//! routine, fires claimed exactly once, and the instants that were skipped or
//! missed, with the reason. The durable queue of fires waiting to start is read
//! in `queue.rs`.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, params};

use super::{Store, StoreError, opt_time_column, time_column, to_db_time};

/// Why a run was skipped or interrupted (column `reason`).
pub mod reason {
    /// Skipped: a run of the routine was still active (`overlap: skip`, or
    /// `queue` with one already waiting).
    pub const OVERLAP: &str = "overlap";
    /// Skipped: the instant passed while the daemon was down or the machine
    /// slept, and `catch_up` did not run it.
    pub const MISSED: &str = "missed";
    /// Skipped or interrupted: a newer fire replaced it (`overlap: replace`).
    pub const REPLACED: &str = "replaced";
    /// Interrupted: the process running it died.
    pub const CRASH: &str = "crash";
    /// Interrupted: the daemon stopped and its grace period ran out.
    pub const SHUTDOWN: &str = "shutdown";
    /// Skipped: the routine's file was removed (or the routine disabled) before the fire started.
    pub const REMOVED: &str = "removed";
    /// Skipped: the routine was paused (`routines pause`).
    pub const PAUSED: &str = "paused";
    /// The run's node lost its lease and another node took the run over (SPEC §12).
    pub const TAKEN_OVER: &str = "taken_over";
}

/// Whether an interrupted fire of `routine`, at `attempt`, scheduled for
/// the instant (if any), may run again.
pub type RetryDecision<'a> = dyn Fn(&str, u32, Option<DateTime<Utc>>) -> bool + 'a;

/// A fire to claim with [`Store::claim_fire`].
#[derive(Debug, Clone, PartialEq)]
pub struct NewFire<'a> {
    pub routine: &'a str,
    /// `cron`, `every`, `at`, `file`, `webhook`, `manual`.
    pub trigger: &'a str,
    /// The instant, for time triggers: the identity of the fire.
    pub scheduled_for: Option<DateTime<Utc>>,
    /// The trigger's context as JSON text (`routine::TriggerContext`
    /// writes it and reads it back).
    pub context: &'a str,
    /// The run may not start before this (jitter).
    pub not_before: Option<DateTime<Utc>>,
    /// `overlap: skip`: when a run of the routine is active in the database (another
    /// process's, such as `routines run`), the fire is recorded skipped with this why instead,
    /// in the same transaction as the claim.
    pub skip_if_active: Option<&'a str>,
    /// The identity of a fire without an instant (a file event: its path, size and mtime),
    /// unique per routine like an instant: a second claim of it is a duplicate.
    pub key: Option<&'a str>,
}

/// What became of one claimed fire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FireClaim {
    /// Queued as this run.
    Queued(i64),
    /// Recorded skipped (another process's run of the routine is active) as this run.
    Skipped(i64),
    /// The instant was already claimed.
    Duplicate,
}

/// Skipped and missed instants of one routine, for `routines list`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SkipCounts {
    pub skipped: u64,
    pub missed: u64,
}

impl Store {
    /// The newest instant of `routine` that was fired or recorded as missed.
    pub fn last_scheduled(&self, routine: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        if let Some(pg) = self.postgres() {
            return pg.last_scheduled(routine);
        }
        self.with_conn(|c| {
            c.query_row("SELECT last_scheduled FROM schedule_state WHERE routine = ?1", [routine], |r| {
                time_column(r, 0)
            })
            .optional()
        })
    }

    /// Persists the newest handled instant; never moves it backwards.
    pub fn set_last_scheduled(&self, routine: &str, at: DateTime<Utc>) -> Result<(), StoreError> {
        self.set_last_scheduled_many(&[(routine, at)])
    }

    /// Claims a fire: records it as a `queued` run owned by this process.
    /// `Ok(None)` when the instant was already claimed (UNIQUE(routine,
    /// scheduled_for)): it must not run again.
    pub fn claim_fire(&self, fire: &NewFire<'_>) -> Result<Option<i64>, StoreError> {
        Ok(match self.claim_fires(std::slice::from_ref(fire))?.pop() {
            Some(FireClaim::Queued(id)) => Some(id),
            _ => None,
        })
    }

    /// [`Store::claim_fire`] for many fires in one transaction (one commit
    /// for a whole tick or a batch of webhook requests).
    /// The transaction takes the write lock before it reads (`BEGIN IMMEDIATE`), so the check
    /// of `skip_if_active` and the claim are one step for every process.
    pub fn claim_fires(&self, fires: &[NewFire<'_>]) -> Result<Vec<FireClaim>, StoreError> {
        let now = to_db_time(Utc::now());
        let pid = std::process::id();
        let owner = self.owner_id();
        let contexts: Vec<_> = fires.iter().map(|f| self.clean_context(f.context)).collect();
        if let Some(pg) = self.postgres() {
            let fires = fires
                .iter()
                .zip(contexts)
                .map(|(f, context)| super::postgres::OwnedFire {
                    routine: f.routine.to_string(),
                    trigger: f.trigger.to_string(),
                    scheduled_for: f.scheduled_for.map(to_db_time),
                    context: context.into_owned(),
                    not_before: f.not_before.map(to_db_time),
                    skip_if_active: f.skip_if_active.map(str::to_string),
                    key: f.key.map(str::to_string),
                })
                .collect();
            return pg.claim_fires(fires);
        }
        self.with_conn(|c| {
            let tx = rusqlite::Transaction::new_unchecked(c, rusqlite::TransactionBehavior::Immediate)?;
            let mut ids = Vec::with_capacity(fires.len());
            {
                let mut active = tx.prepare_cached(
                    "SELECT EXISTS (SELECT 1 FROM runs WHERE routine = ?1 AND status IN ('queued', 'running')
                                    AND kind != 'chat')",
                )?;
                let mut skipped = tx.prepare_cached(
                    "INSERT INTO runs (kind, routine, trigger, scheduled_for, status, created_at, finished_at, reason,
                                       error, fire_key)
                     VALUES ('routine', ?1, ?2, ?3, 'skipped', ?4, ?4, 'overlap', ?5, ?6)
                     ON CONFLICT DO NOTHING RETURNING id",
                )?;
                let mut stmt = tx.prepare_cached(
                    "INSERT INTO runs (kind, routine, trigger, scheduled_for, status, created_at, trigger_context,
                                       pid, not_before, owner, fire_key)
                     VALUES ('routine', ?1, ?2, ?3, 'queued', ?4, ?5, ?6, ?7, ?8, ?9)
                     ON CONFLICT DO NOTHING RETURNING id",
                )?;
                for (fire, context) in fires.iter().zip(&contexts) {
                    if let Some(why) = fire.skip_if_active {
                        if active.query_row([fire.routine], |r| r.get::<_, bool>(0))? {
                            let id: Option<i64> = skipped
                                .query_row(
                                    params![
                                        fire.routine,
                                        fire.trigger,
                                        fire.scheduled_for.map(to_db_time),
                                        now,
                                        why,
                                        fire.key
                                    ],
                                    |r| r.get(0),
                                )
                                .optional()?;
                            ids.push(id.map_or(FireClaim::Duplicate, FireClaim::Skipped));
                            continue;
                        }
                    }
                    let id: Option<i64> = stmt
                        .query_row(
                            params![
                                fire.routine,
                                fire.trigger,
                                fire.scheduled_for.map(to_db_time),
                                now,
                                context,
                                pid,
                                fire.not_before.map(to_db_time),
                                owner,
                                fire.key,
                            ],
                            |r| r.get(0),
                        )
                        .optional()?;
                    ids.push(id.map_or(FireClaim::Duplicate, FireClaim::Queued));
                }
            }
            tx.commit()?;
            Ok(ids)
        })
    }

    /// Persists the newest handled instant of several routines in one
    /// transaction; never moves one backwards.
    pub fn set_last_scheduled_many(&self, handled: &[(&str, DateTime<Utc>)]) -> Result<(), StoreError> {
        if let Some(pg) = self.postgres() {
            return pg
                .set_last_scheduled_many(handled.iter().map(|(r, at)| (r.to_string(), to_db_time(*at))).collect());
        }
        let now = to_db_time(Utc::now());
        self.with_conn(|c| {
            let tx = c.unchecked_transaction()?;
            {
                let mut stmt = tx.prepare_cached(
                    "INSERT INTO schedule_state (routine, last_scheduled, updated_at) VALUES (?1, ?2, ?3)
                     ON CONFLICT (routine) DO UPDATE SET
                         last_scheduled = MAX(last_scheduled, excluded.last_scheduled), updated_at = excluded.updated_at",
                )?;
                for (routine, at) in handled {
                    stmt.execute(params![routine, to_db_time(*at), now])?;
                }
            }
            tx.commit()
        })?;
        Ok(())
    }

    /// Records instants that will not run as `skipped` runs with `reason`
    /// and `message`, and moves the routine's last scheduled instant to the
    /// newest of them, in one transaction. Instants already recorded are
    /// left as they are. Returns how many rows were added.
    pub fn record_skipped(
        &self,
        routine: &str,
        trigger: &str,
        instants: &[DateTime<Utc>],
        reason: &str,
        message: &str,
    ) -> Result<usize, StoreError> {
        let now = to_db_time(Utc::now());
        let message = self.clean(message);
        if let Some(pg) = self.postgres() {
            let instants = instants.iter().map(|at| to_db_time(*at)).collect();
            return pg.record_skipped(routine.into(), trigger.into(), instants, reason.into(), message.into_owned());
        }
        self.with_conn(|c| {
            let tx = c.unchecked_transaction()?;
            let mut added = 0;
            {
                let mut stmt = tx.prepare_cached(
                    "INSERT INTO runs (kind, routine, trigger, scheduled_for, status, created_at, finished_at, error,
                                       reason)
                     VALUES ('routine', ?1, ?2, ?3, 'skipped', ?4, ?4, ?5, ?6)
                     ON CONFLICT (routine, scheduled_for) DO NOTHING",
                )?;
                for at in instants {
                    added += stmt.execute(params![routine, trigger, to_db_time(*at), now, message, reason])?;
                }
            }
            if let Some(newest) = instants.iter().max() {
                tx.execute(
                    "INSERT INTO schedule_state (routine, last_scheduled, updated_at) VALUES (?1, ?2, ?3)
                     ON CONFLICT (routine) DO UPDATE SET
                         last_scheduled = MAX(last_scheduled, excluded.last_scheduled), updated_at = excluded.updated_at",
                    params![routine, to_db_time(*newest), now],
                )?;
            }
            tx.commit()?;
            Ok(added)
        })
    }

    /// Counts missed instants that got no row of their own (a gap longer
    /// than the daemon records one by one).
    pub fn add_unrecorded_missed(&self, routine: &str, count: u64, newest: DateTime<Utc>) -> Result<(), StoreError> {
        let count = i64::try_from(count).unwrap_or(i64::MAX);
        if let Some(pg) = self.postgres() {
            return pg.add_unrecorded_missed(routine, count, to_db_time(newest));
        }
        self.with_conn(|c| {
            c.execute(
                "INSERT INTO schedule_state (routine, last_scheduled, missed_unrecorded, updated_at)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (routine) DO UPDATE SET missed_unrecorded = missed_unrecorded + excluded.missed_unrecorded,
                     last_scheduled = MAX(last_scheduled, excluded.last_scheduled), updated_at = excluded.updated_at",
                params![routine, to_db_time(newest), count, to_db_time(Utc::now())],
            )
        })?;
        Ok(())
    }

    /// Skipped (overlap, replaced) and missed instants per routine.
    pub fn skip_counts(&self) -> Result<HashMap<String, SkipCounts>, StoreError> {
        if let Some(pg) = self.postgres() {
            let (skipped, unrecorded) = pg.skip_counts()?;
            let mut counts: HashMap<String, SkipCounts> = HashMap::new();
            for (routine, why, n) in skipped {
                let n = u64::try_from(n).unwrap_or(0);
                let entry = counts.entry(routine).or_default();
                if why.as_deref() == Some(reason::MISSED) {
                    entry.missed += n;
                } else {
                    entry.skipped += n;
                }
            }
            for (routine, n) in unrecorded {
                counts.entry(routine).or_default().missed += u64::try_from(n).unwrap_or(0);
            }
            return Ok(counts);
        }
        self.with_conn(|c| {
            let mut counts: HashMap<String, SkipCounts> = HashMap::new();
            let mut stmt = c.prepare(
                "SELECT routine, reason, SUM(COALESCE(fires, 1)) FROM runs
                 WHERE status = 'skipped' AND routine IS NOT NULL GROUP BY routine, reason",
            )?;
            let rows = stmt
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?, r.get::<_, i64>(2)?)))?;
            for row in rows {
                let (routine, why, n) = row?;
                let n = u64::try_from(n).unwrap_or(0);
                let entry = counts.entry(routine).or_default();
                if why.as_deref() == Some(reason::MISSED) {
                    entry.missed += n;
                } else {
                    entry.skipped += n;
                }
            }
            let mut stmt =
                c.prepare("SELECT routine, missed_unrecorded FROM schedule_state WHERE missed_unrecorded > 0")?;
            let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
            for row in rows {
                let (routine, n) = row?;
                counts.entry(routine).or_default().missed += u64::try_from(n).unwrap_or(0);
            }
            Ok(counts)
        })
    }

    /// Interrupted fires (crash or shutdown) that `retry` allows again:
    /// `attempts_left(routine, attempt, scheduled_for)` decides. Each one
    /// allowed is queued again as the next attempt of the same run (its
    /// instant stays claimed); returns their ids.
    pub fn requeue_interrupted(&self, attempts_left: &RetryDecision<'_>) -> Result<Vec<i64>, StoreError> {
        if let Some(pg) = self.postgres() {
            let mut requeued = Vec::new();
            for (id, routine, attempt, scheduled_for) in pg.interrupted_fires()? {
                let again = attempts_left(&routine, attempt, scheduled_for);
                if pg.requeue(id, again)? && again {
                    requeued.push(id);
                }
            }
            return Ok(requeued);
        }
        let candidates: Vec<(i64, String, u32, Option<DateTime<Utc>>)> = self.with_conn(|c| {
            let mut stmt = c.prepare(
                "SELECT id, routine, attempt, scheduled_for FROM runs
                 WHERE status = 'interrupted' AND reason IN ('crash', 'shutdown') AND kind = 'routine'
                   AND trigger != 'manual' AND routine IS NOT NULL",
            )?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, opt_time_column(r, 3)?)))?;
            rows.collect()
        })?;
        let mut requeued = Vec::new();
        for (id, routine, attempt, scheduled_for) in candidates {
            let again = attempts_left(&routine, attempt, scheduled_for);
            self.with_conn(|c| {
                if again {
                    c.execute(
                        "UPDATE runs SET status = 'queued', attempt = attempt + 1, reason = NULL, finished_at = NULL,
                                started_at = NULL, pid = ?2, owner = ?3,
                                error = 'attempt ' || attempt || ' was interrupted (' || reason || '); queued again',
                                earlier_attempts = COALESCE(earlier_attempts || char(10), '')
                                    || 'attempt ' || attempt || ' interrupted (' || reason || ')'
                                    || COALESCE(': ' || error, '')
                         WHERE id = ?1",
                        params![id, std::process::id(), self.owner_id()],
                    )
                } else {
                    // Handled: it stays interrupted, and is not looked at again.
                    c.execute("UPDATE runs SET reason = reason || ', not retried' WHERE id = ?1", [id])
                }
            })?;
            if again {
                requeued.push(id);
            }
        }
        Ok(requeued)
    }

    /// Marks a run `interrupted` with `reason` and `error`, if it has not
    /// ended yet.
    pub fn interrupt_run(&self, id: i64, reason: &str, error: &str) -> Result<(), StoreError> {
        let error = self.clean(error);
        if let Some(pg) = self.postgres() {
            return pg.end_waiting(id, "interrupted", reason.into(), error.into_owned());
        }
        self.with_conn(|c| {
            c.execute(
                "UPDATE runs SET status = 'interrupted', reason = ?2, error = ?3, finished_at = ?4
                 WHERE id = ?1 AND status IN ('queued', 'running')",
                params![id, reason, error, to_db_time(Utc::now())],
            )
        })?;
        Ok(())
    }

    /// Marks a queued run `skipped` with `reason` and `error`.
    pub fn skip_queued(&self, id: i64, reason: &str, error: &str) -> Result<(), StoreError> {
        let error = self.clean(error);
        if let Some(pg) = self.postgres() {
            return pg.end_waiting(id, "skipped", reason.into(), error.into_owned());
        }
        self.with_conn(|c| {
            c.execute(
                "UPDATE runs SET status = 'skipped', reason = ?2, error = ?3, finished_at = ?4
                 WHERE id = ?1 AND status = 'queued'",
                params![id, reason, error, to_db_time(Utc::now())],
            )
        })?;
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::store::testing::each_backend;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    /// One batch of every kind of fire: each gets its own answer, in the batch's order, on
    /// both backends (PostgreSQL writes a whole batch in one statement per kind).
    #[test]
    fn a_batch_of_fires_is_claimed_each_in_its_place() {
        each_backend(|kind, _dir, store| {
            let t = Some(at("2026-03-01T09:00:00Z"));
            let busy = store.claim_fire(&fire("busy", None, None, None)).unwrap().unwrap();
            let why = "a run is still active (overlap: skip)";
            let batch = [
                fire("hook", None, None, None),
                fire("tick", t, None, None),
                fire("hook", None, None, None),
                fire("tick", t, None, None),
                fire("files", None, Some("file:create:1:2:a.csv"), None),
                fire("files", None, Some("file:create:1:2:a.csv"), None),
                fire("files", None, Some("file:create:1:3:a.csv"), None),
                fire("busy", None, None, Some(why)),
                fire("free", None, None, Some(why)),
                fire("free", None, None, Some(why)),
            ];
            let got = store.claim_fires(&batch).unwrap();
            let shape: Vec<&str> = got
                .iter()
                .map(|c| match c {
                    FireClaim::Queued(_) => "queued",
                    FireClaim::Skipped(_) => "skipped",
                    FireClaim::Duplicate => "duplicate",
                })
                .collect();
            assert_eq!(
                shape,
                [
                    "queued",
                    "queued",
                    "queued",
                    "duplicate",
                    "queued",
                    "duplicate",
                    "queued",
                    "skipped",
                    "queued",
                    "skipped"
                ],
                "{kind:?}"
            );
            // Each id is the row of its own fire.
            for (claim, fire) in got.iter().zip(&batch) {
                if let FireClaim::Queued(id) | FireClaim::Skipped(id) = claim {
                    let run = store.get_run(*id).unwrap().unwrap();
                    assert_eq!((run.routine.as_deref(), run.scheduled_for), (Some(fire.routine), fire.scheduled_for));
                }
            }
            let ids: Vec<i64> =
                got.iter().filter_map(|c| if let FireClaim::Queued(id) = c { Some(*id) } else { None }).collect();
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "{kind:?}: ids in the batch's order: {ids:?}");
            assert!(ids.iter().all(|id| *id > busy));
        });
    }

    fn fire<'a>(
        routine: &'a str,
        scheduled_for: Option<DateTime<Utc>>,
        key: Option<&'a str>,
        skip_if_active: Option<&'a str>,
    ) -> NewFire<'a> {
        NewFire { routine, trigger: "webhook", scheduled_for, context: "{}", not_before: None, skip_if_active, key }
    }
}
