//! File triggers: watches the workspace for the globs of file triggers and sends one debounced fire per
//! routine and path.
//!
//! Watching:
//! - Each glob has a *target*: the deepest folder named by its literal leading components (`inbox/*.csv`
//!   → `inbox`, `**/x` → the workspace). A target is watched recursively when the rest of the glob can
//!   reach below it (`**`, or more than one remaining component).
//! - A missing target is replaced by its nearest existing ancestor inside the workspace, watched without
//!   recursion. When the target appears (or is deleted and created again) the watch moves back to it and
//!   the files already in it are treated as created, so files written before the new watch took effect
//!   still fire. Every two seconds the watched folders are also checked for having been deleted or
//!   replaced without an event reaching us.
//!
//! Firing:
//! - notify's callback only forwards raw events into a channel; one tokio task owns the debounce state,
//!   with one pending burst per (routine, path). A burst ends when no event arrived for the debounce
//!   period and the file's size and mtime are the same as at the last event or check; otherwise the task
//!   checks again one period later. A removed file needs no check.
//! - The event of a fire: `Remove` if the file is gone at the end; `Create` if the burst saw the file
//!   created or removed (a rename into the folder counts as created, one out of it as removed); `Modify`
//!   otherwise. A file created and removed within one burst fires nothing. Only events listed in the spec
//!   fire; the others end the burst silently.

mod debounce;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use notify::{Event, RecursiveMode};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tracing::{debug, warn};

pub use crate::routine::FileEvent;
use debounce::Debouncer;

/// What one file trigger of one routine watches.
#[derive(Debug, Clone)]
pub struct WatchSpec {
    pub routine: String,
    /// Globs relative to the workspace, e.g. `inbox/*.csv`. `*` does not cross `/`; `**` does.
    pub patterns: Vec<String>,
    /// The events that fire; the others are ignored.
    pub events: Vec<FileEvent>,
    /// How long a path must stay quiet before it fires.
    pub debounce: Duration,
}

/// One debounced file event for one routine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileFire {
    pub routine: String,
    /// The path relative to the workspace, with `/` separators.
    pub path: String,
    pub event: FileEvent,
    /// The file's size and mtime as it settled (for a removal: as it was last seen), when they
    /// could be read: with the path and event, the fire's identity, so nodes sharing a folder
    /// fire once per change (SPEC §12).
    pub stamp: Option<FileStamp>,
}

/// A file's size and modification time in nanoseconds since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    pub size: u64,
    pub mtime_ns: i128,
}

impl FileFire {
    /// The identity of this fire among its routine's fires (`runs.fire_key`): the event, the
    /// path, the size and the mtime; `None` without a stamp (then it is not told apart).
    pub fn key(&self) -> Option<String> {
        let stamp = self.stamp?;
        let event = match self.event {
            FileEvent::Create => "create",
            FileEvent::Modify => "modify",
            FileEvent::Remove => "remove",
        };
        Some(format!("file:{event}:{}:{}:{}", stamp.size, stamp.mtime_ns, self.path))
    }
}

/// Why the watcher could not start or take new specs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WatchError {
    #[error("routine `{routine}`: file glob `{pattern}` {reason}")]
    Pattern { routine: String, pattern: String, reason: String },
    #[error("cannot start the file watcher: {0}")]
    Backend(#[from] notify::Error),
    #[error("the file watcher must be started inside a tokio runtime (this is a bug)")]
    NoRuntime,
}

/// The most entries one scan of a new folder visits.
const SCAN_LIMIT: usize = 10_000;
/// The deepest a scan of a new folder descends.
const SCAN_DEPTH: usize = 64;

/// Watches the workspace for the file triggers of all routines. Dropping it stops watching.
pub struct Watcher {
    shared: Arc<Mutex<Shared>>,
    task: JoinHandle<()>,
    flushes: mpsc::UnboundedSender<oneshot::Sender<()>>,
}

impl Watcher {
    /// Starts watching. Fires are sent on `tx`. `poll`: `Some(interval)` uses notify's `PollWatcher`, which
    /// scans the watched folders every `interval` (for file systems without change events, such as network
    /// mounts); `None` uses the platform's event API. Must be called inside a tokio runtime.
    pub fn start(
        workspace: PathBuf,
        specs: Vec<WatchSpec>,
        tx: mpsc::UnboundedSender<FileFire>,
        poll: Option<Duration>,
    ) -> Result<Watcher, WatchError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| WatchError::NoRuntime)?;
        let specs = compile_all(&specs)?;
        let workspace = std::path::absolute(&workspace).unwrap_or(workspace);
        let workspace = fs::canonicalize(&workspace).unwrap_or(workspace);

        let (raw_tx, raw_rx) = mpsc::unbounded_channel();
        // The callback runs on notify's thread; it must never block or take a lock of ours.
        let handler = move |res: notify::Result<Event>| {
            let _ = raw_tx.send(res);
        };
        let backend: Box<dyn notify::Watcher + Send> = match poll {
            Some(interval) => {
                Box::new(notify::PollWatcher::new(handler, notify::Config::default().with_poll_interval(interval))?)
            }
            None => Box::new(notify::recommended_watcher(handler)?),
        };
        let mut shared = Shared {
            workspace,
            backend,
            specs,
            watched: HashMap::new(),
            failed: HashSet::new(),
            warned_missing_workspace: false,
        };
        shared.reconcile();
        let shared = Arc::new(Mutex::new(shared));
        let debouncer =
            Debouncer { shared: Arc::clone(&shared), pending: HashMap::new(), settled: HashMap::new(), fires: tx };
        let (flushes, flush_rx) = mpsc::unbounded_channel();
        let task = runtime.spawn(debouncer.run(raw_rx, flush_rx));
        Ok(Watcher { shared, task, flushes })
    }

    /// Fires every change still waiting for its debounce now, as the file is, and returns once
    /// those fires are sent (the daemon stops: a change it saw is not dropped for a quiet
    /// period that did not end). Returns at once when the watcher has stopped.
    pub async fn flush(&self) {
        let (done, answered) = oneshot::channel();
        if self.flushes.send(done).is_ok() {
            let _ = answered.await;
        }
    }

    /// Replaces the specs, adding and removing folder watches as needed. Files that already exist in newly
    /// watched folders do not fire. Pending fires of routines that no longer match their path are dropped.
    /// On an invalid glob nothing changes.
    pub fn update(&self, specs: Vec<WatchSpec>) -> Result<(), WatchError> {
        let specs = compile_all(&specs)?;
        let mut shared = lock(&self.shared);
        shared.specs = specs;
        shared.reconcile();
        Ok(())
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher").finish_non_exhaustive()
    }
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A spec with its globs compiled and its folders worked out.
struct Compiled {
    routine: String,
    matcher: GlobSet,
    /// Folders relative to the workspace, and whether each is watched recursively.
    targets: Vec<Target>,
    events: Vec<FileEvent>,
    debounce: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Target {
    dir: PathBuf,
    recursive: bool,
}

fn compile_all(specs: &[WatchSpec]) -> Result<Vec<Compiled>, WatchError> {
    specs.iter().map(compile).collect()
}

fn compile(spec: &WatchSpec) -> Result<Compiled, WatchError> {
    let refuse = |pattern: &str, reason: String| WatchError::Pattern {
        routine: spec.routine.clone(),
        pattern: pattern.to_owned(),
        reason,
    };
    let mut set = GlobSetBuilder::new();
    let mut targets = Vec::new();
    for raw in &spec.patterns {
        let pattern = normalize(raw);
        if pattern.is_empty() {
            return Err(refuse(raw, "is empty".to_owned()));
        }
        if pattern.starts_with('/') || pattern.split('/').any(|seg| seg == "..") {
            return Err(refuse(raw, "leaves the workspace".to_owned()));
        }
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| refuse(raw, format!("is not a valid glob: {}", e.kind())))?;
        set.add(glob);
        let target = target_of(pattern);
        if !targets.contains(&target) {
            targets.push(target);
        }
    }
    let matcher = set.build().map_err(|e| refuse(&spec.patterns.join(", "), format!("cannot be compiled: {e}")))?;
    Ok(Compiled {
        routine: spec.routine.clone(),
        matcher,
        targets,
        events: spec.events.clone(),
        debounce: spec.debounce,
    })
}

/// Drops leading `./` segments, which relative paths never carry.
fn normalize(pattern: &str) -> &str {
    let mut p = pattern;
    while let Some(rest) = p.strip_prefix("./") {
        p = rest.trim_start_matches('/');
    }
    p
}

/// The folder to watch for `pattern`: its leading components without glob syntax (never the last one,
/// which names the files), recursive when the rest has more than one component or contains `**`.
fn target_of(pattern: &str) -> Target {
    let parts: Vec<&str> = pattern.split('/').collect();
    let is_literal = |s: &str| !s.contains(['*', '?', '[', ']', '{', '}', '\\']);
    let literal = parts[..parts.len().saturating_sub(1)].iter().take_while(|s| is_literal(s)).count();
    let rest = &parts[literal..];
    let dir: PathBuf = parts[..literal].iter().filter(|s| !s.is_empty()).collect();
    Target { dir, recursive: rest.len() > 1 || rest.iter().any(|s| s.contains("**")) }
}

/// `path` relative to `workspace` with `/` separators; `None` outside the workspace, for the workspace
/// itself and for names that are not UTF-8.
fn relative(workspace: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(workspace).ok()?;
    let mut out = String::new();
    for component in rel.components() {
        let Component::Normal(name) = component else { return None };
        if !out.is_empty() {
            out.push('/');
        }
        out.push_str(name.to_str()?);
    }
    (!out.is_empty()).then_some(out)
}

/// A folder's identity (device and inode), so that a deleted and recreated folder is noticed.
type DirId = Option<(u64, u64)>;

/// `Some(identity)` when `path` is an existing folder.
fn existing_dir(path: &Path) -> Option<DirId> {
    let meta = fs::metadata(path).ok()?;
    meta.is_dir().then(|| dir_id(&meta))
}

#[cfg(unix)]
fn dir_id(meta: &fs::Metadata) -> DirId {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn dir_id(_meta: &fs::Metadata) -> DirId {
    None
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Watched {
    recursive: bool,
    id: DirId,
}

#[derive(Debug, Clone, Copy)]
struct Desired {
    recursive: bool,
    /// A spec's own folder (scanned when it appears), not only a stand-in ancestor of a missing one.
    target: bool,
    id: DirId,
}

/// State shared by [`Watcher::update`] and the debounce task. The lock is never held across an await,
/// and notify's callback never takes it, so calling into the backend while holding it cannot deadlock.
struct Shared {
    workspace: PathBuf,
    backend: Box<dyn notify::Watcher + Send>,
    specs: Vec<Compiled>,
    watched: HashMap<PathBuf, Watched>,
    /// Folders whose watch failed for a reason other than being missing; warned about once.
    failed: HashSet<PathBuf>,
    warned_missing_workspace: bool,
}

impl Shared {
    /// The folders that should be watched now: each existing target, or else its nearest existing
    /// ancestor inside the workspace; folders inside a recursively watched one are left out.
    fn desired(&self) -> BTreeMap<PathBuf, Desired> {
        let mut want: BTreeMap<PathBuf, Desired> = BTreeMap::new();
        for target in self.specs.iter().flat_map(|s| &s.targets) {
            let abs = self.workspace.join(&target.dir);
            if let Some(id) = existing_dir(&abs) {
                let d = want.entry(abs).or_insert(Desired { recursive: false, target: true, id });
                d.recursive |= target.recursive;
                d.target = true;
                continue;
            }
            let mut cur = abs.as_path();
            while let Some(parent) = cur.parent() {
                if !parent.starts_with(&self.workspace) {
                    break;
                }
                if let Some(id) = existing_dir(parent) {
                    want.entry(parent.to_path_buf()).or_insert(Desired { recursive: false, target: false, id });
                    break;
                }
                cur = parent;
            }
        }
        let recursive: Vec<PathBuf> = want.iter().filter(|(_, d)| d.recursive).map(|(p, _)| p.clone()).collect();
        want.retain(|p, _| !recursive.iter().any(|r| p != r && p.starts_with(r)));
        want
    }

    /// Brings the watches in line with [`Shared::desired`], repeating while folders keep appearing.
    /// Returns the targets newly watched (with their recursion), whose existing files are new to us.
    fn reconcile(&mut self) -> Vec<(PathBuf, bool)> {
        let mut fresh = Vec::new();
        for _ in 0..16 {
            let added = self.reconcile_once(&mut fresh);
            if !added {
                break;
            }
        }
        fresh
    }

    fn reconcile_once(&mut self, fresh: &mut Vec<(PathBuf, bool)>) -> bool {
        let desired = self.desired();
        if desired.is_empty() && !self.specs.is_empty() && existing_dir(&self.workspace).is_none() {
            if !self.warned_missing_workspace {
                warn!(workspace = %self.workspace.display(), "The workspace does not exist; file triggers wait for it.");
                self.warned_missing_workspace = true;
            }
        } else {
            self.warned_missing_workspace = false;
        }
        // Remove first: unwatching a folder also drops the watches notify added inside it.
        let stale: Vec<PathBuf> = self
            .watched
            .iter()
            .filter(|(p, w)| desired.get(*p).is_none_or(|d| d.recursive != w.recursive || d.id != w.id))
            .map(|(p, _)| p.clone())
            .collect();
        for path in stale {
            self.watched.remove(&path);
            if let Err(error) = self.backend.unwatch(&path) {
                debug!(folder = %path.display(), %error, "Unwatching a folder failed; it was probably gone already.");
            }
        }
        let mut added = false;
        for (path, d) in desired {
            if self.watched.contains_key(&path) {
                continue;
            }
            let mode = if d.recursive { RecursiveMode::Recursive } else { RecursiveMode::NonRecursive };
            match self.backend.watch(&path, mode) {
                Ok(()) => {
                    debug!(folder = %path.display(), recursive = d.recursive, "Watching folder.");
                    self.watched.insert(path.clone(), Watched { recursive: d.recursive, id: d.id });
                    added = true;
                    let recovered = self.failed.remove(&path);
                    if d.target && !recovered {
                        fresh.push((path, d.recursive));
                    }
                }
                Err(error) if is_not_found(&error) => {
                    debug!(folder = %path.display(), "A folder vanished before it could be watched.");
                }
                Err(error) => {
                    if self.failed.insert(path.clone()) {
                        warn!(folder = %path.display(), %error, "Cannot watch a folder for file triggers; will retry.");
                    }
                }
            }
        }
        added
    }

    /// Drops the watches of `path` and of the folders under it, which are gone or about to be replaced.
    fn forget_under(&mut self, path: &Path) {
        let lost: Vec<PathBuf> = self.watched.keys().filter(|w| w.starts_with(path)).cloned().collect();
        for folder in lost {
            self.watched.remove(&folder);
            if let Err(error) = self.backend.unwatch(&folder) {
                debug!(folder = %folder.display(), %error, "Unwatching a removed folder failed; it was probably gone already.");
            }
        }
    }

    /// Whether `path` is a watched folder, a target, or an ancestor of one: its appearance or removal
    /// changes what must be watched.
    fn shapes_watches(&self, path: &Path) -> bool {
        self.watched.keys().any(|w| w.starts_with(path))
            || self.specs.iter().flat_map(|s| &s.targets).any(|t| self.workspace.join(&t.dir).starts_with(path))
    }

    /// Whether `path` lies strictly inside a recursively watched folder.
    fn inside_recursive(&self, path: &Path) -> bool {
        self.watched.iter().any(|(w, d)| d.recursive && path != w && path.starts_with(w))
    }

    /// Lists the files under `root` (only its direct entries unless `recursive`), as creations.
    fn scan(root: &Path, recursive: bool, out: &mut Vec<(PathBuf, FileEvent)>) {
        let mut stack = vec![(root.to_path_buf(), 0usize)];
        let mut budget = SCAN_LIMIT;
        while let Some((dir, depth)) = stack.pop() {
            let Ok(entries) = fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                if budget == 0 {
                    warn!(folder = %root.display(), "Stopped scanning a new folder after {SCAN_LIMIT} entries.");
                    return;
                }
                budget -= 1;
                match entry.file_type() {
                    Ok(t) if t.is_dir() => {
                        if recursive && depth < SCAN_DEPTH {
                            stack.push((entry.path(), depth + 1));
                        }
                    }
                    Ok(_) => out.push((entry.path(), FileEvent::Create)),
                    Err(_) => {}
                }
            }
        }
    }
}

fn is_not_found(error: &notify::Error) -> bool {
    match &error.kind {
        notify::ErrorKind::PathNotFound => true,
        notify::ErrorKind::Io(e) => e.kind() == io::ErrorKind::NotFound,
        _ => false,
    }
}

#[cfg(test)]
mod tests;
