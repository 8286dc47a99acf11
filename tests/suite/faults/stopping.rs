//! Stopping: a second SIGTERM during the grace period stops at once.

use std::time::Duration;

use crate::common::Routines;
use crate::common::mock_llm::{MockLlm, hang};
use crate::common::os::free_port;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_sigterm_during_the_grace_period_stops_at_once() {
    let mock = MockLlm::start().await;
    let port = free_port();
    let p = Routines::project(
        &mock.base_url(),
        &format!("server: {{ listen: 127.0.0.1:{port} }}\nlimits: {{ shutdown_grace: 5m }}\n"),
    );
    p.write("routines/long.yaml", "on: [{ webhook: { path: /hooks/long, auth: none } }]\nprompt: Go.\n");
    mock.push(hang());
    let mut daemon = p.command(["daemon"]).spawn().await;
    daemon.wait_for_http(&format!("http://127.0.0.1:{port}/healthz"), 200).await;
    let c = reqwest::Client::builder().no_proxy().build().unwrap();
    assert_eq!(c.post(format!("http://127.0.0.1:{port}/hooks/long")).body("{}").send().await.unwrap().status(), 202);
    mock.wait_for_requests(1).await;
    daemon.signal(libc::SIGTERM);
    daemon.wait_for_stderr("the first stop", |l| l.contains("signal again to stop at once")).await;
    daemon.signal(libc::SIGTERM);
    // Well inside the five-minute grace period.
    let code = daemon.exit_code(Duration::from_secs(20)).await;
    assert_eq!(code, 0, "{}", daemon.stderr());
    let runs = p.history(&["long"]).await;
    assert_eq!(runs.len(), 1);
    assert_ne!(runs[0]["status"], "running", "{runs:?}");
    assert!(runs[0]["error"].as_str().unwrap_or("").contains("second time"), "{runs:?}");
}
