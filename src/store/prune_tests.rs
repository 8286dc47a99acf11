//! Pruning and paused stretches on both backends.

use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};

use super::HistoryLimits;
use crate::store::testing::{count_rows, each_backend, execute};
use crate::store::{EventKind, NewDelivery, NewEvent, NewRun, PausedFire, RunKind, RunOutcome, RunStatus, Store};

fn finished(store: &Store, routine: &str, delivery: bool) -> i64 {
    let id = store
        .create_run(&NewRun {
            kind: RunKind::Routine,
            routine: Some(routine.into()),
            trigger: "manual".into(),
            scheduled_for: None,
            status: RunStatus::Running,
        })
        .unwrap();
    let event = NewEvent {
        kind: EventKind::ModelCall,
        tool: None,
        status: "ok",
        arguments: None,
        detail: None,
        prompt_tokens: Some(1),
        completion_tokens: Some(1),
        duration_ms: 1,
    };
    store.record_event(id, &event).unwrap();
    let outcome = RunOutcome::new(RunStatus::Succeeded, None);
    let deliveries: Vec<NewDelivery<'_>> = delivery
        .then_some(NewDelivery {
            run_id: id,
            seq: 0,
            kind: "file",
            target: "out.md",
            on_failure: false,
            payload: "{}",
            acted_on: &[],
            failed: None,
        })
        .into_iter()
        .collect();
    store.end_run(id, &outcome, &deliveries).unwrap();
    id
}

fn ids(store: &Store) -> Vec<i64> {
    crate::store::testing::text_rows(store, "SELECT id FROM runs ORDER BY id")
        .into_iter()
        .map(|r| r[0].as_deref().unwrap().parse().unwrap())
        .collect()
}

fn now() -> DateTime<Utc> {
    Utc::now()
}

#[test]
fn only_the_newest_runs_of_each_routine_stay_but_never_one_with_a_pending_delivery_or_still_queued() {
    each_backend(|kind, _dir, store| {
        let queued = store
            .create_run(&NewRun {
                kind: RunKind::Routine,
                routine: Some("r".into()),
                trigger: "manual".into(),
                scheduled_for: None,
                status: RunStatus::Queued,
            })
            .unwrap();
        let pending = finished(&store, "r", true);
        let runs: Vec<i64> = (0..5).map(|_| finished(&store, "r", false)).collect();
        let other = finished(&store, "other", false);
        let limits = HistoryLimits { max_age: Duration::ZERO, max_runs_per_routine: 3 };
        assert_eq!(store.prune_history(limits, now()).unwrap(), 2, "{kind:?}");
        assert_eq!(ids(&store), [queued, pending, runs[2], runs[3], runs[4], other], "{kind:?}");
        // Their events went with them; the kept ones' stayed.
        assert_eq!(count_rows(&store, "run_events"), 5, "{kind:?}");
        // Once delivered, the run that waited goes at the next pass.
        execute(&store, &format!("UPDATE deliveries SET status = 'delivered' WHERE run_id = {pending}")).unwrap();
        assert_eq!(store.prune_history(limits, now()).unwrap(), 1, "{kind:?}");
        assert_eq!(ids(&store), [queued, runs[2], runs[3], runs[4], other], "{kind:?}");
        assert_eq!(count_rows(&store, "deliveries"), 0, "{kind:?}");
    });
}

#[test]
fn runs_older_than_max_age_go_unless_a_delivery_waits() {
    each_backend(|kind, _dir, store| {
        let old = finished(&store, "r", false);
        let old_waiting = finished(&store, "r", true);
        let failed_for_good = finished(&store, "r", true);
        let recent = finished(&store, "r", false);
        let long_ago = "2020-01-01T00:00:00.000Z";
        execute(
            &store,
            &format!(
                "UPDATE runs SET created_at = '{long_ago}', finished_at = '{long_ago}' \
                 WHERE id IN ({old}, {old_waiting}, {failed_for_good})"
            ),
        )
        .unwrap();
        execute(
            &store,
            &format!("UPDATE deliveries SET status = 'failed', permanent = TRUE WHERE run_id = {failed_for_good}"),
        )
        .unwrap();
        let limits = HistoryLimits { max_age: Duration::from_secs(86_400), max_runs_per_routine: 0 };
        assert_eq!(store.prune_history(limits, now()).unwrap(), 2, "{kind:?}");
        assert_eq!(ids(&store), [old_waiting, recent], "{kind:?}");
        // Both limits off: nothing is read or deleted.
        let off = HistoryLimits { max_age: Duration::ZERO, max_runs_per_routine: 0 };
        assert_eq!(store.prune_history(off, now()).unwrap(), 0);
    });
}

#[test]
fn a_paused_routines_fires_are_one_row_that_counts_them() {
    each_backend(|kind, _dir, store| {
        let t = |s: u32| Some(Utc.with_ymd_and_hms(2026, 11, 1, 8, 0, s).unwrap());
        let paused_at = Utc.with_ymd_and_hms(2026, 11, 1, 7, 0, 0).unwrap();
        store.pause("r", paused_at).unwrap();
        let fire = |at| PausedFire { routine: "r", trigger: "every", scheduled_for: at, why: "`r` is paused" };
        let first = store.record_paused_fire(&fire(t(0))).unwrap().unwrap();
        assert_eq!(store.record_paused_fire(&fire(t(20))).unwrap(), Some(first), "{kind:?}");
        assert_eq!(store.record_paused_fire(&fire(None)).unwrap(), Some(first), "{kind:?}: a webhook counts too");
        assert_eq!(store.record_paused_fire(&fire(t(40))).unwrap(), Some(first), "{kind:?}");
        // An instant already counted, as a second node would fire it: a duplicate.
        assert_eq!(store.record_paused_fire(&fire(t(20))).unwrap(), None, "{kind:?}");
        assert_eq!(count_rows(&store, "runs"), 1, "{kind:?}");
        let row = store.get_run(first).unwrap().unwrap();
        assert_eq!(row.status, RunStatus::Skipped);
        assert!(row.error.as_deref().unwrap().contains("4 fires skipped while paused"), "{:?}", row.error);
        assert_eq!(store.skip_counts().unwrap()["r"].skipped, 4, "{kind:?}");
        assert_eq!(store.skipped_while_paused("r", paused_at).unwrap(), 4, "{kind:?}");
        // A run by hand ends the stretch; the next fire starts another.
        let by_hand = finished(&store, "r", false);
        let second = store.record_paused_fire(&fire(t(59))).unwrap().unwrap();
        assert!(second > by_hand, "{kind:?}");
        assert_eq!(store.skip_counts().unwrap()["r"].skipped, 5, "{kind:?}");
        // A new pause starts a new stretch too.
        store.resume("r", paused_at).unwrap();
        store.pause("r", Utc::now() + chrono::Duration::hours(1)).unwrap();
        let t2 = Some(Utc.with_ymd_and_hms(2026, 11, 1, 9, 0, 0).unwrap());
        let third = store.record_paused_fire(&fire(t2)).unwrap().unwrap();
        assert_ne!(third, second, "{kind:?}");
    });
}
