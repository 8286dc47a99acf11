//! The policy as bubblewrap arguments.
//!
//! The view is built from nothing (bubblewrap's empty root) as a stack of
//! mounts, shallow paths first so deeper ones land on top:
//! - the host's program and library folders and selected `/etc` entries,
//!   read-only (`view.rs`), a fresh `/dev`, a `/proc` of the sandbox's own PID
//!   namespace and a private `/tmp`; nothing else of the host exists inside;
//! - writable roots bound read-write;
//! - hidden folders replaced by an empty tmpfs (made read-only at the end),
//!   hidden files by an empty read-only file, where they are in the view;
//! - carve-outs bound read-only onto themselves, folders on their way bound
//!   onto themselves (a mount point cannot be renamed or removed), and missing
//!   carve-outs covered by an empty read-only placeholder: a folder where the
//!   missing part would be a folder on the way (a missing `.git`, so that git
//!   sees no repository there rather than a broken one), a file otherwise;
//! - the root made read-only, so no folder of the view gets new entries.
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
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use super::policy::{Resolved, Step};
use super::view::{self, Part};

/// One mount of the view. For the same path the greater one wins.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Mount {
    /// A part of the host (`view.rs`).
    Host(Part),
    /// A fresh `/dev`.
    Dev,
    /// The PID namespace's `/proc`.
    Proc,
    /// An empty writable tmpfs private to the call (`/tmp`).
    Scratch,
    /// A writable root.
    Writable,
    /// A folder on the way to a carve-out: writable, but a mount point.
    Pin,
    /// Read-only onto itself.
    ReadOnly,
    /// An empty read-only file where a carve-out would be created.
    Placeholder,
    /// An empty read-only folder where a folder on the way to a carve-out would be created.
    PlaceholderDir,
    /// An existing hidden file: an empty read-only file over it.
    HideFile,
    /// An existing hidden folder: an empty tmpfs, read-only at the end.
    HideDir,
}

impl Mount {
    /// Whether the host's content shows at this mount (and so beneath it).
    fn shows_host(&self) -> bool {
        matches!(self, Mount::Host(Part::Bind(_)) | Mount::Writable | Mount::Pin | Mount::ReadOnly)
    }
}

/// The empty read-only file and folder that placeholders and hidden files are bound from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Empty<'a> {
    pub file: &'a Path,
    pub dir: &'a Path,
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
/// `empty` holds the sources of placeholders and hidden files; `fds` are the
/// descriptors the call passes to bubblewrap.
pub(crate) fn args(resolved: &Resolved, network: bool, empty: Empty<'_>, fds: Fds, argv: &[String]) -> Vec<OsString> {
    let mounts = mounts(resolved);
    let mut out: Vec<OsString> = Vec::with_capacity(128 + mounts.len() * 3 + argv.len());
    let mut push = |parts: &[&OsStr]| out.extend(parts.iter().map(|p| p.to_os_string()));
    let mut hidden_dirs = Vec::new();
    for (path, mount) in &mounts {
        let p = path.as_os_str();
        match mount {
            Mount::Host(Part::Link(target)) => push(&["--symlink".as_ref(), target, p]),
            Mount::Host(Part::Bind(source)) => push(&["--ro-bind".as_ref(), source.as_os_str(), p]),
            Mount::Dev => push(&["--dev".as_ref(), p]),
            Mount::Proc => push(&["--proc".as_ref(), p]),
            Mount::Scratch => push(&["--tmpfs".as_ref(), p]),
            Mount::Writable | Mount::Pin => push(&["--bind".as_ref(), p, p]),
            Mount::ReadOnly => push(&["--ro-bind".as_ref(), p, p]),
            Mount::Placeholder | Mount::HideFile => push(&["--ro-bind".as_ref(), empty.file.as_os_str(), p]),
            Mount::PlaceholderDir => push(&["--ro-bind".as_ref(), empty.dir.as_os_str(), p]),
            Mount::HideDir => {
                push(&["--tmpfs".as_ref(), p]);
                hidden_dirs.push(p);
            }
        }
    }
    for p in hidden_dirs {
        push(&["--remount-ro".as_ref(), p]);
    }
    push(&["--remount-ro".as_ref(), "/".as_ref()]);
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

/// The mounts of the view, in the order they are made.
fn mounts(resolved: &Resolved) -> Vec<(PathBuf, Mount)> {
    let mut mounts: BTreeMap<PathBuf, Mount> = BTreeMap::new();
    let put = |mounts: &mut BTreeMap<PathBuf, Mount>, path: PathBuf, mount: Mount| match mounts.get_mut(&path) {
        Some(slot) if *slot >= mount => {}
        Some(slot) => *slot = mount,
        None => {
            mounts.insert(path, mount);
        }
    };
    for (path, part) in view::system() {
        put(&mut mounts, path, Mount::Host(part));
    }
    put(&mut mounts, "/dev".into(), Mount::Dev);
    put(&mut mounts, "/proc".into(), Mount::Proc);
    put(&mut mounts, "/tmp".into(), Mount::Scratch);
    for root in &resolved.writable {
        put(&mut mounts, root.clone(), Mount::Writable);
    }
    for step in &resolved.steps {
        match step {
            Step::Pin(p) => put(&mut mounts, p.clone(), Mount::Pin),
            Step::Protect(p) => put(&mut mounts, p.clone(), Mount::ReadOnly),
            Step::Missing(p) => put(&mut mounts, p.clone(), Mount::Placeholder),
            Step::MissingFolder(p) => put(&mut mounts, p.clone(), Mount::PlaceholderDir),
        }
    }
    // A hidden path is mounted over only where the host shows through; elsewhere it does not
    // exist inside. Either way it shadows what lies beneath it.
    let shows_host = |mounts: &BTreeMap<PathBuf, Mount>, path: &Path| {
        path.ancestors().find_map(|a| mounts.get(a)).is_some_and(Mount::shows_host)
    };
    let mut unmounted = Vec::new();
    for path in &resolved.hidden {
        let shown = shows_host(&mounts, path);
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => {
                if !shown {
                    unmounted.push(path.clone());
                }
                put(&mut mounts, path.clone(), Mount::HideDir);
            }
            Ok(_) if shown => put(&mut mounts, path.clone(), Mount::HideFile),
            _ => {}
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
        .filter(|(path, mount)| match mount {
            Mount::HideDir => !unmounted.contains(path),
            Mount::Writable => true,
            _ => !shadowed(path),
        })
        .map(|(path, mount)| (path.clone(), mount.clone()))
        .collect();
    ordered.sort_by_key(|(path, _)| path.components().count());
    ordered
}

/// The arguments of the availability probe: the view and namespaces a
/// command gets, around `true`.
pub(crate) fn probe_args() -> Vec<OsString> {
    let resolved = Resolved { writable: Vec::new(), steps: Vec::new(), hidden: Vec::new(), cwd: "/".into() };
    let none = Path::new("/dev/null");
    args(&resolved, false, Empty { file: none, dir: none }, Fds::default(), &["true".to_string()])
}
