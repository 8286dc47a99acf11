//! Scheduling semantics of the daemon (SPEC §5), in-process with tokio's
//! paused time and an injected wall clock: DST, zones, catch-up after
//! downtime, a crash mid-run, overlap, jitter and the concurrency limit.
//!
//! The model here is an in-process provider that answers at once (or when a
//! test lets it), so no network I/O races the paused clock. The daemon's
//! real-process, real-HTTP behaviour is in `daemon_process.rs`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use routines::clock::{Clock, TokioClock};
use routines::config::{self, ProcessEnv};
use routines::daemon::Scheduler;
use routines::daemon::dispatch::Dispatcher;
use routines::engine::Engine;
use routines::llm::{ChatRequest, ChatResponse, LlmError, Provider, Usage};
use routines::routine::load_all;
use routines::store::Store;
use routines::tools::Registry;
use tokio::sync::Semaphore;

/// Answers "done"; while `gate` is set, each answer waits for a permit.
struct TestModel {
    clock: Arc<TokioClock>,
    gate: Mutex<Option<Arc<Semaphore>>>,
    calls: Mutex<Vec<DateTime<Utc>>>,
    active: AtomicUsize,
    max_active: AtomicUsize,
}

#[async_trait]
impl Provider for TestModel {
    async fn chat(&self, _request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.calls.lock().unwrap().push(self.clock.now());
        let now = self.active.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_active.fetch_max(now, Ordering::SeqCst);
        let gate = self.gate.lock().unwrap().clone();
        if let Some(gate) = gate {
            gate.acquire().await.unwrap().forget();
        }
        self.active.fetch_sub(1, Ordering::SeqCst);
        Ok(ChatResponse {
            content: Some("done".into()),
            usage: Usage { prompt_tokens: 10, completion_tokens: 2 },
            ..Default::default()
        })
    }
}

struct World {
    dir: tempfile::TempDir,
    clock: Arc<TokioClock>,
    model: Arc<TestModel>,
    sched: Scheduler,
    store: Store,
}

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

/// A project in a tempdir with `routines` (name, YAML), a daemon scheduler
/// over it, and the wall clock at `start`.
fn world(start: &str, config_extra: &str, routines: &[(&str, &str)]) -> World {
    let dir = tempfile::tempdir().unwrap();
    for (name, yaml) in routines {
        crate::common::write_file(dir.path(), &format!("routines/{name}.yaml"), yaml);
    }
    crate::common::write_file(dir.path(), "routines.yaml", &format!("provider: {{ model: m }}\n{config_extra}"));
    let clock = Arc::new(TokioClock::starting_at(t(start)));
    let model = Arc::new(TestModel {
        clock: clock.clone(),
        gate: Mutex::new(None),
        calls: Mutex::new(Vec::new()),
        active: AtomicUsize::new(0),
        max_active: AtomicUsize::new(0),
    });
    let (sched, store) = scheduler(dir.path(), clock.clone(), model.clone());
    World { dir, clock, model, sched, store }
}

/// A daemon's scheduler over the project in `dir` (a fresh one simulates a restart).
fn scheduler(dir: &std::path::Path, clock: Arc<TokioClock>, model: Arc<TestModel>) -> (Scheduler, Store) {
    let config = config::load(Some(&dir.join("routines.yaml")), dir, &ProcessEnv).unwrap();
    let loaded = load_all(&config, None, &Registry::builtin().names());
    assert!(loaded.diagnostics.is_empty(), "{}", loaded.diagnostics);
    let max = config.limits.max_concurrent_runs as usize;
    let engine = Arc::new(Engine::open(config, model, "m").unwrap());
    let store = engine.store.clone();
    let dispatcher = Dispatcher::new(engine, clock.clone(), max);
    let mut sched = Scheduler::new(dispatcher, clock);
    sched.set_routines(loaded.routines).unwrap();
    sched.recover().unwrap();
    (sched, store)
}

/// Moves time forward to `until`, waking the scheduler at each instant it
/// asked for, as the daemon's loop does, and letting the fires run.
async fn run_until(w: &mut World, until: &str) {
    let until = t(until);
    loop {
        w.sched.tick();
        w.sched.dispatcher.idle().await;
        let now = w.clock.now();
        match w.sched.next_instant() {
            Some(next) if next <= until => tokio::time::advance((next - now).to_std().unwrap_or_default()).await,
            _ => {
                tokio::time::advance((until - now).to_std().unwrap_or_default()).await;
                w.sched.tick();
                w.sched.dispatcher.idle().await;
                return;
            }
        }
    }
}

/// (status, scheduled_for, reason) of every run of `routine`, oldest first.
fn runs(store: &Store, routine: &str) -> Vec<(String, Option<DateTime<Utc>>, Option<String>)> {
    store
        .with_conn(|c| {
            let mut stmt = c.prepare(
                "SELECT status, scheduled_for, reason FROM runs WHERE routine = ?1 ORDER BY scheduled_for, id",
            )?;
            let rows = stmt.query_map([routine], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?, r.get::<_, Option<String>>(2)?))
            })?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })
        .unwrap()
        .into_iter()
        .map(|(s, at, why)| (s, at.map(|a| t(&a)), why))
        .collect()
}

/// Local wall-clock times (with offset) of the succeeded runs of `routine` in `zone`.
fn fired_local(store: &Store, routine: &str, zone: chrono_tz::Tz) -> Vec<String> {
    runs(store, routine)
        .into_iter()
        .filter(|(s, _, _)| s == "succeeded")
        .map(|(_, at, _)| at.unwrap().with_timezone(&zone).format("%m-%d %H:%M %:z").to_string())
        .collect()
}

fn count(store: &Store, routine: &str, status: &str, reason: Option<&str>) -> usize {
    runs(store, routine).iter().filter(|(s, _, why)| s == status && why.as_deref() == reason).count()
}

const NY: chrono_tz::Tz = chrono_tz::America::New_York;
const BERLIN: chrono_tz::Tz = chrono_tz::Europe::Berlin;

#[tokio::test(start_paused = true)]
async fn new_york_spring_forward_runs_a_fixed_time_job_once_after_the_gap() {
    let mut w = world(
        "2027-03-13T12:00:00-05:00",
        "timezone: America/New_York\n",
        &[
            ("fixed", "prompt: x\non:\n  - cron: \"30 2 * * *\"\n"),
            ("hourly", "prompt: x\non:\n  - cron: \"0 * * * *\"\n"),
        ],
    );
    run_until(&mut w, "2027-03-15T05:00:00-04:00").await;
    assert_eq!(fired_local(&w.store, "fixed", NY), ["03-14 03:00 -04:00", "03-15 02:30 -04:00"]);
    let hourly = fired_local(&w.store, "hourly", NY);
    let day: Vec<&str> = hourly.iter().filter(|h| h.starts_with("03-14 0")).map(String::as_str).collect();
    assert_eq!(
        day,
        [
            "03-14 00:00 -05:00",
            "03-14 01:00 -05:00",
            "03-14 03:00 -04:00",
            "03-14 04:00 -04:00",
            "03-14 05:00 -04:00",
            "03-14 06:00 -04:00",
            "03-14 07:00 -04:00",
            "03-14 08:00 -04:00",
            "03-14 09:00 -04:00"
        ]
    );
    // 12:00 on the 13th to 05:00 on the 15th: 40 real hours, no duplicates, nothing missed.
    assert_eq!(hourly.len(), 40);
    assert_eq!(count(&w.store, "hourly", "skipped", Some("missed")), 0);
}

#[tokio::test(start_paused = true)]
async fn new_york_fall_back_runs_a_fixed_time_job_once_and_wildcards_every_real_hour() {
    let mut w = world(
        "2027-11-06T12:00:00-04:00",
        "timezone: America/New_York\n",
        &[
            ("fixed", "prompt: x\non:\n  - cron: \"30 1 * * *\"\n"),
            ("hourly", "prompt: x\non:\n  - cron: \"0 * * * *\"\n"),
        ],
    );
    run_until(&mut w, "2027-11-07T04:30:00-05:00").await;
    assert_eq!(fired_local(&w.store, "fixed", NY), ["11-07 01:30 -04:00"]);
    let hourly = fired_local(&w.store, "hourly", NY);
    let night: Vec<&str> = hourly.iter().filter(|h| h.starts_with("11-07")).map(String::as_str).collect();
    assert_eq!(
        night,
        [
            "11-07 00:00 -04:00",
            "11-07 01:00 -04:00",
            "11-07 01:00 -05:00",
            "11-07 02:00 -05:00",
            "11-07 03:00 -05:00",
            "11-07 04:00 -05:00"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn berlin_dst_changes_for_fixed_time_and_wildcard_jobs() {
    let mut w = world(
        "2027-03-27T12:00:00+01:00",
        "",
        &[
            ("fixed", "prompt: x\non:\n  - cron: \"30 2 * * *\"\n    timezone: Europe/Berlin\n"),
            ("quarter", "prompt: x\non:\n  - cron: \"*/15 2 * * *\"\n    timezone: Europe/Berlin\n"),
        ],
    );
    run_until(&mut w, "2027-03-28T12:00:00+02:00").await;
    assert_eq!(fired_local(&w.store, "fixed", BERLIN), ["03-28 03:00 +02:00"]);
    // A job with a wildcard minute follows real time, as in Vixie cron:
    // 02:xx does not exist that night, so it does not run at all.
    assert_eq!(fired_local(&w.store, "quarter", BERLIN), Vec::<String>::new());

    // Autumn: 02:30 happens twice on October 31st; the fixed job runs once.
    let mut w = world(
        "2027-10-30T12:00:00+02:00",
        "",
        &[
            ("fixed", "prompt: x\non:\n  - cron: \"30 2 * * *\"\n    timezone: Europe/Berlin\n"),
            ("quarter", "prompt: x\non:\n  - cron: \"*/15 2 * * *\"\n    timezone: Europe/Berlin\n"),
        ],
    );
    run_until(&mut w, "2027-10-31T12:00:00+01:00").await;
    assert_eq!(fired_local(&w.store, "fixed", BERLIN), ["10-31 02:30 +02:00"]);
    let quarter = fired_local(&w.store, "quarter", BERLIN);
    assert_eq!(
        quarter,
        [
            "10-31 02:00 +02:00",
            "10-31 02:15 +02:00",
            "10-31 02:30 +02:00",
            "10-31 02:45 +02:00",
            "10-31 02:00 +01:00",
            "10-31 02:15 +01:00",
            "10-31 02:30 +01:00",
            "10-31 02:45 +01:00"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_routine_in_shanghai_fires_at_shanghai_time_with_the_engine_in_utc() {
    let mut w = world(
        "2026-11-22T00:00:00Z",
        "timezone: UTC\n",
        &[("morning", "prompt: x\non:\n  - cron: \"0 9 * * *\"\n    timezone: Asia/Shanghai\n")],
    );
    run_until(&mut w, "2026-11-24T00:00:00Z").await;
    let fired: Vec<DateTime<Utc>> = runs(&w.store, "morning").into_iter().map(|(_, at, _)| at.unwrap()).collect();
    assert_eq!(fired, [t("2026-11-22T01:00:00Z"), t("2026-11-23T01:00:00Z")]);
    assert_eq!(w.model.calls.lock().unwrap().clone(), [t("2026-11-22T01:00:00Z"), t("2026-11-23T01:00:00Z")]);
}

/// The daemon runs an hourly routine for a while, is down for three days,
/// and starts again 30 minutes after an instant.
async fn three_days_down(policy: &str) -> World {
    let yaml = format!("prompt: x\non:\n  - every: 1h\ncatch_up: {policy}\n");
    let mut w = world("2026-11-22T00:00:00Z", "", &[("hourly", &yaml)]);
    run_until(&mut w, "2026-11-22T02:10:00Z").await;
    assert_eq!(count(&w.store, "hourly", "succeeded", None), 2);
    // Down: nothing runs while the wall clock moves three days on.
    let down = Duration::days(3) + Duration::minutes(20);
    w.clock.jump(down);
    let (sched, _) = scheduler(w.dir.path(), w.clock.clone(), w.model.clone());
    w.sched = sched;
    w.sched.tick();
    w.sched.dispatcher.idle().await;
    w
}

#[tokio::test(start_paused = true)]
async fn three_days_of_downtime_with_catch_up_latest_runs_the_newest_instant_once() {
    let w = three_days_down("latest").await;
    // Instants 03:00 on the 22nd .. 02:00 on the 25th: 72 missed; the newest runs.
    let rows = runs(&w.store, "hourly");
    let ran: Vec<_> = rows.iter().filter(|(s, _, _)| s == "succeeded").map(|(_, at, _)| at.unwrap()).collect();
    assert_eq!(ran.last().copied(), Some(t("2026-11-25T02:00:00Z")));
    assert_eq!(ran.len(), 3);
    assert_eq!(count(&w.store, "hourly", "skipped", Some("missed")), 71);
    assert_eq!(w.store.last_scheduled("hourly").unwrap(), Some(t("2026-11-25T02:00:00Z")));
    let counts = w.store.skip_counts().unwrap();
    assert_eq!(counts["hourly"].missed, 71);
}

#[tokio::test(start_paused = true)]
async fn three_days_of_downtime_with_catch_up_all_runs_each_instant_inside_the_window() {
    let w = three_days_down("all").await;
    // catch_up_window 24h: 02:30 on the 24th .. 02:30 on the 25th holds 24 instants.
    assert_eq!(count(&w.store, "hourly", "succeeded", None), 2 + 24);
    assert_eq!(count(&w.store, "hourly", "skipped", Some("missed")), 72 - 24);
    let first_caught_up = runs(&w.store, "hourly")
        .into_iter()
        .filter(|(s, at, _)| s == "succeeded" && at.unwrap() > t("2026-11-23T00:00:00Z"))
        .map(|(_, at, _)| at.unwrap())
        .next();
    assert_eq!(first_caught_up, Some(t("2026-11-24T03:00:00Z")));
}

#[tokio::test(start_paused = true)]
async fn three_days_of_downtime_with_catch_up_none_runs_nothing_and_records_every_instant() {
    let w = three_days_down("none").await;
    assert_eq!(count(&w.store, "hourly", "succeeded", None), 2);
    assert_eq!(count(&w.store, "hourly", "skipped", Some("missed")), 72);
    let (_, _, _) = runs(&w.store, "hourly").into_iter().find(|(s, _, _)| s == "skipped").unwrap();
    let error: String = w
        .store
        .with_conn(|c| c.query_row("SELECT error FROM runs WHERE status = 'skipped' LIMIT 1", [], |r| r.get(0)))
        .unwrap();
    assert!(error.starts_with("missed: the daemon was not running"), "{error}");
    assert!(error.contains("catch_up: none"), "{error}");
}

#[tokio::test(start_paused = true)]
async fn a_suspended_machine_catches_up_within_a_minute_of_waking() {
    let mut w = world("2026-11-22T00:00:00Z", "", &[("hourly", "prompt: x\non:\n  - every: 1h\ncatch_up: latest\n")]);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let clock = w.clock.clone();
    let dispatcher = w.sched.dispatcher.clone();
    let stop = tokio::time::sleep(std::time::Duration::from_secs(3 * 3600));
    let loop_task = async move {
        let _keep = tx;
        w.sched.run_loop(rx, stop, std::future::ready(())).await;
        w
    };
    let check = async {
        // Ten minutes in, the machine sleeps for five hours (no tokio time passes).
        tokio::time::sleep(std::time::Duration::from_secs(600)).await;
        clock.jump(Duration::hours(5));
        // The loop never sleeps more than 60 s, so within a minute it has caught up.
        tokio::time::sleep(std::time::Duration::from_secs(61)).await;
        dispatcher.idle().await;
    };
    let (w, ()) = tokio::join!(loop_task, check);
    let ran: Vec<_> = runs(&w.store, "hourly").into_iter().filter(|(s, _, _)| s == "succeeded").collect();
    // 05:00 (caught up), then 06:00 and 07:00 on time within the remaining loop time.
    assert_eq!(ran[0].1, Some(t("2026-11-22T05:00:00Z")));
    assert_eq!(count(&w.store, "hourly", "skipped", Some("missed")), 4);
}

#[tokio::test(start_paused = true)]
async fn a_run_interrupted_by_a_crash_is_retried_per_its_policy_at_the_next_start() {
    let yaml = "prompt: x\non:\n  - every: 1h\nretry: { attempts: 2 }\n";
    let mut w = world("2026-11-22T00:30:00Z", "", &[("hourly", yaml), ("once", &yaml.replace("2 }", "1 }"))]);
    // A daemon that died while running both routines' 01:00 fire: the rows
    // are `running` and name a process that no longer exists.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = child.id();
    child.wait().unwrap();
    for name in ["hourly", "once"] {
        let id = w
            .store
            .claim_fire(&routines::store::NewFire {
                routine: name,
                trigger: "every",
                scheduled_for: Some(t("2026-11-22T01:00:00Z")),
                context: "{}",
                not_before: None,
                skip_if_active: None,
                key: None,
            })
            .unwrap()
            .unwrap();
        w.store.start_run(id).unwrap();
        w.store
            // An owner whose lock nobody holds: a process that is gone.
            .with_conn(|c| {
                c.execute("UPDATE runs SET pid = ?1, owner = 4242 WHERE id = ?2", rusqlite::params![dead_pid, id])
            })
            .unwrap();
        w.store.set_last_scheduled(name, t("2026-11-22T01:00:00Z")).unwrap();
    }
    tokio::time::advance(std::time::Duration::from_secs(45 * 60)).await;
    // The next start: the crashed runs are found; `hourly` has an attempt left.
    let (sched, _) = scheduler(w.dir.path(), w.clock.clone(), w.model.clone());
    w.sched = sched;
    w.sched.dispatcher.idle().await;
    let hourly = runs(&w.store, "hourly");
    assert_eq!(hourly, [("succeeded".to_string(), Some(t("2026-11-22T01:00:00Z")), None)]);
    let attempt: u32 = w
        .store
        .with_conn(|c| c.query_row("SELECT attempt FROM runs WHERE routine = 'hourly'", [], |r| r.get(0)))
        .unwrap();
    assert_eq!(attempt, 2);
    let once = runs(&w.store, "once");
    assert_eq!(once, [("interrupted".to_string(), Some(t("2026-11-22T01:00:00Z")), Some("crash, not retried".into()))]);
    // The 01:00 instant is not fired again by the timer.
    run_until(&mut w, "2026-11-22T02:30:00Z").await;
    assert_eq!(count(&w.store, "hourly", "succeeded", None), 2);
    assert_eq!(runs(&w.store, "once").len(), 2);
}

/// A routine fired every minute while the model holds its answers.
async fn overlapping(policy: &str) -> (World, Arc<Semaphore>) {
    let yaml = format!("prompt: x\non:\n  - every: 1m\noverlap: {policy}\n");
    let mut w = world("2026-11-22T00:00:30Z", "", &[("r", &yaml)]);
    let gate = Arc::new(Semaphore::new(0));
    *w.model.gate.lock().unwrap() = Some(gate.clone());
    for minute in 1..=3 {
        tokio::time::advance((t(&format!("2026-11-22T00:0{minute}:00Z")) - w.clock.now()).to_std().unwrap()).await;
        w.sched.tick();
        tokio::task::yield_now().await;
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
    }
    (w, gate)
}

fn statuses(store: &Store) -> Vec<(String, Option<String>)> {
    runs(store, "r").into_iter().map(|(s, _, why)| (s, why)).collect()
}

fn st(s: &str, why: Option<&str>) -> (String, Option<String>) {
    (s.to_string(), why.map(str::to_string))
}

#[tokio::test(start_paused = true)]
async fn overlap_skip_records_fires_while_a_run_is_active_as_skipped() {
    let (w, gate) = overlapping("skip").await;
    gate.add_permits(10);
    w.sched.dispatcher.idle().await;
    assert_eq!(
        statuses(&w.store),
        [st("succeeded", None), st("skipped", Some("overlap")), st("skipped", Some("overlap"))]
    );
}

#[tokio::test(start_paused = true)]
async fn overlap_queue_keeps_one_fire_waiting_and_runs_it_after() {
    let (w, gate) = overlapping("queue").await;
    assert_eq!(w.model.max_active.load(Ordering::SeqCst), 1);
    assert_eq!(w.sched.dispatcher.queue_depth(), 1);
    gate.add_permits(10);
    w.sched.dispatcher.idle().await;
    assert_eq!(statuses(&w.store), [st("succeeded", None), st("succeeded", None), st("skipped", Some("overlap"))]);
    assert_eq!(w.model.max_active.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn overlap_replace_cancels_the_running_run_for_the_newer_fire() {
    let (w, gate) = overlapping("replace").await;
    gate.add_permits(10);
    w.sched.dispatcher.idle().await;
    assert_eq!(
        statuses(&w.store),
        [st("interrupted", Some("replaced")), st("interrupted", Some("replaced")), st("succeeded", None)]
    );
}

#[tokio::test(start_paused = true)]
async fn overlap_allow_runs_fires_side_by_side() {
    let (w, gate) = overlapping("allow").await;
    assert_eq!(w.model.max_active.load(Ordering::SeqCst), 3);
    gate.add_permits(10);
    w.sched.dispatcher.idle().await;
    assert_eq!(statuses(&w.store), [st("succeeded", None), st("succeeded", None), st("succeeded", None)]);
}

#[tokio::test(start_paused = true)]
async fn jitter_delays_each_fire_by_at_most_the_jitter() {
    let mut w =
        world("2026-11-22T00:00:00Z", "", &[("r", "prompt: x\non:\n  - every: 1m\njitter: 20s\noverlap: allow\n")]);
    run_until(&mut w, "2026-11-22T01:00:30Z").await;
    let scheduled: Vec<DateTime<Utc>> = runs(&w.store, "r").into_iter().map(|(_, at, _)| at.unwrap()).collect();
    let calls = w.model.calls.lock().unwrap().clone();
    assert_eq!(scheduled.len(), 60);
    assert_eq!(calls.len(), 60);
    let delays: Vec<i64> = scheduled.iter().zip(&calls).map(|(s, c)| (*c - *s).num_milliseconds()).collect();
    assert!(delays.iter().all(|d| (0..=20_000).contains(d)), "{delays:?}");
    // Spread, not a constant offset.
    let (min, max) = (delays.iter().min().unwrap(), delays.iter().max().unwrap());
    assert!(max - min > 5_000, "{delays:?}");
}

#[tokio::test(start_paused = true)]
async fn jitter_holds_when_more_fires_wait_for_their_time_than_the_window_holds() {
    // Twenty fires wait for their jittered start; the window holds two. Each still starts at
    // its own time: fires wait for their time in the database, not in the window's places.
    let routines: Vec<(String, String)> =
        (0..20).map(|i| (format!("r{i:02}"), "prompt: x\non:\n  - every: 1h\njitter: 30m\n".to_string())).collect();
    let refs: Vec<(&str, &str)> = routines.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let mut w = world("2026-11-22T00:59:00Z", "limits: { max_concurrent_runs: 1, queue_window: 2 }\n", &refs);
    run_until(&mut w, "2026-11-22T01:40:00Z").await;
    let mut due: Vec<DateTime<Utc>> = w
        .store
        .with_conn(|c| {
            let mut stmt = c.prepare("SELECT not_before FROM runs WHERE status = 'succeeded' ORDER BY not_before")?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })
        .unwrap()
        .iter()
        .map(|s| t(s))
        .collect();
    due.sort();
    let mut calls = w.model.calls.lock().unwrap().clone();
    calls.sort();
    assert_eq!(calls.len(), 20);
    let late: Vec<i64> = calls.iter().zip(&due).map(|(c, d)| (*c - *d).num_milliseconds()).collect();
    assert!(late.iter().all(|ms| (0..1000).contains(ms)), "start minus not_before, ms: {late:?}");
    assert!(due.iter().all(|d| *d >= t("2026-11-22T01:00:00Z") && *d <= t("2026-11-22T01:30:00Z")), "{due:?}");
}

#[tokio::test(start_paused = true)]
async fn the_concurrency_limit_holds_fires_in_the_durable_queue() {
    let routines: Vec<(String, String)> =
        (0..5).map(|i| (format!("r{i}"), "prompt: x\non:\n  - every: 1h\n".to_string())).collect();
    let refs: Vec<(&str, &str)> = routines.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let mut w = world("2026-11-22T00:59:00Z", "limits: { max_concurrent_runs: 2 }\n", &refs);
    let gate = Arc::new(Semaphore::new(0));
    *w.model.gate.lock().unwrap() = Some(gate.clone());
    tokio::time::advance(std::time::Duration::from_secs(60)).await;
    w.sched.tick();
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    assert_eq!(w.model.active.load(Ordering::SeqCst), 2);
    assert_eq!(w.sched.dispatcher.queue_depth(), 3);
    // Waiting fires are rows in the database, not only tasks in memory.
    let queued: i64 = w
        .store
        .with_conn(|c| c.query_row("SELECT COUNT(*) FROM runs WHERE status = 'queued'", [], |r| r.get(0)))
        .unwrap();
    assert_eq!(queued, 3);
    gate.add_permits(10);
    w.sched.dispatcher.idle().await;
    assert_eq!(w.model.max_active.load(Ordering::SeqCst), 2);
    for (name, _) in &routines {
        assert_eq!(count(&w.store, name, "succeeded", None), 1);
    }
}
