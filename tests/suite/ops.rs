//! Day-to-day operation through the binary: `pause` and `resume` (SPEC §2), against the
//! store and a running daemon.

use std::time::Duration;

use serde_json::Value;

use crate::common::mock_llm::{MockLlm, text};
use crate::common::os::free_port;
use crate::common::wait::{self, DEADLINE};
use crate::common::{Routines, Running};

fn listed(p: &Routines) -> Vec<Value> {
    let o = p.run(["list", "--json"]);
    o.success();
    o.json().as_array().unwrap().clone()
}

fn paused_flag(p: &Routines, name: &str) -> Value {
    listed(p).into_iter().find(|r| r["name"] == name).unwrap()["paused"].clone()
}

#[test]
fn a_pause_is_kept_in_the_store_shown_by_list_and_lifted_by_resume() {
    let p = Routines::offline();
    p.write("routines/report.yaml", "on: [{ cron: \"0 9 * * *\" }]\nprompt: hi\n");
    assert_eq!(paused_flag(&p, "report"), Value::Bool(false));
    p.run(["pause", "report"]).success().stderr_has("paused report: its triggers are recorded skipped");
    // Another process, later: still paused; the text table says so and shows no next fire.
    assert_eq!(paused_flag(&p, "report"), Value::Bool(true));
    let table = p.run(["list"]).success().stdout.clone();
    let row = table.lines().find(|l| l.starts_with("report")).unwrap().to_string();
    assert!(row.contains("paused") && !row.contains("09:00:00"), "{row}");
    p.run(["resume", "report"]).success().stderr_has("resumed report (paused since ");
    assert_eq!(paused_flag(&p, "report"), Value::Bool(false));
    p.run(["resume", "report"]).success().stderr_has("report was not paused");
}

#[test]
fn pausing_an_unknown_routine_is_bad_usage_with_a_suggestion() {
    let p = Routines::offline();
    p.write("routines/report.yaml", "prompt: hi\n");
    p.run(["pause", "reprot"]).code(2).stderr_has("no routine named `reprot`; did you mean `report`?");
    p.run(["resume", "nope"]).code(2);
}

async fn daemon(p: &Routines, port: u16) -> Running {
    let running = p.command(["daemon"]).spawn().await;
    running.wait_for_stderr("the ready line", |l| l.starts_with("routines daemon: ")).await;
    running.wait_for_http(&format!("http://127.0.0.1:{port}/healthz"), 200).await;
    running
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_routines_webhooks_are_recorded_skipped_and_a_resume_counts_at_once() {
    let mock = MockLlm::start().await;
    let port = free_port();
    let p = Routines::project(&mock.base_url(), &format!("server: {{ listen: 127.0.0.1:{port} }}\n"));
    p.write("routines/hook.yaml", "on: [{ webhook: { path: /hooks/deploy, auth: none } }]\nprompt: Deployed.\n");
    let running = daemon(&p, port).await;
    let c = reqwest::Client::builder().no_proxy().build().unwrap();
    let url = format!("http://127.0.0.1:{port}/hooks/deploy");

    // Paused from another process while the daemon runs: the next request is skipped.
    p.run_async(["pause", "hook"]).await.success();
    let answer = c.post(&url).body("{}").send().await.unwrap();
    assert_eq!(answer.status(), 202);
    let skipped = p.history(&["hook", "--status", "skipped"]).await;
    assert_eq!(skipped.len(), 1);
    assert!(skipped[0]["error"].as_str().unwrap().contains("is paused"), "{}", skipped[0]);
    assert_eq!(mock.request_count(), 0, "a paused routine called the model");

    // By hand it still runs.
    mock.push(text("by hand"));
    p.run_async(["run", "hook"]).await.success().stdout_is("by hand\n");

    // Resumed: the next request runs.
    p.run_async(["resume", "hook"]).await.success();
    mock.push(text("fired"));
    assert_eq!(c.post(&url).body("{}").send().await.unwrap().status(), 202);
    let done = wait::poll(DEADLINE, Duration::from_millis(50), async || {
        let runs = p.history(&["hook", "--status", "succeeded"]).await;
        (runs.len() == 2).then_some(runs)
    })
    .await;
    assert!(done.is_some(), "the webhook after resume did not run");
    drop(running);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_runs_a_skipped_instant_only_with_catch_up() {
    let mock = MockLlm::start().await;
    let port = free_port();
    let p = Routines::project(&mock.base_url(), &format!("server: {{ listen: 127.0.0.1:{port} }}\n"));
    p.write("routines/tick.yaml", "on: [{ every: 1s }]\nprompt: Tick.\n");
    p.run(["pause", "tick"]).success();
    let running = daemon(&p, port).await;
    // Three fires while paused: one row that counts them, not a row each.
    let skipped = wait::poll(DEADLINE, Duration::from_millis(100), async || {
        let runs = p.history(&["tick", "--status", "skipped"]).await;
        runs.iter()
            .any(|r| r["error"].as_str().unwrap_or_default().contains("(3 fires skipped while paused"))
            .then_some(runs)
    })
    .await;
    let skipped = skipped.expect("no stretch of three fires was recorded skipped while paused");
    assert_eq!(skipped.len(), 1, "{skipped:#?}");
    drop(running);
    assert_eq!(mock.request_count(), 0);
    let listed = listed(&p).into_iter().find(|r| r["name"] == "tick").unwrap();
    assert!(listed["skipped"].as_u64().unwrap() >= 3, "{listed}");

    mock.push(text("caught up"));
    p.run_async(["resume", "tick", "--catch-up"])
        .await
        .success()
        .stderr_has(" fire(s) skipped meanwhile; caught up as run ");
    assert_eq!(mock.request_count(), 1);
    assert_eq!(p.history(&["tick", "--status", "succeeded"]).await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemon_log_format_json_writes_one_json_object_per_line() {
    let port = free_port();
    let p = Routines::project("http://127.0.0.1:9/v1", &format!("server: {{ listen: 127.0.0.1:{port} }}\n"));
    p.write("routines/r.yaml", "prompt: hi\n");
    let mut running = p.command(["daemon", "--log-format", "json"]).spawn().await;
    running.wait_for_stderr("the ready event", |l| l.contains("routines daemon: 1 routine(s)")).await;
    running.signal(libc::SIGTERM);
    assert_eq!(running.exit_code(Duration::from_secs(20)).await, 0);
    let stderr = running.stderr();
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(lines.len() >= 3, "{stderr}");
    for line in &lines {
        let event: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(event["level"].is_string() && event["fields"]["message"].is_string(), "{line}");
    }
    assert!(lines.iter().any(|l| l.contains("routines daemon: stopped")), "{stderr}");
}

/// The unit files in deploy/ pass `systemd-analyze verify` (where systemd-analyze exists).
#[test]
fn the_systemd_units_pass_systemd_analyze_verify() {
    let Ok(found) = std::process::Command::new("systemd-analyze").arg("--version").output() else {
        eprintln!("SKIPPED: systemd-analyze is not installed");
        return;
    };
    assert!(found.status.success());
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    // verify checks that ExecStart exists: point it at the binary under test.
    let binary = Routines::binary();
    for (unit, name) in [("routines.service", "routines.service"), ("routines-user.service", "routines-user.service")] {
        let text = std::fs::read_to_string(root.join("deploy").join(unit)).unwrap();
        let text = text
            .replace("/usr/local/bin/routines", binary)
            .replace("%h/.cargo/bin/routines", binary)
            .replace("EnvironmentFile=/etc/routines/env", "EnvironmentFile=-/etc/routines/env")
            .replace("EnvironmentFile=%h/.config/routines/env", "EnvironmentFile=-%h/.config/routines/env");
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let out = std::process::Command::new("systemd-analyze").arg("verify").arg(&path).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        // Complaints about the host (no running systemd, missing users) are not the unit's.
        let problems: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains(name) && !l.contains("Failed to resolve user") && !l.contains("No such file"))
            .collect();
        assert!(problems.is_empty(), "{unit}:\n{stderr}");
    }
}
