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
async fn daemons_on_two_machines_share_the_database_and_routines_cluster_lists_them() {
    let url = database_url();
    let daemon_at = |port: u16| {
        Routines::project("http://127.0.0.1:9/v1", &format!("server: {{ listen: 127.0.0.1:{port} }}\n"))
            .env("ROUTINES_DATABASE_URL", &url)
    };
    // Two machines: each its own folder, the same database.
    let (port, other_port) = (crate::common::os::free_port(), crate::common::os::free_port());
    let (first, second) = (daemon_at(port), daemon_at(other_port));
    let one = first.command(["daemon"]).spawn().await;
    one.wait_for_http(&format!("http://127.0.0.1:{port}/healthz"), 200).await;
    let mut two = second.command(["daemon"]).spawn().await;
    two.wait_for_http(&format!("http://127.0.0.1:{other_port}/healthz"), 200).await;

    let listed = first.run_async(["cluster", "--json"]).await;
    listed.success();
    let nodes = listed.json();
    let pids: Vec<i64> = nodes.as_array().unwrap().iter().map(|n| n["pid"].as_i64().unwrap()).collect();
    assert_eq!(pids.len(), 2, "{nodes:#}");
    assert!(pids.contains(&i64::from(one.pid())) && pids.contains(&i64::from(two.pid())), "{nodes:#}");
    for n in nodes.as_array().unwrap() {
        assert_eq!(
            (n["state"].as_str(), n["role"].as_str(), n["runs_in_flight"].as_i64()),
            (Some("alive"), Some("daemon"), Some(0))
        );
        assert_eq!(n["version"], env!("CARGO_PKG_VERSION"));
        assert!(n["last_heartbeat"].as_str().unwrap().ends_with("+08:00"), "in the config's zone: {n}");
    }
    let table = second.run_async(["cluster"]).await;
    table.success().stdout_has("NODE").stdout_has("alive");
    assert!(!table.stdout.contains(PASSWORD) && !table.stderr.contains(PASSWORD), "{table}");

    // A daemon that stops leaves the cluster.
    two.signal(libc::SIGTERM);
    assert_eq!(two.exit_code(std::time::Duration::from_secs(30)).await, 0);
    let left = first.run_async(["cluster", "--json"]).await.json();
    assert_eq!(left.as_array().unwrap().len(), 1, "{left:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routines_cluster_on_sqlite_says_what_it_needs() {
    let p = Routines::offline();
    let o = p.run_async(["cluster"]).await;
    o.code(2)
        .stderr_has("`routines cluster` lists the daemons sharing a PostgreSQL database")
        .stderr_has("set $ROUTINES_DATABASE_URL to a postgres:// URL");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemons_on_one_machine_may_share_a_data_folder_on_postgres() {
    let (port, other_port) = (crate::common::os::free_port(), crate::common::os::free_port());
    let p = Routines::project("http://127.0.0.1:9/v1", &format!("server: {{ listen: 127.0.0.1:{port} }}\n"))
        .env("ROUTINES_DATABASE_URL", &database_url());
    // The same folder and data folder, another port.
    let base = p.read("routines.yaml").replace(&port.to_string(), &other_port.to_string());
    p.write("other.yaml", &base);
    let one = p.command(["daemon"]).spawn().await;
    one.wait_for_http(&format!("http://127.0.0.1:{port}/healthz"), 200).await;
    let two = p.command(["--config", "other.yaml", "daemon"]).spawn().await;
    two.wait_for_http(&format!("http://127.0.0.1:{other_port}/healthz"), 200).await;
    let nodes = p.run_async(["cluster", "--json"]).await.json();
    assert_eq!(nodes.as_array().unwrap().len(), 2, "{nodes:#}");
}
