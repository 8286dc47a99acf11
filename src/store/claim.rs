//! A run and the overlap decision that admits it, as one step in the database.
//!
//! Two processes that each check "is a run of this routine active?" and then insert their
//! own run both see none and both start (issue 13: 20 `routines run` at once gave up to 13
//! runs at the same time). Here the check and the insert happen in one `BEGIN IMMEDIATE`
//! transaction, which takes SQLite's write lock before it reads: every other writer, in any
//! process, waits (up to the busy timeout) until this claim is committed, and then sees it.

use chrono::Utc;
use rusqlite::{Transaction, TransactionBehavior, params};

use super::{NewRun, RunStatus, Store, StoreError, reason, to_db_time};

/// What became of a claimed run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// Recorded `queued`, owned by this process at attempt 1, with its trigger context.
    Queued(i64),
    /// Recorded `skipped` (reason `overlap`) with why.
    Skipped { id: i64, why: String },
}

impl Store {
    /// Records the run `run` (its status is ignored) as one atomic step with the overlap
    /// decision: `decide` sees the routine's active runs (queued or running, in any process,
    /// oldest first) and returns why to skip, if it must.
    pub fn claim_run(
        &self,
        run: &NewRun,
        context: &str,
        decide: impl FnOnce(&[(i64, RunStatus)]) -> Option<String>,
    ) -> Result<Claim, StoreError> {
        let context = self.clean_context(context);
        let owner = self.owner_id();
        if let Some(pg) = self.postgres() {
            return pg.claim_run(run, context.into_owned(), owner, decide);
        }
        let now = to_db_time(Utc::now());
        let claimed = self.with_conn(|c| {
            let tx = Transaction::new_unchecked(c, TransactionBehavior::Immediate)?;
            let active: Vec<(i64, String)> = {
                let mut stmt = tx.prepare_cached(
                    "SELECT id, status FROM runs WHERE routine = ?1 AND status IN ('queued', 'running')
                     AND kind != 'chat' ORDER BY id",
                )?;
                let rows = stmt.query_map([&run.routine], |r| Ok((r.get(0)?, r.get(1)?)))?;
                rows.collect::<Result<_, _>>()?
            };
            let active: Vec<(i64, RunStatus)> =
                active.into_iter().filter_map(|(id, s)| s.parse().ok().map(|s| (id, s))).collect();
            let skip = decide(&active);
            let id: i64 = match &skip {
                None => tx.query_row(
                    "INSERT INTO runs (kind, routine, trigger, scheduled_for, status, created_at, trigger_context,
                                       attempt, pid, owner)
                     VALUES (?1, ?2, ?3, ?4, 'queued', ?5, ?6, 1, ?7, ?8) RETURNING id",
                    params![
                        run.kind.as_str(),
                        run.routine,
                        run.trigger,
                        run.scheduled_for.map(to_db_time),
                        now,
                        context,
                        std::process::id(),
                        owner
                    ],
                    |r| r.get(0),
                )?,
                Some(why) => tx.query_row(
                    "INSERT INTO runs (kind, routine, trigger, scheduled_for, status, created_at, finished_at,
                                       reason, error)
                     VALUES (?1, ?2, ?3, ?4, 'skipped', ?5, ?5, ?6, ?7) RETURNING id",
                    params![
                        run.kind.as_str(),
                        run.routine,
                        run.trigger,
                        run.scheduled_for.map(to_db_time),
                        now,
                        reason::OVERLAP,
                        why
                    ],
                    |r| r.get(0),
                )?,
            };
            tx.commit()?;
            Ok(match skip {
                None => Claim::Queued(id),
                Some(why) => Claim::Skipped { id, why },
            })
        })?;
        Ok(claimed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::RunKind;
    use crate::store::testing::{each_backend, reopen};

    fn run() -> NewRun {
        NewRun {
            kind: RunKind::Routine,
            routine: Some("solo".into()),
            trigger: "manual".into(),
            scheduled_for: None,
            status: RunStatus::Queued,
        }
    }

    #[test]
    fn claims_from_many_connections_at_once_admit_exactly_one() {
        each_backend(|_kind, dir, first| {
            let claims: Vec<Claim> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..12)
                    .map(|_| {
                        let store = reopen(&first, dir);
                        s.spawn(move || {
                            store
                                .claim_run(&run(), "{}", |active| (!active.is_empty()).then(|| "busy".to_string()))
                                .unwrap()
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let queued = claims.iter().filter(|c| matches!(c, Claim::Queued(_))).count();
            assert_eq!(queued, 1, "{claims:?}");
            assert_eq!(reopen(&first, dir).active_runs("solo").unwrap().len(), 1);
        });
    }
}
