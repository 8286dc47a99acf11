//! Three daemons on one PostgreSQL database (SPEC §12, issue 17), two of them killed with
//! SIGKILL in the middle of runs: no instant is lost or run twice, the killed nodes' runs are
//! taken over within the lease and run again per `retry`, no delivery is made twice (a file
//! appended to by all three nodes, a real SMTP server), and `routines cluster` shows the nodes.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use routines::store::{DatabaseUrl, Store};
use serde_json::Value;

use crate::common::os::free_port;
use crate::common::postgres;
use crate::common::smtp::{Mode, SmtpServer};
use crate::common::wait::{self, DEADLINE};
use crate::common::{Routines, Running};

/// Each node's lease (`cluster.lease`).
const LEASE: Duration = Duration::from_secs(3);
/// How long the model takes to answer, so a kill lands in the middle of runs.
const MODEL_DELAY: Duration = Duration::from_millis(1500);
/// The routines, each firing every 2 s.
const ROUTINES: [&str; 6] = ["r1", "r2", "r3", "r4", "r5", "r6"];

/// A model that answers every chat completion with `done` after [`MODEL_DELAY`], whoever
/// asks: the three nodes share it. Returns its base URL and how many requests it got.
async fn slow_model() -> (String, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move || {
            let seen = seen.clone();
            async move {
                seen.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(MODEL_DELAY).await;
                axum::Json(serde_json::json!({
                    "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "mock-model",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "done"}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}
                }))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/v1"), count)
}

/// One project folder (one workspace, so all nodes append to the same file) with a config per
/// node: its own data folder and port, the same routines and database.
fn project(model: &str, url: &str, smtp_port: u16, ports: &[u16]) -> Routines {
    let p = Routines::project(model, "").env("ROUTINES_DATABASE_URL", url);
    let base = p.read("routines.yaml");
    for (i, port) in ports.iter().enumerate() {
        p.write(
            &format!("node{i}.yaml"),
            &format!(
                "{base}data_dir: .node{i}\nserver: {{ listen: 127.0.0.1:{port} }}\n\
                 cluster: {{ lease: {}s, max_skew: 1s }}\n\
                 limits: {{ max_concurrent_runs: 4, shutdown_grace: 1s }}\n\
                 mail:\n  from: \"Routines <routines@example.com>\"\n  \
                 smtp: {{ host: 127.0.0.1, port: {smtp_port}, security: none, timeout: 5s }}\n",
                LEASE.as_secs()
            ),
        );
    }
    p.write("templates/tick.j2", "{{ routine.name }} {{ run.id }} attempt {{ run.attempt }}\n");
    for name in ROUTINES {
        p.write(
            &format!("routines/{name}.yaml"),
            "on: [{ every: 2s }]\nprompt: \"Tick {{ trigger.scheduled_for }}.\"\nagent: { tools: [] }\n\
             retry: { attempts: 3, backoff: 1s }\ncatch_up: all\n\
             deliver:\n  - file: { path: out/ticks.log, mode: append, template: tick.j2 }\n  \
             - mail: { to: [ops@example.com], subject: \"tick {{ routine.name }} {{ run.id }}\" }\n",
        );
    }
    p
}

/// `routines cluster --json` from node 0's config.
async fn cluster(p: &Routines) -> Vec<Value> {
    let o = p.command(["--config", "node0.yaml", "cluster", "--json"]).run_async().await;
    o.success();
    o.json().as_array().unwrap().clone()
}

/// (id, routine, status, owner, attempt, scheduled_for) of every run.
type Row = (i64, String, String, Option<i64>, i64, Option<String>);

fn runs(store: &Store) -> Vec<Row> {
    store
        .postgres()
        .unwrap()
        .call(|c| async move {
            let rows =
                c.query("SELECT id, routine, status, owner, attempt, scheduled_for FROM runs ORDER BY id", &[]).await?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5))).collect::<Vec<Row>>())
        })
        .unwrap()
}

/// The runs on a later attempt for another reason than a stop that interrupted the earlier
/// one: (id, routine, attempt, earlier attempts).
fn retried_not_after_a_stop(store: &Store) -> Vec<(i64, String, i64, Option<String>)> {
    store
        .postgres()
        .unwrap()
        .call(|c| async move {
            let rows = c
                .query(
                    "SELECT id, routine, attempt, earlier_attempts FROM runs
                     WHERE attempt > 1 AND COALESCE(earlier_attempts, '') NOT LIKE '%interrupted (shutdown)%'
                     ORDER BY id",
                    &[],
                )
                .await?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1), r.get(2), r.get(3))).collect::<Vec<_>>())
        })
        .unwrap()
}

/// Kills (SIGKILL) the node that runs the most runs now; returns the runs it was running and
/// when it was killed.
async fn kill_a_busy_node(p: &Routines, store: &Store, nodes: &mut Vec<Running>) -> (Vec<(i64, i64)>, Instant) {
    let (index, owner) = wait::poll(DEADLINE, Duration::from_millis(50), async || {
        let listed = cluster(p).await;
        let busy = listed
            .iter()
            .filter(|n| n["state"] == "alive" && n["role"] == "daemon")
            .max_by_key(|n| n["runs_in_flight"].as_i64())?;
        if busy["runs_in_flight"].as_i64()? == 0 {
            return None;
        }
        let pid = busy["pid"].as_i64()?;
        let index = nodes.iter().position(|n| i64::from(n.pid()) == pid)?;
        Some((index, busy["id"].as_i64()?))
    })
    .await
    .expect("a node running runs");
    let mut node = nodes.remove(index);
    node.kill().await;
    let killed_at = Instant::now();
    let running: Vec<(i64, i64)> =
        runs(store).into_iter().filter(|r| r.2 == "running" && r.3 == Some(owner)).map(|r| (r.0, owner)).collect();
    (running, killed_at)
}

/// Waits until no run of `runs_of_dead` (id, owner) is `running` as the dead owner's any
/// more, and returns how long after the kill that was.
async fn taken_over(store: &Store, runs_of_dead: &[(i64, i64)], dead: Instant) -> Duration {
    wait::poll(DEADLINE, Duration::from_millis(50), async || {
        let rows = runs(store);
        let moved = runs_of_dead
            .iter()
            .all(|(id, owner)| rows.iter().any(|r| r.0 == *id && !(r.2 == "running" && r.3 == Some(*owner))));
        moved.then(|| dead.elapsed())
    })
    .await
    .expect("the killed node's runs were taken over")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_nodes_two_killed_run_every_instant_once_and_deliver_once() {
    let url = postgres::fresh_database();
    let store = Store::open_postgres(&DatabaseUrl::parse("TEST", &url).unwrap(), None).unwrap();
    let (model, asked) = slow_model().await;
    let smtp = SmtpServer::start_with(Mode::Plain, None, None, 0);
    let ports = [free_port(), free_port(), free_port()];
    let p = project(&model, &url, smtp.port, &ports);

    let mut nodes = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let node = p.command(["--config", &format!("node{i}.yaml"), "daemon"]).spawn().await;
        node.wait_for_http(&format!("http://127.0.0.1:{port}/healthz"), 200).await;
        nodes.push(node);
    }
    let listed = cluster(&p).await;
    assert_eq!(listed.len(), 3, "{listed:#?}");
    assert!(listed.iter().all(|n| n["state"] == "alive" && n["role"] == "daemon"), "{listed:#?}");
    let pids: HashSet<i64> = nodes.iter().map(|n| i64::from(n.pid())).collect();
    assert_eq!(listed.iter().map(|n| n["pid"].as_i64().unwrap()).collect::<HashSet<_>>(), pids);

    // Two nodes die in the middle of runs, one after the other.
    let mut killed = Vec::new();
    for _ in 0..2 {
        let (running, at) = kill_a_busy_node(&p, &store, &mut nodes).await;
        assert!(!running.is_empty());
        let after = taken_over(&store, &running, at).await;
        eprintln!("runs {running:?} of a killed node were taken over {:.2} s after the kill", after.as_secs_f64());
        // A lease lapses `LEASE` after the node's last heartbeat, a sweep later at most; the
        // bound leaves room for a loaded machine.
        assert!(after <= LEASE * 2, "taken over after {after:?}");
        killed.extend(running.iter().map(|(id, _)| *id));
    }
    // The survivor keeps every routine going, and runs the killed runs again.
    let survivor_started = runs(&store).len();
    wait::poll(DEADLINE * 2, Duration::from_millis(100), async || {
        let rows = runs(&store);
        let done = killed.iter().all(|id| rows.iter().any(|r| r.0 == *id && r.2 == "succeeded"));
        (done && rows.len() >= survivor_started + 12).then_some(())
    })
    .await
    .expect("the last node fires every routine and runs the killed runs again");
    let mut last = nodes.pop().unwrap();
    last.signal(libc::SIGTERM);
    assert_eq!(last.exit_code(DEADLINE).await, 0, "{}", last.stderr());

    // Deliveries the last node did not finish before it stopped wait in the database; any
    // machine sends them.
    let retry = p.command(["--config", "node0.yaml", "deliver", "--retry"]).run_async().await;
    retry.success();

    let rows = runs(&store);
    // Every instant once: per routine, one row per 2 s instant from the first to the last.
    let mut instants: BTreeMap<String, Vec<DateTime<Utc>>> = BTreeMap::new();
    for r in &rows {
        let at = DateTime::parse_from_rfc3339(r.5.as_deref().unwrap()).unwrap().with_timezone(&Utc);
        instants.entry(r.1.clone()).or_default().push(at);
    }
    for (routine, mut at) in instants {
        at.sort();
        let gaps: Vec<_> = at.windows(2).filter(|w| w[1] - w[0] != chrono::Duration::seconds(2)).collect();
        assert!(gaps.is_empty(), "{routine}: instants lost or doubled: {gaps:?}");
    }
    // The killed runs ran again, as attempt 2, and succeeded.
    for id in &killed {
        let r = rows.iter().find(|r| r.0 == *id).unwrap();
        assert!(r.4 >= 2 && r.2 == "succeeded", "run {id} after its node died: {r:?}");
    }
    // No delivery twice: each run's line and mail at most once; each succeeded run's exactly
    // once unless its delivery was left uncertain by a node killed while sending it.
    let uncertain: HashSet<i64> = store
        .postgres()
        .unwrap()
        .call(|c| async move {
            let rows = c.query("SELECT run_id FROM deliveries WHERE status = 'uncertain'", &[]).await?;
            Ok(rows.iter().map(|r| r.get::<_, i64>(0)).collect())
        })
        .unwrap();
    let log = p.read("out/ticks.log");
    let mut lines: HashMap<i64, usize> = HashMap::new();
    for line in log.lines() {
        let id: i64 = line.split(' ').nth(1).unwrap().parse().unwrap();
        *lines.entry(id).or_default() += 1;
    }
    let mut mails: HashMap<i64, usize> = HashMap::new();
    for m in smtp.received() {
        let subject = m.header("Subject").unwrap();
        let id: i64 = subject.rsplit(' ').next().unwrap().parse().unwrap();
        *mails.entry(id).or_default() += 1;
    }
    for (what, seen) in [("line", &lines), ("mail", &mails)] {
        let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
        assert!(twice.is_empty(), "{what}s delivered twice: {twice:?}");
        for r in rows.iter().filter(|r| r.2 == "succeeded" && !uncertain.contains(&r.0)) {
            assert_eq!(seen.get(&r.0), Some(&1), "{what} of run {}", r.0);
        }
    }
    let succeeded = rows.iter().filter(|r| r.2 == "succeeded").count();
    assert!(asked.load(Ordering::SeqCst) >= succeeded);
    let mut statuses: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &rows {
        *statuses.entry(r.2.as_str()).or_default() += 1;
    }
    eprintln!("{} runs {statuses:?}, {} uncertain deliveries", rows.len(), uncertain.len());
}

/// Two nodes watching one shared folder: each file change fires once, whichever node claims
/// it first; the other sees the claim (by path, size and mtime) and fires nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_nodes_sharing_a_folder_fire_each_file_change_once() {
    let url = postgres::fresh_database();
    let store = Store::open_postgres(&DatabaseUrl::parse("TEST", &url).unwrap(), None).unwrap();
    let (model, _asked) = slow_model().await;
    let smtp = SmtpServer::start_with(Mode::Plain, None, None, 0);
    let ports = [free_port(), free_port()];
    let p = project(&model, &url, smtp.port, &ports);
    for name in ROUTINES {
        std::fs::remove_file(p.path().join(format!("routines/{name}.yaml"))).unwrap();
    }
    p.write(
        "routines/inbox.yaml",
        "on: [{ file: { paths: [\"inbox/*.csv\"], events: [create, modify], debounce: 300ms } }]\n\
         prompt: \"Read {{ trigger.path }}.\"\nagent: { tools: [] }\noverlap: allow\n",
    );
    std::fs::create_dir_all(p.path().join("inbox")).unwrap();
    let mut nodes = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let node = p.command(["--config", &format!("node{i}.yaml"), "-v", "daemon"]).spawn().await;
        node.wait_for_http(&format!("http://127.0.0.1:{port}/healthz"), 200).await;
        nodes.push(node);
    }
    for i in 0..5 {
        std::fs::write(p.path().join(format!("inbox/{i}.csv")), format!("row {i}\n")).unwrap();
    }
    // Both nodes saw each file: one fired it, the other found it claimed.
    let paths = || -> Vec<String> {
        let rows = store
            .postgres()
            .unwrap()
            .call(|c| async move {
                let rows = c.query("SELECT trigger_context FROM runs WHERE routine = 'inbox' ORDER BY id", &[]).await?;
                Ok(rows.iter().map(|r| r.get::<_, String>(0)).collect::<Vec<String>>())
            })
            .unwrap();
        rows.iter().map(|c| serde_json::from_str::<Value>(c).unwrap()["path"].as_str().unwrap().to_string()).collect()
    };
    wait::poll(DEADLINE, Duration::from_millis(100), async || {
        let claimed_twice =
            nodes.iter().map(|n| n.stderr().matches("already fired (by another node").count()).sum::<usize>();
        (claimed_twice >= 5 && paths().len() >= 5).then_some(())
    })
    .await
    .unwrap_or_else(|| {
        panic!("both nodes react to each file: {:?}", nodes.iter().map(Running::stderr).collect::<Vec<_>>())
    });
    let mut fired = paths();
    fired.sort();
    assert_eq!(fired, (0..5).map(|i| format!("inbox/{i}.csv")).collect::<Vec<_>>());
}

/// The database goes away for twice the lease (a restart, a network cut) while both nodes run
/// runs. When it is back, neither takes the other for dead: a node whose sweeps failed waits a
/// lease before it judges, and by then every live node has renewed its heartbeat. No run is
/// interrupted or run a second time, and the routines go on. A file that arrives while the
/// database is away fires once it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_database_outage_longer_than_the_lease_takes_no_live_run_over() {
    let server = Arc::new(postgres::PgServer::start().unwrap());
    let url = server.database().unwrap();
    let store = Store::open_postgres(&DatabaseUrl::parse("TEST", &url).unwrap(), None).unwrap();
    let (model, _asked) = slow_model().await;
    let smtp = SmtpServer::start_with(Mode::Plain, None, None, 0);
    let ports = [free_port(), free_port()];
    let p = project(&model, &url, smtp.port, &ports);
    p.write(
        "routines/inbox.yaml",
        "on: [{ file: { paths: [\"inbox/*.csv\"], debounce: 200ms } }]\nprompt: \"Read {{ trigger.path }}.\"\n\
         agent: { tools: [] }\n",
    );
    std::fs::create_dir_all(p.path().join("inbox")).unwrap();
    let mut nodes = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let node = p.command(["--config", &format!("node{i}.yaml"), "daemon"]).spawn().await;
        node.wait_for_http(&format!("http://127.0.0.1:{port}/healthz"), 200).await;
        nodes.push(node);
    }
    let owners = || -> HashSet<i64> { runs(&store).iter().filter(|r| r.2 == "running").filter_map(|r| r.3).collect() };
    wait::poll(DEADLINE, Duration::from_millis(50), async || (owners().len() == 2).then_some(()))
        .await
        .expect("both nodes running runs");
    let cut = server.clone();
    tokio::task::spawn_blocking(move || cut.stop_for_now()).await.unwrap();
    std::fs::write(p.path().join("inbox/late.csv"), "a,b\n").unwrap();
    for node in &nodes {
        node.wait_for_stderr("the file fire held back", |l| l.contains("Could not queue a fire; trying again")).await;
    }
    // The outage lasts twice the lease: every heartbeat lapses.
    tokio::time::sleep(LEASE * 2).await;
    let cut = server.clone();
    tokio::task::spawn_blocking(move || cut.start_again()).await.unwrap().unwrap();
    let back = runs(&store).len();
    // The routines go on: a dozen more instants after the database came back, all settled,
    // and the file's fire, held back during the outage, has run (before the nodes stop, whose
    // stop would interrupt it and queue it again).
    wait::poll(DEADLINE * 2, Duration::from_millis(100), async || {
        let rows = runs(&store);
        let settled = |r: &Row| r.2 != "queued" && r.2 != "running";
        let late = rows.iter().any(|r| r.1 == "inbox" && settled(r));
        (late && rows.len() >= back + 12 && rows.iter().all(|r| r.2 != "running" || r.4 == 1)).then_some(())
    })
    .await
    .unwrap_or_else(|| panic!("the routines go on after the outage: {:#?}\n{}", runs(&store), nodes[0].stderr()));
    for node in &nodes {
        assert!(!node.stderr().contains("was interrupted: the node running it stopped"), "{}", node.stderr());
    }
    let mut logs = String::new();
    for mut node in nodes {
        node.signal(libc::SIGTERM);
        assert_eq!(node.exit_code(DEADLINE).await, 0);
        logs.push_str(&node.stderr());
    }
    let late: Vec<Row> = runs(&store).into_iter().filter(|r| r.1 == "inbox").collect();
    assert_eq!(late.len(), 1, "the file that came during the outage fired once: {late:?}");
    // A run that a stopping node interrupted is queued again by the node still up: that is
    // its retry, not a takeover.
    let again = retried_not_after_a_stop(&store);
    assert!(again.is_empty(), "runs taken over although their node lived: {again:?}");
    let crashed: i64 = store
        .postgres()
        .unwrap()
        .call(|c| async move { Ok(c.query_one("SELECT COUNT(*) FROM runs WHERE reason = 'crash'", &[]).await?.get(0)) })
        .unwrap();
    assert_eq!(crashed, 0, "runs taken for crashed although their node lived: {:#?}\n{logs}", runs(&store));
}
