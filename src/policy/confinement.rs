//! The workspace as tools and file deliveries reach it: one open handle ([`Beneath`]), the paths
//! nothing may touch (forbidden paths), and those nothing may write (the engine's own files,
//! `.git` internals). Every open goes through the handle in one step; the checks are then made
//! on what was opened (its descriptor's place, `fstat`), never on a path checked beforehand.

use std::ffi::OsString;
use std::io::Write as _;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::beneath::{Beneath, BeneathError};
use super::paths::{self, PathError};

/// Why a path could not be opened: refused by the policy (the model or the author can choose
/// another path), or the file system failed (not found, permission denied).
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Refused(#[from] PathError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Most symlinks a write follows at its last component.
const MAX_FINAL_LINKS: usize = 40;

/// The workspace, opened, with its rules.
#[derive(Debug, Clone)]
pub struct Confinement {
    root: Arc<Beneath>,
    /// Canonical.
    workspace: PathBuf,
    forbidden: Vec<PathBuf>,
    protected: Vec<PathBuf>,
}

/// A file or folder opened for reading, and where it is.
#[derive(Debug)]
pub struct Opened {
    pub file: std::fs::File,
    /// Its path in the workspace (canonical workspace joined with where the kernel has it).
    pub path: PathBuf,
}

/// Where a write goes: an open folder inside the workspace and a name in it. The name is
/// replaced by `renameat` in that folder, so the write lands there whatever happens to the
/// path meanwhile.
#[derive(Debug)]
pub struct WriteTarget {
    dir: std::fs::File,
    name: OsString,
    /// Its path in the workspace, for messages and checks.
    pub path: PathBuf,
}

impl Confinement {
    /// Opens `workspace` (canonical) with the paths that are `forbidden` and `protected` (each
    /// with its canonical form, see [`paths::with_canonical_forms`]).
    pub fn open(workspace: &Path, forbidden: Vec<PathBuf>, protected: Vec<PathBuf>) -> Result<Self, PathError> {
        let root = Beneath::open(workspace)
            .map_err(|e| PathError::Workspace { path: workspace.to_path_buf(), reason: e.to_string() })?;
        Ok(Confinement { root: Arc::new(root), workspace: workspace.to_path_buf(), forbidden, protected })
    }

    /// The same, refusing writes to `protected` too.
    pub fn with_protected(mut self, protected: Vec<PathBuf>) -> Self {
        self.protected = protected;
        self
    }

    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// `input` as a path relative to the workspace, without touching the file system: `~`
    /// expanded, an absolute path inside the workspace made relative, a forbidden path (as
    /// written, `.` and `..` taken lexically) refused.
    pub fn relative(&self, input: &str) -> Result<PathBuf, PathError> {
        paths::relative(&self.workspace, &self.forbidden, input)
    }

    /// Opens `input` for reading (a file or a folder), following symlinks that stay inside.
    /// Refuses a forbidden place and a regular file with other hard links. FIFOs and devices
    /// are opened without blocking and without becoming a terminal; the caller checks the type.
    pub fn open_read(&self, input: &str) -> Result<Opened, OpenError> {
        let rel = self.relative(input)?;
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY;
        let fd = self.root.open_at(&rel, flags).map_err(|e| self.error(input, e))?;
        let path = self.place(input, fd.as_fd())?;
        let file = std::fs::File::from(fd);
        refuse_hard_link_fd(&file, input)?;
        Ok(Opened { file, path })
    }

    /// Where a write of `input` goes, its folder created if `create` (with `mkdirat`, beneath
    /// the workspace). A symlink at the last component is followed while it stays inside.
    /// Refuses forbidden paths, the engine's own files, `.git` internals, a folder, and an
    /// existing FIFO, socket, device or file with other hard links.
    pub fn write_target(&self, input: &str, create: bool) -> Result<WriteTarget, OpenError> {
        let mut rel = self.relative(input)?;
        for _ in 0..MAX_FINAL_LINKS {
            // Refused as written before any folder is made for it; checked again on what opens.
            let written = paths::lexical(&self.workspace.join(&rel));
            if paths::engine_write(&self.workspace, &self.protected, &written) {
                return Err(PathError::Protected { input: input.into() }.into());
            }
            if self.is_forbidden(&written) {
                return Err(PathError::Forbidden { input: input.into() }.into());
            }
            let (parent, name) = split_name(&rel).ok_or_else(|| PathError::Invalid {
                input: input.into(),
                reason: "it names a folder, not a file".into(),
            })?;
            let dir_flags = OFlags::DIRECTORY | OFlags::RDONLY;
            let dir = if create { self.root.create_dirs(&parent) } else { self.root.open_at(&parent, dir_flags) };
            let dir = dir.map_err(|e| self.error(input, e))?;
            match rustix::fs::statat(&dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) if FileType::from_raw_mode(st.st_mode).is_symlink() => {
                    let target = rustix::fs::readlinkat(&dir, name.as_os_str(), Vec::new()).map_err(io)?;
                    let target = PathBuf::from(std::ffi::OsStr::from_bytes(target.as_bytes()));
                    let here = self.root.relative_of(dir.as_fd()).map_err(|e| self.error(input, e))?;
                    rel = match target.strip_prefix(&self.workspace) {
                        Ok(inside) => inside.to_path_buf(),
                        Err(_) if target.is_absolute() => return Err(self.outside(input).into()),
                        Err(_) => here.join(target),
                    };
                    continue;
                }
                Ok(st) => check_existing(input, FileType::from_raw_mode(st.st_mode), st.st_nlink)?,
                Err(Errno::NOENT) => {}
                Err(e) => return Err(io(e).into()),
            }
            let dir_path = self.place(input, dir.as_fd())?;
            let path = dir_path.join(&name);
            if paths::engine_write(&self.workspace, &self.protected, &path) {
                return Err(PathError::Protected { input: input.into() }.into());
            }
            if paths::under_any(&self.forbidden, &path) {
                return Err(PathError::Forbidden { input: input.into() }.into());
            }
            return Ok(WriteTarget { dir: std::fs::File::from(dir), name, path });
        }
        Err(io(Errno::LOOP).into())
    }

    /// Whether `path` (in the workspace) is forbidden.
    pub fn is_forbidden(&self, path: &Path) -> bool {
        paths::under_any(&self.forbidden, path)
    }

    /// The workspace path of `fd`, opened beneath it, refused when forbidden.
    fn place(&self, input: &str, fd: std::os::fd::BorrowedFd<'_>) -> Result<PathBuf, OpenError> {
        let rel = self.root.relative_of(fd).map_err(|e| self.error(input, e))?;
        let path = if rel.as_os_str().is_empty() { self.workspace.clone() } else { self.workspace.join(rel) };
        if self.is_forbidden(&path) {
            return Err(PathError::Forbidden { input: input.into() }.into());
        }
        Ok(path)
    }

    fn outside(&self, input: &str) -> PathError {
        PathError::Outside { input: input.into(), workspace: self.workspace.clone() }
    }

    fn error(&self, input: &str, e: BeneathError) -> OpenError {
        match e {
            BeneathError::Escapes => self.outside(input).into(),
            BeneathError::Io(e) => e.into(),
        }
    }
}

impl WriteTarget {
    /// What the file holds now, `None` if it does not exist. Opened without following a
    /// symlink put in its place, and refused unless it is a regular file with one name.
    pub fn read(&self) -> std::io::Result<Option<Vec<u8>>> {
        use std::io::Read as _;
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(&self.dir, self.name.as_os_str(), flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let mut file = std::fs::File::from(fd);
        let meta = file.metadata()?;
        if !meta.is_file() || std::os::unix::fs::MetadataExt::nlink(&meta) > 1 {
            return Err(std::io::Error::other("it is not a regular file with one name"));
        }
        let mut data = Vec::new();
        file.read_to_end(&mut data)?;
        Ok(Some(data))
    }

    /// Writes `data` through a temporary file in the same folder and a rename in it, so a
    /// reader never sees half a file; the permissions of a file replaced are kept.
    pub fn write_atomic(&self, data: &[u8]) -> std::io::Result<()> {
        let name = self.name.to_string_lossy();
        let tmp = format!(".{name}.tmp-{}-{:08x}", std::process::id(), rand::random::<u32>());
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.dir, tmp.as_str(), flags, Mode::from_raw_mode(0o666))?;
        let result = (|| {
            let mut f = std::fs::File::from(fd);
            f.write_all(data)?;
            f.sync_all()?;
            if let Ok(st) = rustix::fs::statat(&self.dir, self.name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)
                && FileType::from_raw_mode(st.st_mode).is_file()
            {
                rustix::fs::fchmod(&f, Mode::from_raw_mode(st.st_mode & 0o7777))?;
            }
            rustix::fs::renameat(&self.dir, tmp.as_str(), &self.dir, self.name.as_os_str())?;
            Ok(())
        })();
        if result.is_err() {
            let _ = rustix::fs::unlinkat(&self.dir, tmp.as_str(), AtFlags::empty());
        }
        result
    }

    /// An exclusive `flock` on the folder, released when dropped. The folder, not the file, is
    /// locked: the file is replaced by a rename, so a lock on it would lock the old inode.
    pub fn lock(&self) -> std::io::Result<FolderLock> {
        let dir = self.dir.try_clone()?;
        loop {
            match rustix::fs::flock(&dir, rustix::fs::FlockOperation::LockExclusive) {
                Ok(()) => return Ok(FolderLock(dir)),
                Err(Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// A folder locked by [`WriteTarget::lock`] until dropped.
pub struct FolderLock(#[allow(dead_code)] std::fs::File);

fn io(e: Errno) -> std::io::Error {
    e.into()
}

/// `rel` as its folder and last name; `None` when it names no file (empty, `.`, `..`).
fn split_name(rel: &Path) -> Option<(PathBuf, OsString)> {
    match rel.components().next_back()? {
        Component::Normal(name) => Some((rel.parent().unwrap_or(Path::new("")).to_path_buf(), name.to_os_string())),
        _ => None,
    }
}

/// Refuses writing over a folder, a FIFO, a socket, a device, or a regular file with other
/// hard links (writing it would change a file elsewhere).
fn check_existing(input: &str, kind: FileType, links: u64) -> Result<(), PathError> {
    let special = match kind {
        FileType::Fifo => "FIFO",
        FileType::Socket => "socket",
        FileType::BlockDevice | FileType::CharacterDevice => "device",
        FileType::Directory => {
            return Err(PathError::Invalid { input: input.into(), reason: "it is a folder, not a file".into() });
        }
        _ if links > 1 => return Err(PathError::HardLinked { input: input.into() }),
        _ => return Ok(()),
    };
    Err(PathError::Special { input: input.into(), kind: special })
}

/// Refuses an open regular file with more than one name: a link made inside the workspace to
/// a file outside it would otherwise let a tool read it.
fn refuse_hard_link_fd(file: &std::fs::File, input: &str) -> Result<(), OpenError> {
    let meta = file.metadata()?;
    if meta.is_file() && std::os::unix::fs::MetadataExt::nlink(&meta) > 1 {
        return Err(PathError::HardLinked { input: input.into() }.into());
    }
    Ok(())
}

#[cfg(test)]
#[path = "confinement_tests.rs"]
pub(crate) mod tests;
