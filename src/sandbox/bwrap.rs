//! The policy as bubblewrap arguments.
//!
//! The view is built as a stack of mounts, shallow paths first so deeper ones
//! land on top:
//! - `/` read-only, a fresh `/dev`, a `/proc` of the sandbox's own PID
//!   namespace, a private `/tmp`, and an empty `/run` (where the host's
//!   daemons keep their sockets; with network, the resolver file is bound back);
//! - writable roots bound read-write;
//! - hidden folders replaced by an empty tmpfs (made read-only at the end),
//!   hidden files by an empty read-only file;
//! - carve-outs bound read-only onto themselves, folders on their way bound
//!   onto themselves (a mount point cannot be renamed or removed), and missing
//!   carve-outs covered by an empty read-only placeholder file.
//!
//! Then: new PID, IPC, UTS and cgroup namespaces, a new network namespace
//! unless the policy allows network, every capability dropped, a new session,
//! and the sandbox dies with its parent. When the command exits, the
//! namespace's first process (bubblewrap's init) exits and the kernel kills
//! everything else in the namespace, daemonized or not. bubblewrap itself
//! returns as soon as the command has exited, a moment before that is done,
//! so [`SandboxedChild::wait`](super::SandboxedChild::wait) also waits for the
//! init (whose pid comes through `--info-fd`) to be gone.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::policy::{Resolved, Step};

/// One mount of the view. For the same path the greater one wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Mount {
    /// A fresh `/dev`.
    Dev,
    /// The PID namespace's `/proc`.
    Proc,
    /// An empty writable tmpfs private to the call (`/tmp`, `/run`).
    Scratch,
    /// A writable root.
    Writable,
    /// A folder on the way to a carve-out: writable, but a mount point.
    Pin,
    /// Read-only onto itself.
    ReadOnly,
    /// An empty read-only file where a carve-out would be created.
    Placeholder,
    /// An existing hidden file: an empty read-only file over it.
    HideFile,
    /// An existing hidden folder: an empty tmpfs, read-only at the end.
    HideDir,
}

/// Descriptors passed to bubblewrap.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Fds {
    /// Where bubblewrap writes the host pid of the namespace's first process (`--info-fd`), so
    /// the caller can wait for the namespace itself to end.
    pub info: Option<i32>,
    /// A seccomp filter for the command (`--seccomp`, read to its end).
    pub seccomp: Option<i32>,
}

/// Builds the bubblewrap arguments for `argv` (everything after the program).
///
/// `empty` is an empty read-only file on the host (the source of placeholders
/// and hidden files).
/// `fds` are the descriptors the call passes to bubblewrap.
pub(crate) fn args(resolved: &Resolved, network: bool, empty: &Path, fds: Fds, argv: &[String]) -> Vec<OsString> {
    let mut mounts: BTreeMap<PathBuf, Mount> = BTreeMap::new();
    let mut put = |path: PathBuf, mount: Mount| {
        let slot = mounts.entry(path).or_insert(mount);
        *slot = (*slot).max(mount);
    };
    put("/dev".into(), Mount::Dev);
    put("/proc".into(), Mount::Proc);
    put("/tmp".into(), Mount::Scratch);
    put("/run".into(), Mount::Scratch);
    if network {
        // Keep name resolution working when /etc/resolv.conf points into /run.
        if let Ok(conf) = std::fs::canonicalize("/etc/resolv.conf") {
            if conf.starts_with("/run") {
                put(conf, Mount::ReadOnly);
            }
        }
    }
    for root in &resolved.writable {
        put(root.clone(), Mount::Writable);
    }
    for step in &resolved.steps {
        match step {
            Step::Pin(p) => put(p.clone(), Mount::Pin),
            Step::Protect(p) => put(p.clone(), Mount::ReadOnly),
            Step::Missing(p) => put(p.clone(), Mount::Placeholder),
        }
    }
    for path in &resolved.hidden {
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => put(path.clone(), Mount::HideDir),
            Ok(_) => put(path.clone(), Mount::HideFile),
            Err(_) => {}
        }
    }

    // Nothing under a hidden folder shows through, except a writable root
    // inside it (the workspace may well live under /home).
    let shadowed = |path: &Path| {
        path.ancestors()
            .skip(1)
            .find_map(|a| match mounts.get(a) {
                Some(Mount::HideDir) => Some(true),
                Some(Mount::Writable) => Some(false),
                _ => None,
            })
            .unwrap_or(false)
    };
    let mut ordered: Vec<(PathBuf, Mount)> = mounts
        .iter()
        .filter(|(path, mount)| matches!(mount, Mount::Writable | Mount::HideDir) || !shadowed(path))
        .map(|(path, mount)| (path.clone(), *mount))
        .collect();
    ordered.sort_by_key(|(path, _)| path.components().count());

    let mut out: Vec<OsString> = Vec::with_capacity(32 + ordered.len() * 3 + argv.len());
    let mut push = |parts: &[&std::ffi::OsStr]| out.extend(parts.iter().map(|p| p.to_os_string()));
    push(&["--ro-bind".as_ref(), "/".as_ref(), "/".as_ref()]);
    let mut hidden_dirs = Vec::new();
    for (path, mount) in &ordered {
        let p = path.as_os_str();
        match mount {
            Mount::Dev => push(&["--dev".as_ref(), p]),
            Mount::Proc => push(&["--proc".as_ref(), p]),
            Mount::Scratch => push(&["--tmpfs".as_ref(), p]),
            Mount::Writable | Mount::Pin => push(&["--bind".as_ref(), p, p]),
            Mount::ReadOnly => push(&["--ro-bind".as_ref(), p, p]),
            Mount::Placeholder | Mount::HideFile => push(&["--ro-bind".as_ref(), empty.as_os_str(), p]),
            Mount::HideDir => {
                push(&["--tmpfs".as_ref(), p]);
                hidden_dirs.push(p);
            }
        }
    }
    for p in hidden_dirs {
        push(&["--remount-ro".as_ref(), p]);
    }
    push(&[
        "--unshare-pid".as_ref(),
        "--unshare-ipc".as_ref(),
        "--unshare-uts".as_ref(),
        "--unshare-cgroup-try".as_ref(),
    ]);
    if !network {
        push(&["--unshare-net".as_ref()]);
    }
    let info = fds.info.map(|fd| OsString::from(fd.to_string()));
    if let Some(fd) = &info {
        push(&["--info-fd".as_ref(), fd.as_os_str()]);
    }
    let seccomp = fds.seccomp.map(|fd| OsString::from(fd.to_string()));
    if let Some(fd) = &seccomp {
        push(&["--seccomp".as_ref(), fd.as_os_str()]);
    }
    push(&[
        "--cap-drop".as_ref(),
        "ALL".as_ref(),
        "--die-with-parent".as_ref(),
        "--new-session".as_ref(),
        "--chdir".as_ref(),
        resolved.cwd.as_os_str(),
        "--".as_ref(),
    ]);
    out.extend(argv.iter().map(OsString::from));
    out
}

/// The arguments of the availability probe: the same namespaces and mounts
/// a command gets, around `true`.
pub(crate) fn probe_args() -> Vec<&'static str> {
    vec![
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--unshare-net",
        "--cap-drop",
        "ALL",
        "--die-with-parent",
        "--new-session",
        "--",
        "true",
    ]
}
