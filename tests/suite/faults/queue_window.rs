//! A queue longer than the window the daemon holds in memory (issue 13, item 8): fires
//! beyond it wait only in the database and still run, each once and oldest first; they are
//! replaced and removed like the fires in memory; a restarted daemon drains a long queue it
//! adopted through a small window.

use std::time::Duration;

use routines::store::Store;
use serde_json::Value;

use crate::common::mock_llm::{Gate, MockLlm, text, user_text};
use crate::common::os::free_port;
use crate::common::wait::{self, DEADLINE};
use crate::common::{Routines, Running};

/// A project whose daemon runs one run at a time and holds `window` queued fires in memory.
fn project(mock: &MockLlm, port: u16, window: usize) -> Routines {
    let p = Routines::project(
        &mock.base_url(),
        &format!(
            "server: {{ listen: 127.0.0.1:{port}, rate_limit: 10000, rate_burst: 10000 }}\n\
             limits: {{ max_concurrent_runs: 1, queue_window: {window}, shutdown_grace: 1s }}\n"
        ),
    );
    for name in ["a", "b"] {
        p.write(
            &format!("routines/{name}.yaml"),
            &format!(
                "on: [{{ webhook: {{ path: /hooks/{name}, auth: none }} }}]\nprompt: \"Item {{{{ trigger.json.n }}}}.\"\n\
                 overlap: allow\nagent: {{ tools: [] }}\n"
            ),
        );
    }
    p
}

async fn daemon(p: &Routines, port: u16) -> Running {
    let running = p.command(["daemon"]).spawn().await;
    running.wait_for_http(&format!("http://127.0.0.1:{port}/healthz"), 200).await;
    running
}

/// POSTs `{"n": N}` to the hook of `routine`; the run id of the 202.
async fn post(port: u16, routine: &str, n: usize) -> i64 {
    let c = reqwest::Client::builder().no_proxy().build().unwrap();
    let answer = c
        .post(format!("http://127.0.0.1:{port}/hooks/{routine}"))
        .header("content-type", "application/json")
        .body(format!("{{\"n\": {n}}}"))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 202, "fire {n}");
    answer.json::<Value>().await.unwrap()["run_id"].as_i64().unwrap()
}

/// The database of the project, opened beside the daemon.
fn store(p: &Routines) -> Store {
    Store::open(&p.path().join(".routines/routines.db")).unwrap()
}

/// (status, reason, how many) of the project's webhook runs.
fn statuses(store: &Store) -> Vec<(String, Option<String>, i64)> {
    store
        .with_conn(|c| {
            let mut stmt = c.prepare(
                "SELECT status, reason, COUNT(*) FROM runs WHERE trigger = 'webhook' GROUP BY 1, 2 ORDER BY 1, 2",
            )?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })
        .unwrap()
}

/// Waits until no webhook run is queued or running.
async fn drained(store: &Store) {
    let done = wait::poll(DEADLINE * 3, Duration::from_millis(100), async || {
        let active: i64 = store
            .with_conn(|c| {
                c.query_row(
                    "SELECT COUNT(*) FROM runs WHERE trigger = 'webhook' AND status IN ('queued', 'running')",
                    [],
                    |r| r.get(0),
                )
            })
            .unwrap();
        (active == 0).then_some(())
    })
    .await;
    assert!(done.is_some(), "the queue never drained: {:?}", statuses(store));
}

/// The item each model request asked about, in the order the model saw them.
fn items_asked(mock: &MockLlm) -> Vec<usize> {
    mock.requests()
        .iter()
        .map(|r| {
            let text = user_text(r);
            let at = text.find("Item ").unwrap_or_else(|| panic!("no item in {text}")) + 5;
            text[at..].split('.').next().unwrap().parse().unwrap()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fires_beyond_the_window_each_run_once_oldest_first() {
    const FIRES: usize = 30;
    let mock = MockLlm::start().await;
    let port = free_port();
    let p = project(&mock, port, 3);
    let running = daemon(&p, port).await;
    let gate = Gate::new();
    mock.push(text("done 0").after(&gate));
    mock.push_all((1..FIRES).map(|i| text(&format!("done {i}"))));
    let mut ids = vec![post(port, "a", 0).await];
    // The first run holds the only slot until the gate opens; every later fire queues.
    mock.wait_for_requests(1).await;
    for n in 1..FIRES {
        ids.push(post(port, if n % 2 == 0 { "a" } else { "b" }, n).await);
    }
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let db = store(&p);
    assert_eq!(statuses(&db), [("queued".into(), None, (FIRES - 1) as i64), ("running".into(), None, 1)]);
    gate.open();
    drained(&db).await;
    assert_eq!(statuses(&db), [("succeeded".into(), None, FIRES as i64)]);
    // Nothing lost, nothing doubled, in the order they came.
    assert_eq!(items_asked(&mock), (0..FIRES).collect::<Vec<_>>());
    drop(running);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_daemon_drains_a_queue_longer_than_its_window_in_order() {
    const FIRES: usize = 25;
    let mock = MockLlm::start().await;
    let port = free_port();
    let p = project(&mock, port, 256);
    let mut first = daemon(&p, port).await;
    let gate = Gate::new();
    mock.push(text("never").after(&gate));
    for n in 0..FIRES {
        post(port, if n % 2 == 0 { "a" } else { "b" }, n).await;
    }
    mock.wait_for_requests(1).await;
    // Stopped at once: run 0 is interrupted (and queued again as its next attempt at the
    // next start), the others stay queued.
    first.signal(libc::SIGTERM);
    first.wait_for_stderr("the first stop", |l| l.contains("signal again to stop at once")).await;
    first.signal(libc::SIGTERM);
    assert_eq!(first.exit_code(Duration::from_secs(20)).await, 0, "{}", first.stderr());

    p.write("routines.yaml", &p.read("routines.yaml").replace("queue_window: 256", "queue_window: 2"));
    mock.push_all((0..FIRES).map(|i| text(&format!("done {i}"))));
    let second = daemon(&p, port).await;
    let db = store(&p);
    drained(&db).await;
    assert_eq!(statuses(&db), [("succeeded".into(), None, FIRES as i64)]);
    let asked = items_asked(&mock);
    assert_eq!(asked[0], 0, "the first daemon's attempt");
    assert_eq!(asked[1..], (0..FIRES).collect::<Vec<_>>(), "the second daemon's runs");
    drop(second);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fires_waiting_only_in_the_database_are_replaced_and_removed_like_the_others() {
    let mock = MockLlm::start().await;
    let port = free_port();
    // A window of one place, taken by b's first waiting fire.
    let p = project(&mock, port, 1);
    p.write(
        "routines/r.yaml",
        "on: [{ webhook: { path: /hooks/r, auth: none } }]\nprompt: \"Item {{ trigger.json.n }}.\"\n\
         overlap: replace\nagent: { tools: [] }\n",
    );
    let running = daemon(&p, port).await;
    let gate = Gate::new();
    mock.push(text("done 0").after(&gate));
    mock.push_all((1..3).map(|i| text(&format!("done {i}"))));
    post(port, "a", 0).await;
    mock.wait_for_requests(1).await;
    post(port, "b", 1).await;
    let b_beyond = [post(port, "b", 2).await, post(port, "b", 3).await];
    // r's fires wait in the database behind b's; each newer one replaces the one before.
    let r = [post(port, "r", 10).await, post(port, "r", 11).await, post(port, "r", 12).await];
    let db = store(&p);
    let status_of = |id: i64| -> (String, Option<String>) {
        db.with_conn(|c| {
            c.query_row("SELECT status, reason FROM runs WHERE id = ?1", [id], |r| Ok((r.get(0)?, r.get(1)?)))
        })
        .unwrap()
    };
    assert_eq!(status_of(r[0]), ("skipped".into(), Some("replaced".into())));
    assert_eq!(status_of(r[1]), ("skipped".into(), Some("replaced".into())));
    assert_eq!(status_of(r[2]), ("queued".into(), None));
    // b is deleted while two of its fires wait only in the database: they end at once too.
    std::fs::remove_file(p.path().join("routines/b.yaml")).unwrap();
    let removed = wait::poll(DEADLINE, Duration::from_millis(50), async || {
        b_beyond.iter().all(|id| status_of(*id) == ("skipped".into(), Some("removed".into()))).then_some(())
    })
    .await;
    assert!(removed.is_some(), "b's fires beyond the window stayed: {:?}", b_beyond.map(status_of));
    assert_eq!(status_of(r[2]), ("queued".into(), None));
    gate.open();
    drained(&db).await;
    assert_eq!(status_of(r[2]), ("succeeded".into(), None));
    assert_eq!(items_asked(&mock), [0, 12]);
    drop(running);
}
