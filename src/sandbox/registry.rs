//! The host-side bookkeeping of sandboxed calls: placeholders and scratch folders.
//!
//! A carve-out that does not exist yet is kept from being created by mounting
//! an empty read-only file where it would be (an empty read-only folder where
//! a folder on its way would be). The mount point has to exist on
//! the host, inside the writable root, so it is created just before the call
//! and removed after it, but not while another call, in this process or
//! another, still relies on it: removing a mount point on the host detaches
//! the mount in every sandbox that has it, and the path could then be created
//! there.
//!
//! Each placeholder path has a record in `$TMPDIR/routines-sandbox-UID/mounts/`
//! (named by a hash of the path; it holds the placeholder's device, inode,
//! change time to the nanosecond, and path: inode numbers are reused at once). Every call relying on the placeholder holds a shared `flock` on the
//! record for as long as it runs; the call that can turn its lock exclusive
//! is the last one and removes the placeholder, if it is still the very file
//! that was made (same inode, still empty). Locks of a process that dies are
//! released by the kernel, so the sweep before each call removes what a
//! crashed process left. Decisions are taken under one exclusive registry
//! lock. Records stay (one small file per placeholder path), so a call makes
//! no directory changes beyond the placeholder itself. Landlock calls get a
//! private scratch folder here instead.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::SandboxError;

/// Numbers the scratch folders of this process.
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
    /// Records this call holds a shared lock on.
    records: Vec<File>,
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
        match fs::DirBuilder::new().mode(0o700).create(dir.join("mounts")) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(fail(e)),
        }
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
        let empty = registry.empty_dir();
        match fs::symlink_metadata(&empty) {
            Ok(m) if m.is_dir() && m.mode() & 0o777 == 0o555 => {}
            _ => {
                let _ = fs::remove_file(&empty);
                fs::DirBuilder::new().mode(0o555).create(&empty).map_err(fail)?;
                fs::set_permissions(&empty, fs::Permissions::from_mode(0o555)).map_err(fail)?;
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

    /// An empty read-only folder: the source of folder placeholders.
    pub(crate) fn empty_dir(&self) -> PathBuf {
        self.dir.join("empty-dir")
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
        flock(&file, libc::LOCK_EX).map_err(|e| SandboxError::io(format!("cannot lock `{}`", path.display()), e))?;
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

    fn record(&self, placeholder: &Path) -> PathBuf {
        self.dir.join("mounts").join(hash(placeholder))
    }
}

impl Locked<'_> {
    /// Removes the placeholders nobody holds (left by a process that died),
    /// and the scratch folders of dead processes.
    pub(crate) fn sweep(&self) {
        if let Ok(entries) = fs::read_dir(self.registry.dir.join("mounts")) {
            for entry in entries.flatten() {
                if let Ok(mut file) = OpenOptions::new().read(true).write(true).open(entry.path()) {
                    if flock(&file, libc::LOCK_EX | libc::LOCK_NB).is_ok() {
                        remove_recorded(&mut file);
                        // The record of a folder that is gone (a deleted workspace) goes too.
                        let gone = read_record(&mut file)
                            .is_none_or(|(_, path)| path.parent().is_none_or(|parent| !parent.exists()));
                        if gone {
                            let _ = fs::remove_file(entry.path());
                        }
                    }
                }
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

    /// Whether `path` is a placeholder some call made (and may still rely on).
    pub(crate) fn is_placeholder(&self, path: &Path) -> bool {
        let Ok(mut file) = File::open(self.registry.record(path)) else { return false };
        let Some((id, _)) = read_record(&mut file) else { return false };
        fs::symlink_metadata(path).is_ok_and(|m| identity(&m) == id)
    }

    /// Makes the placeholder `path` (an empty file, or an empty `folder`; it must not exist)
    /// and records that this call relies on it.
    pub(crate) fn create(&self, path: &Path, folder: bool, guard: &mut CallGuard) -> Result<(), SandboxError> {
        let fail = |e| SandboxError::io(format!("cannot make the placeholder `{}`", path.display()), e);
        let mut record = self.hold(path, guard)?;
        let meta = if folder {
            fs::DirBuilder::new().mode(0o555).create(path).map_err(fail)?;
            fs::symlink_metadata(path).map_err(fail)?
        } else {
            let made = OpenOptions::new().write(true).create_new(true).mode(0o444).open(path).map_err(fail)?;
            made.metadata().map_err(fail)?
        };
        let (dev, ino, sec, nsec) = identity(&meta);
        let mut line = format!("{dev} {ino} {sec} {nsec} ").into_bytes();
        line.extend_from_slice(path.as_os_str().as_bytes());
        record.set_len(0).map_err(fail)?;
        record.write_all(&line).map_err(fail)?;
        Ok(())
    }

    /// Records that this call relies on the existing placeholder `path`.
    pub(crate) fn rely_on(&self, path: &Path, guard: &mut CallGuard) -> Result<(), SandboxError> {
        self.hold(path, guard).map(|_| ())
    }

    /// Opens (creating) the record of `path` and takes a shared lock on it for the call.
    fn hold(&self, path: &Path, guard: &mut CallGuard) -> Result<File, SandboxError> {
        let at = self.registry.record(path);
        let fail = |e| SandboxError::io(format!("cannot register `{}`", at.display()), e);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&at)
            .map_err(fail)?;
        flock(&file, libc::LOCK_SH).map_err(fail)?;
        let kept = file.try_clone().map_err(fail)?;
        guard.registry = Some(self.registry.clone());
        guard.records.push(kept);
        Ok(file)
    }
}

impl CallGuard {
    /// How many things the call holds (records and scratch folder).
    #[cfg(test)]
    pub(crate) fn holds(&self) -> usize {
        self.records.len() + usize::from(self.scratch.is_some())
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        if let Some(scratch) = self.scratch.take() {
            let _ = fs::remove_dir_all(scratch);
        }
        if self.records.is_empty() {
            return;
        }
        let Some(registry) = self.registry.take() else { return };
        // Without the registry lock another call may be deciding about the same
        // placeholder: leaving it is the safe side; the next sweep removes it.
        let Ok(_lock) = registry.lock() else { return };
        for mut record in self.records.drain(..) {
            // Only the last call relying on it gets the lock exclusively.
            if flock(&record, libc::LOCK_EX | libc::LOCK_NB).is_ok() {
                remove_recorded(&mut record);
            }
        }
    }
}

/// Removes the placeholder of `record` if it is still the file or folder that was made, empty
/// (removing a folder fails unless it is empty).
fn remove_recorded(record: &mut File) {
    let Some((id, path)) = read_record(record) else { return };
    if let Ok(meta) = fs::symlink_metadata(&path) {
        if identity(&meta) == id && meta.is_file() && meta.len() == 0 {
            let _ = fs::remove_file(&path);
        } else if identity(&meta) == id && meta.is_dir() {
            let _ = fs::remove_dir(&path);
        }
    }
}

/// What tells one file from another made later at the same path.
fn identity(meta: &fs::Metadata) -> (u64, u64, i64, i64) {
    (meta.dev(), meta.ino(), meta.ctime(), meta.ctime_nsec())
}

/// Reads `DEV INO CTIME CTIME_NSEC PATH` from a record.
fn read_record(record: &mut File) -> Option<((u64, u64, i64, i64), PathBuf)> {
    let mut bytes = Vec::new();
    record.rewind().ok()?;
    record.read_to_end(&mut bytes).ok()?;
    let mut parts = bytes.splitn(5, |b| *b == b' ');
    let mut number = || std::str::from_utf8(parts.next()?).ok()?.parse::<i128>().ok();
    let (dev, ino, sec, nsec) = (number()?, number()?, number()?, number()?);
    let id = (u64::try_from(dev).ok()?, u64::try_from(ino).ok()?, i64::try_from(sec).ok()?, i64::try_from(nsec).ok()?);
    let path = PathBuf::from(std::ffi::OsStr::from_bytes(parts.next()?));
    Some((id, path))
}

fn flock(file: &File, op: libc::c_int) -> io::Result<()> {
    loop {
        // SAFETY: flock on a descriptor the file owns.
        if unsafe { libc::flock(file.as_raw_fd(), op) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
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

/// FNV-1a of the path's bytes: the name of its record.
fn hash(path: &Path) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in path.as_os_str().as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}
