//! Run history and persistent sessions on PostgreSQL; the statements of
//! `store/history.rs`.

use chrono::Utc;

use super::{Pg, rows};
use crate::store::runs::RUN_COLUMNS;
use crate::store::{RunDetail, RunRow, RunStatus, StoreError, to_db_time};

impl Pg {
    /// Sets one text column of run `id` (`column` is one of this module's callers' constants).
    pub(crate) fn set_run_text(&self, id: i64, column: &'static str, value: String) -> Result<(), StoreError> {
        self.call(move |c| async move {
            c.execute(&format!("UPDATE runs SET {column} = $2 WHERE id = $1"), &[&id, &value]).await?;
            Ok(())
        })
    }

    pub(crate) fn set_attempt(&self, id: i64, attempt: u32, owner: Option<i64>) -> Result<(), StoreError> {
        let (attempt, pid) = (i64::from(attempt), i64::from(std::process::id()));
        self.call(move |c| async move {
            c.execute(
                "UPDATE runs SET attempt = $2, pid = $3, owner = $4 WHERE id = $1",
                &[&id, &attempt, &pid, &owner],
            )
            .await?;
            Ok(())
        })
    }

    pub(crate) fn run_detail(&self, id: i64) -> Result<Option<RunDetail>, StoreError> {
        self.call(move |c| async move {
            let row = c
                .query_opt(
                    "SELECT prompt, trigger_context, attempt, pid, owner, earlier_attempts FROM runs WHERE id = $1",
                    &[&id],
                )
                .await?;
            let Some(r) = row else { return Ok(None) };
            Ok(Some(RunDetail {
                prompt: r.try_get(0)?,
                trigger_context: r.try_get(1)?,
                attempt: rows::small(&r, 2)?,
                pid: r.try_get::<_, Option<i64>>(3)?.and_then(|p| u32::try_from(p).ok()),
                owner: r.try_get(4)?,
                earlier_attempts: r
                    .try_get::<_, Option<String>>(5)?
                    .map(|t| t.lines().map(String::from).collect())
                    .unwrap_or_default(),
            }))
        })
    }

    pub(crate) fn list_runs(
        &self,
        routine: Option<String>,
        status: Option<RunStatus>,
        limit: i64,
    ) -> Result<Vec<RunRow>, StoreError> {
        let status = status.map(RunStatus::as_str);
        self.call(move |c| async move {
            let sql = format!(
                "SELECT {RUN_COLUMNS} FROM runs
                 WHERE ($1::text IS NULL OR routine = $1) AND ($2::text IS NULL OR status = $2) AND kind <> 'chat'
                 ORDER BY id DESC LIMIT $3"
            );
            c.query(&sql, &[&routine, &status, &limit]).await?.iter().map(rows::run).collect()
        })
    }

    pub(crate) fn active_runs(&self, routine: &str) -> Result<Vec<(i64, String)>, StoreError> {
        let routine = routine.to_string();
        self.call(move |c| async move {
            c.query(super::runs::ACTIVE, &[&routine])
                .await?
                .iter()
                .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
                .collect()
        })
    }

    /// Runs that may be orphans: `(id, pid, owner)` of running runs and queued manual ones.
    #[allow(clippy::type_complexity)]
    pub(crate) fn orphan_candidates(&self) -> Result<Vec<(i64, Option<u32>, Option<i64>)>, StoreError> {
        self.call(|c| async move {
            c.query(
                "SELECT id, pid, owner FROM runs WHERE kind <> 'chat'
                 AND (status = 'running' OR (status = 'queued' AND trigger = 'manual'))",
                &[],
            )
            .await?
            .iter()
            .map(|r| {
                let pid = r.try_get::<_, Option<i64>>(1)?.and_then(|p| u32::try_from(p).ok());
                Ok((r.try_get(0)?, pid, r.try_get(2)?))
            })
            .collect()
        })
    }

    pub(crate) fn interrupt_orphan(&self, id: i64) -> Result<(), StoreError> {
        self.call(move |c| async move {
            c.execute(
                "UPDATE runs SET status = 'interrupted', finished_at = $2, reason = 'crash',
                        error = COALESCE(error, 'the process running it stopped before it finished')
                 WHERE id = $1 AND status IN ('queued', 'running')",
                &[&id, &to_db_time(Utc::now())],
            )
            .await?;
            Ok(())
        })
    }

    pub(crate) fn session(&self, routine: &str) -> Result<Option<String>, StoreError> {
        let routine = routine.to_string();
        self.call(move |c| async move {
            let row = c.query_opt("SELECT history FROM sessions WHERE routine = $1", &[&routine]).await?;
            Ok(row.map(|r| r.try_get(0)).transpose()?)
        })
    }

    pub(crate) fn save_session(&self, routine: &str, history: String) -> Result<(), StoreError> {
        let routine = routine.to_string();
        self.call(move |c| async move {
            c.execute(
                "INSERT INTO sessions (routine, history, updated_at) VALUES ($1, $2, $3)
                 ON CONFLICT (routine) DO UPDATE SET history = excluded.history, updated_at = excluded.updated_at",
                &[&routine, &history, &to_db_time(Utc::now())],
            )
            .await?;
            Ok(())
        })
    }
}
