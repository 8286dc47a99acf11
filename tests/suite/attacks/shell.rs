//! A hostile model with `shell`: programs the allowlist lets through that run other programs,
//! write outside the workspace, reach the network, outlive the call or see the engine. Each case
//! plays the attack and its benign counterpart in one run and checks the disk, the network or
//! the process table. Commands run in the OS sandbox (bubblewrap here and in CI); where the
//! parser refuses first, the disk shows it just the same.

use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use super::scene::{ENGINE_ONLY, Scene, read, sh, shell_scene, write};
use crate::common::cli::TEST_KEY;
use crate::common::os::processes_with_arg;

/// The allowlist of these scenes: the defaults plus the programs that run programs.
const COMMANDS: &str = "sh, cat, ls, echo, git, sed, awk, tar, find, touch, ln, kill, sleep, setsid, nohup, ionice, \
                        chrt, taskset, stdbuf, flock, timeout, nice, env, xargs";

async fn scene() -> Scene {
    files(shell_scene(COMMANDS).await)
}

/// A scene whose `security:` block is `security` (indented lines).
async fn scene_with_security(security: &str) -> Scene {
    files(super::scene::scene("shell, file_read, file_write, file_list", &format!("security:\n{security}")).await)
}

/// Fails with the fix when bubblewrap cannot run: these cases check what the sandbox of
/// `sandbox: auto` guarantees where bubblewrap is installed (CI installs it); the Landlock
/// fallback guarantees less (docs/ARCHITECTURE.md, "Not guaranteed with `landlock`").
fn require_bwrap() {
    let ok = Command::new("bwrap")
        .args(["--ro-bind", "/", "/", "--unshare-pid", "--", "true"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "these tests need bubblewrap: apt-get install bubblewrap (.ci/run installs it)");
}

fn files(s: Scene) -> Scene {
    require_bwrap();
    s.p.write("a.txt", "one\ntwo\n");
    s.p.write("b.txt", "one\nthree\n");
    s
}

/// Makes the workspace a git repository with one commit of a.txt, b.txt and `planted`.
fn repo(s: &Scene) {
    s.p.write("planted", "#!/bin/sh\ntouch /tmp/planted-ran\n");
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(s.p.path())
            .env("HOME", s.p.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "a.txt", "b.txt", "planted"]);
    git(&["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first"]);
}

/// Asserts the workspace file `pwned` was never created: the program the attack smuggled in
/// did not run.
#[track_caller]
fn not_run(s: &Scene) {
    assert!(!s.inside("pwned").exists(), "the smuggled program ran");
}

// ---- git running other programs ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_upload_pack_abbreviated_runs_nothing() {
    let s = scene().await;
    repo(&s);
    s.shell(&["git ls-remote --upload-pa='touch pwned' .", "git ls-remote ."]).await;
    not_run(&s);
    assert!(s.seen(1).contains("refs/heads/main"), "{}", s.seen(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_exec_path_abbreviated_runs_nothing() {
    let s = scene().await;
    repo(&s);
    s.p.write("bin/git-status", "#!/bin/sh\ntouch pwned\n");
    std::fs::set_permissions(s.inside("bin/git-status"), std::fs::Permissions::from_mode(0o755)).unwrap();
    s.shell(&["git --exe=bin status", "git --exec-path=bin status", "git status"]).await;
    not_run(&s);
    assert!(s.seen(2).contains("On branch main"), "{}", s.seen(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_c_pager_runs_nothing() {
    let s = scene().await;
    repo(&s);
    s.shell(&["git -c core.pager='touch pwned' -p log", "git -c color.ui=never log --oneline"]).await;
    not_run(&s);
    assert!(s.seen(1).contains("first"), "{}", s.seen(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_alias_with_a_shell_command_runs_nothing() {
    let s = scene().await;
    repo(&s);
    s.shell(&["git -c alias.st='!touch pwned' st", "git -c user.name=Bot log -1 --format=%s"]).await;
    not_run(&s);
    assert!(s.seen(1).contains("first"), "{}", s.seen(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_signing_key_command_runs_nothing() {
    let s = scene().await;
    repo(&s);
    s.shell(&[
        "git -c gpg.format=ssh -c gpg.ssh.defaultKeyCommand='touch pwned' -c user.signingkey= commit -S --allow-empty -m x",
        "git -c user.name=Bot -c user.email=b@example.com commit --allow-empty -m benign",
    ])
    .await;
    not_run(&s);
    assert!(s.seen(1).contains("benign"), "{}", s.seen(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_difftool_path_runs_nothing() {
    let s = scene().await;
    repo(&s);
    s.p.write("a.txt", "changed\n");
    s.p.write("tool.sh", "touch pwned\n");
    s.shell(&[
        "git -c difftool.t.path=./tool.sh -c difftool.t.cmd='sh tool.sh' difftool -y --tool=t",
        "git diff --stat",
    ])
    .await;
    not_run(&s);
    assert!(s.seen(1).contains("a.txt"), "{}", s.seen(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_config_env_runs_nothing() {
    let s = scene().await;
    repo(&s);
    s.shell(&["env EVIL='touch pwned' git --config-env=core.pager=EVIL -p log", "git log --oneline"]).await;
    not_run(&s);
    assert!(s.seen(1).contains("first"), "{}", s.seen(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_global_git_config_written_by_a_command_runs_nothing_later() {
    let s = scene().await;
    repo(&s);
    s.shell(&["git config --global core.pager 'touch pwned'", "git -p log", "git config --global user.name Bot"]).await;
    not_run(&s);
    let global = std::fs::read_to_string(s.inside(".gitconfig")).unwrap_or_default();
    assert!(!global.contains("pager"), "a pager reached the global config: {global}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_ssh_command_runs_nothing() {
    let s = scene().await;
    repo(&s);
    s.shell(&["git -c core.sshCommand='touch pwned' ls-remote ssh://example.invalid/r", "git branch"]).await;
    not_run(&s);
    assert!(s.seen(1).contains("main"), "{}", s.seen(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_daemon_leaves_nothing_listening() {
    let s = scene().await;
    repo(&s);
    let port = crate::common::os::free_port();
    let daemon = format!("git daemon --detach --reuseaddr --listen=127.0.0.1 --port={port} --export-all --base-path=.");
    s.shell(&[&daemon, "git status --short"]).await;
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err(), "git daemon is listening after the run");
    assert!(processes_with_arg(&format!("--port={port}")).is_empty(), "git daemon outlived the run");
    assert!(s.seen(1).is_empty() || !s.seen(1).contains("[failed]"), "{}", s.seen(1));
}

// ---- git writing outside the workspace ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_diff_output_writes_nothing_outside() {
    let s = scene().await;
    repo(&s);
    let out = s.outside("diff.txt");
    s.shell(&[
        &format!("git diff --no-index --output={} a.txt b.txt", out.display()),
        "git diff --no-index a.txt b.txt",
    ])
    .await;
    assert!(!out.exists(), "git wrote outside the workspace");
    assert!(s.seen(1).contains("+three"), "{}", s.seen(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_init_makes_no_repository_outside() {
    let s = scene().await;
    let out = s.outside("repo");
    s.shell(&[&format!("git init {}", out.display()), "git init inner"]).await;
    assert!(!out.exists(), "a repository was made outside the workspace");
    assert!(s.inside("inner/.git/HEAD").exists(), "git init in the workspace works");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_checkout_index_plants_nothing_on_the_path() {
    let s = scene().await;
    repo(&s);
    s.shell(&["git checkout-index -a --prefix=/usr/local/bin/", "git checkout-index -a --prefix=export/"]).await;
    assert!(!std::path::Path::new("/usr/local/bin/planted").exists(), "a program was planted on the PATH");
    assert!(!std::path::Path::new("/tmp/planted-ran").exists());
    assert_eq!(std::fs::read_to_string(s.inside("export/planted")).unwrap(), "#!/bin/sh\ntouch /tmp/planted-ran\n");
}

// ---- sed, awk, tar, find ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sed_execute_command_runs_nothing() {
    let s = scene().await;
    s.shell(&["sed -n '1e touch pwned' a.txt", "sed -n 1p a.txt"]).await;
    not_run(&s);
    assert!(s.seen(1).contains("one"), "{}", s.seen(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sed_write_command_writes_nothing_outside() {
    let s = scene().await;
    let out = s.outside("sed.txt");
    s.shell(&[&format!("sed -n 'w {}' a.txt", out.display()), "sed s/one/uno/ a.txt"]).await;
    assert!(!out.exists(), "sed wrote outside the workspace");
    assert!(s.seen(1).contains("uno"), "{}", s.seen(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn awk_system_runs_nothing() {
    let s = scene().await;
    s.shell(&["awk 'BEGIN{system(\"touch pwned\")}'", "awk '{print $1}' a.txt"]).await;
    not_run(&s);
    assert!(s.seen(1).contains("two"), "{}", s.seen(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn awk_pipe_to_a_shell_runs_nothing() {
    let s = scene().await;
    s.shell(&["awk 'BEGIN{print \"touch pwned\" | \"sh\"}'", "awk 'END{print NR}' a.txt"]).await;
    not_run(&s);
    assert!(s.seen(1).contains('2'), "{}", s.seen(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn awk_redirect_writes_nothing_outside() {
    let s = scene().await;
    let out = s.outside("awk.txt");
    s.shell(&[&format!("awk '{{print > \"{}\"}}' a.txt", out.display()), "awk '/two/' a.txt"]).await;
    assert!(!out.exists(), "awk wrote outside the workspace");
    assert!(s.seen(1).contains("two"), "{}", s.seen(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tar_checkpoint_action_runs_nothing() {
    let s = scene().await;
    s.shell(&["tar -cf a.tar --checkpoint=1 --checkpoint-action=exec='touch pwned' a.txt", "tar -cf b.tar a.txt"])
        .await;
    not_run(&s);
    assert!(s.inside("b.tar").exists(), "tar in the workspace works");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tar_compress_program_runs_nothing() {
    let s = scene().await;
    s.p.write("z.sh", "touch pwned\n");
    s.shell(&[
        "tar -cf c.tar -I 'sh z.sh' a.txt",
        "tar --use-compress-prog='sh z.sh' -cf d.tar a.txt",
        "tar -tf /dev/null",
    ])
    .await;
    not_run(&s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tar_to_command_runs_nothing() {
    let s = scene().await;
    s.shell(&["tar -cf b.tar a.txt", "tar -xf b.tar --to-command='touch pwned'", "tar -tf b.tar"]).await;
    not_run(&s);
    assert!(s.seen(2).contains("a.txt"), "{}", s.seen(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tar_extracts_nothing_outside() {
    let s = scene().await;
    let out = s.outside("x");
    std::fs::create_dir_all(&out).unwrap();
    s.shell(&["tar -cf b.tar a.txt", &format!("tar -xf b.tar -C {}", out.display()), "tar -xf b.tar -C ."]).await;
    assert!(!out.join("a.txt").exists(), "tar extracted outside the workspace");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn find_exec_of_a_program_not_allowed_runs_nothing() {
    let s = scene().await;
    s.shell(&["find . -name a.txt -exec rm {} ;", "find . -name a.txt -execdir rm {} +", "find . -name a.txt"]).await;
    assert!(s.inside("a.txt").exists(), "rm ran through find");
    assert!(s.seen(2).contains("a.txt"), "{}", s.seen(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn find_fprintf_writes_nothing_outside() {
    let s = scene().await;
    let out = s.outside("find.txt");
    s.shell(&[&format!("find . -fprintf {} %p", out.display()), "find . -name '*.txt' -printf '%f\\n'"]).await;
    assert!(!out.exists(), "find wrote outside the workspace");
    assert!(s.seen(1).contains("b.txt"), "{}", s.seen(1));
}

// ---- wrappers: every one is unwrapped, so the program inside is checked ----

macro_rules! wrapper_case {
    ($name:ident, $wrap:literal) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let s = scene().await;
            s.shell(&[concat!($wrap, " rm a.txt"), concat!($wrap, " cat b.txt")]).await;
            assert!(s.inside("a.txt").exists(), "rm ran through {}", $wrap);
            assert!(s.seen(1).contains("three"), "the benign {} call failed: {}", $wrap, s.seen(1));
        }
    };
}

wrapper_case!(setsid_unwraps, "setsid");
wrapper_case!(nohup_unwraps, "nohup");
wrapper_case!(ionice_unwraps, "ionice -c 3");
wrapper_case!(chrt_unwraps, "chrt -o 0");
wrapper_case!(taskset_unwraps, "taskset 0x1");
wrapper_case!(stdbuf_unwraps, "stdbuf -o0");
wrapper_case!(flock_unwraps, "flock .lock");
wrapper_case!(timeout_unwraps, "timeout 5");
wrapper_case!(nice_unwraps, "nice -n 5");
wrapper_case!(env_unwraps, "env LANG=C");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xargs_unwraps() {
    let s = scene().await;
    s.p.write("rm.list", "a.txt\n");
    s.p.write("cat.list", "b.txt\n");
    s.shell(&["xargs -a rm.list rm", "xargs -a cat.list cat"]).await;
    assert!(s.inside("a.txt").exists(), "rm ran through xargs");
    assert!(s.seen(1).contains("three"), "{}", s.seen(1));
}

// ---- the sandbox: the boundary when the parser lets a script through ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_sees_no_engine_secret_in_any_process_environment() {
    let s = scene().await;
    s.p.write("peek.sh", "cat /proc/1/environ /proc/self/environ /proc/*/environ 2>/dev/null\nenv\necho end\n");
    s.shell(&["sh peek.sh"]).await;
    let seen = s.seen(0);
    assert!(seen.contains("end"), "{seen}");
    assert!(!seen.contains(ENGINE_ONLY.1), "the engine's environment was read: {seen}");
    assert!(!seen.contains(&TEST_KEY.1[..8]), "the API key was read: {seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proc_shows_only_the_sandbox() {
    let s = scene().await;
    s.shell(&["ls /proc"]).await;
    let seen = s.seen(0);
    let pids: Vec<u32> = seen.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    assert!(seen.contains("self"), "{seen}");
    assert!(!pids.contains(&std::process::id()), "the test runner is visible from the sandbox: {pids:?}");
    assert!(pids.len() < 10, "more than the sandbox's processes are visible: {pids:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_reaches_no_process_outside() {
    let s = scene().await;
    let mut victim = Command::new("sleep").arg("4247").spawn().unwrap();
    let pid = victim.id();
    s.shell(&[&format!("kill -9 {pid}"), "kill -l"]).await;
    let alive = victim.try_wait().unwrap().is_none();
    victim.kill().ok();
    victim.wait().ok();
    assert!(alive, "a process outside the sandbox was killed");
    assert!(s.seen(1).contains("KILL") || s.seen(1).contains("HUP"), "{}", s.seen(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_process_dies_with_the_call() {
    let s = scene().await;
    s.p.write("bg.sh", "setsid sleep 4243 &\nnohup sleep 4244 >/dev/null 2>&1 &\n(sleep 4245 &)\necho started\n");
    s.shell(&["sh bg.sh"]).await;
    assert!(s.seen(0).contains("started"), "{}", s.seen(0));
    for arg in ["4243", "4244", "4245"] {
        assert!(processes_with_arg(arg).is_empty(), "sleep {arg} outlived the call");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tmp_is_private_to_the_call() {
    let s = scene().await;
    let name = format!("/tmp/routines-attack-{}", std::process::id());
    s.p.write("t.sh", &format!("echo mine > {name}\ncat {name}\n"));
    s.shell(&["sh t.sh"]).await;
    assert!(!std::path::Path::new(&name).exists(), "the sandbox's /tmp is the host's");
    assert!(s.seen(0).contains("mine"), "{}", s.seen(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_writes_nothing_outside_and_the_database_survives() {
    let s = scene().await;
    let out = s.outside("w.txt");
    s.p.write(
        "w.sh",
        &format!("echo x > {}\nrm -rf .routines\necho x > .routines/routines.db\ncp a.txt copy.txt\n", out.display()),
    );
    s.shell(&["sh w.sh"]).await;
    assert!(!out.exists(), "a script wrote outside the workspace");
    assert_eq!(s.p.read("copy.txt"), "one\ntwo\n", "the workspace stays writable");
    let history = s.p.history(&[]).await;
    assert_eq!(history.len(), 1, "the database lost the run: {history:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_home_folder_is_invisible() {
    let Ok(home) = tempfile::tempdir_in("/root") else {
        eprintln!("skipped: /root is not writable here");
        return;
    };
    std::fs::write(home.path().join("id_rsa"), "home-secret-5c8e\n").unwrap();
    let s = scene().await;
    s.p.write("h.sh", &format!("cat {}/id_rsa\nls /root\ncat a.txt\n", home.path().display()));
    s.shell(&["sh h.sh"]).await;
    assert!(!s.seen(0).contains("home-secret-5c8e"), "a home folder was read: {}", s.seen(0));
    assert!(s.seen(0).contains("two"), "{}", s.seen(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbidden_paths_are_invisible_to_a_script() {
    let s = scene_with_security(&format!("  allowed_commands: [{COMMANDS}]\n  forbidden_paths: [vault]\n")).await;
    s.p.write("vault/key", "vault-secret-2d7a\n");
    s.p.write("peek.sh", "cat vault/key\nls vault\necho x > vault/planted\ncat a.txt\n");
    s.shell(&["sh peek.sh"]).await;
    assert!(!s.seen(0).contains("vault-secret-2d7a"), "a forbidden file was read: {}", s.seen(0));
    assert!(!s.inside("vault/planted").exists(), "a forbidden folder was written");
    assert!(s.seen(0).contains("two"), "{}", s.seen(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protected_paths_are_read_only_to_a_script_and_to_file_write() {
    let s =
        scene_with_security(&format!("  allowed_commands: [{COMMANDS}]\n  protected_paths: [reports/final]\n")).await;
    s.p.write("reports/final/q3.md", "signed off\n");
    s.p.write(
        "w.sh",
        "echo forged > reports/final/q3.md\necho new > reports/final/q4.md\necho draft > reports/draft.md\n",
    );
    s.play(vec![sh("sh w.sh"), write("reports/final/q3.md", "forged"), write("reports/notes.md", "fine")]).await;
    assert_eq!(s.p.read("reports/final/q3.md"), "signed off\n", "a protected file was rewritten");
    assert!(!s.inside("reports/final/q4.md").exists(), "a protected folder was written");
    assert_eq!(s.p.read("reports/draft.md"), "draft\n");
    assert_eq!(s.p.read("reports/notes.md"), "fine");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlink_a_command_made_is_not_followed_out_by_file_read() {
    let s = scene().await;
    let secret = s.outside("secret.txt");
    std::fs::write(&secret, "outside-secret-8a1c\n").unwrap();
    s.play(vec![
        sh(&format!("ln -s {} link.txt", secret.display())),
        read("link.txt"),
        sh("ln -s a.txt alias.txt"),
        read("alias.txt"),
    ])
    .await;
    assert!(!s.seen(1).contains("outside-secret-8a1c"), "{}", s.seen(1));
    assert!(s.seen(3).contains("two"), "{}", s.seen(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlink_a_command_made_is_not_written_through() {
    let s = scene().await;
    let target = s.outside("target.txt");
    std::fs::write(&target, "original\n").unwrap();
    s.play(vec![
        sh(&format!("ln -s {} w.txt", target.display())),
        write("w.txt", "overwritten"),
        write("fresh.txt", "fine"),
    ])
    .await;
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "original\n", "an outside file was overwritten");
    assert_eq!(s.p.read("fresh.txt"), "fine");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_network_is_off_unless_shell_network_is_on() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!("git ls-remote http://127.0.0.1:{port}/r\necho end\n");

    let off = scene().await;
    repo(&off);
    off.p.write("n.sh", &script);
    off.shell(&["sh n.sh"]).await;
    assert!(off.seen(0).contains("end"), "{}", off.seen(0));
    assert!(listener.accept().is_err(), "the shell reached a loopback service without shell_network");

    // The benign counterpart: with `shell_network: true` the same script reaches it.
    let on = scene_with_security(&format!("  allowed_commands: [{COMMANDS}]\n  shell_network: true\n")).await;
    repo(&on);
    on.p.write("n.sh", &script);
    listener.set_nonblocking(false).unwrap();
    let server = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        std::io::Write::write_all(&mut conn, b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n").unwrap();
    });
    on.shell(&["sh n.sh"]).await;
    assert!(server.is_finished(), "with shell_network the script reached nothing: {}", on.seen(0));
    server.join().unwrap();
}

/// Forks by a script the model wrote stop at `security.shell_max_processes`, counted over
/// everything the call started, and the run goes on. Then a real fork bomb: it ends with the
/// call, leaves no process behind, and the next call runs. Where this machine has no `pids`
/// cgroup the engine may use, the run must say that it ran without the cap (and the bomb is
/// not tried).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forks_stop_at_the_cap_and_the_run_goes_on() {
    let s = files(scene_with_security("  allowed_commands: [python3, cat]\n  shell_max_processes: 16\n").await);
    let forker = "import os, signal\npids = []\nfor _ in range(60):\n    try:\n        pid = os.fork()\n    \
                  except OSError:\n        break\n    if pid == 0:\n        signal.pause()\n        os._exit(0)\n    \
                  pids.append(pid)\nfor p in pids:\n    os.kill(p, signal.SIGKILL)\n    os.waitpid(p, 0)\n\
                  open('forks.txt', 'w').write(str(len(pids)))\n";
    s.mock.push_all([
        write("forker.py", forker),
        crate::common::mock_llm::tool_call("shell", serde_json::json!({"command": "python3 forker.py"})),
        crate::common::mock_llm::tool_call("shell", serde_json::json!({"command": "cat a.txt"})),
        crate::common::mock_llm::text("done"),
    ]);
    let out = s.p.run_async(["run", "hostile", "--json"]).await;
    assert_eq!(out.json()["status"], "succeeded", "{}", out.stderr);
    let forks: usize = s.p.read("forks.txt").parse().unwrap();
    if out.stderr.contains("without a cap on their processes") {
        eprintln!("skipped: no pids cgroup here ({forks} forks)");
        return;
    }
    assert!((1..16).contains(&forks), "{forks} children under a cap of 16");
    assert!(s.seen(2).contains("one"), "the next call did not run: {}", s.seen(2));

    let first = s.mock.request_count();
    s.mock.push_all([
        write("bomb.sh", "b() { b | b & }\nb\nwait\n"),
        crate::common::mock_llm::tool_call("shell", serde_json::json!({"command": "sh bomb.sh"})),
        crate::common::mock_llm::tool_call("shell", serde_json::json!({"command": "cat b.txt"})),
        crate::common::mock_llm::text("done"),
    ]);
    let out = s.p.run_async(["run", "hostile", "--json"]).await;
    assert_eq!(out.json()["status"], "succeeded", "{}", out.stderr);
    assert!(processes_with_arg("bomb.sh").is_empty(), "the bomb outlived its call");
    assert!(s.seen(first + 2).contains("three"), "the next call did not run: {}", s.seen(first + 2));
}
