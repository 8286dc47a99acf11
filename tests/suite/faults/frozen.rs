//! A node frozen (SIGSTOP: a paused VM, a machine that slept, a partition) longer than its
//! lease, in the middle of a run, while another node of the cluster takes the run over and
//! runs it again (SPEC §12). When the frozen node wakes up, the answer it was waiting for
//! arrives: a tool call that writes. It must not make it: the run is the other node's now, and
//! the file would be written twice.

use std::time::Duration;

use serde_json::json;

use crate::common::mock_llm::{Gate, MockLlm, text, tool_call};
use crate::common::os::free_port;
use crate::common::postgres;
use crate::common::wait::{self, DEADLINE};
use crate::common::{Routines, Running};

/// Each node's lease (`cluster.lease`).
const LEASE_SECS: u64 = 2;

/// (status, owner, attempt) of run 1.
fn run_one(url: &str) -> Option<(String, Option<i64>, i64)> {
    let store =
        routines::store::Store::open_postgres(&routines::store::DatabaseUrl::parse("TEST", url).unwrap(), None).ok()?;
    store
        .postgres()?
        .call(|c| async move {
            let row = c.query_opt("SELECT status, owner, attempt FROM runs WHERE id = 1", &[]).await?;
            Ok(row.map(|r| (r.get(0), r.get(1), r.get(2))))
        })
        .ok()?
}

/// The pid of node `owner`.
fn node_pid(url: &str, owner: i64) -> Option<i64> {
    let store =
        routines::store::Store::open_postgres(&routines::store::DatabaseUrl::parse("TEST", url).unwrap(), None).ok()?;
    store
        .postgres()?
        .call(move |c| async move {
            Ok(c.query_opt("SELECT pid FROM nodes WHERE id = $1", &[&owner]).await?.map(|r| r.get(0)))
        })
        .ok()?
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_frozen_past_its_lease_makes_no_call_in_the_run_taken_over() {
    let url = postgres::fresh_database();
    let mock = MockLlm::start().await;
    let gate = Gate::new();
    let write = || tool_call("file_write", json!({"path": "out/log.txt", "content": "written\n", "append": true}));
    // The first node's first call waits at the gate; the node that takes the run over gets the
    // next two; a last answer is there for a frozen node that would go on.
    mock.push_all([write().after(&gate), write(), text("done"), text("done")]);
    let p = Routines::project(&mock.base_url(), "").env("ROUTINES_DATABASE_URL", &url);
    let base = p.read("routines.yaml");
    let ports = [free_port(), free_port()];
    for (i, port) in ports.iter().enumerate() {
        p.write(
            &format!("node{i}.yaml"),
            &format!(
                "{base}data_dir: .node{i}\nserver: {{ listen: 127.0.0.1:{port} }}\n\
                 cluster: {{ lease: {LEASE_SECS}s, max_skew: 1s }}\nlimits: {{ shutdown_grace: 1s }}\n"
            ),
        );
    }
    p.write(
        "routines/writer.yaml",
        "on: [{ webhook: { path: /hooks/go, auth: none } }]\nprompt: Record the tick.\n\
         agent: { tools: [file_write] }\nretry: { attempts: 3, backoff: 1s }\n",
    );
    let mut nodes: Vec<Running> = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let node = p.command(["--config", &format!("node{i}.yaml"), "daemon"]).spawn().await;
        node.wait_for_http(&format!("http://127.0.0.1:{port}/healthz"), 200).await;
        nodes.push(node);
    }
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let answer = http.post(format!("http://127.0.0.1:{}/hooks/go", ports[0])).body("{}").send().await.unwrap();
    assert_eq!(answer.status(), 202);

    // The run waits for its first answer on one node: freeze that node.
    mock.wait_for_requests(1).await;
    let owner = wait::poll(DEADLINE, Duration::from_millis(20), async || match run_one(&url)? {
        (status, Some(owner), 1) if status == "running" => Some(owner),
        _ => None,
    })
    .await
    .expect("run 1 running on a node");
    let pid = node_pid(&url, owner).expect("the owner's node row");
    let frozen = nodes.iter().position(|n| i64::from(n.pid()) == pid).expect("the owner is one of the two nodes");
    nodes[frozen].signal(libc::SIGSTOP);

    // The other node takes it over once the lease lapses and runs it: one write.
    let done = wait::poll(DEADLINE, Duration::from_millis(50), async || match run_one(&url)? {
        (status, Some(by), 2) if status == "succeeded" && by != owner => Some(()),
        _ => None,
    })
    .await;
    assert!(
        done.is_some(),
        "run 1 was not taken over and run again: {:?}\n{}",
        run_one(&url),
        nodes[1 - frozen].stderr()
    );
    assert_eq!(p.read("out/log.txt"), "written\n");
    assert_eq!(mock.request_count(), 3);

    // The frozen node wakes up to the answer it asked for: a write it must not make.
    gate.open();
    nodes[frozen].signal(libc::SIGCONT);
    // Its attempt ends there, unrecorded (the end is fenced too).
    nodes[frozen]
        .wait_for_stderr("the end of the woken node's attempt", |l| {
            l.contains("Run 1 of writer could not be recorded") && l.contains("run 1 was taken over by another node")
        })
        .await;
    assert_eq!(p.read("out/log.txt"), "written\n", "the frozen node wrote after the run was taken over");
    assert_eq!(mock.request_count(), 3, "the frozen node called the model again");
    assert_eq!(run_one(&url).map(|r| (r.0, r.2)), Some(("succeeded".to_string(), 2)));

    for mut node in nodes {
        node.signal(libc::SIGTERM);
        assert_eq!(node.exit_code(DEADLINE).await, 0, "{}", node.stderr());
    }
}
