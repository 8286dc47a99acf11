//! The host-side bookkeeping of sandboxed calls: placeholders and scratch folders.
//!
//! A carve-out that does not exist yet is kept from being created by mounting
//! an empty read-only file where it would be. bubblewrap must create that
//! mount point on the host (inside the writable root), so it has to be removed
//! after the call, but not while another call, in this process or another,
//! still relies on it: removing a mount point on the host detaches the mount
//! in every sandbox that has it, and the path could then be created there.
//!
//! Each call that uses a placeholder leaves a marker file named after its
//! process in `$TMPDIR/routines-sandbox-UID/mounts/HASH/`; the last call to
//! leave removes the placeholder if it is still an empty file. All of it
//! happens under an exclusive `flock`, and markers of dead processes are swept
//! (with their placeholders) before every call, so a crash leaves nothing
//! behind for long. Landlock calls get a private scratch folder here instead.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::SandboxError;

/// Numbers the markers and scratch folders of this process.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// The registry folder of this user.
#[derive(Debug, Clone)]
pub(crate) struct Registry {
    dir: PathBuf,
}

/// Holds the registry lock until dropped.
pub(crate) struct Locked<'a> {
    registry: &'a Registry,
    _file: File,
}

/// What one call holds in the registry; released when dropped (after the call).
#[derive(Debug, Default)]
pub(crate) struct CallGuard {
    registry: Option<Registry>,
    /// (placeholder path, marker file)
    markers: Vec<(PathBuf, PathBuf)>,
    scratch: Option<PathBuf>,
}

impl Registry {
    /// Opens (creating it if needed) the registry folder of this user.
    ///
    /// Refuses a folder that is a symlink, belongs to another user or is open
    /// to others.
    pub(crate) fn open() -> Result<Registry, SandboxError> {
        // SAFETY: geteuid has no preconditions.
        let uid = unsafe { libc::geteuid() };
        Self::open_at(std::env::temp_dir().join(format!("routines-sandbox-{uid}")))
    }

    pub(crate) fn open_at(dir: PathBuf) -> Result<Registry, SandboxError> {
        let shown = dir.display().to_string();
        let fail = |e| SandboxError::io(format!("cannot use `{shown}`"), e);
        match fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(fail(e)),
        }
        let meta = fs::symlink_metadata(&dir).map_err(fail)?;
        // SAFETY: geteuid has no preconditions.
        let uid = unsafe { libc::geteuid() };
        if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o077 != 0 {
            return Err(fail(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "it must be a folder of this user that nobody else can open",
            )));
        }
        fs::DirBuilder::new().mode(0o700).recursive(true).create(dir.join("mounts")).map_err(fail)?;
        let registry = Registry { dir };
        let empty = registry.empty_file();
        match fs::symlink_metadata(&empty) {
            Ok(m) if m.is_file() && m.len() == 0 => {}
            _ => {
                let _ = fs::remove_file(&empty);
                File::create(&empty).map_err(fail)?;
                fs::set_permissions(&empty, fs::Permissions::from_mode(0o444)).map_err(fail)?;
            }
        }
        Ok(registry)
    }

    /// The registry folder.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// An empty read-only file: the source of placeholders and hidden files.
    pub(crate) fn empty_file(&self) -> PathBuf {
        self.dir.join("empty")
    }

    /// Takes the registry lock (blocking; held only for file-system bookkeeping).
    pub(crate) fn lock(&self) -> Result<Locked<'_>, SandboxError> {
        let path = self.dir.join("lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| SandboxError::io(format!("cannot open `{}`", path.display()), e))?;
        loop {
            // SAFETY: flock on a file descriptor we own.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
                break;
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(SandboxError::io(format!("cannot lock `{}`", path.display()), e));
            }
        }
        Ok(Locked { registry: self, _file: file })
    }

    /// A new private scratch folder for one call (the `TMPDIR` of a Landlock call).
    pub(crate) fn scratch(&self, guard: &mut CallGuard) -> Result<PathBuf, SandboxError> {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.join(format!("tmp-{}-{n}", std::process::id()));
        fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .map_err(|e| SandboxError::io(format!("cannot create `{}`", path.display()), e))?;
        guard.registry = Some(self.clone());
        guard.scratch = Some(path.clone());
        Ok(path)
    }

    fn slot(&self, placeholder: &Path) -> PathBuf {
        self.dir.join("mounts").join(hash(placeholder))
    }
}

impl Locked<'_> {
    /// Removes the placeholders (and scratch folders) of calls whose process is gone.
    pub(crate) fn sweep(&self) {
        let Ok(entries) = fs::read_dir(self.registry.dir.join("mounts")) else { return };
        for entry in entries.flatten() {
            let slot = entry.path();
            if live_markers(&slot) == 0 {
                if let Ok(bytes) = fs::read(slot.join("path")) {
                    remove_placeholder(Path::new(std::ffi::OsStr::from_bytes(&bytes)));
                }
                let _ = fs::remove_dir_all(&slot);
            }
        }
        let Ok(entries) = fs::read_dir(&self.registry.dir) else { return };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("tmp-")).and_then(|n| n.split('-').next()) else {
                continue;
            };
            if pid.parse::<i32>().is_ok_and(|pid| !alive(pid)) {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    }

    /// Whether `path` is a placeholder some call registered (and may still use).
    pub(crate) fn is_registered(&self, path: &Path) -> bool {
        self.registry.slot(path).join("path").exists()
    }

    /// Records that this call relies on the placeholder at `path`.
    pub(crate) fn claim(&self, path: &Path, guard: &mut CallGuard) -> Result<(), SandboxError> {
        let slot = self.registry.slot(path);
        let fail = |e| SandboxError::io(format!("cannot register `{}`", slot.display()), e);
        fs::DirBuilder::new().mode(0o700).recursive(true).create(&slot).map_err(fail)?;
        fs::write(slot.join("path"), path.as_os_str().as_bytes()).map_err(fail)?;
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let marker = slot.join(format!("{}.{n}", std::process::id()));
        File::create(&marker).map_err(fail)?;
        guard.registry = Some(self.registry.clone());
        guard.markers.push((path.to_path_buf(), marker));
        Ok(())
    }
}

impl CallGuard {
    /// Whether the call holds anything that must be released.
    #[cfg(test)]
    pub(crate) fn holds(&self) -> usize {
        self.markers.len() + usize::from(self.scratch.is_some())
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        if let Some(scratch) = self.scratch.take() {
            let _ = fs::remove_dir_all(scratch);
        }
        if self.markers.is_empty() {
            return;
        }
        let Some(registry) = self.registry.take() else { return };
        // Without the lock another call might be deciding about the same
        // placeholder; leaving it in place is the safe side, and the next
        // sweep removes it.
        let Ok(_lock) = registry.lock() else { return };
        for (path, marker) in self.markers.drain(..) {
            let _ = fs::remove_file(&marker);
            let Some(slot) = marker.parent() else { continue };
            if live_markers(slot) == 0 {
                remove_placeholder(&path);
                let _ = fs::remove_dir_all(slot);
            }
        }
    }
}

/// Counts the markers of live processes in `slot`, removing those of dead ones.
fn live_markers(slot: &Path) -> usize {
    let Ok(entries) = fs::read_dir(slot) else { return 0 };
    let mut live = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.split_once('.')).and_then(|(p, _)| p.parse::<i32>().ok()) else {
            continue;
        };
        if alive(pid) {
            live += 1;
        } else {
            let _ = fs::remove_file(entry.path());
        }
    }
    live
}

/// Removes a placeholder if it is still what bubblewrap made: an empty regular file.
fn remove_placeholder(path: &Path) {
    if let Ok(meta) = fs::symlink_metadata(path) {
        if meta.is_file() && meta.len() == 0 {
            let _ = fs::remove_file(path);
        }
    }
}

fn alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// FNV-1a of the path's bytes: the name of its slot.
fn hash(path: &Path) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in path.as_os_str().as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}
