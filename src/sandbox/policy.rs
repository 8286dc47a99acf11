//! The sandbox policy as data, and its resolution against the file system.
//!
//! [`SandboxPolicy`] says what a command may do; [`resolve`] turns it into
//! canonical paths and, for every read-only carve-out inside a writable root,
//! the [`Step`]s that keep it read-only. Both mechanisms (bubblewrap and
//! Landlock) start from the same [`Resolved`] value.

use std::io;
use std::path::{Component, Path, PathBuf};

use super::SandboxError;

/// What one sandboxed command may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// The workspace: the default writable root and working directory.
    pub workspace: PathBuf,
    /// Folders the command may write (default: the workspace). They must exist.
    pub writable: Vec<PathBuf>,
    /// Paths inside writable roots that must stay read-only: the engine's config,
    /// `routines_dir`, `templates_dir`, `skills_dir`, `data_dir`, identity files,
    /// `HEARTBEAT.md`, `.git/config`, `.git/hooks`, `security.protected_paths`.
    /// A path that does not exist yet is kept from being created.
    pub read_only: Vec<PathBuf>,
    /// Paths the command must not see: home folders, `security.forbidden_paths`.
    /// A hidden folder looks empty, a hidden file looks empty; neither is writable.
    /// A writable root inside a hidden folder (or equal to one) stays visible.
    pub hidden: Vec<PathBuf>,
    /// Whether the command may use the network.
    pub network: bool,
    /// Whether the command may start other processes or threads (`fork`, `clone`); without,
    /// they fail with `EACCES` (`seccomp.rs`).
    pub processes: bool,
    /// How many processes and threads the command may have at a time, all it starts
    /// included (`cgroup.rs`); `None`: no cap.
    pub max_processes: Option<u32>,
    /// The whole environment of the command (nothing else is inherited).
    pub env: Vec<(String, String)>,
    /// The working directory of the command.
    pub cwd: PathBuf,
}

impl SandboxPolicy {
    /// A policy that writes only the workspace, hides the home folders, has no
    /// network and an empty environment.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        let workspace = workspace.into();
        SandboxPolicy {
            writable: vec![workspace.clone()],
            read_only: Vec::new(),
            hidden: Self::home_dirs(),
            network: false,
            processes: true,
            max_processes: None,
            env: Vec::new(),
            cwd: workspace.clone(),
            workspace,
        }
    }

    /// The home folders: `/root`, `/home`, and `$HOME` where it is elsewhere.
    pub fn home_dirs() -> Vec<PathBuf> {
        let mut dirs = vec![PathBuf::from("/root"), PathBuf::from("/home")];
        if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
            if home.is_absolute() && home != Path::new("/") && !dirs.iter().any(|d| home.starts_with(d)) {
                dirs.push(home);
            }
        }
        dirs
    }
}

/// How one path on the way to a read-only carve-out is handled.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Step {
    /// An existing folder between a writable root and a carve-out. It stays
    /// writable but must not be renamed or removed, or the carve-out could be
    /// recreated under its old path.
    Pin(PathBuf),
    /// An existing file or folder kept read-only: the carve-out itself, or a
    /// file standing where a folder of the carve-out's path would be.
    Protect(PathBuf),
    /// The carve-out itself, missing: it must not be created.
    Missing(PathBuf),
    /// The first missing component of a carve-out's path, a folder on its way
    /// (`.git` of `.git/config`): it must not be created.
    MissingFolder(PathBuf),
}

impl Step {
    pub(crate) fn path(&self) -> &Path {
        match self {
            Step::Pin(p) | Step::Protect(p) | Step::Missing(p) | Step::MissingFolder(p) => p,
        }
    }
}

/// A policy resolved against the file system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// Canonical writable roots, without duplicates.
    pub writable: Vec<PathBuf>,
    /// Steps for the carve-outs inside writable roots (sorted, without duplicates).
    /// Carve-outs outside every writable root are read-only anyway.
    pub steps: Vec<Step>,
    /// Hidden paths: canonical where they exist, otherwise normalized.
    pub hidden: Vec<PathBuf>,
    /// The working directory.
    pub cwd: PathBuf,
}

impl Resolved {
    /// The paths that must not be written: each carve-out's last step, and the hidden paths.
    pub(crate) fn write_exceptions(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = self
            .steps
            .iter()
            .filter(|s| !matches!(s, Step::Pin(_)))
            .map(|s| s.path().to_path_buf())
            .chain(self.hidden.iter().cloned())
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

/// Resolves `policy`: canonical roots, the steps of every carve-out, hidden paths.
///
/// Refuses relative paths, writable roots or a working directory that do not
/// exist, and carve-outs reached through a symlink inside a writable root.
pub(crate) fn resolve(policy: &SandboxPolicy) -> Result<Resolved, SandboxError> {
    resolve_with(policy, &|_| false)
}

/// [`resolve`], where `is_placeholder` tells the placeholders other calls made: a carve-out's
/// path ends at one (it is kept read-only as it is, and relied on).
pub(crate) fn resolve_with(
    policy: &SandboxPolicy,
    is_placeholder: &dyn Fn(&Path) -> bool,
) -> Result<Resolved, SandboxError> {
    let mut roots: Vec<(PathBuf, PathBuf)> = Vec::new();
    for root in &policy.writable {
        let lexical = normalize(root)?;
        let canonical = existing_canonical(&lexical)?;
        if !roots.iter().any(|(_, c)| *c == canonical) {
            roots.push((lexical, canonical));
        }
    }
    let cwd = normalize(&policy.cwd)?;
    existing_canonical(&cwd)?;

    let mut steps = Vec::new();
    for path in &policy.read_only {
        let lexical = normalize(path)?;
        if let Some((root, rel)) = locate(&lexical, &roots)? {
            steps.extend(walk(&lexical, &root, &rel, is_placeholder)?);
        }
    }
    steps.sort();
    steps.dedup();
    // A path missing both as a carve-out and as a folder on the way to another gets the folder.
    let folders: Vec<PathBuf> = steps
        .iter()
        .filter_map(|s| match s {
            Step::MissingFolder(p) => Some(p.clone()),
            _ => None,
        })
        .collect();
    steps.retain(|s| !matches!(s, Step::Missing(p) if folders.contains(p)));

    let mut hidden = Vec::new();
    for path in &policy.hidden {
        let lexical = normalize(path)?;
        let resolved = match std::fs::canonicalize(&lexical) {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::NotFound => lexical,
            Err(e) => return Err(SandboxError::io(format!("cannot resolve `{}`", lexical.display()), e)),
        };
        // A writable root named as hidden too (the workspace is the home
        // folder) stays usable: being writable was asked for explicitly.
        if !hidden.contains(&resolved) && !roots.iter().any(|(_, c)| *c == resolved) {
            hidden.push(resolved);
        }
    }

    Ok(Resolved { writable: roots.into_iter().map(|(_, c)| c).collect(), steps, hidden, cwd })
}

/// Makes `path` absolute-checked and lexically normal: no `.`, no `..`.
pub(crate) fn normalize(path: &Path) -> Result<PathBuf, SandboxError> {
    if !path.is_absolute() {
        return Err(SandboxError::RelativePath { path: path.to_path_buf() });
    }
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    Ok(out)
}

fn existing_canonical(path: &Path) -> Result<PathBuf, SandboxError> {
    std::fs::canonicalize(path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => SandboxError::MissingPath { path: path.to_path_buf() },
        _ => SandboxError::io(format!("cannot resolve `{}`", path.display()), e),
    })
}

/// The canonical form of the deepest existing ancestor of `path`, with the
/// missing rest appended.
fn canonical_prefix(path: &Path) -> Result<PathBuf, SandboxError> {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        match std::fs::canonicalize(&existing) {
            Ok(mut c) => {
                for part in rest.iter().rev() {
                    c.push(part);
                }
                return Ok(c);
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let Some(name) = existing.file_name().map(|n| n.to_os_string()) else {
                    return Ok(path.to_path_buf());
                };
                rest.push(name);
                existing.pop();
            }
            Err(e) => return Err(SandboxError::io(format!("cannot resolve `{}`", path.display()), e)),
        }
    }
}

/// The deepest writable root holding `path` (canonical), and the path relative to it.
///
/// A path is matched lexically first (so a symlink inside the root is seen by
/// [`walk`]), then through its canonical prefix (a path outside that leads into
/// a writable root through a read-only symlink).
fn locate(path: &Path, roots: &[(PathBuf, PathBuf)]) -> Result<Option<(PathBuf, PathBuf)>, SandboxError> {
    let deepest = |candidate: &Path| {
        roots
            .iter()
            .filter_map(|(lexical, canonical)| {
                candidate
                    .strip_prefix(lexical)
                    .or_else(|_| candidate.strip_prefix(canonical))
                    .ok()
                    .map(|rel| (canonical.clone(), rel.to_path_buf()))
            })
            .max_by_key(|(root, _)| root.components().count())
    };
    if let Some(found) = deepest(path) {
        return Ok(Some(found));
    }
    Ok(deepest(&canonical_prefix(path)?))
}

/// The steps that keep `root/rel` read-only (`original` is the path as given, for messages).
fn walk(
    original: &Path,
    root: &Path,
    rel: &Path,
    is_placeholder: &dyn Fn(&Path) -> bool,
) -> Result<Vec<Step>, SandboxError> {
    let parts: Vec<_> = rel.components().collect();
    if parts.is_empty() {
        return Ok(vec![Step::Protect(root.to_path_buf())]);
    }
    let mut steps = Vec::new();
    let mut current = root.to_path_buf();
    for (i, part) in parts.iter().enumerate() {
        current.push(part);
        let last = i + 1 == parts.len();
        match std::fs::symlink_metadata(&current) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                steps.push(if last { Step::Missing(current) } else { Step::MissingFolder(current) });
                break;
            }
            Err(e) => return Err(SandboxError::io(format!("cannot inspect `{}`", current.display()), e)),
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(SandboxError::SymlinkedCarveOut { path: original.to_path_buf(), link: current });
            }
            Ok(_) if last || is_placeholder(&current) => {
                steps.push(Step::Protect(current));
                break;
            }
            Ok(meta) if meta.is_dir() => steps.push(Step::Pin(current.clone())),
            Ok(_) => {
                steps.push(Step::Protect(current));
                break;
            }
        }
    }
    Ok(steps)
}
