//! Bounded history through the binary (SPEC §3 `history`, §9): `routines run` and the daemon
//! prune runs beyond `max_runs_per_routine` and older than `max_age`, never one whose delivery
//! is still to be retried; on SQLite and on PostgreSQL.

use pretty_assertions::assert_eq;

use super::mock;
use crate::common::Routines;
use crate::common::mock_llm::{MockLlm, text};
use crate::common::postgres;

const HISTORY: &str = "history: { max_age: 1d, max_runs_per_routine: 3 }\n";
const LONG_AGO: &str = "2020-01-01T00:00:00.000Z";

/// The run ids of `routine`'s history, newest first.
async fn run_ids(p: &Routines, routine: &str) -> Vec<i64> {
    p.history(&[routine]).await.iter().map(|r| r["run_id"].as_i64().unwrap()).collect()
}

/// Runs `routine` by hand; its run id.
async fn run(p: &Routines, routine: &str) -> i64 {
    let o = p.run_async(["run", routine, "--json"]).await;
    o.success();
    o.json()["run_id"].as_i64().unwrap()
}

/// Ages runs `ids` past `max_age` in the project's database, SQLite file or PostgreSQL.
async fn backdate(p: &Routines, url: Option<&str>, ids: &[i64]) {
    let list = ids.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
    let sql = format!("UPDATE runs SET created_at = '{LONG_AGO}', finished_at = '{LONG_AGO}' WHERE id IN ({list})");
    match url {
        Some(url) => {
            let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
            let conn = tokio::spawn(conn);
            client.batch_execute(&sql).await.unwrap();
            drop(client);
            let _ = conn.await;
        }
        None => {
            let db = rusqlite::Connection::open(p.path().join(".routines/routines.db")).unwrap();
            db.execute_batch(&sql).unwrap();
        }
    }
}

/// Five runs of `plain` keep the newest three; `note`'s first run, whose delivery failed and
/// waits for a retry, outlives both limits; a run aged past `max_age` goes at the next run.
async fn history_stays_bounded(p: Routines, mock: &MockLlm, url: Option<&str>) {
    p.write("routines/plain.yaml", "prompt: Go.\n");
    p.write("routines/note.yaml", "prompt: Go.\ndeliver:\n  - file: { path: blocked/note.md }\n");
    // A file where the delivery needs a folder: the write fails, and may work later.
    p.write("blocked", "a file, not a folder\n");
    mock.push_all((0..11).map(|i| text(&format!("answer {i}"))));

    p.run_async(["run", "note"]).await.success().stderr_has("delivery to blocked/note.md failed");
    let waiting = run_ids(&p, "note").await[0];
    let show = p.show(waiting).await;
    assert_eq!(show["deliveries"][0]["status"], "failed", "{show}");
    std::fs::remove_file(p.path().join("blocked")).unwrap();
    for _ in 0..3 {
        p.run_async(["run", "note", "--no-deliver"]).await.success();
    }
    let notes = run_ids(&p, "note").await;
    assert_eq!(notes.len(), 4, "the three newest and the one whose delivery waits: {notes:?}");
    assert_eq!(notes[3], waiting);

    let mut plain = Vec::new();
    for _ in 0..5 {
        plain.push(run(&p, "plain").await);
    }
    assert_eq!(run_ids(&p, "plain").await, [plain[4], plain[3], plain[2]]);

    // Aged past max_age: the waiting run stays, the other goes at the next run (and the
    // oldest of the newest three, now fourth, with it).
    backdate(&p, url, &[waiting, plain[4]]).await;
    plain.push(run(&p, "plain").await);
    assert_eq!(run_ids(&p, "plain").await, [plain[5], plain[3]]);
    assert!(run_ids(&p, "note").await.contains(&waiting));

    // Delivered by `deliver --retry`, it goes with the next pass.
    p.run_async(["deliver", "--retry"]).await.success();
    p.run_async(["run", "plain"]).await.success();
    assert!(!run_ids(&p, "note").await.contains(&waiting));
    mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_keeps_the_history_within_its_limits_on_sqlite() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), HISTORY);
    history_stays_bounded(p, &mock, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_keeps_the_history_within_its_limits_on_postgres() {
    let mock = mock().await;
    let url = postgres::fresh_database();
    let p = Routines::project(&mock.base_url(), HISTORY).env("ROUTINES_DATABASE_URL", &url);
    history_stays_bounded(p, &mock, Some(&url)).await;
}

/// The daemon prunes at start: runs left beyond the limits by an earlier version are gone
/// once it has said so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_prunes_at_start() {
    let mock = mock().await;
    let port = crate::common::os::free_port();
    let unbounded = "history: { max_age: 0s, max_runs_per_routine: 0 }\n";
    let p = Routines::project(&mock.base_url(), &format!("{unbounded}server: {{ listen: 127.0.0.1:{port} }}\n"));
    p.write("routines/plain.yaml", "prompt: Go.\n");
    mock.push_all((0..5).map(|i| text(&format!("answer {i}"))));
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(run(&p, "plain").await);
    }
    backdate(&p, None, &ids[..1]).await;
    assert_eq!(run_ids(&p, "plain").await.len(), 5, "both limits off: nothing pruned");
    p.write("routines.yaml", &p.read("routines.yaml").replace(unbounded, HISTORY));
    let running = p.command(["daemon"]).spawn().await;
    let line = running.wait_for_stderr("the pruning line", |l| l.contains("Pruned 2 run(s) from the history")).await;
    assert!(line.contains("max_runs_per_routine"), "{line}");
    assert_eq!(run_ids(&p, "plain").await, [ids[4], ids[3], ids[2]]);
    drop(running);
}
