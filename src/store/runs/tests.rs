//! Tests of recording runs, their outcomes and events.

use super::*;
use chrono::TimeZone;

use crate::store::testing::{count_rows, each_backend, execute};

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
    each_backend(|_kind, _dir, store| {
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
    });
}

#[test]
fn the_trigger_context_is_written_once_and_attempts_and_prompt_leave_it_alone() {
    each_backend(|_kind, _dir, store| {
        let id = store.create_run(&routine_run("r", None)).unwrap();
        store.set_trigger_context(id, r#"{"path":"in/a.csv"}"#).unwrap();
        store.set_attempt(id, 2).unwrap();
        store.set_prompt(id, "Summarize in/a.csv.").unwrap();
        assert_eq!(
            store.run_detail(id).unwrap(),
            Some(crate::store::RunDetail {
                prompt: Some("Summarize in/a.csv.".into()),
                trigger_context: Some(r#"{"path":"in/a.csv"}"#.into()),
                attempt: 2,
                pid: Some(std::process::id()),
                owner: store.owner_id(),
                earlier_attempts: Vec::new(),
            })
        );
    });
}

#[test]
fn created_running_gets_started_at() {
    each_backend(|_kind, _dir, store| {
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
    });
}

#[test]
fn duplicate_fire_is_rejected_but_unscheduled_runs_coexist() {
    each_backend(|_kind, _dir, store| {
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
        assert_eq!(count_rows(&store, "runs"), 5);
    });
}

#[test]
fn events_get_sequential_seq_per_run() {
    each_backend(|_kind, _dir, store| {
        let a = store.create_run(&routine_run("a", None)).unwrap();
        let b = store.create_run(&routine_run("b", None)).unwrap();
        // Events are a running run's (on PostgreSQL, of the node that runs it).
        store.start_run(a).unwrap();
        store.start_run(b).unwrap();
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
    });
}

#[test]
fn deleting_a_run_cascades_to_its_events() {
    each_backend(|_kind, _dir, store| {
        let id = store.create_run(&routine_run("a", None)).unwrap();
        store.start_run(id).unwrap();
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
        execute(&store, &format!("DELETE FROM runs WHERE id = {id}")).unwrap();
        assert_eq!(store.run_events(id).unwrap(), Vec::new());
    });
}
