//! Runs, their events, and the overlap claim of a run, on PostgreSQL.
//!
//! Where SQLite serializes writers with `BEGIN IMMEDIATE`, PostgreSQL takes a
//! transaction-level advisory lock ([`lock_claims`]): the check of the routine's active runs
//! and the insert of the new one are one step for every connection, in any process, on any
//! machine.

use chrono::Utc;

use super::{Held, Pg, is_foreign_key_violation, is_unique_violation, rows};
use crate::store::runs::{EVENT_COLUMNS, RUN_COLUMNS};
use crate::store::{Claim, EventRow, NewRun, RunOutcome, RunRow, RunStatus, StoreError, reason, to_db_int, to_db_time};

/// An event with its texts already cleaned, as [`Pg::record_event`] writes it.
pub(crate) struct OwnedEvent {
    pub kind: &'static str,
    pub tool: Option<String>,
    pub status: String,
    pub arguments: Option<String>,
    pub detail: Option<String>,
    pub prompt_tokens: Option<i64>,
    pub completion_tokens: Option<i64>,
    pub duration_ms: i64,
}

/// How a run ended, its texts already cleaned, as [`write_end`] writes it.
pub(crate) struct OwnedEnd {
    pub status: &'static str,
    pub output: Option<String>,
    pub error: Option<String>,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub iterations: i64,
    pub reason: Option<&'static str>,
}

impl OwnedEnd {
    pub(crate) fn new(outcome: &RunOutcome, output: Option<String>, error: Option<String>) -> OwnedEnd {
        OwnedEnd {
            status: outcome.status.as_str(),
            output,
            error,
            prompt_tokens: to_db_int(outcome.prompt_tokens),
            completion_tokens: to_db_int(outcome.completion_tokens),
            iterations: i64::from(outcome.iterations),
            reason: outcome.reason,
        }
    }
}

/// Who may write a run's end.
#[derive(Debug, Clone, Copy)]
pub(super) enum Fence {
    /// Anyone (`finish_run`: a fire ended before it started, a skip).
    Open,
    /// The process that started it (`end_run`): not when another node took it over meanwhile
    /// (it is then `interrupted` or queued again, or owned by that node).
    Owner(Option<i64>),
}

/// Writes how run `id` ended on `c` (a connection or a transaction, for a caller that writes
/// more in the same transaction); returns how many rows it changed (0: no such run, or one
/// `fence` keeps out).
pub(super) async fn write_end<C: deadpool_postgres::GenericClient>(
    c: &C,
    id: i64,
    end: &OwnedEnd,
    fence: Fence,
) -> Result<u64, StoreError> {
    let (condition, owner) = match fence {
        Fence::Open => ("$10::BIGINT IS NULL", None),
        Fence::Owner(owner) => ("(owner IS NULL OR owner = $10) AND status NOT IN ('queued', 'interrupted')", owner),
    };
    let sql = format!(
        "UPDATE runs SET status = $2, output = $3, error = $4, prompt_tokens = $5,
                completion_tokens = $6, iterations = $7, finished_at = $8, reason = $9
         WHERE id = $1 AND {condition}"
    );
    Ok(c.execute(
        &sql,
        &[
            &id,
            &end.status,
            &end.output,
            &end.error,
            &end.prompt_tokens,
            &end.completion_tokens,
            &end.iterations,
            &to_db_time(Utc::now()),
            &end.reason,
            &owner,
        ],
    )
    .await?)
}

/// The advisory lock that makes claims one at a time across the cluster: a batch of fires
/// (a tick of every routine, a batch of webhooks) or one run. One lock, not one per routine, so
/// a batch takes it in one step and two batches can never deadlock.
pub(super) const CLAIM_LOCK: &str = "SELECT pg_advisory_xact_lock(hashtext('routines.claim'))";

/// Takes the claim lock for the rest of the transaction.
pub(super) async fn lock_claims(tx: &deadpool_postgres::Transaction<'_>) -> Result<(), StoreError> {
    tx.execute(CLAIM_LOCK, &[]).await?;
    Ok(())
}

pub(super) const ACTIVE: &str = "SELECT id, status FROM runs WHERE routine = $1 AND status IN ('queued', 'running')
     AND kind <> 'chat' ORDER BY id";

impl Pg {
    pub(crate) fn create_run(&self, new: &NewRun) -> Result<i64, StoreError> {
        let now = to_db_time(Utc::now());
        let started_at = (new.status == RunStatus::Running).then(|| now.clone());
        let new = new.clone();
        self.call(move |c| async move {
            let result = c
                .query_one(
                    "INSERT INTO runs (kind, routine, trigger, scheduled_for, status, started_at, created_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
                    &[
                        &new.kind.as_str(),
                        &new.routine,
                        &new.trigger,
                        &new.scheduled_for.map(to_db_time),
                        &new.status.as_str(),
                        &started_at,
                        &now,
                    ],
                )
                .await;
            match (result, new.routine, new.scheduled_for) {
                (Err(e), Some(routine), Some(scheduled_for)) if is_unique_violation(&e) => {
                    Err(StoreError::DuplicateFire { routine, scheduled_for })
                }
                (result, _, _) => Ok(result?.try_get(0)?),
            }
        })
    }

    /// Marks run `id` running, owned by this process (`owner`, and its pid): only a queued run
    /// that no other node holds, so two nodes never start the same fire.
    pub(crate) fn start_run(&self, id: i64, owner: Option<i64>) -> Result<u64, StoreError> {
        let pid = i64::from(std::process::id());
        self.call(move |c| async move {
            Ok(c.execute(
                "UPDATE runs SET status = $2, started_at = $3, pid = $4, owner = $5
                 WHERE id = $1 AND status = 'queued' AND (owner IS NULL OR owner = $5)",
                &[&id, &RunStatus::Running.as_str(), &to_db_time(Utc::now()), &pid, &owner],
            )
            .await?)
        })
    }

    /// Whether run `id` is running as `owner`'s; `RunNotFound` when there is no such run.
    pub(crate) fn still_mine(&self, id: i64, owner: Option<i64>) -> Result<bool, StoreError> {
        self.call(move |c| async move {
            let row = c
                .query_opt(
                    "SELECT status = 'running' AND (owner IS NULL OR owner = $2) FROM runs WHERE id = $1",
                    &[&id, &owner],
                )
                .await?;
            row.map(|r| r.try_get(0)).transpose()?.ok_or(StoreError::RunNotFound(id))
        })
    }

    pub(crate) fn finish_run(&self, id: i64, end: OwnedEnd) -> Result<u64, StoreError> {
        self.call(move |c| async move { write_end(&c, id, &end, Fence::Open).await })
    }

    pub(crate) fn get_run(&self, id: i64) -> Result<Option<RunRow>, StoreError> {
        self.call(move |c| async move {
            let row = c.query_opt(&format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = $1"), &[&id]).await?;
            row.as_ref().map(rows::run).transpose()
        })
    }

    /// Appends an event; the run's row is locked while its next `seq` is taken, so concurrent
    /// writers of one run never get the same number.
    /// Appends an event to run `run_id`, fenced like `end_run` when `owner` is set: a node
    /// whose run another node took over (queued again, interrupted, or owned by that node)
    /// records nothing more in it.
    pub(crate) fn record_event(&self, run_id: i64, event: OwnedEvent, owner: Option<i64>) -> Result<i64, StoreError> {
        self.call(move |mut c| async move {
            let tx = c.transaction().await?;
            let Some(run) = tx.query_opt("SELECT status, owner FROM runs WHERE id = $1 FOR UPDATE", &[&run_id]).await?
            else {
                return Err(StoreError::RunNotFound(run_id));
            };
            let (status, holder): (String, Option<i64>) = (run.try_get(0)?, run.try_get(1)?);
            if owner.is_some()
                && (holder.is_some_and(|h| Some(h) != owner) || matches!(status.as_str(), "queued" | "interrupted"))
            {
                return Err(StoreError::TakenOver(run_id));
            }
            let result = tx
                .query_one(
                    "INSERT INTO run_events (run_id, seq, at, kind, tool, status, arguments, detail,
                                             prompt_tokens, completion_tokens, duration_ms)
                     VALUES ($1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM run_events WHERE run_id = $1),
                             $2, $3, $4, $5, $6, $7, $8, $9, $10)
                     RETURNING seq",
                    &[
                        &run_id,
                        &to_db_time(Utc::now()),
                        &event.kind,
                        &event.tool,
                        &event.status,
                        &event.arguments,
                        &event.detail,
                        &event.prompt_tokens,
                        &event.completion_tokens,
                        &event.duration_ms,
                    ],
                )
                .await;
            let seq: i64 = match result {
                Err(e) if is_foreign_key_violation(&e) => return Err(StoreError::RunNotFound(run_id)),
                other => other?.try_get(0)?,
            };
            tx.commit().await?;
            Ok(seq)
        })
    }

    pub(crate) fn run_events(&self, run_id: i64) -> Result<Vec<EventRow>, StoreError> {
        self.call(move |c| async move {
            let sql = format!("SELECT {EVENT_COLUMNS} FROM run_events WHERE run_id = $1 ORDER BY seq");
            c.query(&sql, &[&run_id]).await?.iter().map(rows::event).collect()
        })
    }

    /// The overlap claim of [`crate::store::Store::claim_run`]: the routine's claim lock, its
    /// active runs, `decide`, and the insert, in one transaction.
    pub(crate) fn claim_run(
        &self,
        run: &NewRun,
        context: String,
        owner: Option<i64>,
        decide: impl FnOnce(&[(i64, RunStatus)]) -> Option<String>,
    ) -> Result<Claim, StoreError> {
        let routine = run.routine.clone();
        // The transaction stays open on one connection while `decide` runs here, on the
        // caller's thread, between the two calls.
        let (client, active) = self.call(move |c| async move {
            let read = async {
                c.batch_execute("BEGIN").await?;
                c.execute(CLAIM_LOCK, &[]).await?;
                c.query(ACTIVE, &[&routine]).await
            };
            match read.await {
                Ok(rows) => Ok((c, rows)),
                Err(e) => {
                    let _ = c.batch_execute("ROLLBACK").await;
                    Err(e.into())
                }
            }
        })?;
        let held = Held::new(client);
        let active: Vec<(i64, RunStatus)> = active
            .iter()
            .filter_map(|r| Some((r.try_get(0).ok()?, r.try_get::<_, String>(1).ok()?.parse().ok()?)))
            .collect();
        let skip = decide(&active);
        let run = run.clone();
        let pid = i64::from(std::process::id());
        self.call_held(held, move |c| async move {
            let write = async {
                let now = to_db_time(Utc::now());
                let at = run.scheduled_for.map(to_db_time);
                let row = match &skip {
                    None => {
                        c.query_one(
                            "INSERT INTO runs (kind, routine, trigger, scheduled_for, status, created_at,
                                               trigger_context, attempt, pid, owner)
                             VALUES ($1, $2, $3, $4, 'queued', $5, $6, 1, $7, $8) RETURNING id",
                            &[&run.kind.as_str(), &run.routine, &run.trigger, &at, &now, &context, &pid, &owner],
                        )
                        .await?
                    }
                    Some(why) => {
                        c.query_one(
                            "INSERT INTO runs (kind, routine, trigger, scheduled_for, status, created_at,
                                               finished_at, reason, error)
                             VALUES ($1, $2, $3, $4, 'skipped', $5, $5, $6, $7) RETURNING id",
                            &[&run.kind.as_str(), &run.routine, &run.trigger, &at, &now, &reason::OVERLAP, why],
                        )
                        .await?
                    }
                };
                c.batch_execute("COMMIT").await?;
                row.try_get::<_, i64>(0)
            };
            match write.await {
                Ok(id) => Ok(match skip {
                    None => Claim::Queued(id),
                    Some(why) => Claim::Skipped { id, why },
                }),
                Err(e) => {
                    let _ = c.batch_execute("ROLLBACK").await;
                    Err(e.into())
                }
            }
        })
    }
}
