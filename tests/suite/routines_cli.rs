//! Routines through the real binary: init, validate, list, next, run,
//! history and show, in a tempdir, against the mock model server.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use chrono::{DateTime, Datelike, FixedOffset, TimeZone, Utc};
use serde_json::{Value, json};

use crate::common::mock_llm::{MockLlm, error, hang, text, tool_call};
use crate::common::{CHAT_SECTIONS, bin, write_file};

/// The system prompt headings of routine mode, in order.
const ROUTINE_SECTIONS: [&str; 8] = [
    CHAT_SECTIONS[0],
    CHAT_SECTIONS[1],
    CHAT_SECTIONS[2],
    CHAT_SECTIONS[3],
    CHAT_SECTIONS[4],
    CHAT_SECTIONS[5],
    CHAT_SECTIONS[6],
    "## Routine execution",
];

/// A project folder: routines.yaml, routines/, templates/.
pub(super) struct Project {
    pub dir: tempfile::TempDir,
}

/// What one command did.
#[derive(Debug)]
pub(super) struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{self:?}"))
    }
}

impl Project {
    /// A config in zone Asia/Shanghai whose provider is `base_url`, with
    /// `extra` appended (top-level keys other than timezone and provider).
    pub fn new(base_url: &str, extra: &str) -> Project {
        let dir = tempfile::tempdir().unwrap();
        write_file(
            dir.path(),
            "routines.yaml",
            &format!(
                "timezone: Asia/Shanghai\nprovider:\n  base_url: {base_url}\n  model: mock-model\n  api_key_env: TEST_KEY\n  max_retries: 0\n{extra}"
            ),
        );
        std::fs::create_dir_all(dir.path().join("routines")).unwrap();
        std::fs::create_dir_all(dir.path().join("templates")).unwrap();
        Project { dir }
    }

    /// A project whose model is never called.
    pub fn offline() -> Project {
        Project::new("http://127.0.0.1:9/v1", "")
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn write(&self, rel: &str, text: &str) -> &Project {
        write_file(self.path(), rel, text);
        self
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(bin());
        c.args(args)
            .current_dir(self.path())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.path())
            .env("TEST_KEY", "sk-routine-secret")
            .stdin(Stdio::null());
        c
    }

    /// Runs the binary to its end (for tests without a mock server).
    pub fn run(&self, args: &[&str]) -> Out {
        out(self.command(args).output().unwrap())
    }

    /// Runs the binary without blocking the runtime the mock server lives on.
    pub async fn run_async(&self, args: &[&str]) -> Out {
        let mut c = tokio::process::Command::from(self.command(args));
        c.kill_on_drop(true);
        let output = tokio::time::timeout(Duration::from_secs(60), c.output())
            .await
            .unwrap_or_else(|_| panic!("`routines {}` did not finish within 60s", args.join(" ")))
            .unwrap();
        out(output)
    }

    /// `history --json` (and any filters), parsed.
    pub async fn history(&self, args: &[&str]) -> Vec<Value> {
        let mut all = vec!["history", "--json"];
        all.extend_from_slice(args);
        let o = self.run_async(&all).await;
        assert_eq!(o.code, 0, "{o:?}");
        o.json().as_array().unwrap().clone()
    }

    /// `show RUN_ID --json`, parsed.
    pub async fn show(&self, run_id: i64) -> Value {
        let o = self.run_async(&["show", &run_id.to_string(), "--json"]).await;
        assert_eq!(o.code, 0, "{o:?}");
        o.json()
    }
}

fn out(o: std::process::Output) -> Out {
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// A mock that checks every request is a routine-mode request.
async fn mock() -> MockLlm {
    let mock = MockLlm::start().await;
    mock.expect_sections(&ROUTINE_SECTIONS);
    mock
}

fn system(req: &Value) -> String {
    crate::common::content(req, 0)
}

fn user(req: &Value) -> String {
    crate::common::content(req, 1)
}

/// An RFC 3339 timestamp with the engine's offset (+08:00).
fn parse_local(v: &Value) -> DateTime<FixedOffset> {
    let s = v.as_str().unwrap_or_else(|| panic!("not a timestamp: {v}"));
    assert!(s.ends_with("+08:00"), "{s} is not in the engine's zone");
    DateTime::parse_from_rfc3339(s).unwrap()
}

/// A process that is gone, or a zombie waiting to be reaped, is not running.
fn process_is_running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start().chars().next();
            state != Some('Z') && state != Some('X')
        }
    }
}

const DAILY: &str = "description: The daily digest\nvars: { repo: acme/app }\nprompt: Summarize {{ vars.repo }} for {{ routine.name }}.\n";

// ---------------------------------------------------------------- init, validate, list, next

#[test]
fn init_scaffolds_a_valid_project_and_never_overwrites() {
    let root = tempfile::tempdir().unwrap();
    let p = Project { dir: root };
    let o = p.run(&["init", "site"]);
    assert_eq!((o.code, o.stdout.as_str()), (0, ""), "{o:?}");
    let site = p.path().join("site");
    let created: Vec<String> = ["routines.yaml", "routines/hello.yaml", "templates/report.md.j2", "HEARTBEAT.md"]
        .iter()
        .map(|f| format!("created  {}", site.join(f).display()))
        .collect();
    assert_eq!(o.stderr.lines().take(4).collect::<Vec<_>>(), created);
    std::fs::write(site.join("routines/hello.yaml"), "prompt: mine\n").unwrap();

    let o = p.run(&["init", "site"]);
    assert_eq!(o.code, 0);
    assert!(o.stderr.contains(&format!("kept     {} (already exists)\n", site.join("routines/hello.yaml").display())));
    assert!(!o.stderr.contains("created"), "{}", o.stderr);
    assert_eq!(std::fs::read_to_string(site.join("routines/hello.yaml")).unwrap(), "prompt: mine\n");

    let o = p.run(&["--config", "site/routines.yaml", "validate"]);
    assert_eq!((o.code, o.stdout.as_str(), o.stderr.as_str()), (0, "", "ok: the config and 1 routine are valid\n"));
}

#[test]
fn list_shows_every_routine_with_triggers_next_fire_and_last_status() {
    let p = Project::offline();
    p.write("routines/report.yaml", "on:\n  - cron: \"0 9 * * *\"\n    timezone: Europe/Berlin\nprompt: hi\n")
        .write(
            "routines/poll.yaml",
            "on:\n  - every: 30m\n  - webhook: { path: /hooks/poll, auth: none }\nprompt: hi\n",
        )
        .write("routines/by-hand.yaml", DAILY)
        .write("routines/off.yaml", "enabled: false\non:\n  - at: 2099-01-01T09:00:00+01:00\nprompt: hi\n")
        .write("routines/once.yaml", "on:\n  - at: 2099-01-01T09:00:00+01:00\nprompt: hi\n");
    let before = Utc::now();
    let o = p.run(&["list", "--json"]);
    assert_eq!(o.code, 0, "{o:?}");
    let rows = o.json();
    let rows = rows.as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["by-hand", "off", "once", "poll", "report"]);
    let pick = |r: &Value| json!({"name": r["name"], "enabled": r["enabled"], "triggers": r["triggers"], "last_status": r["last_status"]});
    assert_eq!(
        rows.iter().map(pick).collect::<Vec<_>>(),
        [
            json!({"name": "by-hand", "enabled": true, "triggers": ["manual"], "last_status": null}),
            json!({"name": "off", "enabled": false, "triggers": ["at", "manual"], "last_status": null}),
            json!({"name": "once", "enabled": true, "triggers": ["at", "manual"], "last_status": null}),
            json!({"name": "poll", "enabled": true, "triggers": ["every", "webhook", "manual"], "last_status": null}),
            json!({"name": "report", "enabled": true, "triggers": ["cron", "manual"], "last_status": null}),
        ]
    );
    // Manual only, and disabled: nothing fires.
    assert_eq!((&rows[0]["next_fire"], &rows[1]["next_fire"]), (&Value::Null, &Value::Null));
    // `at` is shown in the engine's zone, cron in the trigger's zone.
    assert_eq!(rows[2]["next_fire"], "2099-01-01T16:00:00+08:00");
    let poll = DateTime::parse_from_rfc3339(rows[3]["next_fire"].as_str().unwrap()).unwrap();
    assert!(poll > before && poll.timestamp() % 1800 == 0, "{poll}");
    let report = rows[4]["next_fire"].as_str().unwrap();
    assert!(report.ends_with("T09:00:00+01:00") || report.ends_with("T09:00:00+02:00"), "{report}");
    assert_eq!(rows[4]["next_fire_zone"], "Europe/Berlin");

    let o = p.run(&["list"]);
    assert_eq!(o.code, 0);
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["NAME", "ENABLED", "TRIGGERS", "NEXT", "FIRE", "LAST", "STATUS", "SKIPPED", "MISSED"]
    );
    assert_eq!(lines[1].split_whitespace().collect::<Vec<_>>(), ["by-hand", "yes", "manual", "-", "-", "0", "0"]);
    assert_eq!(lines[2].split_whitespace().collect::<Vec<_>>(), ["off", "no", "at,", "manual", "-", "-", "0", "0"]);
    assert_eq!(
        lines[3].split_whitespace().collect::<Vec<_>>(),
        ["once", "yes", "at,", "manual", "2099-01-01", "16:00:00", "+08:00", "(Asia/Shanghai)", "-", "0", "0"]
    );
    assert!(lines[5].contains("(Europe/Berlin)"), "{}", o.stdout);
}

/// The next `n` weekday 09:30 instants in New York strictly after `after`.
fn weekday_mornings(after: DateTime<Utc>, n: usize) -> Vec<String> {
    let ny = chrono_tz::America::New_York;
    let mut day = after.with_timezone(&ny).date_naive();
    let mut out = Vec::new();
    while out.len() < n {
        let at = ny.from_local_datetime(&day.and_hms_opt(9, 30, 0).unwrap()).single().unwrap();
        if at.with_timezone(&Utc) > after && at.weekday().num_days_from_monday() < 5 {
            out.push(at.to_rfc3339());
        }
        day = day.succ_opt().unwrap();
    }
    out
}

#[test]
fn next_lists_the_fire_times_in_the_triggers_zone() {
    let p = Project::offline();
    p.write("routines/standup.yaml", "on:\n  - cron: \"30 9 * * 1-5\"\n    timezone: America/New_York\nprompt: hi\n")
        .write("routines/once.yaml", "on:\n  - at: 2099-01-01T09:00:00+01:00\nprompt: hi\n")
        .write("routines/by-hand.yaml", DAILY);
    let before = Utc::now();
    let o = p.run(&["next", "standup", "-n", "3", "--json"]);
    let after = Utc::now();
    assert_eq!(o.code, 0, "{o:?}");
    let got: Vec<Value> = o.json().as_array().unwrap().clone();
    let at: Vec<String> = got.iter().map(|f| f["at"].as_str().unwrap().to_string()).collect();
    assert!(at == weekday_mornings(before, 3) || at == weekday_mornings(after, 3), "{at:?}");
    for f in &got {
        assert_eq!((f["zone"].as_str(), f["trigger"].as_str()), (Some("America/New_York"), Some("cron")));
    }

    let o = p.run(&["next", "standup", "-n", "3"]);
    assert_eq!(o.code, 0);
    assert_eq!(o.stdout.lines().count(), 3, "{}", o.stdout);
    for line in o.stdout.lines() {
        assert!(
            line.ends_with(" 09:30:00 -05:00 (America/New_York)  cron")
                || line.ends_with(" 09:30:00 -04:00 (America/New_York)  cron"),
            "{line}"
        );
    }

    let o = p.run(&["next", "once", "-n", "3"]);
    assert_eq!(o.stdout, "2099-01-01 16:00:00 +08:00 (Asia/Shanghai)  at\n");
    let o = p.run(&["next", "by-hand"]);
    assert_eq!((o.code, o.stdout.as_str()), (0, ""));
    assert_eq!(o.stderr, "`by-hand` has no upcoming time triggers (it runs by hand, on files or webhooks)\n");
    let o = p.run(&["next", "standpu"]);
    assert_eq!((o.code, o.stderr.as_str()), (2, "error: no routine named `standpu`; did you mean `standup`?\n"));
}

#[test]
fn an_unknown_or_broken_routine_is_a_usage_error() {
    let p = Project::offline();
    p.write("routines/daily.yaml", DAILY).write("routines/broken.yaml", "prompt: hi\novrelap: skip\n");
    let o = p.run(&["run", "dialy"]);
    assert_eq!((o.code, o.stdout.as_str()), (2, ""));
    assert_eq!(o.stderr, "error: no routine named `dialy`; did you mean `daily`?\n");
    let o = p.run(&["run", "weekly"]);
    assert_eq!(o.stderr, "error: no routine named `weekly`; routines: daily\n");
    let o = p.run(&["run", "broken"]);
    assert_eq!(o.code, 2);
    assert_eq!(
        o.stderr,
        "error: routine `broken` is invalid:\n  routines/broken.yaml:2:1: unknown field `ovrelap`\n    help: did you mean `overlap`?\n"
    );
    let o = p.run(&["run", "daily", "--var", "novalue"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("`novalue` is not KEY=VALUE"), "{}", o.stderr);
    let o = p.run(&["history", "--status", "done"]);
    assert_eq!(o.code, 2);
    assert_eq!(
        o.stderr,
        "error: unknown status `done`; use one of: succeeded, silent, failed, timed_out, skipped, interrupted, running, queued\n"
    );
    let o = p.run(&["show", "42"]);
    assert_eq!((o.code, o.stderr.as_str()), (2, "error: no run with id 42; see `routines history`\n"));
}

#[test]
fn a_disabled_routine_is_refused_with_exit_code_3() {
    let p = Project::offline();
    p.write("routines/off.yaml", "enabled: false\nprompt: hi\n");
    let o = p.run(&["run", "off"]);
    assert_eq!((o.code, o.stdout.as_str()), (3, ""));
    assert_eq!(o.stderr, "error: routine `off` is disabled; set `enabled: true` in routines/off.yaml to run it\n");
    let o = p.run(&["history", "--json"]);
    assert_eq!(o.stdout.trim(), "[]");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_broken_routine_does_not_hide_the_others() {
    let mock = mock().await;
    let p = Project::new(&mock.base_url(), "");
    p.write("routines/daily.yaml", DAILY).write("routines/broken.yaml", "prompt: \"{{ oops\"\n");
    let o = p.run_async(&["list", "--json"]).await;
    assert_eq!(o.code, 0);
    assert_eq!(o.json().as_array().unwrap().iter().map(|r| r["name"].clone()).collect::<Vec<_>>(), [json!("daily")]);
    assert_eq!(o.stderr, "warning: 1 problem(s) in routine files; see `routines validate`\n");
    mock.push(text("Fine."));
    let o = p.run_async(&["run", "daily"]).await;
    assert_eq!((o.code, o.stdout.as_str()), (0, "Fine.\n"), "{o:?}");
    let o = p.run_async(&["validate"]).await;
    assert_eq!(o.code, 2);
    assert!(o.stdout.starts_with("routines/broken.yaml:1:"), "{}", o.stdout);
    mock.assert_clean();
}

// ---------------------------------------------------------------- run

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_prints_the_final_output_and_records_the_run() {
    let mock = mock().await;
    let p = Project::new(&mock.base_url(), "");
    p.write("routines/daily.yaml", DAILY);
    mock.push(text("Three commits, all green.\n\n"));
    let o = p.run_async(&["run", "daily", "--var", "repo=acme/web"]).await;
    assert_eq!(o.code, 0, "{o:?}");
    assert_eq!(o.stdout, "Three commits, all green.\n");
    assert_eq!(o.stderr, "running daily...\nrun 1: succeeded\n");

    let reqs = mock.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(user(&reqs[0]), "Summarize acme/web for daily.");
    assert_eq!(reqs[0]["model"], "mock-model");
    assert!(system(&reqs[0]).contains("You are running the routine `daily` unattended"), "{}", system(&reqs[0]));
    assert!(system(&reqs[0]).contains("(Asia/Shanghai)"));

    let runs = p.history(&[]).await;
    assert_eq!(runs.len(), 1);
    let r = &runs[0];
    let keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["error", "finished_at", "routine", "run_id", "scheduled_for", "started_at", "status", "trigger"]);
    assert_eq!(
        (&r["run_id"], &r["routine"], &r["status"], &r["trigger"], &r["scheduled_for"], &r["error"]),
        (&json!(1), &json!("daily"), &json!("succeeded"), &json!("manual"), &Value::Null, &Value::Null)
    );
    assert!(parse_local(&r["started_at"]) <= parse_local(&r["finished_at"]));

    let show = p.show(1).await;
    assert_eq!(show["prompt"], "Summarize acme/web for daily.");
    assert_eq!(show["output"], "Three commits, all green.\n\n");
    assert_eq!(show["tokens"], json!({"prompt": 10, "completion": 5}));
    assert_eq!(show["iterations"], 1);
    let events: Vec<Value> =
        show["events"].as_array().unwrap().iter().map(|e| json!([e["kind"], e["status"]])).collect();
    assert_eq!(events, [json!(["model_call", "ok"])]);
    mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_json_has_the_documented_shape() {
    let mock = mock().await;
    let p = Project::new(&mock.base_url(), "");
    p.write("routines/daily.yaml", DAILY);
    mock.push(text("All good."));
    let o = p.run_async(&["run", "daily", "--json"]).await;
    assert_eq!(o.code, 0, "{o:?}");
    let v = o.json();
    assert_eq!(
        (&v["run_id"], &v["routine"], &v["status"], &v["output"], &v["error"]),
        (&json!(1), &json!("daily"), &json!("succeeded"), &json!("All good."), &Value::Null)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_prints_both_prompts_and_calls_no_model() {
    let mock = mock().await;
    let p = Project::new(&mock.base_url(), "");
    p.write("routines/daily.yaml", DAILY);
    let o = p.run_async(&["run", "daily", "--dry-run", "--var", "repo=acme/api"]).await;
    assert_eq!(o.code, 0, "{o:?}");
    assert!(o.stdout.starts_with("# System prompt\n\n## Identity\n"), "{}", o.stdout);
    assert!(o.stdout.contains("\n## Routine execution\nYou are running the routine `daily` unattended"));
    assert!(o.stdout.ends_with("\n# Prompt\n\nSummarize acme/api for daily.\n"), "{}", o.stdout);

    let o = p.run_async(&["run", "daily", "--dry-run", "--json"]).await;
    let v = o.json();
    assert_eq!((&v["routine"], &v["prompt"]), (&json!("daily"), &json!("Summarize acme/app for daily.")));
    assert!(v["system_prompt"].as_str().unwrap().starts_with("## Identity\n"));
    assert_eq!(mock.request_count(), 0);
    assert!(p.history(&[]).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_run_exits_1_with_an_error_line() {
    let mock = mock().await;
    let p = Project::new(&mock.base_url(), "");
    p.write("routines/daily.yaml", DAILY);
    mock.push(error(400, "the model `mock-model` does not support tools"));
    let o = p.run_async(&["run", "daily"]).await;
    assert_eq!((o.code, o.stdout.as_str()), (1, ""), "{o:?}");
    let tail: Vec<&str> = o.stderr.lines().rev().take(2).collect();
    assert_eq!(tail[0], "  details: routines show 1");
    assert!(tail[1].starts_with("error: run 1 failed: "), "{}", o.stderr);
    assert!(tail[1].contains("the model `mock-model` does not support tools"), "{}", o.stderr);

    mock.push(error(404, "no such model"));
    let o = p.run_async(&["run", "daily", "--json"]).await;
    assert_eq!(o.code, 1);
    let v = o.json();
    assert_eq!((&v["status"], &v["output"]), (&json!("failed"), &Value::Null));
    assert!(v["error"].as_str().unwrap().contains("no such model"), "{v}");
    let runs = p.history(&["--status", "failed"]).await;
    assert_eq!(runs.iter().map(|r| r["run_id"].as_i64().unwrap()).collect::<Vec<_>>(), [2, 1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_that_cannot_be_rendered_fails_the_run_before_any_model_call() {
    let mock = mock().await;
    let p = Project::new(&mock.base_url(), "");
    p.write("routines/deploy.yaml", "prompt: Deploy {{ vars.branch }}.\n");
    let o = p.run_async(&["run", "deploy"]).await;
    assert_eq!(o.code, 1, "{o:?}");
    assert!(
        o.stderr.contains("error: run 1 failed: template `prompt` uses `vars.branch`, which is not defined"),
        "{}",
        o.stderr
    );
    mock.push(text("Deployed."));
    let o = p.run_async(&["run", "deploy", "--var", "branch=main"]).await;
    assert_eq!((o.code, o.stdout.as_str()), (0, "Deployed.\n"));
    assert_eq!(user(&mock.requests()[0]), "Deploy main.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_cannot_be_set_up_is_a_recorded_failure() {
    let mock = mock().await;
    let p = Project::new(&mock.base_url(), "workspace: no-such-folder\n");
    p.write("routines/daily.yaml", DAILY);
    let o = p.run_async(&["run", "daily"]).await;
    assert_eq!(o.code, 1, "{o:?}");
    assert!(o.stderr.contains("error: run 1 failed: cannot set up the agent: "), "{}", o.stderr);
    let runs = p.history(&[]).await;
    assert_eq!(runs[0]["status"], "failed");
    assert_eq!(mock.request_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_reply_delivers_nothing_and_exits_0() {
    let mock = mock().await;
    let p = Project::new(&mock.base_url(), "");
    p.write(
        "routines/watch.yaml",
        "prompt: Anything new? If not, say NO_REPLY.\ndeliver:\n  - file: { path: out/watch.md }\n",
    );
    mock.push(text("NO_REPLY"));
    let o = p.run_async(&["run", "watch"]).await;
    assert_eq!((o.code, o.stdout.as_str()), (0, ""), "{o:?}");
    assert_eq!(o.stderr, "running watch...\nrun 1: silent (nothing to report; nothing delivered)\n");
    assert!(!p.path().join("out").exists());
    let show = p.show(1).await;
    assert_eq!((&show["status"], &show["deliveries"]), (&json!("silent"), &json!([])));
    let sys = system(&mock.requests()[0]);
    let routine_section = sys.split("\n## Routine execution\n").nth(1).unwrap();
    assert!(routine_section.contains("NO_REPLY"), "{routine_section}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_are_retried_with_backoff_and_then_fail() {
    let mock = mock().await;
    let p = Project::new(&mock.base_url(), "");
    p.write("routines/flaky.yaml", "prompt: Go.\nretry: { attempts: 3, backoff: 100ms }\n");
    mock.push_all([error(500, "overloaded"), error(503, "still overloaded"), text("Made it.")]);
    let o = p.run_async(&["run", "flaky"]).await;
    assert_eq!((o.code, o.stdout.as_str()), (0, "Made it.\n"), "{o:?}");
    assert_eq!(mock.request_count(), 3);
    assert_eq!(p.show(1).await["attempt"], 3);

    mock.push_all([error(500, "down"), error(500, "down"), error(500, "down for good")]);
    let o = p.run_async(&["run", "flaky"]).await;
    assert_eq!(o.code, 1, "{o:?}");
    assert_eq!(mock.request_count(), 6);
    assert!(o.stderr.contains("down for good"), "{}", o.stderr);
    let show = p.show(2).await;
    assert_eq!((&show["status"], &show["attempt"]), (&json!("failed"), &json!(3)));

    // A client error is not retried.
    mock.push(error(400, "bad request"));
    let o = p.run_async(&["run", "flaky"]).await;
    assert_eq!(o.code, 1);
    assert_eq!(mock.request_count(), 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_failure_deliveries_are_written_when_the_run_fails() {
    let mock = mock().await;
    let p = Project::new(&mock.base_url(), "");
    p.write("templates/failure.txt.j2", "{{ routine.name }} ended {{ status }}: {{ error }}\n").write(
        "routines/nightly.yaml",
        "prompt: Go.\nretry: { attempts: 1 }\ndeliver:\n  - file: { path: reports/nightly.md }\non_failure:\n  deliver:\n    - file: { path: \"alerts/{{ routine.name }}-{{ run.id }}.txt\", template: failure.txt.j2 }\n",
    );
    mock.push(error(400, "quota exhausted"));
    let o = p.run_async(&["run", "nightly"]).await;
    assert_eq!(o.code, 1, "{o:?}");
    assert!(o.stderr.contains("  delivered to alerts/nightly-1.txt\n"), "{}", o.stderr);
    let alert = p.read("alerts/nightly-1.txt");
    assert!(alert.starts_with("nightly ended failed: "), "{alert}");
    assert!(alert.contains("quota exhausted"), "{alert}");
    assert!(!p.path().join("reports").exists());
    let show = p.show(1).await;
    assert_eq!(
        show["deliveries"],
        json!([{"target": "alerts/nightly-1.txt", "kind": "file", "status": "delivered", "error": null, "attempts": 1, "on_failure": true}])
    );

    // A successful run does not use them.
    mock.push(text("ok"));
    let o = p.run_async(&["run", "nightly"]).await;
    assert_eq!(o.code, 0);
    assert!(!p.path().join("alerts/nightly-2.txt").exists());
    assert_eq!(p.read("reports/nightly.md"), "ok\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_run_is_cancelled_and_its_processes_killed() {
    let mock = mock().await;
    let p = Project::new(&mock.base_url(), "security:\n  allowed_commands: [sh, sleep, echo]\n");
    p.write("spawn.sh", "sleep 300 &\necho $! > grandchild.pid\nsleep 300\n").write(
        "routines/stuck.yaml",
        "prompt: Run spawn.sh.\ntimeout: 2s\nagent: { autonomy: full, tools: [shell] }\n",
    );
    mock.push_all([tool_call("shell", json!({"command": "sh spawn.sh"})), text("never asked")]);
    let o = p.run_async(&["run", "stuck"]).await;
    assert_eq!(o.code, 1, "{o:?}");
    assert!(
        o.stderr.contains(
            "error: run 1 timed_out: the run did not finish within its timeout of 2s; it was cancelled and its processes killed\n"
        ),
        "{}",
        o.stderr
    );
    assert_eq!(mock.request_count(), 1);
    let pid: i32 = p.read("grandchild.pid").trim().parse().unwrap();
    assert!(!process_is_running(pid), "grandchild {pid} survived the timeout");
    let runs = p.history(&["stuck", "--status", "timed_out"]).await;
    assert_eq!(runs.len(), 1);
    let show = p.show(1).await;
    let events: Vec<Value> = show["events"].as_array().unwrap().iter().map(|e| json!([e["kind"], e["tool"]])).collect();
    assert_eq!(events[0], json!(["model_call", null]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_process_died_is_found_interrupted() {
    let mock = mock().await;
    let p = Project::new(&mock.base_url(), "");
    p.write("routines/daily.yaml", DAILY);
    mock.push(hang());
    let mut child = tokio::process::Command::from(p.command(&["run", "daily"]))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    mock.wait_for_requests(1).await;
    child.start_kill().unwrap(); // SIGKILL
    let status = child.wait().await.unwrap();
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGKILL));

    let runs = p.history(&[]).await;
    assert_eq!(runs.len(), 1);
    assert_eq!(
        (&runs[0]["status"], &runs[0]["error"]),
        (&json!("interrupted"), &json!("the process running it stopped before it finished"))
    );
    parse_local(&runs[0]["finished_at"]);
    let o = p.run_async(&["list", "--json"]).await;
    assert_eq!(o.json()[0]["last_status"], "interrupted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlap_skip_refuses_a_second_run_and_queue_waits_for_the_first() {
    let mock = mock().await;
    let p = Project::new(&mock.base_url(), "");
    p.write("routines/slow.yaml", "prompt: Go.\n").write("routines/queued.yaml", "prompt: Go.\noverlap: queue\n");
    mock.push(hang());
    let mut first = tokio::process::Command::from(p.command(&["run", "slow"]))
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    mock.wait_for_requests(1).await;
    let o = p.run_async(&["run", "slow"]).await;
    assert_eq!((o.code, o.stdout.as_str()), (3, ""), "{o:?}");
    assert_eq!(
        o.stderr,
        "running slow...\nerror: run 1 of `slow` is still running (overlap: skip); this run was skipped\n"
    );
    first.start_kill().unwrap();
    first.wait().await.unwrap();
    let runs = p.history(&["slow"]).await;
    let statuses: Vec<&str> = runs.iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["skipped", "interrupted"]);

    // queue: the second run waits until the first one's process is gone.
    mock.push_all([hang(), text("After the first.")]);
    let mut first = tokio::process::Command::from(p.command(&["run", "queued"]))
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    mock.wait_for_requests(2).await;
    let second = tokio::process::Command::from(p.command(&["run", "queued"]))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // Wait (bounded) until the second run is recorded as waiting.
    let mut waiting = false;
    for _ in 0..300 {
        if p.history(&["queued", "--status", "queued"]).await.len() == 1 {
            waiting = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(waiting, "the second run was never queued");
    assert_eq!(mock.request_count(), 2);
    first.start_kill().unwrap();
    first.wait().await.unwrap();
    let out = tokio::time::timeout(Duration::from_secs(60), second.wait_with_output()).await.unwrap().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "After the first.\n");
    let statuses: Vec<String> =
        p.history(&["queued"]).await.iter().map(|r| r["status"].as_str().unwrap().to_string()).collect();
    assert_eq!(statuses, ["succeeded", "interrupted"]);
}

// ---------------------------------------------------------------- delivery

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_deliveries_create_overwrite_and_append_rendered_paths() {
    let mock = mock().await;
    let p = Project::new(&mock.base_url(), "");
    p.write("templates/report.md.j2", "# {{ routine.name }} ({{ status }})\n\n{{ output }}\n");
    for (name, mode) in [("once", "create"), ("latest", "overwrite"), ("log", "append")] {
        p.write(
            &format!("routines/{name}.yaml"),
            &format!(
                "prompt: Go.\ndeliver:\n  - file: {{ path: \"reports/{{{{ routine.name }}}}/{{{{ now | date('%Y') }}}}.md\", template: report.md.j2, mode: {mode} }}\n"
            ),
        );
    }
    let year = || Utc::now().with_timezone(&chrono_tz::Asia::Shanghai).year();
    let before = year();
    for name in ["once", "latest", "log"] {
        for reply in ["first", "second"] {
            mock.push(text(reply));
            let o = p.run_async(&["run", name]).await;
            assert_eq!((o.code, o.stdout.trim()), (0, reply), "{o:?}");
        }
    }
    if before != year() {
        return; // New Year's Eve in Shanghai during the test: the paths moved on.
    }
    let file = |name: &str| p.read(&format!("reports/{name}/{before}.md"));
    assert_eq!(file("once"), "# once (succeeded)\n\nfirst\n");
    assert_eq!(file("latest"), "# latest (succeeded)\n\nsecond\n");
    assert_eq!(file("log"), "# log (succeeded)\n\nfirst\n# log (succeeded)\n\nsecond\n");
    // The second create found the file and failed, without failing the run.
    let show = p.show(2).await;
    assert_eq!(show["status"], "succeeded");
    assert_eq!(
        show["deliveries"][0]["error"],
        format!("reports/once/{before}.md already exists and mode is create; use overwrite or append")
    );
    assert_eq!(show["deliveries"][0]["status"], "failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_outside_the_workspace_fails_alone() {
    let mock = mock().await;
    let p = Project::new(&mock.base_url(), "workspace: ws\n");
    std::fs::create_dir_all(p.path().join("ws")).unwrap();
    p.write(
        "routines/leak.yaml",
        "prompt: Go.\ndeliver:\n  - file: { path: \"../{{ routine.name }}.md\" }\n  - file: { path: kept.md }\n  - mail: { to: [ops@example.com] }\n  - file: { path: \"{{ vars.dir }}/x.md\" }\n  - file: { path: y.md, template: broken.md.j2 }\n",
    )
    .write("templates/broken.md.j2", "{{ output }} for {{ vars.team }}\n");
    mock.push(text("Report."));
    let o = p.run_async(&["run", "leak"]).await;
    assert_eq!((o.code, o.stdout.as_str()), (0, "Report.\n"), "{o:?}");
    assert!(o.stderr.contains("  delivery to ../leak.md failed: "), "{}", o.stderr);
    assert!(o.stderr.contains("  delivered to kept.md\n"), "{}", o.stderr);
    assert!(!p.path().join("leak.md").exists());
    assert_eq!(p.read("ws/kept.md"), "Report.\n");
    let show = p.show(1).await;
    assert_eq!(show["status"], "succeeded");
    let d = show["deliveries"].as_array().unwrap();
    let brief: Vec<Value> = d.iter().map(|d| json!([d["target"], d["status"]])).collect();
    assert_eq!(
        brief,
        [
            json!(["../leak.md", "failed"]),
            json!(["kept.md", "delivered"]),
            json!(["ops@example.com", "delivered"]),
            json!(["{{ vars.dir }}/x.md", "failed"]),
            json!(["y.md", "failed"]),
        ]
    );
    assert!(d[0]["error"].as_str().unwrap().contains("outside the workspace"), "{}", d[0]["error"]);
    assert_eq!(d[1]["error"], Value::Null);
    // No SMTP configured: the mail is written to the outbox.
    assert_eq!(d[2]["error"], Value::Null);
    assert_eq!(d[3]["error"], "template `deliver[3].file.path` uses `vars.dir`, which is not defined; `vars` is empty");
    assert_eq!(d[4]["error"], "template `broken.md.j2` uses `vars.team`, which is not defined; `vars` is empty");
    assert!(!p.path().join("ws/y.md").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_deliver_runs_without_delivering() {
    let mock = mock().await;
    let p = Project::new(&mock.base_url(), "");
    p.write("routines/daily.yaml", &format!("{DAILY}deliver:\n  - file: {{ path: out.md }}\n"));
    mock.push(text("Quiet."));
    let o = p.run_async(&["run", "daily", "--no-deliver"]).await;
    assert_eq!((o.code, o.stdout.as_str()), (0, "Quiet.\n"), "{o:?}");
    assert!(!p.path().join("out.md").exists());
    assert_eq!(p.show(1).await["deliveries"], json!([]));
}

// ---------------------------------------------------------------- history, show, approach memory

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_lists_newest_first_and_filters() {
    let mock = mock().await;
    let p = Project::new(&mock.base_url(), "");
    p.write("routines/daily.yaml", DAILY).write("routines/watch.yaml", "prompt: Anything?\nretry: { attempts: 1 }\n");
    mock.push_all([text("one"), error(400, "nope"), text("NO_REPLY"), text("two")]);
    for (name, code) in [("daily", 0), ("watch", 1), ("watch", 0), ("daily", 0)] {
        assert_eq!(p.run_async(&["run", name]).await.code, code);
    }
    let ids = |runs: &[Value]| runs.iter().map(|r| r["run_id"].as_i64().unwrap()).collect::<Vec<_>>();
    let all = p.history(&[]).await;
    assert_eq!(ids(&all), [4, 3, 2, 1]);
    let statuses: Vec<&str> = all.iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["succeeded", "silent", "failed", "succeeded"]);
    assert!(all[2]["error"].as_str().unwrap().contains("nope"));
    assert!(parse_local(&all[0]["started_at"]) >= parse_local(&all[3]["finished_at"]));
    assert_eq!(ids(&p.history(&["daily"]).await), [4, 1]);
    assert_eq!(ids(&p.history(&["watch", "--limit", "1"]).await), [3]);
    assert_eq!(ids(&p.history(&["--status", "silent"]).await), [3]);
    assert_eq!(ids(&p.history(&["--status", "failed", "daily"]).await), Vec::<i64>::new());

    let o = p.run_async(&["history", "--limit", "2"]).await;
    let lines: Vec<Vec<&str>> = o.stdout.lines().map(|l| l.split_whitespace().take(4).collect()).collect();
    assert_eq!(
        lines,
        [
            vec!["RUN", "ROUTINE", "STATUS", "TRIGGER"],
            vec!["4", "daily", "succeeded", "manual"],
            vec!["3", "watch", "silent", "manual"]
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_lists_every_model_and_tool_call_in_order_and_the_approach_is_remembered() {
    let mock = mock().await;
    let p = Project::new(&mock.base_url(), "");
    p.write("notes.txt", "The code word is HERON.\n").write(
        "routines/notes.yaml",
        "prompt: What is the code word?\nagent: { tools: [file_read, file_list] }\ndeliver:\n  - file: { path: answer.md }\n",
    );
    mock.push_all([tool_call("file_read", json!({"path": "notes.txt"})), text("HERON")]);
    let o = p.run_async(&["run", "notes"]).await;
    assert_eq!((o.code, o.stdout.as_str()), (0, "HERON\n"), "{o:?}");
    assert!(o.stderr.contains("  ✓ file_read: The code word is HERON.\n"), "{}", o.stderr);

    let show = p.show(1).await;
    let events: Vec<Value> =
        show["events"].as_array().unwrap().iter().map(|e| json!([e["kind"], e["tool"], e["status"]])).collect();
    assert_eq!(
        events,
        [
            json!(["model_call", null, "ok"]),
            json!(["tool_call", "file_read", "success"]),
            json!(["model_call", null, "ok"])
        ]
    );
    assert_eq!(show["events"][1]["arguments"], r#"{"path":"notes.txt"}"#);
    parse_local(&show["events"][0]["at"]);
    assert_eq!(show["deliveries"][0]["target"], "answer.md");
    assert_eq!((&show["tokens"], &show["iterations"]), (&json!({"prompt": 20, "completion": 10}), &json!(2)));
    let o = p.run_async(&["show", "1"]).await;
    assert!(o.stdout.starts_with("run 1  notes  succeeded\ntrigger:   manual (attempt 1)\n"), "{}", o.stdout);
    assert!(o.stdout.contains("\ndeliveries:\n  file answer.md  delivered\n"), "{}", o.stdout);
    assert!(o.stdout.ends_with("\noutput:\n  HERON\n"), "{}", o.stdout);

    // The next run is offered the approach that worked.
    assert!(!system(&mock.requests()[0]).contains("An approach that worked before"));
    mock.push(text("HERON again"));
    assert_eq!(p.run_async(&["run", "notes"]).await.code, 0);
    let second = system(&mock.requests()[2]);
    assert!(
        second.contains(
            "An approach that worked before (try it first):\nTool calls of the last successful run:\n- file_read {\"path\":\"notes.txt\"}"
        ),
        "{second}"
    );
    mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backoff_that_would_pass_the_timeout_is_not_waited_for() {
    let mock = mock().await;
    let p = Project::new(&mock.base_url(), "");
    p.write("routines/late.yaml", "prompt: Go.\ntimeout: 5s\nretry: { attempts: 3, backoff: 1m }\n");
    mock.push(error(502, "bad gateway"));
    let o = p.run_async(&["run", "late"]).await;
    assert_eq!(o.code, 1, "{o:?}");
    assert_eq!(mock.request_count(), 1);
    // Had it waited, the 5s timeout would have ended the run as timed_out.
    let runs = p.history(&[]).await;
    assert_eq!(runs[0]["status"], "failed");
    assert!(runs[0]["error"].as_str().unwrap().contains("bad gateway"), "{}", runs[0]["error"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persistent_session_carries_the_history_to_the_next_run() {
    let mock = mock().await;
    let p = Project::new(&mock.base_url(), "");
    p.write("routines/diary.yaml", "prompt: \"Entry {{ run.id }}.\"\nagent: { session: persistent }\n")
        .write("routines/fresh.yaml", "prompt: \"Entry {{ run.id }}.\"\n");
    mock.push_all([text("Noted one."), text("Noted two."), text("A."), text("B.")]);
    for name in ["diary", "diary", "fresh", "fresh"] {
        assert_eq!(p.run_async(&["run", name]).await.code, 0);
    }
    let reqs = mock.requests();
    let turns = |r: &Value| -> Vec<Value> {
        r["messages"].as_array().unwrap()[1..].iter().map(|m| json!([m["role"], m["content"]])).collect()
    };
    assert_eq!(
        turns(&reqs[1]),
        [json!(["user", "Entry 1."]), json!(["assistant", "Noted one."]), json!(["user", "Entry 2."])]
    );
    assert_eq!(turns(&reqs[3]), [json!(["user", "Entry 4."])]);
    mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_delivery_is_retried_alone_without_the_agent() {
    let mock = mock().await;
    let p = Project::new(&mock.base_url(), "");
    p.write("routines/note.yaml", "prompt: Go.\ndeliver:\n  - file: { path: out/note.md, mode: create }\n");
    p.write("out/note.md", "in the way\n");
    mock.push(text("the report"));
    let o = p.run_async(&["run", "note"]).await;
    assert_eq!(o.code, 0, "{o:?}");
    assert!(
        o.stderr.contains("delivery to out/note.md failed: out/note.md already exists and mode is create"),
        "{o:?}"
    );

    // Still in the way: the retry fails again and says so.
    let o = p.run_async(&["deliver", "--retry", "--json"]).await;
    assert_eq!(o.code, 1, "{o:?}");
    assert_eq!(o.json()[0]["status"], "failed");

    std::fs::remove_file(p.path().join("out/note.md")).unwrap();
    let o = p.run_async(&["deliver", "--retry"]).await;
    assert_eq!(o.code, 0, "{o:?}");
    assert_eq!(o.stderr, "delivered  run 1  file out/note.md\n");
    assert_eq!(p.read("out/note.md"), "the report\n");
    assert_eq!(mock.request_count(), 1, "the agent did not run again");
    let show = p.show(1).await;
    assert_eq!(show["deliveries"][0]["status"], "delivered");
    assert_eq!(show["deliveries"][0]["attempts"], 3);

    let o = p.run_async(&["deliver", "--retry"]).await;
    assert_eq!((o.code, o.stderr.as_str()), (0, "nothing to deliver: every delivery has arrived\n"));
}
