//! `overlap: skip` between processes: the check for an active run and the claim of the new
//! one are one step in the database, for manual runs and the daemon's fires alike.

use std::time::Duration;

use futures::future::join_all;

use crate::common::Routines;
use crate::common::mock_llm::{MockLlm, text};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_manual_runs_started_at_once_give_one_run_and_nineteen_skips() {
    let mock = MockLlm::start().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write("routines/solo.yaml", "prompt: Work.\noverlap: skip\nagent: { tools: [] }\n");
    for _ in 0..20 {
        mock.push(text("done").with_delay(Duration::from_millis(1500)));
    }
    let outcomes = join_all((0..20).map(|_| p.run_async(["run", "solo", "--json"]))).await;
    let succeeded = outcomes.iter().filter(|o| o.code == 0 && o.stdout.contains("\"succeeded\"")).count();
    let skipped = outcomes.iter().filter(|o| o.code == 3).count();
    assert_eq!((succeeded, skipped), (1, 19), "{:?}", outcomes.iter().map(|o| (o.code, &o.stderr)).collect::<Vec<_>>());
    // The database agrees: one run ran, nineteen were recorded skipped; the model was asked once.
    assert_eq!(p.history(&["solo", "--status", "succeeded"]).await.len(), 1);
    assert_eq!(p.history(&["solo", "--status", "skipped", "--limit", "50"]).await.len(), 19);
    assert_eq!(mock.request_count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_skips_a_webhook_fire_while_a_manual_run_of_the_routine_runs() {
    let mock = MockLlm::start().await;
    let port = crate::common::os::free_port();
    let p = Routines::project(&mock.base_url(), &format!("server: {{ listen: 127.0.0.1:{port} }}\n"));
    p.write(
        "routines/solo.yaml",
        "on: [{ webhook: { path: /hooks/solo, auth: none } }]\nprompt: Work.\noverlap: skip\nagent: { tools: [] }\n",
    );
    let daemon = p.command(["daemon"]).spawn().await;
    daemon.wait_for_http(&format!("http://127.0.0.1:{port}/healthz"), 200).await;
    mock.push(text("by hand").with_delay(Duration::from_millis(1500)));
    let manual = p.command(["run", "solo"]).spawn().await;
    mock.wait_for_requests(1).await;
    let c = reqwest::Client::builder().no_proxy().build().unwrap();
    let answer = c.post(format!("http://127.0.0.1:{port}/hooks/solo")).body("{}").send().await.unwrap();
    assert_eq!(answer.status(), 202);
    manual.finish(Duration::from_secs(30)).await.success();
    let runs = p.history(&["solo"]).await;
    let statuses: Vec<(&str, &str)> =
        runs.iter().map(|r| (r["trigger"].as_str().unwrap(), r["status"].as_str().unwrap())).collect();
    assert_eq!(statuses, [("webhook", "skipped"), ("manual", "succeeded")], "{runs:?}");
    assert!(runs[0]["error"].as_str().unwrap().contains("active in another process"), "{}", runs[0]);
    assert_eq!(mock.request_count(), 1);
    drop(daemon);
}
