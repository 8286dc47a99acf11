//! Two weeks of runs, recorded through the store API the engine and the daemon record runs
//! with (claims, details, events, deliveries, outcomes, skipped instants).
//!
//! The store stamps rows with the current time, so each run is moved to its planned time
//! after it is recorded; runs are recorded oldest first, so ids grow with time as they do
//! in a real database.

use chrono::{DateTime, Duration, NaiveTime, TimeZone, Utc};
use routines::store::{
    DeliveryStatus, NewDelivery, NewEvent, NewFire, NewRun, RunKind, RunOutcome, RunStatus, Store, to_db_time,
};

/// Text an attacker controls (a webhook body, model output), put into every field the
/// run page shows. None of it may become markup.
pub const HOSTILE: [&str; 6] = [
    "<script>document.title='pwned'</script>",
    "\"><img src=x onerror=\"document.title='pwned'\">",
    "</pre><iframe src=\"javascript:alert(1)\"></iframe>",
    "<svg onload=\"document.title='pwned'\"><a href=\"javascript:alert(2)\">click me</a></svg>",
    "<style>body{display:none}</style>",
    "{{ 7*7 }} {% raw %}",
];

/// The ids of runs the tests look for.
#[derive(Debug, Clone, Copy)]
pub struct Seeded {
    /// Last night's failed backup: two attempts, each with a failing `restic` call.
    pub failed_run: i64,
    /// The `seq` of the failing tool call of its last attempt.
    pub failing_call: i64,
    /// A webhook run whose trigger, prompt, calls, output and delivery are hostile text.
    pub hostile_run: i64,
    /// How many runs there are in all.
    pub runs: usize,
}

/// One run to record.
struct Plan {
    routine: &'static str,
    kind: RunKind,
    trigger: &'static str,
    at: DateTime<Utc>,
    scheduled: bool,
    took: Duration,
    status: RunStatus,
    prompt: String,
    context: String,
    events: Vec<Ev>,
    attempt: u32,
    output: Option<String>,
    error: Option<String>,
    deliveries: Vec<Delivery>,
    tag: Tag,
}

#[derive(Clone, Copy, PartialEq)]
enum Tag {
    Plain,
    Failed,
    Hostile,
}

struct Ev {
    kind: &'static str,
    tool: Option<&'static str>,
    status: &'static str,
    arguments: Option<String>,
    detail: String,
    tokens: Option<(u64, u64)>,
    ms: u64,
}

struct Delivery {
    kind: &'static str,
    target: String,
    on_failure: bool,
    status: DeliveryStatus,
    attempts: u32,
    error: Option<String>,
}

fn model(iteration: u32, calls: usize, tokens: (u64, u64), ms: u64) -> Ev {
    Ev {
        kind: "model_call",
        tool: None,
        status: "ok",
        arguments: None,
        detail: format!("iteration {iteration}: {calls} tool call(s)"),
        tokens: Some(tokens),
        ms,
    }
}

fn model_error(iteration: u32, error: &str) -> Ev {
    Ev {
        kind: "model_call",
        tool: None,
        status: "error",
        arguments: None,
        detail: format!("iteration {iteration}: {error}"),
        tokens: Some((0, 0)),
        ms: 30_000,
    }
}

fn tool(name: &'static str, status: &'static str, arguments: &str, detail: &str, ms: u64) -> Ev {
    Ev {
        kind: "tool_call",
        tool: Some(name),
        status,
        arguments: Some(arguments.to_string()),
        detail: detail.to_string(),
        tokens: None,
        ms,
    }
}

const LOCKED: &str = "[failed] exit status 1\nunable to create lock in backend: repository is already locked \
                      exclusively by PID 4242 on backup-host by root\n[partial output]\nopen repository";

/// Records two weeks of runs ending at `now` and returns what the tests look for.
pub fn seed(store: &Store, now: DateTime<Utc>) -> Seeded {
    let berlin = chrono_tz::Europe::Berlin;
    let shanghai = chrono_tz::Asia::Shanghai;
    let mut plans = Vec::new();
    let local = |zone: &chrono_tz::Tz, days_ago: i64, hour: u32| -> DateTime<Utc> {
        let day = now.with_timezone(zone).date_naive() - Duration::days(days_ago);
        // An hour that a spring-forward gap skips fires right after the gap, as cron does.
        (hour..hour + 3)
            .find_map(|h| zone.from_local_datetime(&day.and_time(NaiveTime::from_hms_opt(h, 0, 0)?)).earliest())
            .unwrap()
            .with_timezone(&Utc)
    };
    // Last night's backup: today's 02:00 in Berlin, or yesterday's if that is still ahead;
    // so it is always less than a day old.
    let last_night = if local(&berlin, 0, 2) <= now { 0 } else { 1 };

    for days_ago in (1..14).map(|d| d + last_night) {
        let at = local(&berlin, days_ago, 2);
        let secs = 40 + (days_ago * 7) % 50;
        plans.push(Plan {
            routine: "nightly-backup",
            kind: RunKind::Routine,
            trigger: "cron",
            at,
            scheduled: true,
            took: Duration::seconds(secs),
            status: RunStatus::Succeeded,
            prompt: "Back up /srv with restic, then summarize what changed.".into(),
            context: r#"{"kind":"cron"}"#.into(),
            events: vec![
                model(1, 1, (1800, 60), 1400),
                tool(
                    "shell",
                    "success",
                    r#"{"command":"restic backup /srv --tag nightly"}"#,
                    "Files: 12 new, 48 changed, 90211 unmodified\nAdded to the repository: 210.4 MiB",
                    (secs as u64 - 3) * 1000,
                ),
                model(2, 0, (2100, 140), 1600),
            ],
            attempt: 1,
            output: Some(format!("Backup done: 12 new files, 48 changed, 210 MiB added (run {days_ago} days ago).")),
            error: None,
            deliveries: vec![Delivery {
                kind: "file",
                target: "reports/backup.md".into(),
                on_failure: false,
                status: DeliveryStatus::Delivered,
                attempts: 1,
                error: None,
            }],
            tag: Tag::Plain,
        });
    }
    plans.push(Plan {
        routine: "nightly-backup",
        kind: RunKind::Routine,
        trigger: "cron",
        at: local(&berlin, last_night, 2),
        scheduled: true,
        took: Duration::seconds(95),
        status: RunStatus::Failed,
        prompt: "Back up /srv with restic, then summarize what changed.".into(),
        context: r#"{"kind":"cron"}"#.into(),
        events: vec![
            model(1, 1, (1800, 55), 1300),
            tool("shell", "failed", r#"{"command":"restic backup /srv --tag nightly"}"#, LOCKED, 2100),
            model_error(2, "server error 503 Service Unavailable: upstream overloaded"),
            model(1, 1, (1800, 58), 1200),
            tool("shell", "failed", r#"{"command":"restic backup /srv --tag nightly"}"#, LOCKED, 1900),
            model_error(2, "server error 503 Service Unavailable: upstream overloaded"),
        ],
        attempt: 2,
        output: None,
        error: Some(
            "the model provider failed: server error 503 Service Unavailable: upstream overloaded (after 2 attempts)"
                .into(),
        ),
        deliveries: vec![Delivery {
            kind: "mail",
            target: "oncall@example.com".into(),
            on_failure: true,
            status: DeliveryStatus::Failed,
            attempts: 3,
            error: Some("SMTP 550 5.1.1 <oncall@example.com>: mailbox unavailable".into()),
        }],
        tag: Tag::Failed,
    });

    // Weekdays only; the second one timed out and the fourth was silent, whatever today is.
    let weekdays = (1..14).map(|d| (d, local(&shanghai, d, 9))).filter(|(_, at)| {
        let weekday = at.with_timezone(&shanghai).format("%u").to_string();
        weekday != "6" && weekday != "7"
    });
    for (n, (days_ago, at)) in weekdays.enumerate() {
        let (status, error, output) = match n {
            1 => (RunStatus::TimedOut, Some("the run did not finish within its timeout of 10m".to_string()), None),
            3 => (RunStatus::Silent, None, Some("NO_REPLY".to_string())),
            _ => (RunStatus::Succeeded, None, Some(format!("## Commits\n\n- {} commits, 2 authors", 3 + days_ago))),
        };
        plans.push(Plan {
            routine: "daily-report",
            kind: RunKind::Routine,
            trigger: "cron",
            at,
            scheduled: true,
            took: Duration::seconds(if status == RunStatus::TimedOut { 600 } else { 8 + days_ago }),
            status,
            prompt: "Summarize yesterday's commits.".into(),
            context: r#"{"kind":"cron"}"#.into(),
            events: vec![
                model(1, 1, (2400, 80), 1100),
                tool("shell", "success", r#"{"command":"git log --since=yesterday --oneline"}"#, "a1b2c3 Fix", 40),
                model(2, 0, (2900, 320), 2300),
            ],
            attempt: 1,
            output,
            error,
            deliveries: Vec::new(),
            tag: Tag::Plain,
        });
    }

    for i in 0..(14 * 4) {
        let at = now - Duration::hours(6 * (i + 1)) - Duration::minutes(7);
        let skipped = i % 9 == 4;
        plans.push(Plan {
            routine: "health-ping",
            kind: RunKind::Routine,
            trigger: "every",
            at,
            scheduled: true,
            took: Duration::milliseconds(if skipped { 0 } else { 2500 + (i * 97) % 3000 }),
            status: if skipped { RunStatus::Skipped } else { RunStatus::Succeeded },
            prompt: "Check that the services answer.".into(),
            context: r#"{"kind":"every"}"#.into(),
            events: if skipped { Vec::new() } else { vec![model(1, 0, (900, 20), 2000)] },
            attempt: 1,
            output: (!skipped).then(|| "All services answer.".to_string()),
            error: skipped.then(|| "missed while the daemon was down (catch_up: latest)".to_string()),
            deliveries: Vec::new(),
            tag: Tag::Plain,
        });
    }

    for h in [30, 75, 200] {
        plans.push(Plan {
            routine: "inbox-watch",
            kind: RunKind::Routine,
            trigger: "file",
            at: now - Duration::hours(h),
            scheduled: false,
            took: Duration::seconds(5),
            status: RunStatus::Succeeded,
            prompt: "Read inbox/orders.csv and list its totals.".into(),
            context: r#"{"kind":"file","path":"inbox/orders.csv","event":"create"}"#.into(),
            events: vec![
                model(1, 1, (1500, 40), 900),
                tool("file_read", "success", r#"{"path":"inbox/orders.csv"}"#, "id,total\n1,20", 3),
            ],
            attempt: 1,
            output: Some("3 orders, 60.00 in all.".into()),
            error: None,
            deliveries: Vec::new(),
            tag: Tag::Plain,
        });
    }

    let hostile = HOSTILE.join("\n");
    let context = serde_json::json!({
        "kind": "webhook", "method": "POST",
        "headers": {"content-type": "application/json", "x-note": HOSTILE[1]},
        "body": hostile, "json": {"ref": HOSTILE[2]}, "query": {"q": HOSTILE[0]},
    });
    plans.push(Plan {
        routine: "deploy-hook",
        kind: RunKind::Routine,
        trigger: "webhook",
        at: now - Duration::hours(3),
        scheduled: false,
        took: Duration::seconds(12),
        status: RunStatus::Succeeded,
        prompt: format!("Check the deploy: {hostile}"),
        context: context.to_string(),
        events: vec![
            model(1, 1, (1300, 70), 800),
            tool(
                "http_request",
                "failed",
                &serde_json::json!({"url": HOSTILE[0], "note": HOSTILE[1]}).to_string(),
                &hostile,
                120,
            ),
            Ev {
                kind: "note",
                tool: None,
                status: "injection_check",
                arguments: None,
                detail: hostile.clone(),
                tokens: None,
                ms: 0,
            },
            model(2, 0, (1900, 200), 1500),
        ],
        attempt: 1,
        output: Some(format!("Deploy looks fine.\n{hostile}")),
        error: None,
        deliveries: vec![Delivery {
            kind: "mail",
            target: format!("ops@example.com {}", HOSTILE[1]),
            on_failure: false,
            status: DeliveryStatus::Failed,
            attempts: 1,
            error: Some(HOSTILE[4].to_string()),
        }],
        tag: Tag::Hostile,
    });

    plans.push(Plan {
        routine: "heartbeat",
        kind: RunKind::Heartbeat,
        trigger: "heartbeat",
        at: now - Duration::minutes(50),
        scheduled: true,
        took: Duration::seconds(4),
        status: RunStatus::Silent,
        prompt: "Go through the checklist.".into(),
        context: r#"{"kind":"heartbeat"}"#.into(),
        events: vec![model(1, 0, (1100, 10), 900)],
        attempt: 1,
        output: Some("HEARTBEAT_OK".into()),
        error: None,
        deliveries: Vec::new(),
        tag: Tag::Plain,
    });

    plans.sort_by_key(|p| p.at);
    let mut seeded = Seeded { failed_run: 0, failing_call: 5, hostile_run: 0, runs: plans.len() };
    for plan in &plans {
        let id = record(store, plan);
        match plan.tag {
            Tag::Failed => seeded.failed_run = id,
            Tag::Hostile => seeded.hostile_run = id,
            Tag::Plain => {}
        }
    }
    seeded
}

/// Records `plan` the way the daemon and the engine do, then moves it to its time.
fn record(store: &Store, plan: &Plan) -> i64 {
    let scheduled_for = plan.scheduled.then_some(plan.at);
    let id = if plan.status == RunStatus::Skipped {
        store.record_skipped(plan.routine, plan.trigger, &[plan.at], "missed", plan.error.as_deref().unwrap()).unwrap();
        store.with_conn(|c| c.query_row("SELECT MAX(id) FROM runs", [], |r| r.get::<_, i64>(0))).unwrap()
    } else if plan.kind == RunKind::Routine && plan.scheduled {
        let fire = NewFire {
            routine: plan.routine,
            trigger: plan.trigger,
            scheduled_for,
            context: &plan.context,
            not_before: None,
            skip_if_active: None,
            key: None,
        };
        store.claim_fire(&fire).unwrap().unwrap()
    } else {
        store
            .create_run(&NewRun {
                kind: plan.kind,
                routine: Some(plan.routine.to_string()),
                trigger: plan.trigger.to_string(),
                scheduled_for,
                status: RunStatus::Queued,
            })
            .unwrap()
    };
    if plan.status != RunStatus::Skipped {
        store.start_run(id).unwrap();
        store.set_trigger_context(id, &plan.context).unwrap();
        store.set_attempt(id, plan.attempt).unwrap();
        store.set_prompt(id, &plan.prompt).unwrap();
        for e in &plan.events {
            store
                .record_event(
                    id,
                    &NewEvent {
                        kind: e.kind.parse().unwrap(),
                        tool: e.tool,
                        status: e.status,
                        arguments: e.arguments.as_deref(),
                        detail: Some(&e.detail),
                        prompt_tokens: e.tokens.map(|t| t.0),
                        completion_tokens: e.tokens.map(|t| t.1),
                        duration_ms: e.ms,
                    },
                )
                .unwrap();
        }
        for (seq, d) in plan.deliveries.iter().enumerate() {
            let did = store
                .add_delivery(&NewDelivery {
                    run_id: id,
                    seq: seq as u32,
                    kind: d.kind,
                    target: &d.target,
                    on_failure: d.on_failure,
                    payload: "{}",
                    acted_on: &[],
                    failed: None,
                })
                .unwrap();
            for _ in 0..d.attempts {
                store.set_delivery(did, d.status, d.error.as_deref()).unwrap();
            }
        }
        let (prompt_tokens, completion_tokens) =
            plan.events.iter().filter_map(|e| e.tokens).fold((0, 0), |(p, c), t| (p + t.0, c + t.1));
        let iterations = plan.events.iter().filter(|e| e.kind == "model_call").count() as u32;
        let outcome = RunOutcome {
            status: plan.status,
            output: plan.output.clone(),
            error: plan.error.clone(),
            prompt_tokens,
            completion_tokens,
            iterations,
            reason: None,
        };
        store.finish_run(id, &outcome).unwrap();
    }
    backdate(store, id, plan);
    id
}

/// Moves run `id` and its events and deliveries to the plan's time: events spread over
/// the run in order, and for a run of two attempts, the second starting halfway.
fn backdate(store: &Store, id: i64, plan: &Plan) {
    let start = plan.at + Duration::milliseconds(350);
    let end = start + plan.took;
    let ran = plan.status != RunStatus::Skipped;
    store
        .with_conn(|c| {
            c.execute(
                "UPDATE runs SET created_at = ?2, started_at = ?3, finished_at = ?4 WHERE id = ?1",
                rusqlite::params![
                    id,
                    to_db_time(plan.at),
                    ran.then(|| to_db_time(start)),
                    to_db_time(if ran { end } else { plan.at })
                ],
            )?;
            let n = plan.events.len().max(1) as i32;
            for (i, _) in plan.events.iter().enumerate() {
                let at = start + plan.took * (i as i32) / n;
                c.execute(
                    "UPDATE run_events SET at = ?3 WHERE run_id = ?1 AND seq = ?2",
                    rusqlite::params![id, i as i64 + 1, to_db_time(at)],
                )?;
            }
            c.execute(
                "UPDATE deliveries SET updated_at = ?2, created_at = ?2 WHERE run_id = ?1",
                rusqlite::params![id, to_db_time(end)],
            )
        })
        .unwrap();
}
