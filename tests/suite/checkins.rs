//! Heartbeats and greetings as the daemon runs them (SPEC §7), in-process
//! with tokio's paused time and an injected wall clock: a day of beats,
//! greeting limits across restarts, missed greetings, and a limit lowered
//! during the day.
//!
//! The model is an in-process provider, so no network I/O races the paused
//! clock; the tools it calls work on SQLite only, for the same reason.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, Duration, NaiveDate, Utc};
use routines::clock::{Clock, TokioClock};
use routines::config::{self, ProcessEnv};
use routines::engine::Engine;
use routines::heartbeat;
use routines::llm::{ChatRequest, ChatResponse, LlmError, Provider, Role, ToolCall, Usage};
use routines::store::{RunFilter, RunRow, RunStatus, Store};
use tokio_util::sync::CancellationToken;

/// A beat calls `memory_recall`, then answers the ok token, and so does the
/// review of its results; a greeting answers at once. Every request is kept.
struct CheckinModel {
    requests: Mutex<Vec<ChatRequest>>,
}

#[async_trait]
impl Provider for CheckinModel {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.requests.lock().unwrap().push(request.clone());
        let user = request.messages.iter().find(|m| m.role == Role::User).and_then(|m| m.content.clone());
        let checked = request.messages.iter().any(|m| m.role == Role::Tool);
        let mut response =
            ChatResponse { usage: Usage { prompt_tokens: 100, completion_tokens: 5 }, ..Default::default() };
        let user = user.unwrap_or_default();
        if user.starts_with("Checklist:") {
            response.content = Some("HEARTBEAT_OK".into());
        } else if user.starts_with("Heartbeat check-in") && !checked {
            response.tool_calls = vec![ToolCall {
                id: "call_1".into(),
                name: "memory_recall".into(),
                arguments: r#"{"query": "disk"}"#.into(),
            }];
        } else if checked {
            response.content = Some("HEARTBEAT_OK".into());
        } else {
            let n = self.requests.lock().unwrap().len();
            response.content = Some(format!("Good day! Greeting number {n}."));
        }
        Ok(response)
    }
}

impl CheckinModel {
    fn calls(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

struct World {
    dir: tempfile::TempDir,
    clock: Arc<TokioClock>,
    model: Arc<CheckinModel>,
}

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

/// A project whose config has `heartbeat` (YAML under the key) and every assist (the review of
/// an all-is-well is one), with the wall clock at `start`.
fn world(start: &str, heartbeat: &str) -> World {
    let dir = tempfile::tempdir().unwrap();
    crate::common::write_file(
        dir.path(),
        "routines.yaml",
        &format!("timezone: UTC\nprovider: {{ model: m }}\nagent:\n  assist: full\nheartbeat:\n{heartbeat}"),
    );
    let model = Arc::new(CheckinModel { requests: Mutex::new(Vec::new()) });
    World { dir, clock: Arc::new(TokioClock::starting_at(t(start))), model }
}

impl World {
    /// An engine over the project, as a (re)started daemon opens it.
    fn engine(&self) -> Arc<Engine> {
        let config = config::load(Some(&self.dir.path().join("routines.yaml")), self.dir.path(), &ProcessEnv).unwrap();
        Arc::new(Engine::open(config, self.model.clone(), "m").unwrap())
    }

    /// Runs a daemon's greeting loop (or beat loop) until the clock reads `until`.
    async fn run_greetings_until(&self, until: DateTime<Utc>) {
        let engine = self.engine();
        let stop = CancellationToken::new();
        let task = tokio::spawn(heartbeat::greeting::run_loop(engine, self.clock.clone(), stop.clone()));
        self.sleep_until(until).await;
        stop.cancel();
        task.await.unwrap();
    }

    async fn run_beats_until(&self, until: DateTime<Utc>) {
        let engine = self.engine();
        let stop = CancellationToken::new();
        let task = tokio::spawn(heartbeat::run_loop(engine, self.clock.clone(), stop.clone()));
        self.sleep_until(until).await;
        stop.cancel();
        task.await.unwrap();
    }

    /// Lets paused time run to `until` (nothing runs when no loop is started:
    /// the daemon is down).
    async fn sleep_until(&self, until: DateTime<Utc>) {
        let wait = (until - self.clock.now()).to_std().unwrap_or_default();
        tokio::time::sleep(wait).await;
    }

    fn store(&self) -> Store {
        Store::open(&self.dir.path().join(".routines/routines.db")).unwrap()
    }

    fn runs(&self, routine: &str) -> Vec<RunRow> {
        let mut runs =
            self.store().list_runs(&RunFilter { routine: Some(routine), status: None, limit: 1000 }).unwrap();
        runs.reverse();
        runs
    }

    fn plan(&self, day: &str) -> Vec<DateTime<Utc>> {
        let day: NaiveDate = day.parse().unwrap();
        self.store().greeting_plan(day).unwrap().expect("the day's greetings were planned")
    }
}

fn reason(store: &Store, id: i64) -> Option<String> {
    store.with_conn(|c| c.query_row("SELECT reason FROM runs WHERE id = ?1", [id], |r| r.get(0))).unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_day_of_beats_calls_the_model_only_inside_active_hours_with_a_checklist() {
    let w = world(
        "2026-03-02T00:00:00Z",
        "  enabled: true\n  every: 1h\n  active_hours: { start: \"09:00\", end: \"17:00\" }\n",
    );
    crate::common::write_file(w.dir.path(), "HEARTBEAT.md", "- Is the disk below 90%?\n");
    w.run_beats_until(t("2026-03-03T00:30:00Z")).await;

    // Beats at 01:00 … 24:00; those at 09:00 … 16:00 are inside active hours.
    let runs = w.runs("heartbeat");
    assert_eq!(runs.len(), 24);
    let (inside, outside): (Vec<_>, Vec<_>) = runs.iter().partition(|r| r.status != RunStatus::Skipped);
    assert_eq!(inside.len(), 8, "{runs:#?}");
    for r in &inside {
        assert_eq!(r.status, RunStatus::Silent, "{r:?}");
        // Silent beats still record what they cost: two model calls and the review.
        assert_eq!((r.prompt_tokens, r.completion_tokens, r.iterations), (300, 15, 3), "{r:?}");
    }
    let mut quiet_at = Vec::new();
    for r in &outside {
        assert_eq!((r.prompt_tokens, r.completion_tokens, r.iterations), (0, 0, 0));
        let error = r.error.as_deref().unwrap();
        let at = error.strip_prefix("outside active hours (09:00–17:00 UTC); it is ").expect(error);
        quiet_at.push(at.strip_suffix(" UTC: no model call").expect(error).to_string());
    }
    let expected: Vec<String> = (1..=8).chain(17..=24).map(|h| format!("{:02}:00", h % 24)).collect();
    assert_eq!(quiet_at, expected);
    assert_eq!(w.model.calls(), 24);

    // An emptied checklist: a whole day of beats, not one model call.
    crate::common::write_file(w.dir.path(), "HEARTBEAT.md", "\n");
    w.run_beats_until(t("2026-03-04T00:30:00Z")).await;
    let runs = w.runs("heartbeat");
    assert_eq!(runs.len(), 48);
    assert!(runs[24..].iter().all(|r| r.status == RunStatus::Skipped && r.prompt_tokens == 0));
    assert!(runs[24..].iter().any(|r| r.error.as_deref().unwrap().ends_with("HEARTBEAT.md is empty: no model call")));
    assert_eq!(w.model.calls(), 24);
}

const GREETINGS: &str = "  active_hours: { start: \"08:00\", end: \"22:00\" }\n  \
                         greeting: { enabled: true, max_per_day: 2, min_gap: 4h }\n  \
                         deliver: [ { file: { path: \"greetings/{{ run.id }}.md\" } } ]\n";

#[tokio::test(start_paused = true)]
async fn a_restart_keeps_the_days_plan_and_sends_no_greeting_twice() {
    let w = world("2026-03-02T06:00:00Z", GREETINGS);
    // The day's times are drawn when its active hours begin.
    w.run_greetings_until(t("2026-03-02T08:00:01Z")).await;
    let plan = w.plan("2026-03-02");
    assert_eq!(plan.len(), 2);
    assert!(plan[0] >= t("2026-03-02T08:00:00Z") && plan[1] < t("2026-03-02T22:00:00Z"), "{plan:?}");
    assert!(plan[1] - plan[0] >= Duration::hours(4), "{plan:?}");
    assert_eq!(w.model.calls(), 0);

    // The daemon runs past the first greeting, stops, and starts again.
    w.run_greetings_until(plan[0] + Duration::seconds(1)).await;
    assert_eq!(w.model.calls(), 1);
    w.run_greetings_until(plan[0] + Duration::minutes(5)).await;
    w.run_greetings_until(t("2026-03-02T23:00:00Z")).await;
    assert_eq!(w.plan("2026-03-02"), plan, "a restart must not draw the day again");
    let runs = w.runs("greeting");
    let sent: Vec<_> = runs.iter().map(|r| (r.scheduled_for.unwrap(), r.status)).collect();
    assert_eq!(sent, vec![(plan[0], RunStatus::Succeeded), (plan[1], RunStatus::Succeeded)]);
    assert_eq!(w.model.calls(), 2);
    // Each greeting was delivered, and the second was told the first.
    let delivered = std::fs::read_to_string(w.dir.path().join(format!("greetings/{}.md", runs[1].id))).unwrap();
    assert_eq!(delivered, "Good day! Greeting number 2.\n");
    let second = w.model.requests.lock().unwrap()[1].clone();
    let prompt = second.messages.iter().rfind(|m| m.role == Role::User).unwrap().content.clone().unwrap();
    assert!(prompt.contains("Do not repeat your previous greeting: \"Good day! Greeting number 1.\""), "{prompt}");
    assert!(prompt.contains(" (Monday "), "{prompt}");

    // The next day has its own plan, and keeps min_gap from the last greeting.
    w.run_greetings_until(t("2026-03-03T22:00:00Z")).await;
    let next = w.plan("2026-03-03");
    assert_eq!(next.len(), 2);
    assert!(next[0] >= plan[1] + Duration::hours(4));
    assert_eq!(w.runs("greeting").len(), 4);
    assert_eq!(w.model.calls(), 4);
}

#[tokio::test(start_paused = true)]
async fn a_greeting_whose_time_passed_while_the_daemon_was_down_is_recorded_not_sent() {
    let w = world("2026-03-02T07:00:00Z", GREETINGS);
    w.run_greetings_until(t("2026-03-02T08:00:01Z")).await;
    let plan = w.plan("2026-03-02");
    // Down from before the first greeting until 20 minutes after it.
    w.sleep_until(plan[0] + Duration::minutes(20)).await;
    w.run_greetings_until(t("2026-03-02T23:00:00Z")).await;
    let store = w.store();
    let runs = w.runs("greeting");
    assert_eq!(runs.len(), 2, "{runs:#?}");
    assert_eq!((runs[0].scheduled_for, runs[0].status), (Some(plan[0]), RunStatus::Skipped));
    assert_eq!(reason(&store, runs[0].id).as_deref(), Some("missed"));
    assert!(runs[0].error.as_deref().unwrap().ends_with("passed while the daemon was not running"), "{runs:#?}");
    assert_eq!((runs[1].scheduled_for, runs[1].status), (Some(plan[1]), RunStatus::Succeeded));
    assert_eq!(w.model.calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_daily_limit_lowered_during_the_day_is_obeyed_after_a_restart() {
    let w = world("2026-03-02T07:00:00Z", GREETINGS);
    w.run_greetings_until(t("2026-03-02T08:00:01Z")).await;
    let plan = w.plan("2026-03-02");
    w.run_greetings_until(plan[0] + Duration::minutes(1)).await;
    assert_eq!(w.model.calls(), 1);
    // The user lowers the limit to one a day; the daemon restarts.
    let lowered = GREETINGS.replace("max_per_day: 2", "max_per_day: 1");
    crate::common::write_file(
        w.dir.path(),
        "routines.yaml",
        &format!("timezone: UTC\nprovider: {{ model: m }}\nheartbeat:\n{lowered}"),
    );
    w.run_greetings_until(t("2026-03-02T23:00:00Z")).await;
    let runs = w.runs("greeting");
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1].status, RunStatus::Skipped);
    assert_eq!(reason(&w.store(), runs[1].id).as_deref(), Some("limit"));
    assert_eq!(runs[1].error.as_deref(), Some("1 greeting(s) were already sent today (max_per_day: 1)"));
    assert_eq!(w.model.calls(), 1);
}
