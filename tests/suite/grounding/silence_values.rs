//! A silence over what the engine can see without the model (`agent/state_value.rs`), and a
//! code check whose function failed asked for once more (`agent/code_check.rs`). Through
//! `routines run`, a scripted model, a real HTTP server and a real sandbox (bubblewrap).

use std::net::SocketAddr;

use axum::Router;
use axum::routing::get;
use serde_json::json;

use crate::common::Routines;
use crate::common::mock_llm::{MockLlm, Reply, text, tool_call};

const HEALTH: &str = r#"{"status": "degraded", "components": [{"name": "api", "status": "up"}, {"name": "database", "status": "up"}, {"name": "queue", "status": "down", "error": "connection refused"}]}"#;

/// A health endpoint on the loopback, listed in `allowed_hosts`.
async fn site(body: &'static str) -> SocketAddr {
    let app = Router::new().route(
        "/health.json",
        get(move || async move { ([(axum::http::header::CONTENT_TYPE, "application/json")], body) }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// A project whose routine checks the health endpoint serving `body`, and the mock scripted
/// with its GET, the silent answer and then `then`.
async fn health_check(body: &'static str, then: Reply) -> (MockLlm, Routines) {
    let addr = site(body).await;
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "security:\n  allowed_hosts: [127.0.0.1]\n");
    p.write(
        "routines/health.yaml",
        &format!(
            "prompt: Check http://{addr}/health.json and alert me if any component is down. If everything is up, reply NO_REPLY.\n\
             agent: {{ tools: [http_request] }}\ndeliver:\n  - file: {{ path: out.md }}\n"
        ),
    );
    mock.push_all([
        tool_call("http_request", json!({"url": format!("http://{addr}/health.json"), "method": "GET"})),
        text("ANSWER: NO_REPLY"),
        then,
    ]);
    (mock, p)
}

/// The local model answered `NO_REPLY` over a component whose status is `down`, and its code
/// check raised (bench/README.md, stop 41). The engine sees the state the task names as a value:
/// no function is asked for, and the report is asked from the object that holds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silence_over_a_state_the_task_names_held_as_a_value_is_reported() {
    let (mock, p) = health_check(HEALTH, text("ANSWER: The queue is down: connection refused.")).await;
    let o = p.run_async(["run", "health", "--json"]).await;
    assert_eq!(o.json()["status"], "succeeded", "{}", o.stdout);
    assert_eq!(p.read("out.md"), "The queue is down: connection refused.\n");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3, "the call, the answer, the report: no code request");
    let report = crate::common::content(&reqs[2], 1);
    assert!(report.contains("\"queue\", \"status\": \"down\"") && !report.contains("NO_REPLY"), "{report}");
    let state = super::note_details(&p.show(1).await, "state_check");
    assert_eq!(
        state,
        ["the results hold a state the task names as a value (\"connection refused\"); the silence is not believed"]
    );
    mock.assert_clean();
}

/// Where every component is up, the state is nowhere a value and the code check decides as
/// before: its function finds nothing and the silence stands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silence_where_no_value_is_the_state_goes_to_the_code_check() {
    let up = r#"{"components": [{"name": "api", "status": "up"}, {"name": "queue", "status": "up"}]}"#;
    let down = "```python\nimport json\ndef findings(output):\n    return [c for c in json.loads(output)['components'] if c['status'] == 'down']\n```";
    let (mock, p) = health_check(up, text(down)).await;
    let o = p.run_async(["run", "health", "--json"]).await;
    assert_eq!(o.json()["status"], "silent", "{}", o.stdout);
    assert!(!p.path().join("out.md").exists());
    assert!(super::note_details(&p.show(1).await, "state_check").is_empty());
    mock.assert_clean();
}

/// A function that raised is asked for once more with the error, and the second one decides:
/// the ERROR line is found and reported where the failure had left the silence to a review.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_function_that_raised_is_asked_for_again_with_the_error() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write(
        "routines/watch.yaml",
        "prompt: Check notes.txt for problems and quote them. If there are none, reply NO_REPLY.\n\
         agent: { tools: [file_read] }\ndeliver:\n  - file: { path: out.md }\n",
    )
    .write("notes.txt", "09:10 INFO started\n09:12 ERROR payment provider unreachable\n09:13 INFO ok\n");
    mock.push_all([
        tool_call("file_read", json!({"path": "notes.txt"})),
        text("NO_REPLY"),
        // Treats the text as records, as the model's first function for a JSON body did.
        text("```python\ndef findings(output):\n    return [l for l in output if l['level'] == 'ERROR']\n```"),
        text("```python\ndef findings(output):\n    return [l for l in output.splitlines() if 'ERROR' in l]\n```"),
        text("ANSWER: 09:12 ERROR payment provider unreachable"),
    ]);
    let o = p.run_async(["run", "watch", "--json"]).await;
    assert_eq!(o.json()["status"], "succeeded", "{}", o.stdout);
    assert_eq!(p.read("out.md"), "09:12 ERROR payment provider unreachable\n");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 5, "look, silence, code, code again, report");
    let again = super::last_text(&reqs[3]);
    assert!(again.starts_with("Your function failed on the output: it exited 1: TypeError"), "{again}");
    assert_eq!(crate::common::content(&reqs[3], 1), crate::common::content(&reqs[2], 1), "the same request, continued");
    let notes = super::note_details(&p.show(1).await, "code_check_again");
    assert_eq!(notes.len(), 1, "{notes:?}");
    mock.assert_clean();
}

/// "If any job exited with a non-zero code, tell me which job and the code. Otherwise reply
/// NO_REPLY": the local model answered `NO_REPLY` beside `job=sync-invoices exit=2`, and its
/// check matched jobs with `\w+`, which stops at the `-` (bench/README.md, stop 42). An exit
/// code other than 0 written as a value is a finding the engine sees: the report is asked from
/// that line, without a function.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silence_beside_a_non_zero_exit_code_is_reported() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write(
        "routines/cron.yaml",
        "prompt: Check logs/cron.log. If any job exited with a non-zero code, tell me which job and the code. Otherwise reply NO_REPLY.\n\
         agent: { tools: [file_read] }\ndeliver:\n  - file: { path: out.md }\n",
    )
    .write(
        "logs/cron.log",
        "2026-11-28 01:00:00 job=rotate-logs exit=0\n2026-11-28 03:00:00 job=sync-invoices exit=2\n2026-11-28 04:00:00 job=cleanup-tmp exit=0\n",
    );
    mock.push_all([
        tool_call("file_read", json!({"path": "logs/cron.log"})),
        text("ANSWER: NO_REPLY"),
        text("ANSWER: sync-invoices exited with code 2."),
    ]);
    let o = p.run_async(["run", "cron", "--json"]).await;
    assert_eq!(o.json()["status"], "succeeded", "{}", o.stdout);
    assert_eq!(p.read("out.md"), "sync-invoices exited with code 2.\n");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3, "the read, the answer, the report: no code request");
    let report = crate::common::content(&reqs[2], 1);
    assert!(report.contains("job=sync-invoices exit=2") && !report.contains("rotate-logs"), "{report}");
    let state = super::note_details(&p.show(1).await, "state_check");
    assert_eq!(
        state,
        [
            "the results hold a state the task names as a value (\"2026-11-28 03:00:00 job=sync-invoices exit=2\"); the silence is not believed"
        ]
    );
    mock.assert_clean();
}
