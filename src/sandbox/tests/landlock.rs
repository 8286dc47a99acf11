//! Escape attempts against real Landlock. Skipped, saying why, where the kernel lacks it.

use std::fs;

use super::escape;
use super::{Fixture, sh, text, unique};
use crate::sandbox::{Sandbox, SandboxKind, SandboxMode};

fn landlock() -> Option<Sandbox> {
    match Sandbox::detect(SandboxMode::Landlock) {
        Ok(sandbox) => {
            assert_eq!(sandbox.kind(), SandboxKind::Landlock);
            Some(sandbox)
        }
        Err(e) => {
            eprintln!("skipped: {e}");
            None
        }
    }
}

macro_rules! shared {
    ($($name:ident),* $(,)?) => {$(
        #[tokio::test]
        async fn $name() {
            let Some(sandbox) = landlock() else { return };
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
async fn host_unix_sockets_are_out_of_reach() {
    let Some(sandbox) = landlock() else { return };
    escape::host_unix_sockets_are_out_of_reach(&sandbox).await;
}

#[tokio::test]
async fn the_environment_is_exactly_the_policys_plus_a_scratch_tmpdir() {
    let Some(sandbox) = landlock() else { return };
    escape::the_environment_is_exactly_the_policys(&sandbox, &["TMPDIR"]).await;
}

#[tokio::test]
async fn tmp_writes_stay_off_the_host_and_the_scratch_folder_goes_with_the_call() {
    let Some(sandbox) = landlock() else { return };
    let fx = Fixture::new();
    let name = format!("/tmp/routines-sbx-{}", unique());
    let script = format!("echo leak > {name}; echo scratch > \"$TMPDIR/x\" && cat \"$TMPDIR/x\" && echo \"$TMPDIR\"");
    let out = sh(&sandbox, &fx.policy(), &script).await;
    assert!(!std::path::Path::new(&name).exists());
    let stdout = text(&out.stdout);
    let mut lines = stdout.lines();
    assert_eq!(lines.next(), Some("scratch"), "stderr: {}", text(&out.stderr));
    let scratch = lines.next().unwrap();
    assert!(!std::path::Path::new(scratch).exists(), "{scratch} was left behind");
}

#[tokio::test]
async fn signals_to_the_engine_are_refused() {
    let Some(sandbox) = landlock() else { return };
    if crate::sandbox::landlock::kernel_abi().is_ok_and(|abi| abi < 6) {
        eprintln!("skipped: signal scoping needs Landlock ABI 6 (Linux 6.12)");
        return;
    }
    let fx = Fixture::new();
    let holder = escape::SecretHolder::start();
    let pid = holder.child.id();
    let out = sh(&sandbox, &fx.policy(), &format!("kill -9 {pid} && echo killed")).await;
    assert!(!text(&out.stdout).contains("killed"));
    // SAFETY: signal 0 only checks that the process exists.
    assert_eq!(unsafe { libc::kill(pid as i32, 0) }, 0, "the process outside the sandbox was killed");
}

#[tokio::test]
async fn a_folder_holding_a_carve_out_gets_no_new_entries() {
    // The documented price of Landlock: carve-outs are made by splitting
    // grants, so their folders cannot gain or lose entries.
    let Some(sandbox) = landlock() else { return };
    let fx = Fixture::new();
    sh(&sandbox, &fx.policy(), "echo x > new-top-level.txt; echo x > .git/index.lock").await;
    assert!(!fx.ws.join("new-top-level.txt").exists());
    assert!(!fx.ws.join(".git/index.lock").exists());
    // Without carve-outs in it, the workspace root is fully writable.
    let mut policy = fx.policy();
    policy.read_only.clear();
    let out = sh(&sandbox, &policy, "echo x > new-top-level.txt && rm notes.txt && echo ok").await;
    assert_eq!(text(&out.stdout), "ok\n", "stderr: {}", text(&out.stderr));
    assert_eq!(fs::read_to_string(fx.ws.join("new-top-level.txt")).unwrap(), "x\n");
}
