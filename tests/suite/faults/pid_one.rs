//! A daemon that is PID 1, as in a container: killed with a run in flight and started again,
//! it is PID 1 again. The run's owner is its pid and start time, so the new daemon knows the
//! old run's owner is gone, records it interrupted and runs it again per `retry`.

use std::time::Duration;

use crate::common::Routines;
use crate::common::mock_llm::{MockLlm, hang, text};
use crate::common::os::free_port;
use crate::common::wait::{self, DEADLINE};

/// `unshare --pid --fork --kill-child --mount-proc routines daemon`: the daemon is PID 1 of a
/// new PID namespace and dies with its `unshare`. `None` (with the reason printed) where
/// namespaces cannot be made.
fn pid_one_works() -> bool {
    let probe = std::process::Command::new("unshare").args(["--pid", "--fork", "--mount-proc", "true"]).output();
    match probe {
        Ok(o) if o.status.success() => true,
        Ok(o) => {
            eprintln!("SKIPPED: unshare --pid cannot run here: {}", String::from_utf8_lossy(&o.stderr).trim());
            false
        }
        Err(e) => {
            eprintln!("SKIPPED: unshare is not available: {e}");
            false
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_that_is_pid_one_again_recovers_the_run_its_killed_self_left() {
    if !pid_one_works() {
        return;
    }
    let mock = MockLlm::start().await;
    let port = free_port();
    let p = Routines::project(&mock.base_url(), &format!("server: {{ listen: 127.0.0.1:{port} }}\n"));
    p.write(
        "routines/hook.yaml",
        "on: [{ webhook: { path: /hooks/go, auth: none } }]\nprompt: Go.\nretry: { attempts: 3, backoff: 1s }\n",
    );
    let pid_one =
        || p.program("unshare").args(["--pid", "--fork", "--kill-child", "--mount-proc", Routines::binary(), "daemon"]);
    mock.push(hang());
    let mut first = pid_one().spawn().await;
    first.wait_for_http(&format!("http://127.0.0.1:{port}/healthz"), 200).await;
    let c = reqwest::Client::builder().no_proxy().build().unwrap();
    assert_eq!(c.post(format!("http://127.0.0.1:{port}/hooks/go")).body("{}").send().await.unwrap().status(), 202);
    mock.wait_for_requests(1).await;
    assert_eq!(p.history(&["hook", "--status", "running"]).await.len(), 1);
    first.kill().await;
    // The daemon inside dies with its `unshare` a moment later; its data-folder lock says when.
    let lock = p.path().join(".routines/daemon.lock");
    let free = wait::poll(DEADLINE, Duration::from_millis(20), async || {
        let probe = tokio::process::Command::new("flock").args(["-n", lock.to_str().unwrap(), "true"]).status();
        probe.await.ok().filter(|s| s.success())
    })
    .await;
    assert!(free.is_some(), "the killed daemon never let go of its data folder");

    // Started again: PID 1 again, a new process. The run is not its own.
    mock.push(text("done"));
    let second = pid_one().spawn().await;
    second.wait_for_http(&format!("http://127.0.0.1:{port}/healthz"), 200).await;
    let finished = wait::poll(DEADLINE, Duration::from_millis(100), async || {
        let runs = p.history(&["hook"]).await;
        (runs.len() == 1 && runs[0]["status"] == "succeeded").then_some(runs)
    })
    .await;
    let runs = p.history(&["hook"]).await;
    assert!(finished.is_some(), "the run left by the killed PID 1 was not recovered: {runs:?}");
    let show = p.show(1).await;
    assert_eq!(show["attempt"], 2, "{show}");
    // The record still says what became of the first attempt.
    let earlier = show["earlier_attempts"].as_array().unwrap();
    assert_eq!(earlier.len(), 1, "{show}");
    assert!(earlier[0].as_str().unwrap().starts_with("attempt 1 interrupted (crash)"), "{show}");
    drop(second);
}

/// The same restart overlapping the old process's exit: the new daemon starts while the old one
/// still holds its owner lock (a PID 1 still closing its files), so at start the run's owner is
/// alive. Once the old process lets go, the run is judged again, interrupted and run as its
/// next attempt; before, it stayed `running` for good. The old process's last moments are
/// played by this test holding the lock the killed daemon left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_owner_ends_after_the_new_daemon_started_is_run_again() {
    let mock = MockLlm::start().await;
    let port = free_port();
    let p = Routines::project(&mock.base_url(), &format!("server: {{ listen: 127.0.0.1:{port} }}\n"));
    p.write(
        "routines/hook.yaml",
        "on: [{ webhook: { path: /hooks/go, auth: none } }]\nprompt: Go.\nretry: { attempts: 3, backoff: 1s }\n",
    );
    mock.push(hang());
    let mut first = p.command(["daemon"]).spawn().await;
    first.wait_for_http(&format!("http://127.0.0.1:{port}/healthz"), 200).await;
    let c = reqwest::Client::builder().no_proxy().build().unwrap();
    assert_eq!(c.post(format!("http://127.0.0.1:{port}/hooks/go")).body("{}").send().await.unwrap().status(), 202);
    mock.wait_for_requests(1).await;
    assert_eq!(p.history(&["hook", "--status", "running"]).await.len(), 1);
    first.kill().await;

    // The old process's owner lock, held as a process still ending would hold it.
    let owners = p.path().join(".routines/owners");
    let held: Vec<std::fs::File> = std::fs::read_dir(&owners)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|f| f.extension().is_some_and(|x| x == "lock"))
        .map(|f| {
            let file = std::fs::File::open(&f).unwrap();
            // SAFETY: flock on a descriptor this test owns.
            assert_eq!(unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&file), libc::LOCK_EX) }, 0);
            file
        })
        .collect();
    assert!(!held.is_empty(), "the killed daemon left no owner lock in {}", owners.display());

    mock.push(text("done"));
    let second = p.command(["daemon"]).spawn().await;
    second.wait_for_http(&format!("http://127.0.0.1:{port}/healthz"), 200).await;
    // Judged at start: its owner's lock is held, so the run is not taken for a crash.
    assert_eq!(p.history(&["hook", "--status", "running"]).await.len(), 1);

    drop(held);
    let finished = wait::poll(DEADLINE, Duration::from_millis(100), async || {
        let runs = p.history(&["hook"]).await;
        (runs.len() == 1 && runs[0]["status"] == "succeeded").then_some(runs)
    })
    .await;
    let runs = p.history(&["hook"]).await;
    assert!(finished.is_some(), "the run stayed with its ended owner: {runs:?}");
    let show = p.show(1).await;
    assert_eq!(show["attempt"], 2, "{show}");
    assert!(second.stderr().contains("ended after this daemon started"), "{}", second.stderr());
    drop(second);
}
