//! Debouncing: raw file-system events become one fire per (routine, path) once the path has been quiet
//! for the trigger's `debounce` and the file's size and mtime agree on two checks. One tokio task owns
//! this state; notify's callback only forwards events into a channel.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fs;
use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use notify::Event;
use notify::event::{EventKind, ModifyKind, RemoveKind, RenameMode};
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Instant, MissedTickBehavior};
use tracing::{debug, warn};

use super::{FileEvent, FileFire, FileStamp, Shared, lock, relative};

/// How often watched folders are checked for having been deleted or replaced without an event.
const RECHECK: Duration = Duration::from_secs(2);
/// The shortest wait between two size checks, so that a zero debounce cannot spin.
const MIN_WAIT: Duration = Duration::from_millis(50);
/// How long the final state of a fired file is remembered to recognize repeated reports of its creation.
const SETTLED_MEMORY: Duration = Duration::from_secs(60);

/// The name used in routine files: `create`, `modify` or `remove`.
fn event_name(event: FileEvent) -> &'static str {
    match event {
        FileEvent::Create => "create",
        FileEvent::Modify => "modify",
        FileEvent::Remove => "remove",
    }
}

/// One path's change, in the order the events reported it.
pub(super) enum Change {
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
pub(super) fn changes_of(event: Event) -> Vec<Change> {
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
pub(super) struct FileStat {
    len: u64,
    modified: Option<SystemTime>,
}

impl FileStat {
    fn of(meta: &fs::Metadata) -> FileStat {
        FileStat { len: meta.len(), modified: meta.modified().ok() }
    }

    /// The stamp a fire carries; none without an mtime.
    fn stamp(self) -> Option<FileStamp> {
        let since = self.modified?.duration_since(SystemTime::UNIX_EPOCH).ok()?;
        Some(FileStamp { size: self.len, mtime_ns: i128::try_from(since.as_nanos()).ok()? })
    }
}

/// The burst of events of one (routine, path) not yet fired.
pub(super) struct Pending {
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
pub(super) struct Debouncer {
    pub(super) shared: Arc<Mutex<Shared>>,
    pub(super) pending: HashMap<(String, String), Pending>,
    /// The size and mtime each recently settled burst ended with, so that a late or repeated report of the
    /// same creation (an event delivered twice, or a scan of a folder watched again) does not fire again.
    pub(super) settled: HashMap<(String, String), (FileStat, Instant)>,
    pub(super) fires: mpsc::UnboundedSender<FileFire>,
}

impl Debouncer {
    /// Turns `raw` events into fires until the fires' receiver or `raw` closes. A request on
    /// `flushes` fires every pending burst at once and is answered when they are sent.
    pub(super) async fn run(
        mut self,
        mut raw: mpsc::UnboundedReceiver<notify::Result<Event>>,
        mut flushes: mpsc::UnboundedReceiver<oneshot::Sender<()>>,
    ) {
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
                () = tokio::time::sleep_until(next.unwrap_or(far)), if next.is_some() => self.flush(false),
                Some(done) = flushes.recv() => {
                    // Events already reported count too.
                    let mut batch = Vec::new();
                    while let Ok(more) = raw.try_recv() {
                        batch.push(more);
                    }
                    if !batch.is_empty() {
                        self.handle(batch);
                    }
                    self.flush(true);
                    let _ = done.send(());
                }
                _ = recheck.tick() => self.recheck(),
            }
        }
        debug!("File watcher stopped.");
    }

    pub(super) fn handle(&mut self, batch: Vec<notify::Result<Event>>) {
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
    pub(super) fn record(&mut self, shared: &Shared, abs: PathBuf, event: FileEvent) {
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
                    debug!(%routine, path = %rel, "A file change waits for its debounce.");
                    v.insert(Pending { abs: abs.clone(), first: event, replaced, last, deadline: now + wait, wait });
                }
            }
        }
    }

    /// Checks every burst whose quiet period is over: fires it if the file is gone or its size and mtime
    /// did not change since the last check, and otherwise waits one more period. `now`: every
    /// burst, without the wait and the second check (the daemon stops: a change it saw fires
    /// as it is now rather than not at all).
    pub(super) fn flush(&mut self, now_all: bool) {
        let now = Instant::now();
        let due: Vec<(String, String)> =
            self.pending.iter().filter(|(_, p)| now_all || p.deadline <= now).map(|(k, _)| k.clone()).collect();
        if due.is_empty() {
            return;
        }
        let shared = Arc::clone(&self.shared);
        let shared = lock(&shared);
        for key in due {
            let Some(p) = self.pending.get_mut(&key) else { continue };
            // A removal's stamp is the file as last seen.
            let mut stamp = p.last.and_then(FileStat::stamp);
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
                    if p.last != Some(now_stat) && !now_all {
                        p.last = Some(now_stat);
                        p.deadline = now + p.wait;
                        continue;
                    }
                    self.settled.insert(key.clone(), (now_stat, now));
                    stamp = now_stat.stamp();
                    if p.replaced { FileEvent::Create } else { FileEvent::Modify }
                }
                Err(error) => {
                    debug!(path = %p.abs.display(), %error, "Cannot read a changed file's size; firing without the check.");
                    stamp = None;
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
            if self.fires.send(FileFire { routine, path, event, stamp }).is_err() {
                return;
            }
        }
    }

    /// Repairs watches whose folder was deleted, replaced or created without an event reaching us.
    pub(super) fn recheck(&mut self) {
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
