//! Tests of the sandbox: unit tests of the pure parts here; escape attempts
//! against a real bubblewrap (`bwrap.rs`) and real Landlock (`landlock.rs`),
//! sharing their scenarios (`escape.rs`). Escape tests check what happened on
//! disk, on the network and in the process table, not what a message says.
//! Where a mechanism does not work on the machine they print why and return.

mod bwrap;
mod escape;
mod landlock;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicU32, Ordering};

use super::policy::{self, Step, resolve};
use super::registry::{CallGuard, Registry};
use super::*;

/// A workspace with the engine's files in it, a folder beside it, and a fake home.
pub(super) struct Fixture {
    _dir: tempfile::TempDir,
    pub base: PathBuf,
    pub ws: PathBuf,
    pub outside: PathBuf,
    pub home: PathBuf,
}

impl Fixture {
    /// Made under /var/tmp where it can be (not under /tmp, which a bwrap call
    /// replaces, so that "outside" is visible there and writes to it are refused).
    pub(super) fn new() -> Fixture {
        let var_tmp = Path::new("/var/tmp");
        let dir = if var_tmp.is_dir() {
            tempfile::Builder::new().prefix("routines-sbx-").tempdir_in(var_tmp)
        } else {
            tempfile::Builder::new().prefix("routines-sbx-").tempdir()
        }
        .unwrap();
        let base = dir.path().canonicalize().unwrap();
        let ws = base.join("ws");
        let outside = base.join("outside");
        let home = base.join("home");
        for d in [&ws, &outside, &home] {
            fs::create_dir(d).unwrap();
        }
        for d in ["routines", ".routines", ".git/hooks", ".git/objects", "src"] {
            fs::create_dir_all(ws.join(d)).unwrap();
        }
        let files = [
            ("routines.yaml", "provider: { base_url: http://127.0.0.1:11434/v1 }\n"),
            ("routines/daily.yaml", "name: daily\n"),
            (".routines/routines.db", "DB"),
            (".git/config", "[core]\n\tbare = false\n"),
            (".git/HEAD", "ref: refs/heads/main\n"),
            (".git/hooks/pre-commit.sample", "#!/bin/sh\n"),
            ("src/main.rs", "fn main() {}\n"),
            ("src/old.rs", "old\n"),
            ("notes.txt", "notes\n"),
        ];
        for (name, content) in files {
            fs::write(ws.join(name), content).unwrap();
        }
        fs::write(outside.join("existing.txt"), "outside\n").unwrap();
        fs::write(outside.join("forbidden.txt"), "TOPSECRET-FORBIDDEN\n").unwrap();
        fs::write(home.join("secret.txt"), "TOPSECRET-HOME\n").unwrap();
        fs::create_dir(home.join(".ssh")).unwrap();
        fs::write(home.join(".ssh/id_ed25519"), "TOPSECRET-KEY\n").unwrap();
        Fixture { _dir: dir, base, ws, outside, home }
    }

    /// The engine's carve-outs: existing ones, and missing ones that must not appear.
    pub(super) fn policy(&self) -> SandboxPolicy {
        let mut policy = SandboxPolicy::new(&self.ws);
        policy.read_only = [
            "routines.yaml",
            "routines",
            ".routines",
            ".git/config",
            ".git/hooks",
            "AGENT.md",
            "HEARTBEAT.md",
            "templates",
            "protected/deep/file.txt",
        ]
        .iter()
        .map(|p| self.ws.join(p))
        .collect();
        policy.hidden.push(self.home.clone());
        policy.hidden.push(self.outside.join("forbidden.txt"));
        policy.env = vec![
            ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
            ("HOME".into(), self.ws.display().to_string()),
            ("LANG".into(), "C.UTF-8".into()),
        ];
        policy
    }
}

/// A number no other test of this process uses.
pub(super) fn unique() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    std::process::id() % 10_000 * 1000 + NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Runs `sh -c script` under `policy`.
pub(super) async fn sh(sandbox: &Sandbox, policy: &SandboxPolicy, script: &str) -> Output {
    let argv = ["sh", "-c", script].map(String::from);
    sandbox.command(policy, &argv).unwrap().output().await.unwrap()
}

pub(super) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn the_setting_parses_and_prints_its_four_values() {
    for name in SandboxMode::NAMES {
        let mode: SandboxMode = name.parse().unwrap();
        assert_eq!(mode.to_string(), name);
        let yaml: SandboxMode = serde_yaml::from_str(name).unwrap();
        assert_eq!(yaml, mode);
    }
    assert_eq!(SandboxMode::default(), SandboxMode::Auto);
    let err = "bubblewrap".parse::<SandboxMode>().unwrap_err();
    assert_eq!(err.to_string(), "unknown sandbox `bubblewrap`; expected one of: auto, bwrap, landlock, none");
    assert!(serde_yaml::from_str::<SandboxMode>("Bwrap").is_err());
}

#[test]
fn unavailable_sandboxes_name_the_fix() {
    let err =
        SandboxError::Unavailable { kind: SandboxKind::Bwrap, reason: "`bwrap` was not found".into(), fix: BWRAP_FIX };
    let msg = err.to_string();
    assert!(msg.contains("apt-get install bubblewrap"), "{msg}");
    assert!(msg.contains("security.sandbox: none"), "{msg}");
    let err = SandboxError::NoneAvailable { bwrap: "a".into(), landlock: "b".into() };
    assert!(err.to_string().contains("apt-get install bubblewrap"));
}

#[test]
fn none_is_always_available_and_runs_the_plain_command() {
    let fx = Fixture::new();
    let sandbox = Sandbox::detect(SandboxMode::None).unwrap();
    assert_eq!(sandbox.kind(), SandboxKind::None);
    let cmd = sandbox.command(&fx.policy(), &["ls".to_string(), "-la".to_string()]).unwrap();
    assert_eq!(cmd.as_std().get_program(), "ls");
    assert_eq!(cmd.as_std().get_current_dir(), Some(fx.ws.as_path()));
    assert_eq!(cmd.as_std().get_envs().count(), 3);
    assert!(matches!(sandbox.command(&fx.policy(), &[]), Err(SandboxError::EmptyCommand)));
}

#[test]
fn carve_outs_resolve_to_pins_protections_and_placeholders() {
    let fx = Fixture::new();
    let mut policy = fx.policy();
    // A path outside every writable root needs nothing; a relative one is refused.
    policy.read_only.push(fx.outside.join("existing.txt"));
    let resolved = resolve(&policy).unwrap();
    let ws = &fx.ws;
    let mut expected = vec![
        Step::Pin(ws.join(".git")),
        Step::Protect(ws.join("routines.yaml")),
        Step::Protect(ws.join("routines")),
        Step::Protect(ws.join(".routines")),
        Step::Protect(ws.join(".git/config")),
        Step::Protect(ws.join(".git/hooks")),
        Step::Missing(ws.join("AGENT.md")),
        Step::Missing(ws.join("HEARTBEAT.md")),
        Step::Missing(ws.join("templates")),
        Step::MissingFolder(ws.join("protected")),
    ];
    expected.sort();
    assert_eq!(resolved.steps, expected);
    assert_eq!(resolved.writable, vec![fx.ws.clone()]);

    policy.read_only.push("relative/path".into());
    assert!(matches!(resolve(&policy), Err(SandboxError::RelativePath { .. })));
}

#[test]
fn a_file_where_a_carve_out_folder_would_be_is_protected() {
    let fx = Fixture::new();
    fs::remove_dir_all(fx.ws.join(".git")).unwrap();
    // A worktree: `.git` is a file; it must not be replaced by a folder with a config.
    fs::write(fx.ws.join(".git"), "gitdir: /elsewhere\n").unwrap();
    let resolved = resolve(&fx.policy()).unwrap();
    assert!(resolved.steps.contains(&Step::Protect(fx.ws.join(".git"))));
    let git = fx.ws.join(".git");
    assert!(!resolved.steps.iter().any(|s| s.path() != git && s.path().starts_with(&git)), "{:?}", resolved.steps);
}

#[test]
fn a_carve_out_behind_a_symlink_in_the_workspace_is_refused() {
    let fx = Fixture::new();
    fs::create_dir(fx.ws.join("docs")).unwrap();
    fs::write(fx.ws.join("docs/agent.md"), "who I am").unwrap();
    std::os::unix::fs::symlink("docs/agent.md", fx.ws.join("AGENT.md")).unwrap();
    match resolve(&fx.policy()) {
        Err(SandboxError::SymlinkedCarveOut { link, .. }) => assert_eq!(link, fx.ws.join("AGENT.md")),
        other => panic!("expected a refusal, got {other:?}"),
    }
    // The same through a symlinked folder on the way.
    fs::remove_file(fx.ws.join("AGENT.md")).unwrap();
    fs::rename(fx.ws.join(".git"), fx.ws.join("real-git")).unwrap();
    std::os::unix::fs::symlink("real-git", fx.ws.join(".git")).unwrap();
    assert!(matches!(resolve(&fx.policy()), Err(SandboxError::SymlinkedCarveOut { .. })));
}

#[test]
fn a_workspace_that_is_a_hidden_folder_stays_usable() {
    let fx = Fixture::new();
    let mut policy = fx.policy();
    policy.hidden.push(fx.ws.clone());
    policy.hidden.push(fx.ws.join("secrets"));
    let resolved = resolve(&policy).unwrap();
    assert!(!resolved.hidden.contains(&fx.ws));
    assert!(resolved.hidden.contains(&fx.ws.join("secrets")));
}

#[test]
fn missing_writable_roots_and_working_folders_are_refused() {
    let fx = Fixture::new();
    let mut policy = fx.policy();
    policy.cwd = fx.ws.join("nope");
    assert!(matches!(resolve(&policy), Err(SandboxError::MissingPath { .. })));
    let mut policy = fx.policy();
    policy.writable.push(fx.base.join("missing"));
    assert!(matches!(resolve(&policy), Err(SandboxError::MissingPath { .. })));
}

#[test]
fn bwrap_mounts_go_shallow_to_deep_and_hidden_folders_win() {
    let fx = Fixture::new();
    let mut policy = fx.policy();
    // The workspace inside a hidden folder stays visible; a carve-out inside a hidden folder does not.
    policy.hidden.push(fx.base.clone());
    fs::create_dir(fx.ws.join("secret")).unwrap();
    policy.hidden.push(fx.ws.join("secret"));
    policy.read_only.push(fx.ws.join("secret/inner"));
    let resolved = resolve(&policy).unwrap();
    let args = bwrap_args(&resolved, false, Some(9));
    let at = |needle: &[&str]| {
        args.windows(needle.len()).position(|w| w == needle).unwrap_or_else(|| panic!("{needle:?} in {args:?}"))
    };
    let base = fx.base.display().to_string();
    let ws = fx.ws.display().to_string();
    let secret = format!("{ws}/secret");
    // The host is not in the view: the hidden folder that holds the workspace is not there to hide.
    assert!(!args.windows(3).any(|w| w == ["--ro-bind", "/", "/"]), "{args:?}");
    assert!(!args.contains(&base), "{args:?}");
    assert!(at(&["--ro-bind", "/usr", "/usr"]) < at(&["--bind", &ws, &ws]));
    assert!(at(&["--bind", &ws, &ws]) < at(&["--tmpfs", &secret]));
    assert!(
        at(&["--bind", &ws, &ws]) < at(&["--ro-bind", &format!("{ws}/routines.yaml"), &format!("{ws}/routines.yaml")])
    );
    assert!(
        at(&["--bind", &format!("{ws}/.git"), &format!("{ws}/.git")])
            < at(&["--ro-bind", &format!("{ws}/.git/config"), &format!("{ws}/.git/config")])
    );
    assert!(at(&["--ro-bind", "/E", &format!("{ws}/AGENT.md")]) > 0);
    assert!(!args.iter().any(|a| a.ends_with("secret/inner")), "{args:?}");
    assert!(at(&["--remount-ro", &secret]) > at(&["--ro-bind", "/E", &format!("{ws}/AGENT.md")]));
    assert!(at(&["--remount-ro", "/"]) > at(&["--remount-ro", &secret]));
    for flag in ["--unshare-pid", "--unshare-net", "--die-with-parent", "--new-session", "--unshare-ipc"] {
        assert!(args.contains(&flag.to_string()), "{flag}");
    }
    assert_eq!(&args[at(&["--cap-drop"])..at(&["--cap-drop"]) + 2], ["--cap-drop", "ALL"]);
    assert!(at(&["--info-fd", "9"]) > 0);
    assert_eq!(args[args.len() - 2..], ["--".to_string(), "true".to_string()]);

    let with_network = bwrap_args(&resolved, true, None);
    assert!(!with_network.iter().any(|a| a == "--unshare-net"));
}

/// The bubblewrap arguments of `resolved` around `true`, placeholders bound from `/E` and `/D`.
fn bwrap_args(resolved: &policy::Resolved, network: bool, info: Option<i32>) -> Vec<String> {
    let empty = super::bwrap::Empty { file: Path::new("/E"), dir: Path::new("/D") };
    let fds = super::bwrap::Fds { info, seccomp: None };
    super::bwrap::args(resolved, network, empty, fds, &["true".to_string()])
        .into_iter()
        .map(|a| a.into_string().unwrap())
        .collect()
}

#[test]
fn the_view_is_the_system_the_etc_allowlist_and_the_workspace() {
    let fx = Fixture::new();
    let args = bwrap_args(&resolve(&fx.policy()).unwrap(), false, None);
    let targets: Vec<&str> =
        args.windows(3).filter(|w| w[0] == "--ro-bind" || w[0] == "--bind").map(|w| w[2].as_str()).collect();
    for outside in ["/", "/home", "/root", "/var", "/run", "/srv", "/sys", "/mnt", "/etc"] {
        assert!(!targets.contains(&outside), "{outside} is bound: {args:?}");
    }
    for secret in ["/etc/shadow", "/etc/ssl/private", "/etc/ssh", "/etc/pip.conf", "/etc/machine-id"] {
        assert!(!targets.iter().any(|t| t.starts_with(secret)), "{secret} is bound: {args:?}");
    }
    if Path::new("/etc/passwd").exists() {
        assert!(targets.contains(&"/etc/passwd"), "{args:?}");
    }
    // On a merged-usr system `/bin` is the same symlink inside.
    if let Ok(target) = fs::read_link("/bin") {
        let target = target.display().to_string();
        assert!(args.windows(3).any(|w| w == ["--symlink", target.as_str(), "/bin"]), "{args:?}");
    }
}

#[test]
fn a_missing_folder_on_the_way_to_a_carve_out_is_an_empty_folder() {
    let fx = Fixture::new();
    fs::remove_dir_all(fx.ws.join(".git")).unwrap();
    let resolved = resolve(&fx.policy()).unwrap();
    let git = fx.ws.join(".git");
    assert!(resolved.steps.contains(&Step::MissingFolder(git.clone())), "{:?}", resolved.steps);
    assert!(!resolved.steps.iter().any(|s| s.path().starts_with(&git) && s.path() != git), "{:?}", resolved.steps);
    let args = bwrap_args(&resolved, false, None);
    let git = git.display().to_string();
    assert!(args.windows(3).any(|w| w == ["--ro-bind", "/D", git.as_str()]), "{args:?}");
    // The carve-out itself missing stays a file.
    let agent = fx.ws.join("AGENT.md").display().to_string();
    assert!(args.windows(3).any(|w| w == ["--ro-bind", "/E", agent.as_str()]), "{args:?}");
}

#[test]
fn the_last_call_out_removes_a_placeholder_and_a_users_file_is_kept() {
    let fx = Fixture::new();
    let registry = Registry::open_at(fx.base.join("registry")).unwrap();
    let placeholder = fx.ws.join("AGENT.md");
    let (mut first, mut second) = (CallGuard::default(), CallGuard::default());
    {
        let lock = registry.lock().unwrap();
        lock.create(&placeholder, false, &mut first).unwrap();
        assert!(lock.is_placeholder(&placeholder));
        lock.rely_on(&placeholder, &mut second).unwrap();
    }
    assert_eq!(fs::metadata(&placeholder).unwrap().len(), 0);
    drop(first);
    assert!(placeholder.exists(), "removed while another call relies on it");
    assert_eq!(second.holds(), 1);
    drop(second);
    assert!(!placeholder.exists());

    // A sweep leaves a placeholder that a live call holds.
    let mut live = CallGuard::default();
    registry.lock().unwrap().create(&placeholder, false, &mut live).unwrap();
    registry.lock().unwrap().sweep();
    assert!(placeholder.exists(), "swept while a call holds it");
    drop(live);
    assert!(!placeholder.exists());

    // A file the user put there in the meantime is not the placeholder and is kept.
    let mut call = CallGuard::default();
    fs::write(&placeholder, "").unwrap();
    registry.lock().unwrap().rely_on(&placeholder, &mut call).unwrap();
    drop(call);
    assert!(placeholder.exists());

    // A folder placeholder goes the same way, unless something was put into it.
    let folder = fx.ws.join("templates");
    let mut call = CallGuard::default();
    registry.lock().unwrap().create(&folder, true, &mut call).unwrap();
    assert!(folder.is_dir() && registry.lock().unwrap().is_placeholder(&folder));
    drop(call);
    assert!(!folder.exists());
}

#[test]
fn a_placeholder_left_by_a_dead_process_is_swept() {
    let fx = Fixture::new();
    let dir = fx.base.join("registry");
    let placeholder = fx.ws.join("HEARTBEAT.md");
    // A child process makes the placeholder and dies without cleaning up.
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "sandbox::tests::leave_a_placeholder_behind", "--nocapture", "--include-ignored"])
        .env("ROUTINES_SANDBOX_TEST_REGISTRY", &dir)
        .env("ROUTINES_SANDBOX_TEST_PLACEHOLDER", &placeholder)
        .status()
        .unwrap();
    assert!(status.success());
    assert!(placeholder.exists(), "the child did not leave its placeholder");
    let registry = Registry::open_at(dir).unwrap();
    registry.lock().unwrap().sweep();
    assert!(!placeholder.exists());
}

/// Run by `a_placeholder_left_by_a_dead_process_is_swept` in a child process.
#[test]
fn leave_a_placeholder_behind() {
    let (Some(dir), Some(path)) =
        (std::env::var_os("ROUTINES_SANDBOX_TEST_REGISTRY"), std::env::var_os("ROUTINES_SANDBOX_TEST_PLACEHOLDER"))
    else {
        return;
    };
    let registry = Registry::open_at(dir.into()).unwrap();
    let mut guard = CallGuard::default();
    registry.lock().unwrap().create(Path::new(&path), false, &mut guard).unwrap();
    std::process::exit(0);
}

#[test]
fn a_registry_folder_open_to_others_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fixture::new();
    let dir = fx.base.join("registry");
    fs::create_dir(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
    assert!(matches!(Registry::open_at(dir), Err(SandboxError::Io { .. })));
}
