//! The daemon's queue under faults: a routine deleted while its fires wait, a routines folder
//! removed and made again, and a queue at its limit.

use std::time::Duration;

use crate::common::mock_llm::{MockLlm, text};
use crate::common::os::free_port;
use crate::common::wait::{self, DEADLINE};
use crate::common::{Routines, Running};

async fn daemon(p: &Routines, port: u16) -> Running {
    let running = p.command(["daemon"]).spawn().await;
    running.wait_for_http(&format!("http://127.0.0.1:{port}/healthz"), 200).await;
    running
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_waiting_fires_of_a_deleted_routine_are_recorded_skipped_at_once() {
    let mock = MockLlm::start().await;
    let port = free_port();
    let p = Routines::project(
        &mock.base_url(),
        &format!("server: {{ listen: 127.0.0.1:{port} }}\nlimits: {{ max_concurrent_runs: 1 }}\n"),
    );
    p.write(
        "routines/slow.yaml",
        "on: [{ webhook: { path: /hooks/slow, auth: none } }]\nprompt: Slow.\nagent: { tools: [] }\n",
    );
    p.write(
        "routines/b.yaml",
        "on: [{ webhook: { path: /hooks/b, auth: none } }]\nprompt: B.\noverlap: allow\nagent: { tools: [] }\n",
    );
    let running = daemon(&p, port).await;
    mock.push(text("slow done").with_delay(Duration::from_secs(4)));
    let c = client();
    assert_eq!(c.post(format!("http://127.0.0.1:{port}/hooks/slow")).body("{}").send().await.unwrap().status(), 202);
    mock.wait_for_requests(1).await;
    for _ in 0..3 {
        assert_eq!(c.post(format!("http://127.0.0.1:{port}/hooks/b")).body("{}").send().await.unwrap().status(), 202);
    }
    assert_eq!(p.history(&["b", "--status", "queued"]).await.len(), 3);
    std::fs::remove_file(p.path().join("routines/b.yaml")).unwrap();
    // While the slow run still holds the only slot, B's fires end as skipped.
    let skipped = wait::poll(DEADLINE, Duration::from_millis(50), async || {
        let runs = p.history(&["b", "--status", "skipped"]).await;
        (runs.len() == 3).then_some(runs)
    })
    .await
    .expect("the fires of the deleted routine stayed queued");
    assert!(skipped[0]["error"].as_str().unwrap().contains("removed"), "{}", skipped[0]);
    assert_eq!(p.history(&["slow", "--status", "running"]).await.len(), 1, "the slow run was still running");
    drop(running);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_routines_folder_removed_and_made_again_is_watched_again() {
    let mock = MockLlm::start().await;
    let port = free_port();
    let p = Routines::project(&mock.base_url(), &format!("server: {{ listen: 127.0.0.1:{port} }}\n"));
    p.write("routines/old.yaml", "on: [{ webhook: { path: /hooks/old, auth: none } }]\nprompt: Old.\n");
    let running = daemon(&p, port).await;
    let c = client();
    std::fs::remove_dir_all(p.path().join("routines")).unwrap();
    std::fs::create_dir(p.path().join("routines")).unwrap();
    // Let the daemon see the folder come back before the new file is written.
    let gone = wait::poll(DEADLINE, Duration::from_millis(50), async || {
        let status = c.post(format!("http://127.0.0.1:{port}/hooks/old")).body("{}").send().await.ok()?.status();
        (status == 404).then_some(())
    })
    .await;
    assert!(gone.is_some(), "the removed routine's hook still answered");
    p.write("routines/new.yaml", "on: [{ webhook: { path: /hooks/new, auth: none } }]\nprompt: New.\n");
    mock.push(text("new ran"));
    let answered = wait::poll(DEADLINE, Duration::from_millis(100), async || {
        let status = c.post(format!("http://127.0.0.1:{port}/hooks/new")).body("{}").send().await.ok()?.status();
        (status == 202).then_some(())
    })
    .await;
    assert!(answered.is_some(), "a routine added to the re-created folder was never loaded");
    drop(running);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_answers_503_with_retry_after_and_records_nothing_more() {
    let mock = MockLlm::start().await;
    let port = free_port();
    let p = Routines::project(
        &mock.base_url(),
        &format!("server: {{ listen: 127.0.0.1:{port} }}\nlimits: {{ max_concurrent_runs: 1, max_queued: 2 }}\n"),
    );
    p.write(
        "routines/q.yaml",
        "on: [{ webhook: { path: /hooks/q, auth: none } }]\nprompt: Q.\noverlap: allow\nagent: { tools: [] }\n",
    );
    let running = daemon(&p, port).await;
    mock.push(text("slow").with_delay(Duration::from_secs(3)));
    let c = client();
    let url = format!("http://127.0.0.1:{port}/hooks/q");
    assert_eq!(c.post(&url).body("{}").send().await.unwrap().status(), 202);
    mock.wait_for_requests(1).await;
    for _ in 0..2 {
        assert_eq!(c.post(&url).body("{}").send().await.unwrap().status(), 202);
    }
    let full = c.post(&url).body("{}").send().await.unwrap();
    assert_eq!(full.status(), 503);
    assert_eq!(full.headers()["retry-after"], "10");
    assert!(full.text().await.unwrap().contains("limits.max_queued"));
    assert_eq!(p.history(&["q"]).await.len(), 3, "the refused request left no run");
    drop(running);
}
