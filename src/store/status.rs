//! Read-only queries of the status page (SPEC §11). Each one walks an
//! index from the newest row or a known key, so a page costs the same with
//! 100 runs as with 100,000: runs by routine use `runs_by_routine (routine,
//! id, status, times)`, which answers sparklines and durations without
//! reading a row; runs by status `runs_status (status)` (its entries are
//! ordered by rowid within a status); the charts read `run_hours`, counts
//! per hour and status that triggers keep (migration 5).

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write;

use chrono::{DateTime, NaiveDateTime, Utc};
use rusqlite::types::Value;
use rusqlite::{OptionalExtension, Row, params, params_from_iter};
use serde::Serialize;

use super::runs::enum_column;
use super::{RunKind, RunStatus, Store, StoreError, from_db_int, opt_time_column, time_column, to_db_time};

/// Statuses that ask for a person's attention.
pub const ATTENTION_STATUSES: [RunStatus; 3] = [RunStatus::Failed, RunStatus::TimedOut, RunStatus::Interrupted];

/// A run as lists show it: no prompt, no output, the start of the error.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunBrief {
    pub id: i64,
    pub kind: RunKind,
    pub routine: Option<String>,
    pub trigger: String,
    pub status: RunStatus,
    pub scheduled_for: Option<DateTime<Utc>>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    /// The first 240 characters of the error.
    pub error: Option<String>,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Why it was skipped or interrupted.
    pub reason: Option<String>,
}

/// A run as a sparkline shows it: read from `runs_by_routine` alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunMark {
    pub id: i64,
    pub status: RunStatus,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
}

pub(super) const BRIEF_COLUMNS: &str = "id, kind, routine, trigger, status, scheduled_for, started_at, finished_at, created_at, \
     substr(error, 1, 240), prompt_tokens, completion_tokens, reason";

fn brief_from_row(row: &Row<'_>) -> rusqlite::Result<RunBrief> {
    Ok(RunBrief {
        id: row.get(0)?,
        kind: enum_column(row, 1)?,
        routine: row.get(2)?,
        trigger: row.get(3)?,
        status: enum_column(row, 4)?,
        scheduled_for: opt_time_column(row, 5)?,
        started_at: opt_time_column(row, 6)?,
        finished_at: opt_time_column(row, 7)?,
        created_at: time_column(row, 8)?,
        error: row.get(9)?,
        prompt_tokens: from_db_int(row.get(10)?),
        completion_tokens: from_db_int(row.get(11)?),
        reason: row.get(12)?,
    })
}

/// Which page of runs to list, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunPageQuery<'a> {
    pub routine: Option<&'a str>,
    pub status: Option<RunStatus>,
    /// Runs older than this id (the next page).
    pub before: Option<i64>,
    /// Runs newer than this id (the previous page); ignored with `before`.
    pub after: Option<i64>,
    pub limit: usize,
}

/// One page of runs and whether more lie on either side.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunPage {
    /// Newest first.
    pub runs: Vec<RunBrief>,
    pub newer: bool,
    pub older: bool,
}

/// The counts of one day and status, for the charts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DayStatusCount {
    /// Index of the day in the bounds given to [`Store::day_stats`].
    pub day: usize,
    pub status: RunStatus,
    pub runs: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// A run's own columns that [`super::RunRow`] and [`super::RunDetail`] leave out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RunExtra {
    pub reason: Option<String>,
    pub not_before: Option<DateTime<Utc>>,
}

/// The WHERE clause of the run list for the filters that are set, and
/// their values. Only set filters appear in the SQL, so each combination
/// gets the plan of its own index (`x = ?1 OR ?1 IS NULL` would scan).
/// Chat runs have no routine, so a routine filter leaves them out already
/// (and the query inside `runs_by_routine`).
fn list_filter(routine: Option<&str>, status: Option<RunStatus>) -> (String, Vec<Value>) {
    let mut values = Vec::new();
    let mut sql = match routine {
        Some(r) => {
            values.push(Value::Text(r.to_string()));
            String::from("routine = ?1")
        }
        None => String::from("kind != 'chat'"),
    };
    if let Some(s) = status {
        values.push(Value::Text(s.as_str().to_string()));
        // With a routine, `+` keeps SQLite off `runs_status`: the routine's
        // entries of `runs_by_routine` hold the status, so no row is read
        // until one matches; through `runs_status` every run of that status
        // of every routine would be read to check its routine.
        let plus = if routine.is_some() { "+" } else { "" };
        let _ = write!(sql, " AND {plus}status = ?{}", values.len());
    }
    (sql, values)
}

impl Store {
    /// The newest `limit` runs of `routine`, newest first.
    pub fn recent_runs_of(&self, routine: &str, limit: usize) -> Result<Vec<RunMark>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        if let Some(pg) = self.postgres() {
            return pg.recent_runs_of(routine, limit);
        }
        self.with_conn(|c| {
            let mut stmt = c.prepare_cached(sql::RECENT)?;
            let rows = stmt.query_map(params![routine, limit], |r| {
                Ok(RunMark {
                    id: r.get(0)?,
                    status: enum_column(r, 1)?,
                    created_at: time_column(r, 2)?,
                    started_at: opt_time_column(r, 3)?,
                    finished_at: opt_time_column(r, 4)?,
                })
            })?;
            rows.collect()
        })
    }

    /// Run `id` as lists show it.
    pub fn run_brief(&self, id: i64) -> Result<Option<RunBrief>, StoreError> {
        if let Some(pg) = self.postgres() {
            return pg.run_brief(id);
        }
        self.with_conn(|c| c.prepare_cached(&sql::brief())?.query_row([id], brief_from_row).optional())
    }

    /// One page of runs, filtered by routine and status, newest first;
    /// paged by id (keyset), so the thousandth page costs what the first does.
    pub fn run_page(&self, q: &RunPageQuery<'_>) -> Result<RunPage, StoreError> {
        if let Some(pg) = self.postgres() {
            return pg.run_page(q);
        }
        let limit = q.limit.max(1);
        let fetch = i64::try_from(limit + 1).unwrap_or(i64::MAX);
        let (filter, values) = list_filter(q.routine, q.status);
        let (id_at, limit_at) = (values.len() + 1, values.len() + 2);
        let with = |id: i64, limit: Option<i64>| {
            let mut all = values.clone();
            all.push(Value::Integer(id));
            all.extend(limit.map(Value::Integer));
            all
        };
        self.with_conn(|c| {
            let exists = |cond: &str, id: i64| -> rusqlite::Result<bool> {
                let mut stmt = c.prepare_cached(&sql::exists(&filter, cond, id_at))?;
                Ok(stmt.query_row(params_from_iter(with(id, None)), |_| Ok(())).optional()?.is_some())
            };
            let page = |cond: &str, order: &str, id: i64| -> rusqlite::Result<Vec<RunBrief>> {
                let mut stmt = c.prepare_cached(&sql::page(&filter, cond, order, id_at, limit_at))?;
                stmt.query_map(params_from_iter(with(id, Some(fetch))), brief_from_row)?.collect()
            };
            match (q.before, q.after) {
                (None, Some(after)) => {
                    let mut runs = page(">", "ASC", after)?;
                    let newer = runs.len() > limit;
                    runs.truncate(limit);
                    runs.reverse();
                    let older = exists("<=", after)?;
                    Ok(RunPage { runs, newer, older })
                }
                (before, _) => {
                    let mut runs = page("<", "DESC", before.unwrap_or(i64::MAX))?;
                    let older = runs.len() > limit;
                    runs.truncate(limit);
                    let newer = match before {
                        Some(b) => exists(">=", b)?,
                        None => false,
                    };
                    Ok(RunPage { runs, newer, older })
                }
            }
        })
    }

    /// Runs that ended failed, timed out or interrupted and were created at
    /// or after `since`, newest first.
    pub fn attention_runs(&self, since: DateTime<Utc>, limit: usize) -> Result<Vec<RunBrief>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let statuses = ATTENTION_STATUSES.map(RunStatus::as_str);
        if let Some(pg) = self.postgres() {
            return pg.attention_runs(to_db_time(since), statuses, limit);
        }
        self.with_conn(|c| {
            // Ids grow with created_at, so the window starts at the first
            // id created in it; each status is then a short range of its index.
            let first: Option<i64> =
                c.prepare_cached(sql::FIRST_SINCE)?.query_row([to_db_time(since)], |r| r.get(0)).optional()?;
            let Some(first) = first else { return Ok(Vec::new()) };
            let mut stmt = c.prepare_cached(&sql::attention())?;
            stmt.query_map(params![statuses[0], statuses[1], statuses[2], first, limit], brief_from_row)?.collect()
        })
    }

    /// The ids of the runs of `routine` just before and just after `id`.
    pub fn run_neighbours(&self, routine: &str, id: i64) -> Result<(Option<i64>, Option<i64>), StoreError> {
        if let Some(pg) = self.postgres() {
            return pg.run_neighbours(routine, id);
        }
        self.with_conn(|c| {
            let before = c.prepare_cached(sql::BEFORE)?.query_row(params![routine, id], |r| r.get(0)).optional()?;
            let after = c.prepare_cached(sql::AFTER)?.query_row(params![routine, id], |r| r.get(0)).optional()?;
            Ok((before, after))
        })
    }

    /// The reason and earliest start of run `id`.
    pub fn run_extra(&self, id: i64) -> Result<Option<RunExtra>, StoreError> {
        if let Some(pg) = self.postgres() {
            return pg.run_extra(id);
        }
        self.with_conn(|c| {
            c.query_row("SELECT reason, not_before FROM runs WHERE id = ?1", [id], |r| {
                Ok(RunExtra { reason: r.get(0)?, not_before: opt_time_column(r, 1)? })
            })
            .optional()
        })
    }

    /// Runs and tokens per day and status, from the hourly counts in
    /// `run_hours`. `bounds` are the starts of the days and the end of the
    /// last one, ascending (n + 1 instants for n days, in any zone). A run
    /// counts in the day its row was created; an hour counts in the day it
    /// starts in, so in zones offset by a half or a quarter hour the first
    /// minutes after midnight count to the day before.
    pub fn day_stats(&self, bounds: &[DateTime<Utc>]) -> Result<Vec<DayStatusCount>, StoreError> {
        let (Some(first), Some(last)) = (bounds.first(), bounds.last()) else { return Ok(Vec::new()) };
        if bounds.len() < 2 {
            return Ok(Vec::new());
        }
        let hours: Vec<(String, RunStatus, u64, u64, u64)> = if let Some(pg) = self.postgres() {
            pg.hours(hour_key(*first), hour_key(*last))?
        } else {
            self.with_conn(|c| {
                let mut stmt = c.prepare_cached(sql::HOURS)?;
                let rows = stmt.query_map(params![hour_key(*first), hour_key(*last)], |r| {
                    Ok((
                        r.get(0)?,
                        enum_column(r, 1)?,
                        from_db_int(r.get(2)?),
                        from_db_int(r.get(3)?),
                        from_db_int(r.get(4)?),
                    ))
                })?;
                rows.collect()
            })?
        };
        let mut days: BTreeMap<(usize, &'static str), DayStatusCount> = BTreeMap::new();
        for (hour, status, runs, prompt_tokens, completion_tokens) in hours {
            let Some(start) = hour_start(&hour) else { continue };
            if start < *first || start >= *last {
                continue;
            }
            let day = bounds.partition_point(|b| *b <= start).saturating_sub(1);
            let entry = days.entry((day, status.as_str())).or_insert(DayStatusCount {
                day,
                status,
                runs: 0,
                prompt_tokens: 0,
                completion_tokens: 0,
            });
            entry.runs += runs;
            entry.prompt_tokens += prompt_tokens;
            entry.completion_tokens += completion_tokens;
        }
        Ok(days.into_values().collect())
    }

    /// How long the newest `limit` runs of `routine` created since `since`
    /// took, in milliseconds, newest first: runs that ran to an end
    /// (succeeded, silent, failed, timed out).
    pub fn run_durations(&self, routine: &str, since: DateTime<Utc>, limit: usize) -> Result<Vec<u64>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        if let Some(pg) = self.postgres() {
            return pg.run_durations(routine, to_db_time(since), limit);
        }
        self.with_conn(|c| {
            let mut stmt = c.prepare_cached(sql::DURATIONS)?;
            let rows = stmt.query_map(params![routine, to_db_time(since), limit], |r| r.get::<_, i64>(0))?;
            rows.map(|r| r.map(from_db_int)).collect()
        })
    }

    /// Routines paused with `routines pause` (a routine without a row in
    /// `routine_state` is active).
    pub fn paused_routines(&self) -> Result<HashSet<String>, StoreError> {
        if let Some(pg) = self.postgres() {
            return pg.paused_routines();
        }
        self.with_conn(|c| {
            let mut stmt = c.prepare_cached("SELECT routine FROM routine_state WHERE paused_at IS NOT NULL")?;
            stmt.query_map([], |r| r.get(0))?.collect()
        })
    }
}

impl Store {
    /// Runs recorded per status (chat runs left out), and the prompt and completion tokens of
    /// every run: what `/metrics` reports.
    #[allow(clippy::type_complexity)]
    pub fn totals(&self) -> Result<(Vec<(String, i64)>, (i64, i64)), StoreError> {
        if let Some(pg) = self.postgres() {
            return pg.totals();
        }
        self.with_conn(|c| {
            let mut stmt = c.prepare("SELECT status, COUNT(*) FROM runs WHERE kind != 'chat' GROUP BY status")?;
            let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
            let by_status = rows.collect::<rusqlite::Result<Vec<_>>>()?;
            let tokens = c.query_row(
                "SELECT COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0) FROM runs",
                [],
                |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
            )?;
            Ok((by_status, tokens))
        })
    }
}

/// The key of `run_hours` for the hour `t` falls in: `2025-01-31T08`.
fn hour_key(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H").to_string()
}

/// The start of an hour written by [`hour_key`].
fn hour_start(key: &str) -> Option<DateTime<Utc>> {
    NaiveDateTime::parse_from_str(&format!("{key}:00:00"), "%Y-%m-%dT%H:%M:%S").ok().map(|t| t.and_utc())
}

/// The statements, apart so the tests can check how SQLite plans them.
mod sql {
    use super::BRIEF_COLUMNS;

    pub const RECENT: &str = "SELECT id, status, created_at, started_at, finished_at FROM runs
         WHERE routine = ?1 ORDER BY id DESC LIMIT ?2";

    pub fn brief() -> String {
        format!("SELECT {BRIEF_COLUMNS} FROM runs WHERE id = ?1")
    }

    pub fn page(filter: &str, cond: &str, order: &str, id_at: usize, limit_at: usize) -> String {
        format!(
            "SELECT {BRIEF_COLUMNS} FROM runs WHERE {filter} AND id {cond} ?{id_at} ORDER BY id {order} LIMIT ?{limit_at}"
        )
    }

    pub fn exists(filter: &str, cond: &str, id_at: usize) -> String {
        format!("SELECT 1 FROM runs WHERE {filter} AND id {cond} ?{id_at} LIMIT 1")
    }

    pub const FIRST_SINCE: &str = "SELECT id FROM runs WHERE created_at >= ?1 ORDER BY created_at LIMIT 1";

    pub fn attention() -> String {
        format!(
            "SELECT {BRIEF_COLUMNS} FROM runs WHERE status IN (?1, ?2, ?3) AND id >= ?4 AND kind != 'chat'
             ORDER BY id DESC LIMIT ?5"
        )
    }

    pub const BEFORE: &str = "SELECT id FROM runs WHERE routine = ?1 AND id < ?2 ORDER BY id DESC LIMIT 1";
    pub const AFTER: &str = "SELECT id FROM runs WHERE routine = ?1 AND id > ?2 ORDER BY id ASC LIMIT 1";

    /// The hours from `?1` to `?2`, both included.
    pub const HOURS: &str = "SELECT hour, status, runs, prompt_tokens, completion_tokens FROM run_hours
         WHERE hour >= ?1 AND hour <= ?2 AND runs > 0";

    pub const DURATIONS: &str =
        "SELECT CAST(ROUND((julianday(finished_at) - julianday(started_at)) * 86400000.0) AS INTEGER)
         FROM runs
         WHERE routine = ?1 AND created_at >= ?2
           AND status IN ('succeeded', 'silent', 'failed', 'timed_out')
           AND started_at IS NOT NULL AND finished_at IS NOT NULL
         ORDER BY id DESC LIMIT ?3";
}

#[cfg(test)]
mod tests;
