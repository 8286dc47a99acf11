//! The durable queue as the daemon reads it: fires waiting to start are `queued` rows, and
//! the daemon keeps only a window of them in memory (`daemon/dispatch/window.rs`). Rows
//! are read oldest first by id, without their trigger's context (a webhook's body stays in
//! the database until its run starts, when [`Store::queued_trigger`] reads it back).
//!
//! A daemon's fire is a row with `kind = 'routine'` and a trigger other than `manual`
//! (`routines run` waits for its own runs). With SQLite the lock on the data folder means one
//! daemon owns all of them; on a shared PostgreSQL database each node takes the ones it reads
//! (`owner`), and gives them back when it stops or dies.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, params};

use super::{Store, StoreError, opt_time_column, to_db_time};

/// What makes a queued row a daemon's fire (see the module documentation).
pub(super) const DAEMON_FIRE: &str = "status = 'queued' AND kind = 'routine' AND trigger != 'manual'";

/// A queued fire as the daemon holds it in memory while it waits for its turn: no trigger
/// context, so a webhook's body is not in memory before its run starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedFire {
    pub run_id: i64,
    pub routine: String,
    pub attempt: u32,
    /// The instant of a time trigger (for the lateness metric).
    pub scheduled_for: Option<DateTime<Utc>>,
    /// The earliest start (jitter).
    pub not_before: Option<DateTime<Utc>>,
}

/// What fired a queued run, as stored: `runs.trigger`, `scheduled_for` and
/// `trigger_context` (`routine::TriggerContext::from_stored` reads it back).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredTrigger {
    pub kind: String,
    pub scheduled_for: Option<DateTime<Utc>>,
    pub context: Option<String>,
}

impl Store {
    /// How many fires wait in the queue, per routine: what a starting daemon takes up. Their
    /// rows are not rewritten (a long queue of large bodies would be written out again); a
    /// run becomes this process's when it starts ([`Store::start_run`]), and nothing reads the
    /// owner of a queued daemon fire (`interrupt_orphans` leaves them queued).
    pub fn adopt_queued(&self) -> Result<HashMap<String, usize>, StoreError> {
        if let Some(pg) = self.postgres() {
            return pg.adopt_queued();
        }
        self.with_conn(|c| {
            let mut stmt = c.prepare(&format!(
                "SELECT routine, COUNT(*) FROM runs WHERE {DAEMON_FIRE} AND routine IS NOT NULL GROUP BY routine"
            ))?;
            let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, usize>(1)?)))?;
            rows.collect::<rusqlite::Result<HashMap<_, _>>>()
        })
    }

    /// Up to `limit` queued fires with an id above `after` that may start at `now` (no
    /// `not_before`, or one that has passed), oldest first. On a shared database they are
    /// taken for this node's window: no other node reads them until this one ends or dies,
    /// and a routine's fires go to one node at a time, except those of the routines in
    /// `parallel` (`overlap: allow`), which any node may run at once (see
    /// `postgres/cluster.rs`, `claim_due`).
    pub fn due_fires(
        &self,
        after: i64,
        now: DateTime<Utc>,
        limit: usize,
        parallel: &[String],
    ) -> Result<Vec<QueuedFire>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        if let Some(pg) = self.postgres() {
            let me = self.owner_id().unwrap_or_else(super::orphans::own_id);
            return pg.claim_due(me, after, now, limit, parallel.to_vec());
        }
        self.with_conn(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT id, routine, attempt, scheduled_for, not_before FROM runs
                 WHERE {DAEMON_FIRE} AND routine IS NOT NULL AND id > ?1
                   AND (not_before IS NULL OR not_before <= ?2)
                 ORDER BY id LIMIT ?3"
            ))?;
            let rows = stmt.query_map(params![after, to_db_time(now), limit], |r| {
                Ok(QueuedFire {
                    run_id: r.get(0)?,
                    routine: r.get(1)?,
                    attempt: r.get::<_, u32>(2)?.max(1),
                    scheduled_for: opt_time_column(r, 3)?,
                    not_before: opt_time_column(r, 4)?,
                })
            })?;
            rows.collect()
        })
    }

    /// How many daemon fires are queued, by any process (the partial index `runs_queued`).
    pub fn queued_count(&self) -> Result<usize, StoreError> {
        let sql = format!("SELECT COUNT(*) FROM runs WHERE {DAEMON_FIRE}");
        let n: i64 = match self.postgres() {
            Some(pg) => pg.call(move |c| async move { Ok(c.query_one(&sql, &[]).await?.try_get(0)?) })?,
            None => self.with_conn(|c| c.query_row(&sql, [], |r| r.get(0)))?,
        };
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// The earliest `not_before` after `now` of a queued run: when a jittered fire that
    /// waits in the database becomes due. Answered from the partial index `runs_queued`.
    pub fn next_not_before(&self, now: DateTime<Utc>) -> Result<Option<DateTime<Utc>>, StoreError> {
        if let Some(pg) = self.postgres() {
            return pg.next_not_before(now);
        }
        self.with_conn(|c| {
            c.query_row(
                "SELECT MIN(not_before) FROM runs WHERE status = 'queued' AND not_before > ?1",
                [to_db_time(now)],
                |r| opt_time_column(r, 0),
            )
        })
    }

    /// What fired the queued run `id`, read when it starts; `None` when it is no longer
    /// queued (something else ended it).
    pub fn queued_trigger(&self, id: i64) -> Result<Option<StoredTrigger>, StoreError> {
        if let Some(pg) = self.postgres() {
            return pg.queued_trigger(id);
        }
        self.with_conn(|c| {
            c.query_row(
                "SELECT trigger, scheduled_for, trigger_context FROM runs WHERE id = ?1 AND status = 'queued'",
                [id],
                |r| Ok(StoredTrigger { kind: r.get(0)?, scheduled_for: opt_time_column(r, 1)?, context: r.get(2)? }),
            )
            .optional()
        })
    }

    /// Records every queued fire of `routine` `skipped` with `reason` and `error`, except the
    /// runs in `keep` (those the daemon holds in memory end on their own). Returns how many.
    pub fn skip_queued_fires(
        &self,
        routine: &str,
        keep: &[i64],
        reason: &str,
        error: &str,
    ) -> Result<usize, StoreError> {
        let error = self.clean(error);
        if let Some(pg) = self.postgres() {
            let changed = pg.skip_queued_fires(routine, keep.to_vec(), reason.to_string(), error.into_owned())?;
            return Ok(usize::try_from(changed).unwrap_or(usize::MAX));
        }
        let keep = serde_json::to_string(keep).unwrap_or_else(|_| "[]".into());
        self.with_conn(|c| {
            c.execute(
                &format!(
                    "UPDATE runs SET status = 'skipped', reason = ?3, error = ?4, finished_at = ?5
                     WHERE routine = ?1 AND {DAEMON_FIRE} AND id NOT IN (SELECT value FROM json_each(?2))"
                ),
                params![routine, keep, reason, error, to_db_time(Utc::now())],
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::NewFire;
    use crate::store::testing::{Kind, each_backend};

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn fire<'a>(routine: &'a str, context: &'a str, not_before: Option<DateTime<Utc>>) -> NewFire<'a> {
        NewFire {
            routine,
            trigger: "webhook",
            scheduled_for: None,
            context,
            not_before,
            skip_if_active: None,
            key: None,
        }
    }

    #[test]
    fn due_fires_come_oldest_first_without_their_context_and_after_their_not_before() {
        each_backend(|kind, _dir, store| {
            let body = format!(r#"{{"body":"{}"}}"#, "b".repeat(1000));
            let later = at("2030-01-01T00:10:00Z");
            let ids: Vec<i64> = [fire("a", &body, None), fire("b", &body, Some(later)), fire("a", &body, None)]
                .iter()
                .map(|f| store.claim_fire(f).unwrap().unwrap())
                .collect();
            let now = at("2030-01-01T00:00:00Z");
            let due = store.due_fires(0, now, 10, &[]).unwrap();
            assert_eq!(due.iter().map(|f| f.run_id).collect::<Vec<_>>(), [ids[0], ids[2]]);
            assert_eq!(due[0].routine, "a");
            // On a shared database a fire read is this node's: read again, it is not there.
            let again = |n: usize| if kind == Kind::Sqlite { n } else { 0 };
            assert_eq!(store.due_fires(ids[0], now, 10, &[]).unwrap().len(), again(1));
            assert_eq!(store.due_fires(0, now, 1, &[]).unwrap().len(), again(1));
            assert_eq!(store.next_not_before(now).unwrap(), Some(later));
            assert_eq!(store.due_fires(0, later, 10, &[]).unwrap().len(), again(2) + 1);
            assert_eq!(store.next_not_before(later).unwrap(), None);
            let trigger = store.queued_trigger(ids[1]).unwrap().unwrap();
            assert_eq!((trigger.kind.as_str(), trigger.context.as_deref()), ("webhook", Some(body.as_str())));
            assert_eq!(store.adopt_queued().unwrap(), HashMap::from([("a".to_string(), 2), ("b".to_string(), 1)]));
            assert_eq!(store.queued_count().unwrap(), 3);
        });
    }

    #[test]
    fn skipping_a_routines_queued_fires_keeps_those_held_in_memory() {
        each_backend(|_kind, _dir, store| {
            let ids: Vec<i64> = (0..4).map(|_| store.claim_fire(&fire("a", "{}", None)).unwrap().unwrap()).collect();
            let other = store.claim_fire(&fire("b", "{}", None)).unwrap().unwrap();
            assert_eq!(store.skip_queued_fires("a", &[ids[0]], "replaced", "replaced by a newer fire").unwrap(), 3);
            let due: Vec<i64> = store.due_fires(0, Utc::now(), 10, &[]).unwrap().iter().map(|f| f.run_id).collect();
            assert_eq!(due, [ids[0], other]);
            assert_eq!(store.queued_trigger(ids[1]).unwrap(), None);
            assert_eq!(store.skip_queued_fires("a", &[], "removed", "gone").unwrap(), 1);
        });
    }
}
