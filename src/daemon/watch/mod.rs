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

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use notify::event::{EventKind, ModifyKind, RemoveKind, RenameMode};
use notify::{Event, RecursiveMode};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};
use tracing::{debug, warn};

pub use crate::routine::FileEvent;

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

/// How often watched folders are checked for having been deleted or replaced without an event.
const RECHECK: Duration = Duration::from_secs(2);
/// The shortest wait between two size checks, so that a zero debounce cannot spin.
const MIN_WAIT: Duration = Duration::from_millis(50);
/// The most entries one scan of a new folder visits.
const SCAN_LIMIT: usize = 10_000;
/// The deepest a scan of a new folder descends.
const SCAN_DEPTH: usize = 64;
/// How long the final state of a fired file is remembered to recognize repeated reports of its creation.
const SETTLED_MEMORY: Duration = Duration::from_secs(60);

/// Watches the workspace for the file triggers of all routines. Dropping it stops watching.
pub struct Watcher {
    shared: Arc<Mutex<Shared>>,
    task: JoinHandle<()>,
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
        let task = runtime.spawn(debouncer.run(raw_rx));
        Ok(Watcher { shared, task })
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

/// The name used in routine files: `create`, `modify` or `remove`.
fn event_name(event: FileEvent) -> &'static str {
    match event {
        FileEvent::Create => "create",
        FileEvent::Modify => "modify",
        FileEvent::Remove => "remove",
    }
}

/// One path's change, in the order the events reported it.
enum Change {
    Appeared(PathBuf),
    Modified(PathBuf),
    /// `folder` is true when the event said that the path was a folder.
    Gone {
        path: PathBuf,
        folder: bool,
    },
}

/// Maps a notify event to changes. Renames into a watched folder count as appearing, renames out of it
/// as going; an ambiguous rename (macOS) is decided by whether the path exists now.
fn changes_of(event: Event) -> Vec<Change> {
    let gone = |path| Change::Gone { path, folder: false };
    let by_existence = |path: PathBuf| {
        if fs::symlink_metadata(&path).is_ok() { Change::Appeared(path) } else { gone(path) }
    };
    match event.kind {
        EventKind::Create(_) | EventKind::Modify(ModifyKind::Name(RenameMode::To)) => {
            event.paths.into_iter().map(Change::Appeared).collect()
        }
        EventKind::Modify(ModifyKind::Name(RenameMode::From)) => event.paths.into_iter().map(gone).collect(),
        EventKind::Modify(ModifyKind::Name(RenameMode::Both)) => {
            let mut paths = event.paths.into_iter();
            let from = paths.next().map(gone);
            from.into_iter().chain(paths.map(Change::Appeared)).collect()
        }
        EventKind::Modify(ModifyKind::Name(_)) => event.paths.into_iter().map(by_existence).collect(),
        EventKind::Modify(_) => event.paths.into_iter().map(Change::Modified).collect(),
        EventKind::Remove(kind) => {
            let folder = kind == RemoveKind::Folder;
            event.paths.into_iter().map(|path| Change::Gone { path, folder }).collect()
        }
        EventKind::Any => event
            .paths
            .into_iter()
            .map(|path| if fs::symlink_metadata(&path).is_ok() { Change::Modified(path) } else { gone(path) })
            .collect(),
        EventKind::Access(_) | EventKind::Other => Vec::new(),
    }
}

/// Size and modification time, compared between checks to tell whether a file is still being written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStat {
    len: u64,
    modified: Option<SystemTime>,
}

impl FileStat {
    fn of(meta: &fs::Metadata) -> FileStat {
        FileStat { len: meta.len(), modified: meta.modified().ok() }
    }
}

/// The burst of events of one (routine, path) not yet fired.
struct Pending {
    abs: PathBuf,
    /// The event that began the burst.
    first: FileEvent,
    /// Whether the burst saw a creation or a removal (the file at the end is then a new one).
    replaced: bool,
    /// The size and mtime seen at the last event or check; `None` when the file could not be read.
    last: Option<FileStat>,
    deadline: Instant,
    wait: Duration,
}

/// The task that turns raw events into fires.
struct Debouncer {
    shared: Arc<Mutex<Shared>>,
    pending: HashMap<(String, String), Pending>,
    /// The size and mtime each recently settled burst ended with, so that a late or repeated report of the
    /// same creation (an event delivered twice, or a scan of a folder watched again) does not fire again.
    settled: HashMap<(String, String), (FileStat, Instant)>,
    fires: mpsc::UnboundedSender<FileFire>,
}

impl Debouncer {
    async fn run(mut self, mut raw: mpsc::UnboundedReceiver<notify::Result<Event>>) {
        let mut recheck = tokio::time::interval_at(Instant::now() + RECHECK, RECHECK);
        recheck.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let fires = self.fires.clone();
        loop {
            let next = self.pending.values().map(|p| p.deadline).min();
            let far = Instant::now() + Duration::from_secs(3600);
            tokio::select! {
                () = fires.closed() => break,
                msg = raw.recv() => {
                    let Some(first) = msg else { break };
                    let mut batch = vec![first];
                    while let Ok(more) = raw.try_recv() {
                        batch.push(more);
                    }
                    self.handle(batch);
                }
                () = tokio::time::sleep_until(next.unwrap_or(far)), if next.is_some() => self.flush(),
                _ = recheck.tick() => self.recheck(),
            }
        }
        debug!("File watcher stopped.");
    }

    fn handle(&mut self, batch: Vec<notify::Result<Event>>) {
        let mut changes: Vec<Change> = Vec::new();
        let mut reshape = false;
        for res in batch {
            match res {
                Ok(event) => {
                    reshape |= event.need_rescan();
                    changes.extend(changes_of(event));
                }
                Err(error) => warn!(%error, "The file watcher reported an error; watching continues."),
            }
        }

        let shared = Arc::clone(&self.shared);
        let mut shared = lock(&shared);
        let mut scans: Vec<(PathBuf, bool)> = Vec::new();
        let mut files: Vec<(PathBuf, FileEvent)> = Vec::new();
        for change in changes {
            match change {
                Change::Appeared(path) if path.is_dir() => {
                    reshape |= shared.shapes_watches(&path);
                    // notify watches new folders inside a recursive watch itself, but files written into
                    // them before that happened would be missed.
                    if shared.inside_recursive(&path) {
                        scans.push((path, true));
                    }
                }
                Change::Appeared(path) => files.push((path, FileEvent::Create)),
                Change::Modified(path) => files.push((path, FileEvent::Modify)),
                Change::Gone { path, folder } => {
                    if shared.shapes_watches(&path) {
                        // The folder may already be back with the same inode, which the identity check in
                        // `reconcile` cannot tell apart: its watch is dropped and set up again.
                        shared.forget_under(&path);
                        reshape = true;
                    } else if !folder {
                        files.push((path, FileEvent::Remove));
                    }
                }
            }
        }
        if reshape {
            scans.extend(shared.reconcile());
        }
        for (root, recursive) in scans {
            Shared::scan(&root, recursive, &mut files);
        }
        for (path, event) in files {
            self.record(&shared, path, event);
        }
    }

    /// Adds one event to the pending burst of every routine whose globs match `abs`.
    fn record(&mut self, shared: &Shared, abs: PathBuf, event: FileEvent) {
        let Some(rel) = relative(&shared.workspace, &abs) else { return };
        let mut routines: Vec<(&str, Duration)> = Vec::new();
        for spec in shared.specs.iter().filter(|s| s.matcher.is_match(&rel)) {
            match routines.iter_mut().find(|(r, _)| *r == spec.routine) {
                Some((_, debounce)) => *debounce = (*debounce).max(spec.debounce),
                None => routines.push((&spec.routine, spec.debounce)),
            }
        }
        if routines.is_empty() {
            return;
        }
        let last = fs::metadata(&abs).ok().map(|m| FileStat::of(&m));
        let now = Instant::now();
        let replaced = event != FileEvent::Modify;
        for (routine, debounce) in routines {
            let wait = debounce.max(MIN_WAIT);
            let key = (routine.to_owned(), rel.clone());
            let seen = |(stat, _): &(FileStat, Instant)| Some(*stat) == last;
            if event == FileEvent::Create
                && !self.pending.contains_key(&key)
                && self.settled.get(&key).is_some_and(seen)
            {
                debug!(%routine, path = %rel, "A creation already reported was reported again; ignored.");
                continue;
            }
            match self.pending.entry(key) {
                Entry::Occupied(mut o) => {
                    let p = o.get_mut();
                    p.replaced |= replaced;
                    p.last = last;
                    p.deadline = now + wait;
                    p.wait = wait;
                }
                Entry::Vacant(v) => {
                    v.insert(Pending { abs: abs.clone(), first: event, replaced, last, deadline: now + wait, wait });
                }
            }
        }
    }

    /// Checks every burst whose quiet period is over: fires it if the file is gone or its size and mtime
    /// did not change since the last check, and otherwise waits one more period.
    fn flush(&mut self) {
        let now = Instant::now();
        let due: Vec<(String, String)> =
            self.pending.iter().filter(|(_, p)| p.deadline <= now).map(|(k, _)| k.clone()).collect();
        if due.is_empty() {
            return;
        }
        let shared = Arc::clone(&self.shared);
        let shared = lock(&shared);
        for key in due {
            let Some(p) = self.pending.get_mut(&key) else { continue };
            let event = match fs::metadata(&p.abs) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    self.settled.remove(&key);
                    if p.first == FileEvent::Create {
                        debug!(routine = %key.0, path = %key.1, "A file was created and removed within the debounce; nothing fires.");
                        self.pending.remove(&key);
                        continue;
                    }
                    FileEvent::Remove
                }
                Ok(meta) if meta.is_dir() => {
                    self.pending.remove(&key);
                    continue;
                }
                Ok(meta) => {
                    let now_stat = FileStat::of(&meta);
                    if p.last != Some(now_stat) {
                        p.last = Some(now_stat);
                        p.deadline = now + p.wait;
                        continue;
                    }
                    self.settled.insert(key.clone(), (now_stat, now));
                    if p.replaced { FileEvent::Create } else { FileEvent::Modify }
                }
                Err(error) => {
                    debug!(path = %p.abs.display(), %error, "Cannot read a changed file's size; firing without the check.");
                    if p.replaced { FileEvent::Create } else { FileEvent::Modify }
                }
            };
            self.pending.remove(&key);
            let (routine, path) = key;
            let listed = shared
                .specs
                .iter()
                .any(|s| s.routine == routine && s.events.contains(&event) && s.matcher.is_match(&path));
            if !listed {
                continue;
            }
            debug!(%routine, %path, event = event_name(event), "File trigger fires.");
            if self.fires.send(FileFire { routine, path, event }).is_err() {
                return;
            }
        }
    }

    /// Repairs watches whose folder was deleted, replaced or created without an event reaching us.
    fn recheck(&mut self) {
        let shared = Arc::clone(&self.shared);
        let mut shared = lock(&shared);
        let now = Instant::now();
        self.settled.retain(|_, (_, at)| now.duration_since(*at) < SETTLED_MEMORY);
        let mut files = Vec::new();
        for (root, recursive) in shared.reconcile() {
            Shared::scan(&root, recursive, &mut files);
        }
        for (path, event) in files {
            self.record(&shared, path, event);
        }
    }
}

#[cfg(test)]
mod tests;
