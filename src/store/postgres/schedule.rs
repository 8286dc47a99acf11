//! Schedule state, fire claims, the durable queue, pauses and greetings on PostgreSQL; the
//! same statements as `store/schedule.rs`, `pause.rs` and `greetings.rs`, in PostgreSQL's
//! spelling (`GREATEST` for SQLite's scalar `MAX`, `chr(10)` for `char(10)`, `$n` parameters).

use chrono::{DateTime, Utc};

use super::runs::{ACTIVE, lock_routine};
use super::{Pg, rows};
use crate::store::{FireClaim, GreetingRun, StoreError, reason, to_db_time};

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

    /// Claims fires in one transaction; a fire with `skip_if_active` takes its routine's claim
    /// lock first, so the check and the claim are one step against every other claimer. A
    /// queued fire has no owner: any node's pump may take it ([`Pg::due_fires`]).
    pub(crate) fn claim_fires(&self, fires: Vec<OwnedFire>) -> Result<Vec<FireClaim>, StoreError> {
        let now = to_db_time(Utc::now());
        let pid = i64::from(std::process::id());
        self.call(move |mut c| async move {
            let tx = c.transaction().await?;
            let mut claims = Vec::with_capacity(fires.len());
            for fire in &fires {
                if let Some(why) = &fire.skip_if_active {
                    lock_routine(&tx, &fire.routine).await?;
                    if !tx.query(ACTIVE, &[&fire.routine]).await?.is_empty() {
                        let row = tx
                            .query_opt(
                                "INSERT INTO runs (kind, routine, trigger, scheduled_for, status, created_at,
                                                   finished_at, reason, error, fire_key)
                                 VALUES ('routine', $1, $2, $3, 'skipped', $4, $4, 'overlap', $5, $6)
                                 ON CONFLICT DO NOTHING RETURNING id",
                                &[&fire.routine, &fire.trigger, &fire.scheduled_for, &now, why, &fire.key],
                            )
                            .await?;
                        claims.push(match row {
                            Some(r) => FireClaim::Skipped(r.try_get(0)?),
                            None => FireClaim::Duplicate,
                        });
                        continue;
                    }
                }
                let row = tx
                    .query_opt(
                        "INSERT INTO runs (kind, routine, trigger, scheduled_for, status, created_at, trigger_context,
                                           pid, not_before, owner, fire_key)
                         VALUES ('routine', $1, $2, $3, 'queued', $4, $5, $6, $7, NULL, $8)
                         ON CONFLICT DO NOTHING RETURNING id",
                        &[
                            &fire.routine,
                            &fire.trigger,
                            &fire.scheduled_for,
                            &now,
                            &fire.context,
                            &pid,
                            &fire.not_before,
                            &fire.key,
                        ],
                    )
                    .await?;
                claims.push(match row {
                    Some(r) => FireClaim::Queued(r.try_get(0)?),
                    None => FireClaim::Duplicate,
                });
            }
            tx.commit().await?;
            Ok(claims)
        })
    }

    pub(crate) fn set_last_scheduled_many(&self, handled: Vec<(String, String)>) -> Result<(), StoreError> {
        let now = to_db_time(Utc::now());
        self.call(move |mut c| async move {
            let tx = c.transaction().await?;
            for (routine, at) in &handled {
                tx.execute(UPSERT_LAST, &[routine, at, &now]).await?;
            }
            tx.commit().await?;
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
                    "SELECT routine, reason, COUNT(*) FROM runs
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

    pub(crate) fn skipped_while_paused(&self, routine: &str, since: String) -> Result<Vec<DateTime<Utc>>, StoreError> {
        let routine = routine.to_string();
        self.call(move |c| async move {
            c.query(
                "SELECT scheduled_for FROM runs
                 WHERE routine = $1 AND status = 'skipped' AND reason = $2 AND scheduled_for IS NOT NULL
                   AND scheduled_for >= $3
                 ORDER BY scheduled_for",
                &[&routine, &reason::PAUSED, &since],
            )
            .await?
            .iter()
            .map(|r| rows::time(r, 0))
            .collect()
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
