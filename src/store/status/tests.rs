use chrono::{Duration, TimeZone};

use super::*;
use crate::store::testing::{each_backend, execute, text_rows};
use crate::store::{NewRun, RunOutcome};

fn t(h: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 3, 10, 0, 0, 0).unwrap() + Duration::hours(h)
}

/// Records a finished run of `routine` created at hour `h`, taking `secs`.
fn run(store: &Store, routine: &str, status: RunStatus, h: i64, secs: i64, tokens: u64) -> i64 {
    let id = store
        .create_run(&NewRun {
            kind: RunKind::Routine,
            routine: Some(routine.into()),
            trigger: "cron".into(),
            scheduled_for: None,
            status: RunStatus::Queued,
        })
        .unwrap();
    store.start_run(id).unwrap();
    let outcome = RunOutcome {
        status,
        output: None,
        error: (status == RunStatus::Failed).then(|| "x".repeat(500)),
        prompt_tokens: tokens,
        completion_tokens: tokens / 10,
        iterations: 1,
        reason: None,
    };
    store.finish_run(id, &outcome).unwrap();
    let (from, to) = (to_db_time(t(h)), to_db_time(t(h) + Duration::seconds(secs)));
    execute(
        store,
        &format!("UPDATE runs SET created_at = '{from}', started_at = '{from}', finished_at = '{to}' WHERE id = {id}"),
    )
    .unwrap();
    id
}

fn ids(runs: &[RunBrief]) -> Vec<i64> {
    runs.iter().map(|r| r.id).collect()
}

#[test]
fn pages_walk_the_filtered_runs_by_id_both_ways() {
    each_backend(|_kind, _dir, store| {
        let mut failed_a = Vec::new();
        for i in 0..10 {
            let status = if i % 2 == 0 { RunStatus::Failed } else { RunStatus::Succeeded };
            let id = run(&store, if i < 7 { "a" } else { "b" }, status, i, 5, 10);
            if i < 7 && status == RunStatus::Failed {
                failed_a.push(id);
            }
        }
        failed_a.reverse();
        let q =
            RunPageQuery { routine: Some("a"), status: Some(RunStatus::Failed), limit: 2, ..RunPageQuery::default() };
        let first = store.run_page(&q).unwrap();
        assert_eq!((ids(&first.runs), first.newer, first.older), (failed_a[..2].to_vec(), false, true));
        let second = store.run_page(&RunPageQuery { before: Some(failed_a[1]), ..q.clone() }).unwrap();
        assert_eq!((ids(&second.runs), second.newer, second.older), (failed_a[2..].to_vec(), true, false));
        let back = store.run_page(&RunPageQuery { after: Some(failed_a[2]), ..q.clone() }).unwrap();
        assert_eq!((ids(&back.runs), back.newer, back.older), (failed_a[..2].to_vec(), false, true));

        let all = store.run_page(&RunPageQuery { limit: 50, ..RunPageQuery::default() }).unwrap();
        assert_eq!(all.runs.len(), 10);
        assert!(all.runs.windows(2).all(|w| w[0].id > w[1].id), "newest first");
        assert_eq!(all.runs.iter().find(|r| r.status == RunStatus::Failed).unwrap().error.as_ref().unwrap().len(), 240);
        let b = store.run_page(&RunPageQuery { routine: Some("b"), limit: 50, ..RunPageQuery::default() }).unwrap();
        assert_eq!(b.runs.len(), 3);
    });
}

#[test]
fn recent_runs_and_neighbours_are_per_routine() {
    each_backend(|_kind, _dir, store| {
        let a1 = run(&store, "a", RunStatus::Succeeded, 1, 5, 0);
        let _b = run(&store, "b", RunStatus::Succeeded, 2, 5, 0);
        let a2 = run(&store, "a", RunStatus::Failed, 3, 5, 0);
        let a3 = run(&store, "a", RunStatus::Succeeded, 4, 5, 0);
        let recent = store.recent_runs_of("a", 2).unwrap();
        assert_eq!(
            recent.iter().map(|r| (r.id, r.status)).collect::<Vec<_>>(),
            [(a3, RunStatus::Succeeded), (a2, RunStatus::Failed)]
        );
        assert_eq!(store.run_brief(a2).unwrap().unwrap().status, RunStatus::Failed);
        assert_eq!(store.run_brief(a3 + 100).unwrap(), None);
        assert_eq!(store.run_neighbours("a", a2).unwrap(), (Some(a1), Some(a3)));
        assert_eq!(store.run_neighbours("a", a1).unwrap(), (None, Some(a2)));
    });
}

#[test]
fn attention_lists_recent_failures_only() {
    each_backend(|_kind, _dir, store| {
        let _old = run(&store, "a", RunStatus::Failed, 1, 5, 0);
        let _ok = run(&store, "a", RunStatus::Succeeded, 30, 5, 0);
        let failed = run(&store, "b", RunStatus::Failed, 31, 5, 0);
        let timed_out = run(&store, "a", RunStatus::TimedOut, 32, 5, 0);
        assert_eq!(ids(&store.attention_runs(t(24), 10).unwrap()), [timed_out, failed]);
        assert_eq!(ids(&store.attention_runs(t(24), 1).unwrap()), [timed_out]);
        assert!(store.attention_runs(t(100), 10).unwrap().is_empty());
    });
}

#[test]
fn day_stats_count_runs_and_tokens_per_day_and_status() {
    each_backend(|_kind, _dir, store| {
        run(&store, "a", RunStatus::Succeeded, 1, 5, 100);
        run(&store, "a", RunStatus::Succeeded, 2, 5, 100);
        run(&store, "a", RunStatus::Failed, 23, 5, 50);
        run(&store, "a", RunStatus::Succeeded, 25, 5, 1000);
        run(&store, "a", RunStatus::Succeeded, 80, 5, 1); // after the window
        let chat = store
            .create_run(&NewRun {
                kind: RunKind::Chat,
                routine: None,
                trigger: "chat".into(),
                scheduled_for: None,
                status: RunStatus::Running,
            })
            .unwrap();
        execute(&store, &format!("UPDATE runs SET created_at = '{}' WHERE id = {chat}", to_db_time(t(3)))).unwrap();
        let bounds = [t(0), t(24), t(48)];
        let mut stats = store.day_stats(&bounds).unwrap();
        stats.sort_by_key(|s| (s.day, s.status.as_str()));
        let got: Vec<(usize, &str, u64, u64, u64)> =
            stats.iter().map(|s| (s.day, s.status.as_str(), s.runs, s.prompt_tokens, s.completion_tokens)).collect();
        assert_eq!(got, [(0, "failed", 1, 50, 5), (0, "succeeded", 2, 200, 20), (1, "succeeded", 1, 1000, 100)]);
        assert!(store.day_stats(&[t(0)]).unwrap().is_empty());
        // Days need not be whole UTC days: a window from 02:00 leaves out the runs before.
        let late = store.day_stats(&[t(2), t(26)]).unwrap();
        let got: Vec<(&str, u64)> = late.iter().map(|s| (s.status.as_str(), s.runs)).collect();
        assert_eq!(got, [("failed", 1), ("succeeded", 2)]);
    });
}

/// What `run_hours` holds, against a count of the rows themselves.
fn hours_match_rows(store: &Store) {
    let counted = |sql: &str| text_rows(store, sql);
    assert_eq!(
        counted("SELECT hour, status, runs, prompt_tokens FROM run_hours WHERE runs > 0 ORDER BY 1, 2"),
        counted(
            "SELECT substr(created_at, 1, 13), status, COUNT(*), SUM(prompt_tokens) FROM runs WHERE kind <> 'chat'
             GROUP BY 1, 2 ORDER BY 1, 2"
        )
    );
}

#[test]
fn hourly_counts_follow_every_write() {
    each_backend(|_kind, _dir, store| {
        let a = run(&store, "a", RunStatus::Succeeded, 1, 5, 100);
        let b = run(&store, "a", RunStatus::Failed, 1, 5, 40);
        run(&store, "b", RunStatus::Succeeded, 5, 5, 7);
        hours_match_rows(&store);
        // A status change, moved in time, a deletion by pruning, skipped instants.
        execute(&store, &format!("UPDATE runs SET status = 'interrupted' WHERE id = {b}")).unwrap();
        execute(&store, &format!("UPDATE runs SET created_at = '{}' WHERE id = {a}", to_db_time(t(9)))).unwrap();
        hours_match_rows(&store);
        execute(&store, &format!("DELETE FROM runs WHERE id = {a}")).unwrap();
        store.record_skipped("c", "cron", &[t(3), t(4)], "missed", "down").unwrap();
        hours_match_rows(&store);
    });
}

#[test]
fn durations_are_of_runs_that_ran_to_an_end() {
    each_backend(|_kind, _dir, store| {
        run(&store, "a", RunStatus::Succeeded, 1, 3, 0);
        run(&store, "a", RunStatus::Failed, 2, 7, 0);
        run(&store, "a", RunStatus::Interrupted, 3, 9, 0);
        run(&store, "a", RunStatus::TimedOut, 4, 600, 0);
        run(&store, "b", RunStatus::Succeeded, 5, 1, 0);
        assert_eq!(store.run_durations("a", t(0), 10).unwrap(), [600_000, 7_000, 3_000]);
        assert_eq!(store.run_durations("a", t(2), 10).unwrap(), [600_000, 7_000]);
        assert_eq!(store.run_durations("a", t(0), 1).unwrap(), [600_000]);
    });
}

#[test]
fn a_routine_without_state_is_active() {
    each_backend(|_kind, _dir, store| {
        assert!(store.paused_routines().unwrap().is_empty());
        execute(
            &store,
            "INSERT INTO routine_state (routine, paused_at, updated_at) VALUES ('a', '2025-01-01T00:00:00.000Z', 'x');
             INSERT INTO routine_state (routine, paused_at, updated_at) VALUES ('b', NULL, 'x');",
        )
        .unwrap();
        assert_eq!(store.paused_routines().unwrap(), HashSet::from(["a".to_string()]));
    });
}

/// How SQLite runs `sql`: the detail lines of EXPLAIN QUERY PLAN.
fn plan(store: &Store, sql: &str, args: usize) -> String {
    let nulls = vec![Value::Null; args];
    store
        .with_conn(|c| {
            let mut stmt = c.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
            let rows = stmt.query_map(params_from_iter(nulls.iter()), |r| r.get::<_, String>(3))?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })
        .unwrap()
        .join(" | ")
}

#[test]
fn every_query_walks_an_index() {
    let store = Store::open_in_memory().unwrap();
    let page = |routine: bool, status: bool| {
        let (filter, values) = list_filter(routine.then_some("a"), status.then_some(RunStatus::Failed));
        let n = values.len();
        (sql::page(&filter, "<", "DESC", n + 1, n + 2), n + 2)
    };
    let cases = [
        ("page", page(false, false), "INTEGER PRIMARY KEY"),
        ("page by routine", page(true, false), "INDEX runs_by_routine"),
        ("page by status", page(false, true), "runs_status"),
        ("page by both", page(true, true), "INDEX runs_by_routine"),
        ("recent", (sql::RECENT.to_string(), 2), "COVERING INDEX runs_by_routine"),
        ("first since", (sql::FIRST_SINCE.to_string(), 1), "runs_created_at"),
        ("attention", (sql::attention(), 5), "runs_status"),
        ("neighbour", (sql::BEFORE.to_string(), 2), "runs_by_routine"),
        ("hours", (sql::HOURS.to_string(), 2), "SEARCH run_hours USING PRIMARY KEY"),
        ("durations", (sql::DURATIONS.to_string(), 3), "COVERING INDEX runs_by_routine"),
    ];
    for (what, (sql, args), index) in cases {
        let plan = plan(&store, &sql, args);
        assert!(plan.contains(index), "{what} should use {index}: {plan}");
        assert!(!plan.contains("SCAN runs"), "{what} scans the table: {plan}");
    }
}
