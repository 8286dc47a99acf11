//! Schedule state, fire claims, the durable queue, pauses and greetings on PostgreSQL; the
//! same statements as `store/schedule.rs`, `pause.rs` and `greetings.rs`, in PostgreSQL's
//! spelling (`GREATEST` for SQLite's scalar `MAX`, `chr(10)` for `char(10)`, `$n` parameters).

use chrono::{DateTime, Utc};

use std::collections::{HashMap, HashSet};

use super::runs::lock_claims;
use super::{Pg, rows};
use crate::store::{FireClaim, GreetingRun, StoreError, to_db_time};

/// A fire with its context already cleaned, as [`Pg::claim_fires`] writes it.
pub(crate) struct OwnedFire {
    pub routine: String,
    pub trigger: String,
    pub scheduled_for: Option<String>,
    pub context: String,
    pub not_before: Option<String>,
    pub skip_if_active: Option<String>,
    pub key: Option<String>,
}

const UPSERT_LAST: &str = "INSERT INTO schedule_state AS s (routine, last_scheduled, updated_at) VALUES ($1, $2, $3)
     ON CONFLICT (routine) DO UPDATE SET
         last_scheduled = GREATEST(s.last_scheduled, excluded.last_scheduled), updated_at = excluded.updated_at";

/// The time a greeting counts at: its slot, or when it was sent by hand.
const AT: &str = "COALESCE(scheduled_for, created_at)";

impl Pg {
    pub(crate) fn last_scheduled(&self, routine: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        let routine = routine.to_string();
        self.call(move |c| async move {
            let row = c.query_opt("SELECT last_scheduled FROM schedule_state WHERE routine = $1", &[&routine]).await?;
            row.map(|r| rows::time(&r, 0)).transpose()
        })
    }

    /// Claims fires in one transaction of four statements, whatever their number (a tick of
    /// 10,000 routines is one batch): the claim lock, the routines among them with an active
    /// run, then the skipped and the queued rows, each one `INSERT ... SELECT FROM unnest(...)`.
    /// The lock makes the check and the claim one step against every other claimer. A queued
    /// fire has no owner: any node's pump may take it ([`Pg::claim_due`]).
    pub(crate) fn claim_fires(&self, fires: Vec<OwnedFire>) -> Result<Vec<FireClaim>, StoreError> {
        let now = to_db_time(Utc::now());
        let pid = i64::from(std::process::id());
        self.call(move |mut c| async move {
            let tx = c.transaction().await?;
            let checked: Vec<&str> =
                fires.iter().filter(|f| f.skip_if_active.is_some()).map(|f| f.routine.as_str()).collect();
            let mut active: HashSet<String> = HashSet::new();
            if !checked.is_empty() {
                lock_claims(&tx).await?;
                let rows = tx
                    .query(
                        "SELECT DISTINCT routine FROM runs WHERE routine = ANY($1)
                           AND status IN ('queued', 'running') AND kind <> 'chat'",
                        &[&checked],
                    )
                    .await?;
                active = rows.iter().map(|r| r.try_get(0)).collect::<Result<_, _>>()?;
            }
            // Which fires are skipped: those that check, of a routine active before them.
            let mut skip = Vec::with_capacity(fires.len());
            for fire in &fires {
                let skipped = fire.skip_if_active.is_some() && active.contains(&fire.routine);
                if fire.skip_if_active.is_some() {
                    active.insert(fire.routine.clone());
                }
                skip.push(skipped);
            }
            let pick = |skipped: bool| fires.iter().zip(&skip).filter(move |(_, s)| **s == skipped).map(|(f, _)| f);
            let column = |skipped: bool, get: &dyn Fn(&OwnedFire) -> Option<String>| -> Vec<Option<String>> {
                pick(skipped).map(get).collect()
            };
            let mut claimed: HashMap<(String, Option<String>, Option<String>), i64> = HashMap::new();
            // Per kind (skipped, queued): the ids of fires without an identity.
            let mut unkeyed: [Vec<i64>; 2] = [Vec::new(), Vec::new()];
            for skipped in [true, false] {
                if pick(skipped).next().is_none() {
                    continue;
                }
                let routine = column(skipped, &|f| Some(f.routine.clone()));
                let trigger = column(skipped, &|f| Some(f.trigger.clone()));
                let scheduled_for = column(skipped, &|f| f.scheduled_for.clone());
                let key = column(skipped, &|f| f.key.clone());
                let rows = if skipped {
                    let why = column(true, &|f| f.skip_if_active.clone());
                    tx.query(
                        "INSERT INTO runs (kind, routine, trigger, scheduled_for, status, created_at, finished_at,
                                           reason, error, fire_key)
                         SELECT 'routine', f.routine, f.trigger, f.scheduled_for, 'skipped', $6, $6, 'overlap',
                                f.why, f.fire_key
                         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[])
                              WITH ORDINALITY AS f(routine, trigger, scheduled_for, why, fire_key, ord)
                         ORDER BY f.ord
                         ON CONFLICT DO NOTHING RETURNING id, routine, scheduled_for, fire_key",
                        &[&routine, &trigger, &scheduled_for, &why, &key, &now],
                    )
                    .await?
                } else {
                    let context = column(false, &|f| Some(f.context.clone()));
                    let not_before = column(false, &|f| f.not_before.clone());
                    tx.query(
                        "INSERT INTO runs (kind, routine, trigger, scheduled_for, status, created_at, trigger_context,
                                           pid, not_before, owner, fire_key)
                         SELECT 'routine', f.routine, f.trigger, f.scheduled_for, 'queued', $7, f.context, $8,
                                f.not_before, NULL, f.fire_key
                         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
                              WITH ORDINALITY AS f(routine, trigger, scheduled_for, context, not_before, fire_key, ord)
                         ORDER BY f.ord
                         ON CONFLICT DO NOTHING RETURNING id, routine, scheduled_for, fire_key",
                        &[&routine, &trigger, &scheduled_for, &context, &not_before, &key, &now, &pid],
                    )
                    .await?
                };
                for r in &rows {
                    let (id, routine, at, key): (i64, String, Option<String>, Option<String>) =
                        (r.try_get(0)?, r.try_get(1)?, r.try_get(2)?, r.try_get(3)?);
                    if at.is_none() && key.is_none() {
                        unkeyed[usize::from(skipped)].push(id);
                    } else {
                        claimed.insert((routine, at, key), id);
                    }
                }
            }
            tx.commit().await?;
            // A fire with an identity (an instant, a key) is found by it; the others can never
            // be duplicates, and their ids were drawn in the order of the batch.
            let [mut queued, mut skipped_ids] = unkeyed;
            queued.sort_unstable();
            skipped_ids.sort_unstable();
            let (mut queued, mut skipped_ids) = (queued.into_iter(), skipped_ids.into_iter());
            let mut claims = Vec::with_capacity(fires.len());
            for (fire, skipped) in fires.iter().zip(skip) {
                let id = if fire.scheduled_for.is_none() && fire.key.is_none() {
                    if skipped { skipped_ids.next() } else { queued.next() }
                } else {
                    claimed.remove(&(fire.routine.clone(), fire.scheduled_for.clone(), fire.key.clone()))
                };
                claims.push(match (id, skipped) {
                    (Some(id), true) => FireClaim::Skipped(id),
                    (Some(id), false) => FireClaim::Queued(id),
                    (None, _) => FireClaim::Duplicate,
                });
            }
            Ok(claims)
        })
    }

    pub(crate) fn set_last_scheduled_many(&self, handled: Vec<(String, String)>) -> Result<(), StoreError> {
        let now = to_db_time(Utc::now());
        self.call(move |c| async move {
            // One statement for a whole tick; a routine at most once in it (its newest instant).
            let mut newest: HashMap<String, String> = HashMap::new();
            for (routine, at) in handled {
                let slot = newest.entry(routine).or_default();
                if at > *slot {
                    *slot = at;
                }
            }
            let (routines, instants): (Vec<String>, Vec<String>) = newest.into_iter().unzip();
            c.execute(
                "INSERT INTO schedule_state AS s (routine, last_scheduled, updated_at)
                 SELECT r, a, $3 FROM unnest($1::text[], $2::text[]) AS t(r, a)
                 ON CONFLICT (routine) DO UPDATE SET
                     last_scheduled = GREATEST(s.last_scheduled, excluded.last_scheduled),
                     updated_at = excluded.updated_at",
                &[&routines, &instants, &now],
            )
            .await?;
            Ok(())
        })
    }

    pub(crate) fn record_skipped(
        &self,
        routine: String,
        trigger: String,
        instants: Vec<String>,
        reason: String,
        message: String,
    ) -> Result<usize, StoreError> {
        let now = to_db_time(Utc::now());
        self.call(move |mut c| async move {
            let tx = c.transaction().await?;
            let mut added = 0;
            for at in &instants {
                added += tx
                    .execute(
                        "INSERT INTO runs (kind, routine, trigger, scheduled_for, status, created_at, finished_at,
                                           error, reason)
                         VALUES ('routine', $1, $2, $3, 'skipped', $4, $4, $5, $6)
                         ON CONFLICT (routine, scheduled_for) DO NOTHING",
                        &[&routine, &trigger, at, &now, &message, &reason],
                    )
                    .await?;
            }
            if let Some(newest) = instants.iter().max() {
                tx.execute(UPSERT_LAST, &[&routine, newest, &now]).await?;
            }
            tx.commit().await?;
            Ok(usize::try_from(added).unwrap_or(usize::MAX))
        })
    }

    pub(crate) fn add_unrecorded_missed(&self, routine: &str, count: i64, newest: String) -> Result<(), StoreError> {
        let routine = routine.to_string();
        self.call(move |c| async move {
            c.execute(
                "INSERT INTO schedule_state AS s (routine, last_scheduled, missed_unrecorded, updated_at)
                 VALUES ($1, $2, $3, $4)
                 ON CONFLICT (routine) DO UPDATE SET missed_unrecorded = s.missed_unrecorded + excluded.missed_unrecorded,
                     last_scheduled = GREATEST(s.last_scheduled, excluded.last_scheduled),
                     updated_at = excluded.updated_at",
                &[&routine, &newest, &count, &to_db_time(Utc::now())],
            )
            .await?;
            Ok(())
        })
    }

    /// `(routine, reason, count)` of skipped runs, then `(routine, missed_unrecorded)`.
    #[allow(clippy::type_complexity)]
    pub(crate) fn skip_counts(&self) -> Result<(Vec<(String, Option<String>, i64)>, Vec<(String, i64)>), StoreError> {
        self.call(|c| async move {
            let skipped = c
                .query(
                    "SELECT routine, reason, SUM(COALESCE(fires, 1))::BIGINT FROM runs
                     WHERE status = 'skipped' AND routine IS NOT NULL GROUP BY routine, reason",
                    &[],
                )
                .await?
                .iter()
                .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)))
                .collect::<Result<Vec<_>, StoreError>>()?;
            let unrecorded = c
                .query("SELECT routine, missed_unrecorded FROM schedule_state WHERE missed_unrecorded > 0", &[])
                .await?
                .iter()
                .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
                .collect::<Result<Vec<_>, StoreError>>()?;
            Ok((skipped, unrecorded))
        })
    }

    /// Interrupted fires that a retry may queue again: `(id, routine, attempt, scheduled_for)`.
    #[allow(clippy::type_complexity)]
    pub(crate) fn interrupted_fires(&self) -> Result<Vec<(i64, String, u32, Option<DateTime<Utc>>)>, StoreError> {
        self.call(|c| async move {
            c.query(
                "SELECT id, routine, attempt, scheduled_for FROM runs
                 WHERE status = 'interrupted' AND reason IN ('crash', 'shutdown') AND kind = 'routine'
                   AND trigger <> 'manual' AND routine IS NOT NULL",
                &[],
            )
            .await?
            .iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, rows::small(r, 2)?, rows::opt_time(r, 3)?)))
            .collect()
        })
    }

    /// Queues interrupted run `id` again as its next attempt (`again`), or marks it handled.
    /// Only a run still `interrupted` for a crash or a stop changes, so two nodes that both
    /// found it act once; the queued fire has no owner, for any node to take. Returns whether
    /// this call changed it.
    pub(crate) fn requeue(&self, id: i64, again: bool) -> Result<bool, StoreError> {
        let pid = i64::from(std::process::id());
        self.call(move |c| async move {
            let changed = if again {
                c.execute(
                    "UPDATE runs SET status = 'queued', attempt = attempt + 1, reason = NULL, finished_at = NULL,
                            started_at = NULL, pid = $2, owner = NULL,
                            error = 'attempt ' || attempt || ' was interrupted (' || reason || '); queued again',
                            earlier_attempts = COALESCE(earlier_attempts || chr(10), '')
                                || 'attempt ' || attempt || ' interrupted (' || reason || ')'
                                || COALESCE(': ' || error, '')
                     WHERE id = $1 AND status = 'interrupted' AND reason IN ('crash', 'shutdown')",
                    &[&id, &pid],
                )
                .await?
            } else {
                c.execute(
                    "UPDATE runs SET reason = reason || ', not retried'
                     WHERE id = $1 AND status = 'interrupted' AND reason IN ('crash', 'shutdown')",
                    &[&id],
                )
                .await?
            };
            Ok(changed > 0)
        })
    }

    /// Ends a queued (or, for `interrupted`, running) run with `status`, `reason` and `error`.
    pub(crate) fn end_waiting(
        &self,
        id: i64,
        status: &'static str,
        reason: String,
        error: String,
    ) -> Result<(), StoreError> {
        let statuses: &'static [&'static str] =
            if status == "interrupted" { &["queued", "running"] } else { &["queued"] };
        self.call(move |c| async move {
            c.execute(
                "UPDATE runs SET status = $2, reason = $3, error = $4, finished_at = $5
                 WHERE id = $1 AND status = ANY($6)",
                &[&id, &status, &reason, &error, &to_db_time(Utc::now()), &statuses],
            )
            .await?;
            Ok(())
        })
    }

    pub(crate) fn pause(&self, routine: &str, at: String) -> Result<(), StoreError> {
        let routine = routine.to_string();
        self.call(move |c| async move {
            c.execute(
                "INSERT INTO routine_state AS s (routine, paused_at, updated_at) VALUES ($1, $2, $2)
                 ON CONFLICT (routine) DO UPDATE SET paused_at = COALESCE(s.paused_at, $2), updated_at = $2",
                &[&routine, &at],
            )
            .await?;
            Ok(())
        })
    }

    pub(crate) fn resume(&self, routine: &str, at: String) -> Result<(), StoreError> {
        let routine = routine.to_string();
        self.call(move |c| async move {
            c.execute(
                "UPDATE routine_state SET paused_at = NULL, updated_at = $2 WHERE routine = $1",
                &[&routine, &at],
            )
            .await?;
            Ok(())
        })
    }

    pub(crate) fn paused_at(&self, routine: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        let routine = routine.to_string();
        self.call(move |c| async move {
            let row = c.query_opt("SELECT paused_at FROM routine_state WHERE routine = $1", &[&routine]).await?;
            Ok(row.map(|r| rows::opt_time(&r, 0)).transpose()?.flatten())
        })
    }

    pub(crate) fn greeting_plan(&self, day: String) -> Result<Option<String>, StoreError> {
        self.call(move |c| async move {
            let row = c.query_opt("SELECT slots FROM greeting_plans WHERE day = $1", &[&day]).await?;
            Ok(row.map(|r| r.try_get(0)).transpose()?)
        })
    }

    pub(crate) fn save_greeting_plan(&self, day: String, json: String) -> Result<(), StoreError> {
        self.call(move |c| async move {
            c.execute(
                "INSERT INTO greeting_plans (day, slots, created_at) VALUES ($1, $2, $3) ON CONFLICT (day) DO NOTHING",
                &[&day, &json, &to_db_time(Utc::now())],
            )
            .await?;
            Ok(())
        })
    }

    pub(crate) fn greeting_runs(&self, from: String, to: String) -> Result<Vec<GreetingRun>, StoreError> {
        self.call(move |c| async move {
            let sql = format!(
                "SELECT id, {AT}, status FROM runs WHERE kind = 'greeting' AND {AT} >= $1 AND {AT} < $2 ORDER BY 2, id"
            );
            c.query(&sql, &[&from, &to])
                .await?
                .iter()
                .map(|r| Ok(GreetingRun { id: r.try_get(0)?, at: rows::time(r, 1)?, status: rows::enum_value(r, 2)? }))
                .collect()
        })
    }

    pub(crate) fn last_greeting_sent(&self) -> Result<Option<DateTime<Utc>>, StoreError> {
        self.call(|c| async move {
            let sql = format!("SELECT MAX({AT}) FROM runs WHERE kind = 'greeting' AND status = 'succeeded'");
            rows::opt_time(&c.query_one(&sql, &[]).await?, 0)
        })
    }
}
