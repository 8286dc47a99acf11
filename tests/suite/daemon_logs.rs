//! The daemon logs like a service (issue 50, item 1; SPEC §11): one line per run start and end
//! with routine, run id, trigger, status, duration, model calls and tokens, at INFO by default
//! in both log formats; a failed run's line is a WARN with its error, secrets redacted.

use serde_json::Value;

use crate::common::cli::TEST_KEY;
use crate::common::mock_llm::{MockLlm, error, text};
use crate::common::os::free_port;
use crate::common::{Routines, Running};

/// The fields of a log line: the JSON event's, or the text line's `key=value` pairs (the
/// message included as `message`), each as text.
fn fields(line: &str, json: bool) -> (String, std::collections::HashMap<String, String>) {
    if json {
        let event: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        let fields = event["fields"].as_object().unwrap();
        let map =
            fields.iter().map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_string))).collect();
        return (event["level"].as_str().unwrap().to_string(), map);
    }
    let level = ["INFO", "WARN", "ERROR"].iter().find(|l| line.contains(*l)).unwrap_or(&"?").to_string();
    let map = line
        .split_whitespace()
        .filter_map(|part| part.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
        .collect();
    (level, map)
}

async fn post(port: u16) {
    let c = reqwest::Client::builder().no_proxy().build().unwrap();
    let answer = c.post(format!("http://127.0.0.1:{port}/hooks/go")).body("{}").send().await.unwrap();
    assert_eq!(answer.status(), 202);
}

async fn run_lines(running: &Running, run_id: i64) -> (String, String) {
    let start = format!("Run {run_id} of hook started");
    let started = running.wait_for_stderr("the start line", |l| l.contains(&start)).await;
    let end = format!("Run {run_id} of hook ");
    let ended = running.wait_for_stderr("the end line", |l| l.contains(&end) && !l.contains("started")).await;
    (started, ended)
}

async fn logs_each_run(json: bool) {
    let mock = MockLlm::start().await;
    let port = free_port();
    let p = Routines::project(&mock.base_url(), &format!("server: {{ listen: 127.0.0.1:{port} }}\n"));
    let hook = "on: [{ webhook: { path: /hooks/go, auth: none } }]\nprompt: Go.\nretry: { attempts: 1 }\n";
    p.write("routines/hook.yaml", hook);
    let args: &[&str] = if json { &["daemon", "--log-format", "json"] } else { &["daemon"] };
    let running = p.command(args).spawn().await;
    running.wait_for_stderr("the ready line", |l| l.contains("routines daemon: 1 routine(s)")).await;
    running.wait_for_http(&format!("http://127.0.0.1:{port}/healthz"), 200).await;
    // A new database is one line, not a line per migration.
    let log = running.stderr();
    assert_eq!(log.matches("Created the database schema (version ").count(), 1, "{log}");
    assert!(!log.contains("applied database migration"), "{log}");

    mock.push(text("done").with_usage(11, 7));
    post(port).await;
    let (started, ended) = run_lines(&running, 1).await;
    let (level, f) = fields(&started, json);
    assert_eq!((level.as_str(), f["routine"].as_str(), f["run_id"].as_str()), ("INFO", "hook", "1"), "{started}");
    assert_eq!(f["trigger"], "webhook", "{started}");
    let (level, f) = fields(&ended, json);
    assert_eq!(level, "INFO", "{ended}");
    for (key, value) in [("routine", "hook"), ("run_id", "1"), ("trigger", "webhook"), ("status", "succeeded")] {
        assert_eq!(f.get(key).map(String::as_str), Some(value), "{key} in {ended}");
    }
    assert_eq!((f["model_calls"].as_str(), f["tokens"].as_str()), ("1", "18"), "{ended}");
    assert!(f["duration"].ends_with('s'), "{ended}");

    // A failure: WARN, with the error, the key it quotes redacted.
    mock.push(error(500, &format!("the upstream refused key {}", TEST_KEY.1)));
    post(port).await;
    let (_, ended) = run_lines(&running, 2).await;
    let (level, f) = fields(&ended, json);
    assert_eq!(level, "WARN", "{ended}");
    assert_eq!(f["status"], "failed", "{ended}");
    assert!(ended.contains("the upstream refused key"), "{ended}");
    assert!(!running.stderr().contains(TEST_KEY.1), "a secret reached the log:\n{}", running.stderr());
    drop(running);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_run_has_a_start_and_an_end_line_in_the_text_log() {
    logs_each_run(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_run_has_a_start_and_an_end_event_in_the_json_log() {
    logs_each_run(true).await;
}
