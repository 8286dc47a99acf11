//! Opening paths beneath an open folder in one step, never following a symlink out of it.
//!
//! A path checked and then opened is two steps: a process that swaps a folder for a symlink
//! between them (`renameat2` with `RENAME_EXCHANGE`) makes the open land elsewhere. Here the
//! folder is opened once and every path is resolved relative to that handle by the kernel:
//! `openat2(2)` with `RESOLVE_BENEATH` (no `..`, absolute path or symlink may leave it) and
//! `RESOLVE_NO_MAGICLINKS` (no `/proc/…/fd` jumps). Where the kernel has no `openat2`
//! (before 5.6), and for what `RESOLVE_BENEATH` refuses that may still stay inside (an absolute
//! symlink to a place in the folder), a walk does the same component by component: each step
//! an `openat` with `O_NOFOLLOW` from the handle of the step before, each symlink read and its
//! target continued from the handle, `..` taken back to the handle it came from. Either way
//! nothing is looked up again from `/`.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

/// Most symlinks one resolution follows (the kernel's own limit).
const MAX_LINKS: usize = 40;

/// Why a path could not be opened beneath the folder.
#[derive(Debug, thiserror::Error)]
pub enum BeneathError {
    /// It, or a symlink on its way, leads out of the folder.
    #[error("it leads out of the folder")]
    Escapes,
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl From<Errno> for BeneathError {
    fn from(e: Errno) -> Self {
        BeneathError::Io(e.into())
    }
}

/// A folder, opened once; paths are opened beneath it.
#[derive(Debug)]
pub struct Beneath {
    fd: OwnedFd,
    /// Its canonical path when it was opened: absolute symlinks into it are taken as relative.
    path: PathBuf,
}

impl Beneath {
    /// Opens `path` (canonical), following symlinks: the folder itself is the caller's to trust.
    pub fn open(path: &Path) -> std::io::Result<Beneath> {
        let fd = rustix::fs::open(path, OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?;
        Ok(Beneath { fd, path: path.to_path_buf() })
    }

    /// The open folder.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Opens `rel` (relative; empty is the folder itself) with `flags`, the last component
    /// followed if it is a symlink, never leaving the folder.
    pub fn open_at(&self, rel: &Path, flags: OFlags) -> Result<OwnedFd, BeneathError> {
        let flags = flags | OFlags::CLOEXEC;
        let target: &Path = if rel.as_os_str().is_empty() { Path::new(".") } else { rel };
        let how = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
        match rustix::fs::openat2(&self.fd, target, flags, Mode::empty(), how) {
            Ok(fd) => Ok(fd),
            // No openat2; refused as leaving (an absolute symlink may still point inside, the
            // walk decides); a rename raced with `..` (the kernel asks to try again).
            Err(Errno::NOSYS | Errno::XDEV | Errno::AGAIN | Errno::PERM) => self.walk(rel, flags),
            Err(e) => Err(e.into()),
        }
    }

    /// Opens the folder `rel`, creating what is missing of it one component at a time, each
    /// created with `mkdirat` in a folder already opened beneath this one.
    pub fn create_dirs(&self, rel: &Path) -> Result<OwnedFd, BeneathError> {
        let dir = OFlags::DIRECTORY | OFlags::RDONLY;
        match self.open_at(rel, dir) {
            Err(BeneathError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {}
            other => return other,
        }
        let Some(parent) = rel.parent() else { return self.open_at(rel, dir) };
        let Some(name) = rel.file_name() else {
            // `missing/..`: the missing folder is made, then the path is opened again (and
            // refused if its `..` leads out).
            self.create_dirs(parent)?;
            return self.open_at(rel, dir);
        };
        let parent_fd = self.create_dirs(parent)?;
        match rustix::fs::mkdirat(&parent_fd, name, Mode::from_raw_mode(0o777)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(e.into()),
        }
        self.open_at(rel, dir)
    }

    /// Where `fd` (opened beneath this folder) is, relative to it, as the kernel names it now.
    /// `Escapes` when it is not inside (it was moved out since).
    pub fn relative_of(&self, fd: BorrowedFd<'_>) -> Result<PathBuf, BeneathError> {
        let root = fd_path(self.fd.as_fd())?;
        let path = fd_path(fd)?;
        path.strip_prefix(&root).map(Path::to_path_buf).map_err(|_| BeneathError::Escapes)
    }

    /// `rel` opened component by component: what `open_at` does without `openat2`.
    fn walk(&self, rel: &Path, flags: OFlags) -> Result<OwnedFd, BeneathError> {
        let mut queue: VecDeque<OsString> = components(rel)?;
        // The folders entered so far, below this one; `..` goes back to the one before.
        let mut stack: Vec<OwnedFd> = Vec::new();
        let mut links = 0;
        while let Some(name) = queue.pop_front() {
            if name == ".." {
                stack.pop().ok_or(BeneathError::Escapes)?;
                continue;
            }
            let last = queue.is_empty();
            let cur = stack.last().map_or(self.fd.as_fd(), AsFd::as_fd);
            let step =
                if last { flags | OFlags::NOFOLLOW } else { OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW };
            match rustix::fs::openat(cur, name.as_os_str(), step | OFlags::CLOEXEC, Mode::empty()) {
                Ok(fd) if last => return Ok(fd),
                Ok(fd) => stack.push(fd),
                Err(e @ (Errno::LOOP | Errno::NOTDIR | Errno::MLINK)) => {
                    let Ok(target) = rustix::fs::readlinkat(cur, name.as_os_str(), Vec::new()) else {
                        return Err(e.into());
                    };
                    links += 1;
                    if links > MAX_LINKS {
                        return Err(Errno::LOOP.into());
                    }
                    let target = PathBuf::from(OsStr::from_bytes(target.as_bytes()));
                    let rest = if target.is_absolute() {
                        stack.clear();
                        target.strip_prefix(&self.path).map_err(|_| BeneathError::Escapes)?.to_path_buf()
                    } else {
                        target
                    };
                    for part in components(&rest)?.into_iter().rev() {
                        queue.push_front(part);
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
        // Nothing left to name (an empty path, or one ending in `.` or `..`): the folder reached.
        let cur = stack.last().map_or(self.fd.as_fd(), AsFd::as_fd);
        Ok(rustix::fs::openat(cur, ".", flags, Mode::empty())?)
    }
}

/// The names of `rel`, `.` dropped; an absolute path leaves the folder.
fn components(rel: &Path) -> Result<VecDeque<OsString>, BeneathError> {
    let mut out = VecDeque::new();
    for c in rel.components() {
        match c {
            Component::Normal(n) => out.push_back(n.to_os_string()),
            Component::ParentDir => out.push_back("..".into()),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return Err(BeneathError::Escapes),
        }
    }
    Ok(out)
}

/// The path the kernel gives an open file now (`/proc/self/fd/N`).
pub fn fd_path(fd: BorrowedFd<'_>) -> std::io::Result<PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

#[cfg(test)]
#[path = "beneath_tests.rs"]
mod tests;
