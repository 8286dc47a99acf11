//! Runs (one execution of a chat turn, routine, heartbeat or greeting) and
//! their ordered events (model calls, tool calls, notes).

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use rusqlite::types::Type;
use rusqlite::{OptionalExtension, Row, params};
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

const EVENT_COLUMNS: &str = "id, run_id, seq, at, kind, tool, status, arguments, detail, \
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

    /// Marks a run `running` and stamps `started_at` with now.
    pub fn start_run(&self, id: i64) -> Result<(), StoreError> {
        let changed = self.with_conn(|c| {
            c.execute(
                "UPDATE runs SET status = ?2, started_at = ?3 WHERE id = ?1",
                params![id, RunStatus::Running.as_str(), to_db_time(Utc::now())],
            )
        })?;
        if changed == 0 {
            return Err(StoreError::RunNotFound(id));
        }
        Ok(())
    }

    /// Records how a run ended and stamps `finished_at` with now.
    pub fn finish_run(&self, id: i64, outcome: &RunOutcome) -> Result<(), StoreError> {
        let output = self.clean_opt(outcome.output.as_deref());
        let error = self.clean_opt(outcome.error.as_deref());
        let changed = self.with_conn(|c| {
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
        })?;
        if changed == 0 {
            return Err(StoreError::RunNotFound(id));
        }
        Ok(())
    }

    /// The run with this id, if any.
    pub fn get_run(&self, id: i64) -> Result<Option<RunRow>, StoreError> {
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
        self.with_conn(|c| {
            let mut stmt =
                c.prepare_cached(&format!("SELECT {EVENT_COLUMNS} FROM run_events WHERE run_id = ?1 ORDER BY seq"))?;
            stmt.query_map([run_id], event_from_row)?.collect()
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("runs.db")).unwrap();
        (dir, store)
    }

    fn routine_run(routine: &str, at: Option<DateTime<Utc>>) -> NewRun {
        NewRun {
            kind: RunKind::Routine,
            routine: Some(routine.to_string()),
            trigger: "cron".to_string(),
            scheduled_for: at,
            status: RunStatus::Queued,
        }
    }

    #[test]
    fn enums_round_trip_through_text() {
        for k in RunKind::ALL {
            assert_eq!(k.as_str().parse::<RunKind>().unwrap(), *k);
            assert_eq!(k.to_string(), k.as_str());
        }
        for s in RunStatus::ALL {
            assert_eq!(s.as_str().parse::<RunStatus>().unwrap(), *s);
        }
        for k in EventKind::ALL {
            assert_eq!(k.as_str().parse::<EventKind>().unwrap(), *k);
        }
        assert_eq!(EventKind::ToolCall.as_str(), "tool_call");
        assert_eq!(RunStatus::TimedOut.as_str(), "timed_out");
        assert_eq!(serde_json::to_string(&RunStatus::TimedOut).unwrap(), "\"timed_out\"");
        let err = "done".parse::<RunStatus>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown run status \"done\"; expected one of: queued running succeeded silent \
             failed timed_out skipped interrupted"
        );
    }

    #[test]
    fn run_lifecycle_round_trips_all_columns() {
        let (_dir, store) = store();
        let at = Utc.with_ymd_and_hms(2025, 3, 1, 7, 30, 0).unwrap();
        let id = store.create_run(&routine_run("morning", Some(at))).unwrap();

        let queued = store.get_run(id).unwrap().unwrap();
        assert_eq!((queued.status, queued.started_at, queued.finished_at), (RunStatus::Queued, None, None));

        store.start_run(id).unwrap();
        let outcome = RunOutcome {
            status: RunStatus::Succeeded,
            output: Some("all good".to_string()),
            error: None,
            prompt_tokens: 1200,
            completion_tokens: 345,
            iterations: 3,
            reason: None,
        };
        store.finish_run(id, &outcome).unwrap();

        let run = store.get_run(id).unwrap().unwrap();
        let started = run.started_at.unwrap();
        let finished = run.finished_at.unwrap();
        assert!(run.created_at <= started && started <= finished);
        assert_eq!(
            run,
            RunRow {
                id,
                kind: RunKind::Routine,
                routine: Some("morning".to_string()),
                trigger: "cron".to_string(),
                scheduled_for: Some(at),
                status: RunStatus::Succeeded,
                started_at: Some(started),
                finished_at: Some(finished),
                output: Some("all good".to_string()),
                error: None,
                prompt_tokens: 1200,
                completion_tokens: 345,
                iterations: 3,
                created_at: run.created_at,
            }
        );
        assert_eq!(store.get_run(id + 1).unwrap(), None);
        assert!(matches!(store.start_run(9999), Err(StoreError::RunNotFound(9999))));
        assert!(matches!(store.finish_run(9999, &outcome), Err(StoreError::RunNotFound(9999))));
    }

    #[test]
    fn created_running_gets_started_at() {
        let (_dir, store) = store();
        let id = store
            .create_run(&NewRun {
                kind: RunKind::Chat,
                routine: None,
                trigger: "chat".to_string(),
                scheduled_for: None,
                status: RunStatus::Running,
            })
            .unwrap();
        let run = store.get_run(id).unwrap().unwrap();
        assert_eq!(run.status, RunStatus::Running);
        assert_eq!(run.started_at, Some(run.created_at));
    }

    #[test]
    fn duplicate_fire_is_rejected_but_unscheduled_runs_coexist() {
        let (_dir, store) = store();
        let at = Utc.with_ymd_and_hms(2025, 3, 1, 7, 30, 0).unwrap();
        let first = store.create_run(&routine_run("morning", Some(at))).unwrap();
        match store.create_run(&routine_run("morning", Some(at))) {
            Err(StoreError::DuplicateFire { routine, scheduled_for }) => {
                assert_eq!((routine.as_str(), scheduled_for), ("morning", at))
            }
            other => panic!("expected DuplicateFire, got {other:?}"),
        }
        // Same time, other routine; same routine, other time: both fine.
        let other = store.create_run(&routine_run("evening", Some(at))).unwrap();
        let later = store.create_run(&routine_run("morning", Some(at + chrono::Duration::minutes(1)))).unwrap();
        // Manual runs of the same routine have no scheduled time and coexist.
        let m1 = store.create_run(&routine_run("morning", None)).unwrap();
        let m2 = store.create_run(&routine_run("morning", None)).unwrap();
        let ids = [first, other, later, m1, m2];
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
        let count: i64 = store.with_conn(|c| c.query_row("SELECT COUNT(*) FROM runs", [], |r| r.get(0))).unwrap();
        assert_eq!(count, 5);
    }

    #[test]
    fn events_get_sequential_seq_per_run() {
        let (_dir, store) = store();
        let a = store.create_run(&routine_run("a", None)).unwrap();
        let b = store.create_run(&routine_run("b", None)).unwrap();
        let call = NewEvent {
            kind: EventKind::ToolCall,
            tool: Some("web_fetch"),
            status: "ok",
            arguments: Some(r#"{"url":"https://example.com"}"#),
            detail: Some("200 OK"),
            prompt_tokens: None,
            completion_tokens: None,
            duration_ms: 87,
        };
        let model = NewEvent {
            kind: EventKind::ModelCall,
            tool: None,
            status: "ok",
            arguments: None,
            detail: None,
            prompt_tokens: Some(500),
            completion_tokens: Some(40),
            duration_ms: 1500,
        };
        let seqs = [
            store.record_event(a, &model).unwrap(),
            store.record_event(a, &call).unwrap(),
            store.record_event(b, &model).unwrap(),
            store.record_event(a, &model).unwrap(),
        ];
        assert_eq!(seqs, [1, 2, 1, 3]);

        let events = store.run_events(a).unwrap();
        let expected = |i: usize, seq: i64, e: &NewEvent<'_>| EventRow {
            id: events[i].id,
            run_id: a,
            seq,
            at: events[i].at,
            kind: e.kind.to_string(),
            tool: e.tool.map(str::to_string),
            status: e.status.to_string(),
            arguments: e.arguments.map(str::to_string),
            detail: e.detail.map(str::to_string),
            prompt_tokens: e.prompt_tokens,
            completion_tokens: e.completion_tokens,
            duration_ms: e.duration_ms,
        };
        assert_eq!(events, [expected(0, 1, &model), expected(1, 2, &call), expected(2, 3, &model)]);
        assert!(events.windows(2).all(|w| w[0].at <= w[1].at));
        assert_eq!(store.run_events(b).unwrap().len(), 1);
        assert!(matches!(store.record_event(4242, &model), Err(StoreError::RunNotFound(4242))));
    }

    #[test]
    fn deleting_a_run_cascades_to_its_events() {
        let (_dir, store) = store();
        let id = store.create_run(&routine_run("a", None)).unwrap();
        let note = NewEvent {
            kind: EventKind::Note,
            tool: None,
            status: "ok",
            arguments: None,
            detail: None,
            prompt_tokens: None,
            completion_tokens: None,
            duration_ms: 0,
        };
        store.record_event(id, &note).unwrap();
        store.with_conn(|c| c.execute("DELETE FROM runs WHERE id = ?1", [id])).unwrap();
        assert_eq!(store.run_events(id).unwrap(), Vec::new());
    }
}
