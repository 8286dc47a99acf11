//! Fires the daemon has seen but not yet queued when it is stopped. A file that arrives while
//! the database is out of reach: its fire is held back and tried again; when the daemon is
//! stopped before the next try, the fire is tried once more as it stops (the database may be
//! back by then), and one that still cannot be queued is logged as lost, by routine and file,
//! rather than dropped without a word. A file change still in its debounce when the daemon
//! stops is queued as the file is then, and runs at the next start.

use std::sync::Arc;

use routines::store::{DatabaseUrl, Store};

use std::time::Duration;

use crate::common::Routines;
use crate::common::mock_llm::{MockLlm, text};
use crate::common::os::free_port;
use crate::common::postgres;
use crate::common::wait::{self, DEADLINE};

/// The `inbox` runs recorded, as (status, fire key).
fn inbox_runs(store: &Store) -> Vec<(String, Option<String>)> {
    store
        .postgres()
        .unwrap()
        .call(|c| async move {
            let rows = c.query("SELECT status, fire_key FROM runs WHERE routine = 'inbox' ORDER BY id", &[]).await?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect::<Vec<_>>())
        })
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_file_fire_is_queued_as_the_daemon_stops_or_logged_as_lost() {
    for database_back in [true, false] {
        let server = Arc::new(postgres::PgServer::start().unwrap());
        let url = server.database().unwrap();
        let store = Store::open_postgres(&DatabaseUrl::parse("TEST", &url).unwrap(), None).unwrap();
        let mock = MockLlm::start().await;
        mock.push(text("done"));
        let port = free_port();
        let p = Routines::project(&mock.base_url(), &format!("server: {{ listen: 127.0.0.1:{port} }}\n"))
            .env("ROUTINES_DATABASE_URL", &url);
        p.write(
            "routines/inbox.yaml",
            "on: [{ file: { paths: [\"inbox/*.csv\"], debounce: 100ms } }]\nprompt: \"Read {{ trigger.path }}.\"\n\
             agent: { tools: [] }\n",
        );
        std::fs::create_dir_all(p.path().join("inbox")).unwrap();
        let mut daemon = p.command(["daemon"]).spawn().await;
        daemon.wait_for_http(&format!("http://127.0.0.1:{port}/healthz"), 200).await;

        let cut = server.clone();
        tokio::task::spawn_blocking(move || cut.stop_for_now()).await.unwrap();
        std::fs::write(p.path().join("inbox/late.csv"), "a,b\n").unwrap();
        // The third failed try: the next one is 4 s away, so the stop below comes before it.
        daemon
            .wait_for_stderr("the fire held back three times", |l| {
                l.contains("Could not queue a fire; trying again in 4s")
            })
            .await;
        if database_back {
            let back = server.clone();
            tokio::task::spawn_blocking(move || back.start_again()).await.unwrap().unwrap();
        }
        daemon.signal(libc::SIGTERM);
        daemon.exit_code(DEADLINE).await;
        let err = daemon.stderr();
        if database_back {
            let runs = inbox_runs(&store);
            assert_eq!(runs.len(), 1, "queued as the daemon stopped: {runs:?}\n{err}");
            assert!(runs[0].1.as_deref().is_some_and(|k| k.ends_with(":inbox/late.csv")), "{runs:?}");
            assert!(!err.contains("it is lost"), "{err}");
        } else {
            let lost = err.lines().find(|l| l.contains("could not be queued before the daemon stopped; it is lost"));
            let lost = lost.unwrap_or_else(|| panic!("the lost fire is logged:\n{err}"));
            assert!(lost.contains("inbox") && lost.contains("inbox/late.csv"), "{lost}");
            let back = server.clone();
            tokio::task::spawn_blocking(move || back.start_again()).await.unwrap().unwrap();
            assert!(inbox_runs(&store).is_empty());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_change_in_its_debounce_at_a_stop_runs_at_the_next_start() {
    let mock = MockLlm::start().await;
    mock.push(text("read it"));
    let port = free_port();
    let p = Routines::project(&mock.base_url(), &format!("server: {{ listen: 127.0.0.1:{port} }}\n"))
        .env("ROUTINES_LOG", "routines=debug");
    p.write(
        "routines/inbox.yaml",
        "on: [{ file: { paths: [\"inbox/*.csv\"], debounce: 1h } }]\nprompt: \"Read {{ trigger.path }}.\"\n\
         agent: { tools: [] }\n",
    );
    std::fs::create_dir_all(p.path().join("inbox")).unwrap();
    let mut daemon = p.command(["daemon"]).spawn().await;
    daemon.wait_for_http(&format!("http://127.0.0.1:{port}/healthz"), 200).await;
    std::fs::write(p.path().join("inbox/late.csv"), "a,b\n").unwrap();
    daemon.wait_for_stderr("the change seen", |l| l.contains("A file change waits for its debounce")).await;
    daemon.signal(libc::SIGTERM);
    assert_eq!(daemon.exit_code(DEADLINE).await, 0, "{}", daemon.stderr());
    assert_eq!(mock.request_count(), 0, "nothing starts as the daemon stops");
    let queued = p.show(1).await;
    assert_eq!(queued["status"], "queued", "{queued}");
    assert_eq!(queued["routine"], "inbox");

    let mut again = p.command(["daemon"]).spawn().await;
    let ran = wait::poll(DEADLINE, Duration::from_millis(100), async || {
        let run = p.show(1).await;
        (run["status"] == "succeeded").then_some(run)
    })
    .await
    .unwrap_or_else(|| panic!("the queued fire runs at the next start:\n{}", again.stderr()));
    assert_eq!(ran["output"], "read it");
    assert!(mock.requests()[0].to_string().contains("inbox/late.csv"));
    again.signal(libc::SIGTERM);
    assert_eq!(again.exit_code(DEADLINE).await, 0);
    assert_eq!(p.history(&[]).await.len(), 1, "one run, not two");
}
