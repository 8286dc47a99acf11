//! The status page's read-only queries and the daemon's metrics on PostgreSQL; the statements
//! of `store/status.rs`, with SQLite's planner hints left out and `julianday` arithmetic
//! replaced by `timestamptz` subtraction.

use std::collections::HashSet;

use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::{Pg, rows};
use crate::store::status::BRIEF_COLUMNS;
use crate::store::{RunBrief, RunExtra, RunMark, RunPage, RunPageQuery, RunStatus, StoreError, from_db_int};

type Param = Box<dyn ToSql + Sync + Send>;

fn refs(values: &[Param]) -> Vec<&(dyn ToSql + Sync)> {
    values.iter().map(|b| b.as_ref() as &(dyn ToSql + Sync)).collect()
}

fn brief(row: &Row) -> Result<RunBrief, StoreError> {
    Ok(RunBrief {
        id: row.try_get(0)?,
        kind: rows::enum_value(row, 1)?,
        routine: row.try_get(2)?,
        trigger: row.try_get(3)?,
        status: rows::enum_value(row, 4)?,
        scheduled_for: rows::opt_time(row, 5)?,
        started_at: rows::opt_time(row, 6)?,
        finished_at: rows::opt_time(row, 7)?,
        created_at: rows::time(row, 8)?,
        error: row.try_get(9)?,
        prompt_tokens: rows::count(row, 10)?,
        completion_tokens: rows::count(row, 11)?,
        reason: row.try_get(12)?,
    })
}

impl Pg {
    pub(crate) fn recent_runs_of(&self, routine: &str, limit: i64) -> Result<Vec<RunMark>, StoreError> {
        let routine = routine.to_string();
        self.call(move |c| async move {
            c.query(
                "SELECT id, status, created_at, started_at, finished_at FROM runs
                 WHERE routine = $1 ORDER BY id DESC LIMIT $2",
                &[&routine, &limit],
            )
            .await?
            .iter()
            .map(|r| {
                Ok(RunMark {
                    id: r.try_get(0)?,
                    status: rows::enum_value(r, 1)?,
                    created_at: rows::time(r, 2)?,
                    started_at: rows::opt_time(r, 3)?,
                    finished_at: rows::opt_time(r, 4)?,
                })
            })
            .collect()
        })
    }

    pub(crate) fn run_brief(&self, id: i64) -> Result<Option<RunBrief>, StoreError> {
        self.call(move |c| async move {
            let sql = format!("SELECT {BRIEF_COLUMNS} FROM runs WHERE id = $1");
            c.query_opt(&sql, &[&id]).await?.as_ref().map(brief).transpose()
        })
    }

    pub(crate) fn run_page(&self, q: &RunPageQuery<'_>) -> Result<RunPage, StoreError> {
        let limit = q.limit.max(1);
        let fetch = i64::try_from(limit + 1).unwrap_or(i64::MAX);
        let routine = q.routine.map(str::to_string);
        let status = q.status.map(RunStatus::as_str);
        let (before, after) = (q.before, q.after);
        self.call(move |c| async move {
            let mut filter = String::from(if routine.is_some() { "routine = $1" } else { "kind <> 'chat'" });
            let mut values: Vec<Param> = Vec::new();
            if let Some(r) = &routine {
                values.push(Box::new(r.clone()));
            }
            if let Some(s) = status {
                values.push(Box::new(s));
                filter.push_str(&format!(" AND status = ${}", values.len()));
            }
            let (id_at, limit_at) = (values.len() + 1, values.len() + 2);
            let params = |id: i64, limit: Option<i64>| -> Vec<Param> {
                let mut all: Vec<Param> = Vec::new();
                if let Some(r) = &routine {
                    all.push(Box::new(r.clone()));
                }
                if let Some(s) = status {
                    all.push(Box::new(s));
                }
                all.push(Box::new(id));
                if let Some(l) = limit {
                    all.push(Box::new(l));
                }
                all
            };
            let page = |cond: &'static str, order: &'static str, id: i64| {
                let sql = format!(
                    "SELECT {BRIEF_COLUMNS} FROM runs WHERE {filter} AND id {cond} ${id_at} ORDER BY id {order} \
                     LIMIT ${limit_at}"
                );
                let values = params(id, Some(fetch));
                let c = &c;
                async move {
                    let rows = c.query(&sql, &refs(&values)).await?;
                    rows.iter().map(brief).collect::<Result<Vec<_>, StoreError>>()
                }
            };
            let exists = |cond: &'static str, id: i64| {
                let sql = format!("SELECT 1 FROM runs WHERE {filter} AND id {cond} ${id_at} LIMIT 1");
                let values = params(id, None);
                let c = &c;
                async move { Ok::<_, StoreError>(c.query_opt(&sql, &refs(&values)).await?.is_some()) }
            };
            match (before, after) {
                (None, Some(after)) => {
                    let mut runs = page(">", "ASC", after).await?;
                    let newer = runs.len() > limit;
                    runs.truncate(limit);
                    runs.reverse();
                    let older = exists("<=", after).await?;
                    Ok(RunPage { runs, newer, older })
                }
                (before, _) => {
                    let mut runs = page("<", "DESC", before.unwrap_or(i64::MAX)).await?;
                    let older = runs.len() > limit;
                    runs.truncate(limit);
                    let newer = match before {
                        Some(b) => exists(">=", b).await?,
                        None => false,
                    };
                    Ok(RunPage { runs, newer, older })
                }
            }
        })
    }

    pub(crate) fn attention_runs(
        &self,
        since: String,
        statuses: [&'static str; 3],
        limit: i64,
    ) -> Result<Vec<RunBrief>, StoreError> {
        self.call(move |c| async move {
            let first = c
                .query_opt("SELECT id FROM runs WHERE created_at >= $1 ORDER BY created_at LIMIT 1", &[&since])
                .await?;
            let Some(first) = first else { return Ok(Vec::new()) };
            let first: i64 = first.try_get(0)?;
            let sql = format!(
                "SELECT {BRIEF_COLUMNS} FROM runs WHERE status IN ($1, $2, $3) AND id >= $4 AND kind <> 'chat'
                 ORDER BY id DESC LIMIT $5"
            );
            c.query(&sql, &[&statuses[0], &statuses[1], &statuses[2], &first, &limit])
                .await?
                .iter()
                .map(brief)
                .collect()
        })
    }

    pub(crate) fn run_neighbours(&self, routine: &str, id: i64) -> Result<(Option<i64>, Option<i64>), StoreError> {
        let routine = routine.to_string();
        self.call(move |c| async move {
            let before = c
                .query_opt(
                    "SELECT id FROM runs WHERE routine = $1 AND id < $2 ORDER BY id DESC LIMIT 1",
                    &[&routine, &id],
                )
                .await?;
            let after = c
                .query_opt(
                    "SELECT id FROM runs WHERE routine = $1 AND id > $2 ORDER BY id ASC LIMIT 1",
                    &[&routine, &id],
                )
                .await?;
            Ok((before.map(|r| r.try_get(0)).transpose()?, after.map(|r| r.try_get(0)).transpose()?))
        })
    }

    pub(crate) fn run_extra(&self, id: i64) -> Result<Option<RunExtra>, StoreError> {
        self.call(move |c| async move {
            let row = c.query_opt("SELECT reason, not_before FROM runs WHERE id = $1", &[&id]).await?;
            row.map(|r| Ok(RunExtra { reason: r.try_get(0)?, not_before: rows::opt_time(&r, 1)? })).transpose()
        })
    }

    /// `(hour, status, runs, prompt_tokens, completion_tokens)` of the hours from `first` to
    /// `last`, both included.
    #[allow(clippy::type_complexity)]
    pub(crate) fn hours(
        &self,
        first: String,
        last: String,
    ) -> Result<Vec<(String, RunStatus, u64, u64, u64)>, StoreError> {
        self.call(move |c| async move {
            c.query(
                "SELECT hour, status, runs, prompt_tokens, completion_tokens FROM run_hours
                 WHERE hour >= $1 AND hour <= $2 AND runs > 0",
                &[&first, &last],
            )
            .await?
            .iter()
            .map(|r| {
                Ok((r.try_get(0)?, rows::enum_value(r, 1)?, rows::count(r, 2)?, rows::count(r, 3)?, rows::count(r, 4)?))
            })
            .collect()
        })
    }

    pub(crate) fn run_durations(&self, routine: &str, since: String, limit: i64) -> Result<Vec<u64>, StoreError> {
        let routine = routine.to_string();
        self.call(move |c| async move {
            c.query(
                "SELECT ROUND(EXTRACT(EPOCH FROM (finished_at::timestamptz - started_at::timestamptz)) * 1000)::bigint
                 FROM runs
                 WHERE routine = $1 AND created_at >= $2
                   AND status IN ('succeeded', 'silent', 'failed', 'timed_out')
                   AND started_at IS NOT NULL AND finished_at IS NOT NULL
                 ORDER BY id DESC LIMIT $3",
                &[&routine, &since, &limit],
            )
            .await?
            .iter()
            .map(|r| Ok(from_db_int(r.try_get(0)?)))
            .collect()
        })
    }

    pub(crate) fn paused_routines(&self) -> Result<HashSet<String>, StoreError> {
        self.call(|c| async move {
            c.query("SELECT routine FROM routine_state WHERE paused_at IS NOT NULL", &[])
                .await?
                .iter()
                .map(|r| Ok(r.try_get(0)?))
                .collect()
        })
    }

    /// Runs per status (chat runs left out), and the tokens of every run.
    #[allow(clippy::type_complexity)]
    pub(crate) fn totals(&self) -> Result<(Vec<(String, i64)>, (i64, i64)), StoreError> {
        self.call(|c| async move {
            let by_status = c
                .query("SELECT status, COUNT(*) FROM runs WHERE kind <> 'chat' GROUP BY status", &[])
                .await?
                .iter()
                .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
                .collect::<Result<Vec<_>, StoreError>>()?;
            let row = c
                .query_one(
                    "SELECT COALESCE(SUM(prompt_tokens), 0)::bigint, COALESCE(SUM(completion_tokens), 0)::bigint FROM runs",
                    &[],
                )
                .await?;
            Ok((by_status, (row.try_get(0)?, row.try_get(1)?)))
        })
    }
}
