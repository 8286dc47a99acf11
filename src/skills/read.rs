//! Reading a file only inside a folder: the path is resolved with every symlink followed, must
//! stay inside the (canonical) folder, must be a regular file no larger than a limit, and is
//! opened without following a symlink put in its place meanwhile. What is read into prompts
//! (skills) goes through here, so a `SKILL.md` that links to `/proc/self/environ` or anywhere
//! outside its folder is refused.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Why a file could not be read inside its folder.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{} resolves to {}, outside {}; files are read only inside their folder", path.display(), target.display(), root.display())]
    Outside { path: PathBuf, target: PathBuf, root: PathBuf },
    #[error("{} is not a regular file", path.display())]
    NotAFile { path: PathBuf },
    #[error("{} is {bytes} bytes, more than the {max} allowed", path.display())]
    TooLarge { path: PathBuf, bytes: u64, max: u64 },
    #[error("cannot read {}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
}

/// The canonical form of `path` if it lies inside `root` (itself canonical).
pub fn resolve_inside(root: &Path, path: &Path) -> Result<PathBuf, ReadError> {
    let target = path.canonicalize().map_err(|source| ReadError::Io { path: path.to_path_buf(), source })?;
    if !target.starts_with(root) {
        return Err(ReadError::Outside { path: path.to_path_buf(), target, root: root.to_path_buf() });
    }
    Ok(target)
}

/// The bytes of `path`, which must resolve inside `root` (canonical) to a regular file of at
/// most `max` bytes.
pub fn read_inside(root: &Path, path: &Path, max: u64) -> Result<Vec<u8>, ReadError> {
    let target = resolve_inside(root, path)?;
    let io = |source| ReadError::Io { path: path.to_path_buf(), source };
    // Checked before opening, so a FIFO or device is never opened (which could block or have
    // effects); checked again on the open file, which is the one read.
    let meta = std::fs::metadata(&target).map_err(io)?;
    if !meta.is_file() {
        return Err(ReadError::NotAFile { path: path.to_path_buf() });
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&target)
        .map_err(io)?;
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
