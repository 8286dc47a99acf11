//! `agent.tool_retries`: read-only tools are tried again after a failure that may pass (a
//! timeout, a 5xx, a reset connection), each attempt recorded; other failures and calls that
//! change something are not.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::any;
use routines::agent::{Agent, RunEvent, ToolStatus};
use routines::config::Autonomy;
use serde_json::json;

use crate::common::Harness;
use crate::common::mock_llm::{text, tool_call};

/// A site whose `/flaky` answers 503 to its first `failures` requests, then 200 `fine`;
/// `/gone` answers 404. Counts the requests it got.
async fn site(failures: usize) -> (SocketAddr, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let app = Router::new()
        .route(
            "/flaky",
            any(move || {
                let n = counter.fetch_add(1, Ordering::SeqCst);
                async move {
                    if n < failures { (StatusCode::SERVICE_UNAVAILABLE, "busy") } else { (StatusCode::OK, "fine") }
                }
            }),
        )
        .route("/gone", any(|| async { (StatusCode::NOT_FOUND, "no such page") }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, hits)
}

fn agent(h: &Harness, autonomy: Autonomy, addr: SocketAddr, retries: u32) -> Agent {
    h.agent_with(
        autonomy,
        |o, _| {
            o.tool_retries = retries;
            o.tool_retry_backoff = Duration::from_millis(5);
        },
        |p| p.allowed_hosts = vec![addr.to_string()],
    )
}

fn attempts(h: &Harness) -> Vec<(ToolStatus, String)> {
    h.events
        .all()
        .into_iter()
        .filter_map(|e| match e {
            RunEvent::ToolCall { status, detail, .. } => Some((status, detail)),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_that_meets_a_5xx_is_tried_again_and_every_attempt_is_recorded() {
    let h = Harness::new().await;
    let (addr, hits) = site(2).await;
    h.mock.push_all([tool_call("http_request", json!({"url": format!("http://{addr}/flaky")})), text("fine")]);
    let mut agent = agent(&h, Autonomy::ReadOnly, addr, 2);
    assert_eq!(agent.process_message("Is the service fine?").await.unwrap(), "fine");
    assert_eq!(hits.load(Ordering::SeqCst), 3);
    let seen = attempts(&h);
    let statuses: Vec<ToolStatus> = seen.iter().map(|(s, _)| *s).collect();
    assert_eq!(statuses, [ToolStatus::Retried, ToolStatus::Retried, ToolStatus::Success]);
    assert!(seen[0].1.starts_with("[failed] HTTP 503 Service Unavailable"), "{}", seen[0].1);
    assert!(seen[0].1.ends_with("[retry 1 of 2 in 5 ms]"), "{}", seen[0].1);
    assert!(seen[1].1.ends_with("[retry 2 of 2 in 10 ms]"), "{}", seen[1].1);
    // The model sees only the final result.
    let result = crate::common::last_message(&h.mock.requests()[1]);
    assert_eq!(result["content"], "HTTP 200 OK (text/plain, 4 B)\n\nfine");
    assert_eq!(agent.last_calls().len(), 1);
    h.mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_stop_at_tool_retries_and_the_model_reads_the_failure() {
    let h = Harness::new().await;
    let (addr, hits) = site(usize::MAX).await;
    h.mock.push_all([tool_call("http_request", json!({"url": format!("http://{addr}/flaky")})), text("down")]);
    let mut agent = agent(&h, Autonomy::ReadOnly, addr, 1);
    agent.process_message("Is the service fine?").await.unwrap();
    assert_eq!(hits.load(Ordering::SeqCst), 2);
    let statuses: Vec<ToolStatus> = attempts(&h).into_iter().map(|(s, _)| s).collect();
    assert_eq!(statuses, [ToolStatus::Retried, ToolStatus::Failed]);
    let result = crate::common::last_message(&h.mock.requests()[1]);
    assert!(result["content"].as_str().unwrap().starts_with("[failed] HTTP 503 Service Unavailable"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lasting_failures_and_calls_that_change_something_are_not_retried() {
    let h = Harness::new().await;
    let (addr, hits) = site(usize::MAX).await;
    h.mock.push_all([
        tool_call("http_request", json!({"url": format!("http://{addr}/gone")})),
        tool_call("http_request", json!({"url": format!("http://{addr}/flaky"), "method": "POST", "body": "x"})),
        tool_call("file_read", json!({"path": "missing.txt"})),
        text("done"),
    ]);
    let mut agent = agent(&h, Autonomy::Full, addr, 2);
    agent.process_message("Try them.").await.unwrap();
    assert_eq!(hits.load(Ordering::SeqCst), 1, "a POST is sent once, whatever it answers");
    let statuses: Vec<ToolStatus> = attempts(&h).into_iter().map(|(s, _)| s).collect();
    assert_eq!(statuses, [ToolStatus::Failed, ToolStatus::Failed, ToolStatus::Failed]);
    h.mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_is_a_passing_failure() {
    let h = Harness::new().await;
    // A port nothing listens on: bound, then closed.
    let addr = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap();
    h.mock.push_all([tool_call("http_request", json!({"url": format!("http://{addr}/")})), text("down")]);
    let mut agent = agent(&h, Autonomy::ReadOnly, addr, 1);
    agent.process_message("Is it up?").await.unwrap();
    let seen = attempts(&h);
    let statuses: Vec<ToolStatus> = seen.iter().map(|(s, _)| *s).collect();
    assert_eq!(statuses, [ToolStatus::Retried, ToolStatus::Failed]);
    assert!(seen[1].1.contains("could not connect to 127.0.0.1"), "{}", seen[1].1);
}
