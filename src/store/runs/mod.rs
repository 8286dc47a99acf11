//! Runs (one execution of a chat turn, routine, heartbeat or greeting) and
//! their ordered events (model calls, tool calls, notes).

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use rusqlite::types::Type;
use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};

use super::{Store, StoreError, from_db_int, opt_time_column, time_column, to_db_int, to_db_time};

/// A string that names no variant of a run enum.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {value:?}; expected one of: {expected}")]
pub struct UnknownVariant {
    pub what: &'static str,
    pub value: String,
    pub expected: &'static str,
}

/// Defines a fieldless enum stored as snake_case text.
macro_rules! text_enum {
    ($(#[$m:meta])* $name:ident, $what:literal, { $($(#[$vm:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name { $($(#[$vm])* $variant),+ }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The snake_case name stored in the database.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = UnknownVariant;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err(UnknownVariant {
                        what: $what,
                        value: s.to_string(),
                        expected: concat!($($text, " "),+).trim_ascii_end(),
                    }),
                }
            }
        }
    };
}

text_enum!(
    /// What started a run.
    RunKind, "run kind", {
        Chat => "chat",
        Routine => "routine",
        Heartbeat => "heartbeat",
        Greeting => "greeting",
    }
);

text_enum!(
    /// Lifecycle state of a run.
    RunStatus, "run status", {
        Queued => "queued",
        Running => "running",
        Succeeded => "succeeded",
        /// Finished without anything worth telling the user.
        Silent => "silent",
        Failed => "failed",
        TimedOut => "timed_out",
        Skipped => "skipped",
        /// The process stopped while the run was in progress.
        Interrupted => "interrupted",
    }
);

text_enum!(
    /// What a run event records.
    EventKind, "event kind", {
        ModelCall => "model_call",
        ToolCall => "tool_call",
        /// Something noticed during the run; its status says what (e.g. `injection_check`).
        Note => "note",
    }
);

/// A run to record with [`Store::create_run`].
#[derive(Debug, Clone, PartialEq)]
pub struct NewRun {
    pub kind: RunKind,
    pub routine: Option<String>,
    /// What fired it, e.g. `cron`, `manual`, `webhook`.
    pub trigger: String,
    /// The scheduled instant, for deduplicating fires. Stored with
    /// millisecond precision.
    pub scheduled_for: Option<DateTime<Utc>>,
    pub status: RunStatus,
}

/// How a run ended, for [`Store::finish_run`].
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    pub status: RunStatus,
    pub output: Option<String>,
    pub error: Option<String>,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub iterations: u32,
    /// Why it was skipped or interrupted (see [`super::reason`]).
    pub reason: Option<&'static str>,
}

impl RunOutcome {
    /// An end with no output and nothing counted yet: no tokens, no iterations (a run that made
    /// no model call, or the start of one that will count them).
    pub fn new(status: RunStatus, error: Option<String>) -> Self {
        RunOutcome { status, output: None, error, prompt_tokens: 0, completion_tokens: 0, iterations: 0, reason: None }
    }

    /// A run that did not start: `skipped` for `reason` (see [`super::reason`]), `why` as its
    /// error.
    pub fn skipped(reason: &'static str, why: impl Into<String>) -> Self {
        RunOutcome { reason: Some(reason), ..RunOutcome::new(RunStatus::Skipped, Some(why.into())) }
    }
}

/// One row of `runs`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRow {
    pub id: i64,
    pub kind: RunKind,
    pub routine: Option<String>,
    pub trigger: String,
    pub scheduled_for: Option<DateTime<Utc>>,
    pub status: RunStatus,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    pub output: Option<String>,
    pub error: Option<String>,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub iterations: u32,
    pub created_at: DateTime<Utc>,
}

/// An event to append with [`Store::record_event`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NewEvent<'a> {
    pub kind: EventKind,
    pub tool: Option<&'a str>,
    pub status: &'a str,
    pub arguments: Option<&'a str>,
    pub detail: Option<&'a str>,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub duration_ms: u64,
}

/// One row of `run_events`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventRow {
    pub id: i64,
    pub run_id: i64,
    /// 1-based position within the run.
    pub seq: i64,
    pub at: DateTime<Utc>,
    /// The stored text of an [`EventKind`] (see [`EventRow::event_kind`]).
    pub kind: String,
    pub tool: Option<String>,
    pub status: String,
    pub arguments: Option<String>,
    pub detail: Option<String>,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub duration_ms: u64,
}

pub(super) const RUN_COLUMNS: &str = "id, kind, routine, trigger, scheduled_for, status, started_at, \
     finished_at, output, error, prompt_tokens, completion_tokens, iterations, created_at";

pub(super) const EVENT_COLUMNS: &str = "id, run_id, seq, at, kind, tool, status, arguments, detail, \
     prompt_tokens, completion_tokens, duration_ms";

pub(super) fn enum_column<T: FromStr<Err = UnknownVariant>>(row: &Row<'_>, idx: usize) -> rusqlite::Result<T> {
    let text: String = row.get(idx)?;
    text.parse().map_err(|e| rusqlite::Error::FromSqlConversionFailure(idx, Type::Text, Box::new(e)))
}

pub(super) fn run_from_row(row: &Row<'_>) -> rusqlite::Result<RunRow> {
    Ok(RunRow {
        id: row.get(0)?,
        kind: enum_column(row, 1)?,
        routine: row.get(2)?,
        trigger: row.get(3)?,
        scheduled_for: opt_time_column(row, 4)?,
        status: enum_column(row, 5)?,
        started_at: opt_time_column(row, 6)?,
        finished_at: opt_time_column(row, 7)?,
        output: row.get(8)?,
        error: row.get(9)?,
        prompt_tokens: from_db_int(row.get(10)?),
        completion_tokens: from_db_int(row.get(11)?),
        iterations: u32::try_from(row.get::<_, i64>(12)?).unwrap_or(0),
        created_at: time_column(row, 13)?,
    })
}

fn event_from_row(row: &Row<'_>) -> rusqlite::Result<EventRow> {
    Ok(EventRow {
        id: row.get(0)?,
        run_id: row.get(1)?,
        seq: row.get(2)?,
        at: time_column(row, 3)?,
        kind: row.get(4)?,
        tool: row.get(5)?,
        status: row.get(6)?,
        arguments: row.get(7)?,
        detail: row.get(8)?,
        prompt_tokens: row.get::<_, Option<i64>>(9)?.map(from_db_int),
        completion_tokens: row.get::<_, Option<i64>>(10)?.map(from_db_int),
        duration_ms: from_db_int(row.get(11)?),
    })
}

impl EventRow {
    /// Its kind, if it is one this version knows.
    pub fn event_kind(&self) -> Option<EventKind> {
        self.kind.parse().ok()
    }
}

fn extended_code(e: &rusqlite::Error) -> Option<i32> {
    match e {
        rusqlite::Error::SqliteFailure(f, _) => Some(f.extended_code),
        _ => None,
    }
}

impl Store {
    /// Records a new run and returns its id. A run created as `Running` also
    /// gets `started_at`. A second run for the same `(routine,
    /// scheduled_for)` fails with [`StoreError::DuplicateFire`]; runs without
    /// a routine or a scheduled time never collide.
    pub fn create_run(&self, new: &NewRun) -> Result<i64, StoreError> {
        if let Some(pg) = self.postgres() {
            return pg.create_run(new);
        }
        let now = to_db_time(Utc::now());
        let started_at = (new.status == RunStatus::Running).then_some(now.as_str());
        let result = self.with_conn(|c| {
            c.query_row(
                "INSERT INTO runs (kind, routine, trigger, scheduled_for, status, started_at, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id",
                params![
                    new.kind.as_str(),
                    new.routine,
                    new.trigger,
                    new.scheduled_for.map(to_db_time),
                    new.status.as_str(),
                    started_at,
                    now,
                ],
                |r| r.get(0),
            )
        });
        match (result, &new.routine, new.scheduled_for) {
            (Err(StoreError::Sqlite(e)), Some(routine), Some(scheduled_for))
                if extended_code(&e) == Some(rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE) =>
            {
                Err(StoreError::DuplicateFire { routine: routine.clone(), scheduled_for })
            }
            (result, _, _) => result,
        }
    }

    /// Whether run `id` is still running as this process's. On a shared database another node
    /// takes over the runs of a node whose lease lapsed (SPEC §12), and asks the database; a
    /// private one has no other process that could, and is not asked.
    pub fn still_mine(&self, id: i64) -> Result<bool, StoreError> {
        match self.postgres() {
            Some(pg) => pg.still_mine(id, self.owner_id()),
            None => Ok(true),
        }
    }

    /// Marks a run `running`, owned by this process, and stamps `started_at` with now. (A
    /// queued fire the daemon adopted still names the process that queued it until then.)
    pub fn start_run(&self, id: i64) -> Result<(), StoreError> {
        let owner = self.owner_id();
        let changed = match self.postgres() {
            Some(pg) => pg.start_run(id, owner)? > 0,
            None => {
                self.with_conn(|c| {
                    c.execute(
                        "UPDATE runs SET status = ?2, started_at = ?3, pid = ?4, owner = ?5 WHERE id = ?1",
                        params![id, RunStatus::Running.as_str(), to_db_time(Utc::now()), std::process::id(), owner],
                    )
                })? > 0
            }
        };
        if !changed {
            return Err(StoreError::RunNotFound(id));
        }
        Ok(())
    }

    /// Records how a run ended and stamps `finished_at` with now.
    pub fn finish_run(&self, id: i64, outcome: &RunOutcome) -> Result<(), StoreError> {
        if let Some(pg) = self.postgres() {
            let output = self.clean_opt(outcome.output.as_deref());
            let error = self.clean_opt(outcome.error.as_deref());
            let owned = |t: Option<std::borrow::Cow<'_, str>>| t.map(|t| t.into_owned());
            if pg.finish_run(id, super::postgres::OwnedEnd::new(outcome, owned(output), owned(error)))? == 0 {
                return Err(StoreError::RunNotFound(id));
            }
            return Ok(());
        }
        let changed = self.with_conn(|c| self.write_end(c, id, outcome))?;
        if changed == 0 {
            return Err(StoreError::RunNotFound(id));
        }
        Ok(())
    }

    /// The statement of [`Store::finish_run`] on `c`, for a caller that writes more in the same
    /// transaction; returns how many rows it changed (0: no such run).
    pub(in crate::store) fn write_end(&self, c: &Connection, id: i64, outcome: &RunOutcome) -> rusqlite::Result<usize> {
        let output = self.clean_opt(outcome.output.as_deref());
        let error = self.clean_opt(outcome.error.as_deref());
        c.execute(
            "UPDATE runs SET status = ?2, output = ?3, error = ?4, prompt_tokens = ?5,
                    completion_tokens = ?6, iterations = ?7, finished_at = ?8, reason = ?9
             WHERE id = ?1",
            params![
                id,
                outcome.status.as_str(),
                output,
                error,
                to_db_int(outcome.prompt_tokens),
                to_db_int(outcome.completion_tokens),
                i64::from(outcome.iterations),
                to_db_time(Utc::now()),
                outcome.reason,
            ],
        )
    }

    /// The run with this id, if any.
    pub fn get_run(&self, id: i64) -> Result<Option<RunRow>, StoreError> {
        if let Some(pg) = self.postgres() {
            return pg.get_run(id);
        }
        self.with_conn(|c| {
            c.query_row(&format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1"), [id], run_from_row).optional()
        })
    }

    /// Appends an event to a run and returns its `seq`: 1 for the run's first
    /// event, then 2, 3, ... (assigned inside the INSERT, so concurrent
    /// writers cannot get the same number).
    pub fn record_event(&self, run_id: i64, event: &NewEvent<'_>) -> Result<i64, StoreError> {
        let arguments = event.arguments.map(|a| self.clean_json(a));
        let detail = self.clean_opt(event.detail);
        if let Some(pg) = self.postgres() {
            let event = crate::store::postgres::OwnedEvent {
                kind: event.kind.as_str(),
                tool: event.tool.map(str::to_string),
                status: event.status.to_string(),
                arguments: arguments.map(|a| a.into_owned()),
                detail: detail.map(|d| d.into_owned()),
                prompt_tokens: event.prompt_tokens.map(to_db_int),
                completion_tokens: event.completion_tokens.map(to_db_int),
                duration_ms: to_db_int(event.duration_ms),
            };
            return pg.record_event(run_id, event, self.owner_id());
        }
        let result = self.with_conn(|c| {
            c.query_row(
                "INSERT INTO run_events (run_id, seq, at, kind, tool, status, arguments, detail,
                                         prompt_tokens, completion_tokens, duration_ms)
                 VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM run_events WHERE run_id = ?1),
                         ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
                 RETURNING seq",
                params![
                    run_id,
                    to_db_time(Utc::now()),
                    event.kind.as_str(),
                    event.tool,
                    event.status,
                    arguments,
                    detail,
                    event.prompt_tokens.map(to_db_int),
                    event.completion_tokens.map(to_db_int),
                    to_db_int(event.duration_ms),
                ],
                |r| r.get(0),
            )
        });
        match result {
            Err(StoreError::Sqlite(e)) if extended_code(&e) == Some(rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY) => {
                Err(StoreError::RunNotFound(run_id))
            }
            other => other,
        }
    }

    /// All events of a run, in `seq` order.
    pub fn run_events(&self, run_id: i64) -> Result<Vec<EventRow>, StoreError> {
        if let Some(pg) = self.postgres() {
            return pg.run_events(run_id);
        }
        self.with_conn(|c| {
            let mut stmt =
                c.prepare_cached(&format!("SELECT {EVENT_COLUMNS} FROM run_events WHERE run_id = ?1 ORDER BY seq"))?;
            stmt.query_map([run_id], event_from_row)?.collect()
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
