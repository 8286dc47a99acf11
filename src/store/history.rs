//! Run history for routines: details of a run, listing and filtering,
//! runs whose process died, and persistent sessions.

use chrono::Utc;
use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use super::runs::{RUN_COLUMNS, run_from_row};
use super::{RunRow, RunStatus, Store, StoreError, to_db_time};

/// What a routine run records beyond the common columns, as [`Store::run_detail`] reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RunDetail {
    pub prompt: Option<String>,
    /// JSON of the trigger context (kind, path, webhook body, ...).
    pub trigger_context: Option<String>,
    pub attempt: u32,
    pub pid: Option<u32>,
    /// The owner id of the process running it (see `store/orphans.rs`).
    pub owner: Option<i64>,
    /// How each earlier attempt ended, oldest first (`attempt 1 interrupted (crash): ...`).
    pub earlier_attempts: Vec<String>,
}

/// Which runs to list.
#[derive(Debug, Clone, Default)]
pub struct RunFilter<'a> {
    pub routine: Option<&'a str>,
    pub status: Option<RunStatus>,
    pub limit: usize,
}

impl Store {
    /// Records the trigger's context (JSON text, see `routine::TriggerContext`) of a run created
    /// with [`Store::create_run`]. It is written once, as the run is created; a claimed fire
    /// carries it in its claim.
    pub fn set_trigger_context(&self, id: i64, context: &str) -> Result<(), StoreError> {
        let context = self.clean_context(context);
        if let Some(pg) = self.postgres() {
            return pg.set_run_text(id, "trigger_context", context.into_owned());
        }
        self.with_conn(|c| c.execute("UPDATE runs SET trigger_context = ?2 WHERE id = ?1", params![id, context]))?;
        Ok(())
    }

    /// Records that this process runs attempt `attempt` (from 1) of a run: the attempt and the
    /// process id, by which a run whose process died is found.
    pub fn set_attempt(&self, id: i64, attempt: u32) -> Result<(), StoreError> {
        let pid = std::process::id();
        let owner = self.owner_id();
        if let Some(pg) = self.postgres() {
            return pg.set_attempt(id, attempt, owner);
        }
        self.with_conn(|c| {
            c.execute(
                "UPDATE runs SET attempt = ?2, pid = ?3, owner = ?4 WHERE id = ?1",
                params![id, attempt, pid, owner],
            )
        })?;
        Ok(())
    }

    /// Records the rendered prompt of a run; what it writes is redacted.
    pub fn set_prompt(&self, id: i64, prompt: &str) -> Result<(), StoreError> {
        let prompt = self.clean(prompt);
        if let Some(pg) = self.postgres() {
            return pg.set_run_text(id, "prompt", prompt.into_owned());
        }
        self.with_conn(|c| c.execute("UPDATE runs SET prompt = ?2 WHERE id = ?1", params![id, prompt]))?;
        Ok(())
    }

    pub fn run_detail(&self, id: i64) -> Result<Option<RunDetail>, StoreError> {
        if let Some(pg) = self.postgres() {
            return pg.run_detail(id);
        }
        self.with_conn(|c| {
            c.query_row(
                "SELECT prompt, trigger_context, attempt, pid, owner, earlier_attempts FROM runs WHERE id = ?1",
                [id],
                |r| {
                    Ok(RunDetail {
                        prompt: r.get(0)?,
                        trigger_context: r.get(1)?,
                        attempt: r.get(2)?,
                        pid: r.get(3)?,
                        owner: r.get(4)?,
                        earlier_attempts: r
                            .get::<_, Option<String>>(5)?
                            .map(|t| t.lines().map(String::from).collect())
                            .unwrap_or_default(),
                    })
                },
            )
            .optional()
        })
    }

    /// Runs newest first.
    pub fn list_runs(&self, filter: &RunFilter<'_>) -> Result<Vec<RunRow>, StoreError> {
        let limit = i64::try_from(filter.limit.max(1)).unwrap_or(i64::MAX);
        if let Some(pg) = self.postgres() {
            return pg.list_runs(filter.routine.map(str::to_string), filter.status, limit);
        }
        self.with_conn(|c| {
            let mut stmt = c.prepare(&format!(
                "SELECT {RUN_COLUMNS} FROM runs
                 WHERE (?1 IS NULL OR routine = ?1) AND (?2 IS NULL OR status = ?2) AND kind != 'chat'
                 ORDER BY id DESC LIMIT ?3"
            ))?;
            let rows =
                stmt.query_map(params![filter.routine, filter.status.map(|s| s.as_str()), limit], run_from_row)?;
            rows.collect()
        })
    }

    /// Runs of `routine` still queued or running (in any process), oldest first.
    pub fn active_runs(&self, routine: &str) -> Result<Vec<(i64, RunStatus)>, StoreError> {
        let rows: Vec<(i64, String)> = match self.postgres() {
            Some(pg) => pg.active_runs(routine)?,
            None => self.with_conn(|c| {
                let mut stmt = c.prepare(
                    "SELECT id, status FROM runs WHERE routine = ?1 AND status IN ('queued', 'running')
                     AND kind != 'chat' ORDER BY id",
                )?;
                let rows = stmt.query_map([routine], |r| Ok((r.get(0)?, r.get(1)?)))?;
                rows.collect()
            })?,
        };
        Ok(rows.into_iter().filter_map(|(id, s)| s.parse::<RunStatus>().ok().map(|s| (id, s))).collect())
    }

    /// Status of the newest run of a routine.
    pub fn last_status(&self, routine: &str) -> Result<Option<RunStatus>, StoreError> {
        Ok(self.list_runs(&RunFilter { routine: Some(routine), status: None, limit: 1 })?.first().map(|r| r.status))
    }

    /// Marks runs whose process is gone as `interrupted` (reason `crash`):
    /// running ones, and queued manual ones. Queued fires of the daemon are
    /// left queued: they wait in the durable queue for the next daemon.
    /// Returns their ids. An owner is alive while it holds its lock (see `store/orphans.rs`).
    pub fn interrupt_orphans(&self) -> Result<Vec<i64>, StoreError> {
        let candidates: Vec<(i64, Option<u32>, Option<i64>)> = match self.postgres() {
            Some(pg) => pg.orphan_candidates()?,
            None => self.with_conn(|c| {
                let mut stmt = c.prepare(
                    "SELECT id, pid, owner FROM runs WHERE kind != 'chat'
                     AND (status = 'running' OR (status = 'queued' AND trigger = 'manual'))",
                )?;
                let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
                rows.collect()
            })?,
        };
        let mut interrupted = Vec::new();
        for (id, pid, owner) in candidates {
            let dead = (owner.is_some() || pid.is_some()) && !self.owner_alive(owner, pid);
            if dead && let Some(pg) = self.postgres() {
                pg.interrupt_orphan(id)?;
                interrupted.push(id);
            } else if dead {
                self.with_conn(|c| {
                    c.execute(
                        "UPDATE runs SET status = 'interrupted', finished_at = ?2, reason = 'crash',
                                error = COALESCE(error, 'the process running it stopped before it finished')
                         WHERE id = ?1 AND status IN ('queued', 'running')",
                        params![id, to_db_time(Utc::now())],
                    )
                })?;
                interrupted.push(id);
            }
        }
        Ok(interrupted)
    }

    /// The saved history of a persistent routine session (JSON).
    pub fn session(&self, routine: &str) -> Result<Option<String>, StoreError> {
        if let Some(pg) = self.postgres() {
            return pg.session(routine);
        }
        self.with_conn(|c| {
            c.query_row("SELECT history FROM sessions WHERE routine = ?1", [routine], |r| r.get(0)).optional()
        })
    }

    pub fn save_session(&self, routine: &str, history_json: &str) -> Result<(), StoreError> {
        let history_json = self.clean_json(history_json);
        if let Some(pg) = self.postgres() {
            return pg.save_session(routine, history_json.into_owned());
        }
        self.with_conn(|c| {
            c.execute(
                "INSERT INTO sessions (routine, history, updated_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (routine) DO UPDATE SET history = excluded.history, updated_at = excluded.updated_at",
                params![routine, history_json, to_db_time(Utc::now())],
            )
        })?;
        Ok(())
    }
}
