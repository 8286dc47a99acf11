//! Escape attempts against a real bubblewrap. Skipped, saying why, where it cannot run.

use std::fs;
use std::path::Path;
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

#[tokio::test]
async fn host_sockets_are_out_of_reach_and_a_workspace_socket_is_not() {
    let Some(sandbox) = bwrap() else { return };
    let Some(fx) = escape::host_unix_sockets_are_out_of_reach(&sandbox).await else { return };
    // The benign counterpart: a socket the workspace holds (a project's own service) is the
    // workspace's, and is reached.
    let path = fx.ws.join("app.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let script =
        "python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect(\"app.sock\"); s.sendall(b\"hello\")'";
    let output = sh(&sandbox, &fx.policy(), script).await;
    assert_eq!(escape::unix_received(&listener), "hello|", "stderr: {}", text(&output.stderr));
}

#[tokio::test]
async fn the_view_has_the_system_and_the_workspace_and_nothing_else_of_the_host() {
    let Some(sandbox) = bwrap() else { return };
    let fx = Fixture::new();
    // (The fixture lives under /var/tmp: the folders on the way to the workspace are there, empty.)
    let script = "for p in /home /root /var/lib /var/log /var/run /run /srv /mnt /media /sys /etc/shadow /etc/ssh; do \
                  test -e $p && echo \"seen $p\"; done; \
                  ls / > /dev/null && git --version > /dev/null && python3 -c 'import ssl, json, sqlite3' && \
                  test -s /etc/ssl/certs/ca-certificates.crt && id -un > /dev/null && echo a | awk '{print}' && \
                  touch /new 2>/dev/null || echo root-read-only";
    let output = sh(&sandbox, &fx.policy(), script).await;
    assert_eq!(text(&output.stdout), "a\nroot-read-only\n", "stderr: {}", text(&output.stderr));
    assert!(!fx.base.join("new").exists());
    // The rest of the usual corpus, where installed: jq, grep, curl without network.
    for (program, script, expected) in [
        ("/usr/bin/jq", "echo '{\"a\": [1, 2]}' | jq -c '.a'", "[1,2]\n"),
        ("/usr/bin/grep", "grep -c notes notes.txt", "1\n"),
        ("/usr/bin/curl", "curl -s file://$PWD/notes.txt", "notes\n"),
    ] {
        if Path::new(program).exists() {
            let output = sh(&sandbox, &fx.policy(), script).await;
            assert_eq!(text(&output.stdout), expected, "{script}: {}", text(&output.stderr));
        }
    }
}

/// Git in a workspace that is not a repository, holding one in `repo/`: at the root git says
/// what it says anywhere outside a repository, in the sub-folder it works, and no command can
/// make the root a repository (whose `.git/config` could run programs).
#[tokio::test]
async fn git_at_the_root_of_a_workspace_that_is_no_repository() {
    let Some(sandbox) = bwrap() else { return };
    let fx = Fixture::new();
    fs::remove_dir_all(fx.ws.join(".git")).unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(fx.ws.join("repo"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", &fx.ws)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
    };
    fs::create_dir(fx.ws.join("repo")).unwrap();
    fs::write(fx.ws.join("repo/a.txt"), "a\n").unwrap();
    git(&["init", "-q"]);
    git(&["add", "a.txt"]);
    git(&["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first"]);

    let mut policy = fx.policy();
    policy.env.push(("GIT_CONFIG_NOSYSTEM".into(), "1".into()));
    let root = sh(&sandbox, &policy, "git log").await;
    let said = text(&root.stderr);
    assert!(said.contains("not a git repository"), "{said}");
    assert!(!said.contains("gitfile"), "{said}");
    let sub = sh(&sandbox, &policy, "git -C repo log --format=%s").await;
    assert_eq!(text(&sub.stdout), "first\n", "stderr: {}", text(&sub.stderr));

    let init = sh(&sandbox, &policy, "git init -q .; mkdir -p .git/hooks; echo evil > .git/config; git log").await;
    assert!(text(&init.stderr).contains("not a git repository"), "{}", text(&init.stderr));
    assert!(!fx.ws.join(".git").exists(), "the call left a .git behind");
}
