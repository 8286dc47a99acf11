//! The same commands against a PostgreSQL store (SPEC §9, §12): `run`, `history`, `show`,
//! `list` and `deliver --retry` through the real binary, with `ROUTINES_DATABASE_URL` naming
//! a fresh database of a real server (`tests/common/postgres.rs`).

use pretty_assertions::assert_eq;
use serde_json::Value;

use super::mock;
use crate::common::Routines;
use crate::common::mock_llm::text;
use crate::common::postgres;

/// A password the server ignores (trust authentication) and nothing may print.
const PASSWORD: &str = "pw-never-shown-7731";

/// The URL of a fresh database, with [`PASSWORD`] in it.
fn database_url() -> String {
    postgres::fresh_database().replacen("postgres@", &format!("postgres:{PASSWORD}@"), 1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_history_show_list_and_deliver_retry_work_on_postgres() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "").env("ROUTINES_DATABASE_URL", &database_url());
    p.write("routines/note.yaml", "prompt: Go.\ndeliver:\n  - file: { path: out/note.md, mode: create }\n");
    p.write("out/note.md", "in the way\n");
    mock.push_all([text("the report"), text("second")]);

    let first = p.run_async(["run", "note"]).await;
    first.success().stderr_has("delivery to out/note.md failed: out/note.md already exists and mode is create");
    p.run_async(["run", "note", "--no-deliver"]).await.success();
    assert!(!p.path().join(".routines/routines.db").exists(), "the state went to PostgreSQL, not SQLite");

    let runs = p.history(&[]).await;
    let got: Vec<(i64, &str, &str)> = runs
        .iter()
        .map(|r| (r["run_id"].as_i64().unwrap(), r["routine"].as_str().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    assert_eq!(got, [(2, "note", "succeeded"), (1, "note", "succeeded")]);
    assert_eq!(p.history(&["note", "--limit", "1"]).await.len(), 1);

    let show = p.show(1).await;
    assert_eq!(show["output"], "the report");
    assert_eq!(show["deliveries"][0]["status"], "failed");
    let kinds: Vec<&str> = show["events"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["model_call"]);

    let list = p.run_async(["list", "--json"]).await;
    list.success();
    let routines = list.json();
    let note: Vec<&Value> = routines.as_array().unwrap().iter().filter(|r| r["name"] == "note").collect();
    assert_eq!(note[0]["last_status"], "succeeded");

    std::fs::remove_file(p.path().join("out/note.md")).unwrap();
    let retry = p.run_async(["deliver", "--retry"]).await;
    retry.success().stderr_is("delivered  run 1  file out/note.md\n");
    assert_eq!(p.read("out/note.md"), "the report\n");
    assert_eq!(p.show(1).await["deliveries"][0]["status"], "delivered");
    assert_eq!(mock.request_count(), 2, "the retry did not run the agent");

    for o in [&first, &retry] {
        assert!(!o.stdout.contains(PASSWORD) && !o.stderr.contains(PASSWORD), "{o}");
    }
    mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_url_that_is_not_postgres_is_refused_without_its_password() {
    let p = Routines::offline().env("ROUTINES_DATABASE_URL", &format!("mysql://app:{PASSWORD}@db/routines"));
    p.write("routines/note.yaml", "prompt: Go.\n");
    let o = p.run_async(["history"]).await;
    o.code(1).stderr_has("$ROUTINES_DATABASE_URL holds mysql://app:***@db/routines, which is not a PostgreSQL URL");
    assert!(!o.stderr.contains(PASSWORD), "{o}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_database_is_named_without_its_password() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("postgres://app:{PASSWORD}@127.0.0.1:{port}/routines?connect_timeout=5");
    let p = Routines::offline().env("ROUTINES_DATABASE_URL", &url);
    let o = p.run_async(["history"]).await;
    o.code(1).stderr_has(&format!("cannot reach the PostgreSQL database postgres://app:***@127.0.0.1:{port}/routines"));
    assert!(!o.stderr.contains(PASSWORD), "{o}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_daemon_on_the_same_database_does_not_start_and_one_may_follow_the_first() {
    let url = database_url();
    let port = crate::common::os::free_port();
    let first = Routines::project("http://127.0.0.1:9/v1", &format!("server: {{ listen: 127.0.0.1:{port} }}\n"))
        .env("ROUTINES_DATABASE_URL", &url);
    let daemon = first.command(["daemon"]).spawn().await;
    daemon.wait_for_http(&format!("http://127.0.0.1:{port}/healthz"), 200).await;

    // Another machine: its own folder, the same database.
    let other_port = crate::common::os::free_port();
    let second = Routines::project("http://127.0.0.1:9/v1", &format!("server: {{ listen: 127.0.0.1:{other_port} }}\n"))
        .env("ROUTINES_DATABASE_URL", &url);
    let refused = second.command(["daemon"]).spawn().await.finish(std::time::Duration::from_secs(30)).await;
    refused.code(1).stderr_has("another routines daemon already runs on the PostgreSQL database");
    assert!(!refused.stderr.contains(PASSWORD), "{}", refused.stderr);

    // The lock goes with the first daemon, however it ends.
    let mut daemon = daemon;
    daemon.kill().await;
    let again = second.command(["daemon"]).spawn().await;
    again.wait_for_http(&format!("http://127.0.0.1:{other_port}/healthz"), 200).await;
}
