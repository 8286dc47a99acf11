//! Reading a file only inside a folder: the folder is opened, and the path is opened beneath
//! that handle in one step, following only symlinks that stay inside ([`Beneath`]); the open
//! file must be a regular file no larger than a limit. What is read into prompts (skills,
//! identity files, a heartbeat's checklist, images) goes through here, so a `SKILL.md` that
//! links to `/proc/self/environ` or anywhere outside its folder is refused, also when the link
//! is swapped in while it is read.

use std::io::Read;
use std::path::{Path, PathBuf};

use rustix::fs::OFlags;

use crate::policy::beneath::{Beneath, BeneathError};

/// Why a file could not be read inside its folder.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{} leads outside {}; files are read only inside their folder", path.display(), root.display())]
    Outside { path: PathBuf, root: PathBuf },
    #[error("{} is not a regular file", path.display())]
    NotAFile { path: PathBuf },
    #[error("{} is {bytes} bytes, more than the {max} allowed", path.display())]
    TooLarge { path: PathBuf, bytes: u64, max: u64 },
    #[error("cannot read {}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
}

/// The canonical form of `path` if it lies inside `root` (itself canonical). For looking only
/// (which folders hold skills); what is read goes through [`read_inside`].
pub fn resolve_inside(root: &Path, path: &Path) -> Result<PathBuf, ReadError> {
    let target = path.canonicalize().map_err(|source| ReadError::Io { path: path.to_path_buf(), source })?;
    if !target.starts_with(root) {
        return Err(ReadError::Outside { path: path.to_path_buf(), root: root.to_path_buf() });
    }
    Ok(target)
}

/// The bytes of `path`, which must lie inside `root` (canonical) as written and lead, through
/// symlinks that stay inside, to a regular file of at most `max` bytes.
pub fn read_inside(root: &Path, path: &Path, max: u64) -> Result<Vec<u8>, ReadError> {
    let io = |source| ReadError::Io { path: path.to_path_buf(), source };
    let outside = || ReadError::Outside { path: path.to_path_buf(), root: root.to_path_buf() };
    let rel = inside(root, path).ok_or_else(outside)?;
    let beneath = Beneath::open(root).map_err(io)?;
    // Opened without blocking and without becoming a terminal: a FIFO or device is never read.
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY;
    let file = match beneath.open_at(&rel, flags) {
        Ok(fd) => std::fs::File::from(fd),
        Err(BeneathError::Escapes) => return Err(outside()),
        Err(BeneathError::Io(e)) => return Err(io(e)),
    };
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(ReadError::NotAFile { path: path.to_path_buf() });
    }
    if meta.len() > max {
        return Err(ReadError::TooLarge { path: path.to_path_buf(), bytes: meta.len(), max });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(max + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > max {
        return Err(ReadError::TooLarge { path: path.to_path_buf(), bytes: bytes.len() as u64, max });
    }
    Ok(bytes)
}

/// `path` relative to `root`: as written, or else by its folder's canonical form (a path given
/// through a link to the folder). Only which file inside is named depends on the folder's
/// path; the open itself stays beneath `root`.
fn inside(root: &Path, path: &Path) -> Option<PathBuf> {
    if let Ok(rel) = path.strip_prefix(root) {
        return Some(rel.to_path_buf());
    }
    let folder = path.parent()?.canonicalize().ok()?;
    Some(folder.strip_prefix(root).ok()?.join(path.file_name()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_only_regular_files_inside_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        let root = root.canonicalize().unwrap();
        std::fs::write(root.join("sub/a.md"), "inside").unwrap();
        std::fs::write(dir.path().join("secret"), "outside").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("link")).unwrap();
        std::os::unix::fs::symlink("/proc/self/environ", root.join("environ")).unwrap();
        std::os::unix::fs::symlink(root.join("sub/a.md"), root.join("inner")).unwrap();

        assert_eq!(read_inside(&root, &root.join("sub/a.md"), 100).unwrap(), b"inside");
        // A link that stays inside is followed.
        assert_eq!(read_inside(&root, &root.join("inner"), 100).unwrap(), b"inside");
        assert!(matches!(read_inside(&root, &root.join("link"), 100), Err(ReadError::Outside { .. })));
        assert!(matches!(read_inside(&root, &root.join("environ"), 100), Err(ReadError::Outside { .. })));
        assert!(matches!(read_inside(&root, &root.join("sub/../../secret"), 100), Err(ReadError::Outside { .. })));
        assert!(matches!(read_inside(&root, &root.join("sub"), 100), Err(ReadError::NotAFile { .. })));
        assert!(matches!(read_inside(&root, &root.join("sub/a.md"), 3), Err(ReadError::TooLarge { bytes: 6, .. })));
        assert!(matches!(read_inside(&root, &root.join("missing"), 3), Err(ReadError::Io { .. })));
    }
}
