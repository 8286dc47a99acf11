//! Escape attempts against a real bubblewrap. Skipped, saying why, where it cannot run.

use std::fs;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::escape::{self, SecretHolder, host_process_with};
use super::{Fixture, sh, text, unique};
use crate::sandbox::{Sandbox, SandboxKind, SandboxMode};

fn bwrap() -> Option<Sandbox> {
    match Sandbox::detect(SandboxMode::Bwrap) {
        Ok(sandbox) => {
            assert_eq!(sandbox.kind(), SandboxKind::Bwrap);
            Some(sandbox)
        }
        Err(e) => {
            eprintln!("skipped: {e}");
            None
        }
    }
}

/// Waits (bounded) until `done` holds: the process table changes asynchronously.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "gave up waiting until {what}");
        std::thread::yield_now();
    }
}

macro_rules! shared {
    ($($name:ident),* $(,)?) => {$(
        #[tokio::test]
        async fn $name() {
            let Some(sandbox) = bwrap() else { return };
            escape::$name(&sandbox).await;
        }
    )*};
}

shared!(
    writes_outside_the_workspace_do_not_land,
    carve_outs_stay_as_they_were,
    missing_carve_outs_are_not_created,
    hidden_paths_are_unreadable,
    the_engines_environment_is_out_of_reach,
    loopback_needs_network,
    udp_needs_network,
    workspace_work_goes_through,
    exit_codes_and_output_pass_through,
    a_one_process_call_cannot_start_another,
    a_call_cannot_start_more_processes_than_its_cap,
);

#[tokio::test]
async fn the_environment_is_exactly_the_policys_plus_pwd() {
    let Some(sandbox) = bwrap() else { return };
    // bubblewrap sets PWD for `--chdir`.
    escape::the_environment_is_exactly_the_policys(&sandbox, &["PWD"]).await;
}

#[tokio::test]
async fn auto_picks_bwrap_where_it_works() {
    let Some(_) = bwrap() else { return };
    assert_eq!(Sandbox::detect(SandboxMode::Auto).unwrap().kind(), SandboxKind::Bwrap);
}

#[tokio::test]
async fn proc_shows_only_the_sandbox_and_no_capability_is_left() {
    let Some(sandbox) = bwrap() else { return };
    let fx = Fixture::new();
    let holder = SecretHolder::start();
    let script = format!(
        "ls /proc | grep -c '^[0-9]*$'; test -e /proc/{} && echo engine-visible; test -e /proc/{} && echo holder-visible; \
         grep CapEff /proc/self/status",
        std::process::id(),
        holder.child.id()
    );
    let out = text(&sh(&sandbox, &fx.policy(), &script).await.stdout);
    let mut lines = out.lines();
    let count: usize = lines.next().unwrap().parse().unwrap();
    assert!(count <= 6, "{count} processes visible: {out}");
    assert!(!out.contains("visible"), "{out}");
    assert!(out.contains("CapEff:\t0000000000000000"), "{out}");
}

#[tokio::test]
async fn daemons_end_with_the_call() {
    let Some(sandbox) = bwrap() else { return };
    let fx = Fixture::new();
    let (a, b, c) = (unique(), unique(), unique());
    let (a, b, c) = (format!("86400.{a}"), format!("86401.{b}"), format!("86402.{c}"));
    // Each daemon is running inside before the command returns.
    let script = format!(
        "setsid sleep {a} & (sleep {b} &) ; nohup setsid sh -c 'sleep {c}' >/dev/null 2>&1 & \
         for n in {a} {b} {c}; do until grep -qs \"$n\" /proc/[0-9]*/cmdline; do :; done; done; echo up"
    );
    let output = sh(&sandbox, &fx.policy(), &script).await;
    assert_eq!(text(&output.stdout), "up\n", "stderr: {}", text(&output.stderr));
    for needle in [&a, &b, &c] {
        assert!(!host_process_with(needle), "`sleep {needle}` outlived the call");
    }
}

#[tokio::test]
async fn a_killed_call_takes_its_daemons_along() {
    let Some(sandbox) = bwrap() else { return };
    let fx = Fixture::new();
    let (a, b) = (format!("86403.{}", unique()), format!("86404.{}", unique()));
    let mut cmd = sandbox
        .command(&fx.policy(), &["sh", "-c", &format!("setsid sleep {a} & echo up; exec sleep {b}")].map(String::from))
        .unwrap();
    cmd.command_mut().stdout(Stdio::piped()).process_group(0).kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    let stdout = child.child_mut().stdout.take().unwrap();
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).await.unwrap();
    assert_eq!(line, "up\n");
    wait_until("the daemon runs", || host_process_with(&a));
    // What the shell tool does at its timeout: kill the process group (bubblewrap).
    let pgid = child.child_mut().id().unwrap() as i32;
    // SAFETY: kills the group this test created.
    unsafe { libc::killpg(pgid, libc::SIGKILL) };
    child.wait().await.unwrap();
    wait_until("the daemon is gone", || !host_process_with(&a) && !host_process_with(&b));
}

#[tokio::test]
async fn tmp_is_private_to_the_call() {
    let Some(sandbox) = bwrap() else { return };
    let fx = Fixture::new();
    let name = format!("/tmp/routines-sbx-{}", unique());
    let host = tempfile::Builder::new().prefix("routines-sbx-host-").tempfile_in("/tmp").unwrap();
    let script = format!("echo leak > {name} && cat {name}; test -e {} && echo host-visible", host.path().display());
    let out = sh(&sandbox, &fx.policy(), &script).await;
    assert_eq!(text(&out.stdout), "leak\n");
    assert!(!std::path::Path::new(&name).exists());
}

#[tokio::test]
async fn new_files_anywhere_in_the_workspace_and_git_internals_are_writable() {
    let Some(sandbox) = bwrap() else { return };
    let fx = Fixture::new();
    let script = "echo r > README.md && mkdir build && echo x > build/a && echo lock > .git/index.lock && \
                  mv .git/index.lock .git/index && mkdir -p .git/refs/heads && echo abc > .git/refs/heads/main && \
                  rm notes.txt && echo ok";
    let out = sh(&sandbox, &fx.policy(), script).await;
    assert_eq!(text(&out.stdout), "ok\n", "stderr: {}", text(&out.stderr));
    assert_eq!(fs::read_to_string(fx.ws.join(".git/index")).unwrap(), "lock\n");
    assert_eq!(fs::read_to_string(fx.ws.join(".git/refs/heads/main")).unwrap(), "abc\n");
    assert!(fx.ws.join("README.md").exists() && fx.ws.join("build/a").exists() && !fx.ws.join("notes.txt").exists());
}

#[tokio::test]
async fn a_placeholder_holds_until_the_last_of_two_calls_ends() {
    let Some(sandbox) = bwrap() else { return };
    let fx = Fixture::new();
    let policy = fx.policy();
    let agent = fx.ws.join("AGENT.md");
    // The second call waits for a line on stdin, then tries to write AGENT.md.
    let mut waiting = sandbox
        .command(&policy, &["sh", "-c", "read go; echo pwned > AGENT.md; echo \"rc=$?\""].map(String::from))
        .unwrap();
    waiting.command_mut().stdin(Stdio::piped()).stdout(Stdio::piped()).kill_on_drop(true);
    let mut waiting = waiting.spawn().unwrap();
    let first = sh(&sandbox, &policy, "test -f AGENT.md && echo placeholder").await;
    assert_eq!(text(&first.stdout), "placeholder\n");
    // The first call has ended; the second still relies on the placeholder.
    assert!(agent.exists());
    let mut stdin = waiting.child_mut().stdin.take().unwrap();
    stdin.write_all(b"go\n").await.unwrap();
    drop(stdin);
    let mut line = String::new();
    BufReader::new(waiting.child_mut().stdout.take().unwrap()).read_line(&mut line).await.unwrap();
    assert_ne!(line, "rc=0\n");
    waiting.wait().await.unwrap();
    drop(waiting);
    assert!(!agent.exists(), "the placeholder was left behind");
}
