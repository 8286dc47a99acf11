//! File delivery: atomic writes (temporary file + rename) in `create`,
//! `overwrite` or `append` mode, folders created, confined to the workspace.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::DeliveryError;
use crate::config::FileMode;
use crate::policy::PathError;
use crate::policy::paths::{confine, engine_write};
use crate::tools::write_atomic;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilePayload {
    /// Absolute, already confined.
    pub path: PathBuf,
    /// As rendered, for people.
    pub shown: String,
    pub mode: FileModeName,
    pub content: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileModeName {
    Create,
    Overwrite,
    Append,
}

impl From<FileMode> for FileModeName {
    fn from(m: FileMode) -> Self {
        match m {
            FileMode::Create => FileModeName::Create,
            FileMode::Overwrite => FileModeName::Overwrite,
            FileMode::Append => FileModeName::Append,
        }
    }
}

/// Resolves a rendered path inside the workspace (absolute paths must lie
/// inside it too); refuses forbidden paths and the engine's own files (`protected`, with
/// canonical forms): a path rendered from a webhook body must not write a routine file, the
/// config or a git hook.
pub fn resolve(
    workspace: &Path,
    forbidden: &[PathBuf],
    protected: &[PathBuf],
    rendered: &str,
) -> Result<PathBuf, DeliveryError> {
    if rendered.trim().is_empty() {
        return Err(DeliveryError::EmptyPath);
    }
    let path = confine(workspace, forbidden, rendered)?;
    let root = workspace.canonicalize().unwrap_or_else(|_| workspace.to_path_buf());
    if engine_write(&root, protected, &path) {
        return Err(PathError::Protected { input: rendered.into() }.into());
    }
    Ok(path)
}

/// Writes the file; returns a description for the history.
pub fn deliver(p: &FilePayload) -> Result<String, DeliveryError> {
    let io = |source| DeliveryError::Write { shown: p.shown.clone(), source };
    // The file is read, changed and replaced whole: another writer of it (a second run, a
    // second node sharing the folder) must wait, or one of the two appended lines is lost.
    let _lock = lock_folder(p.path.parent().unwrap_or(Path::new("."))).map_err(io)?;
    let existing = std::fs::read(&p.path);
    let data = match (p.mode, existing) {
        (FileModeName::Create, Ok(_)) => {
            return Err(DeliveryError::FileExists { shown: p.shown.clone() });
        }
        (FileModeName::Append, Ok(mut old)) => {
            if !old.is_empty() && !old.ends_with(b"\n") {
                old.push(b'\n');
            }
            old.extend_from_slice(p.content.as_bytes());
            old
        }
        _ => p.content.as_bytes().to_vec(),
    };
    write_atomic(&p.path, &data).map_err(io)?;
    Ok(format!("wrote {} ({} bytes)", p.shown, data.len()))
}

/// An exclusive `flock` on a folder, released when dropped. The folder, not the file, is
/// locked: the file is replaced by a rename, so a lock on it would lock the old inode.
struct FolderLock(#[allow(dead_code)] std::fs::File);

/// Creates `dir` if needed and waits for its lock.
fn lock_folder(dir: &Path) -> std::io::Result<FolderLock> {
    use std::os::fd::AsRawFd;
    std::fs::create_dir_all(dir)?;
    let folder = std::fs::File::open(dir)?;
    loop {
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(folder.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(FolderLock(folder));
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Whether it may be written again after an attempt that was cut off without ever being
/// written twice: `overwrite` writes the same whole file again, and `create` finds its own
/// complete file ([`deliver_again`]); `append` would add the content a second time.
pub fn repeatable(p: &FilePayload) -> bool {
    p.mode != FileModeName::Append
}

/// [`deliver`] after an attempt that was cut off. Writes are atomic, so a `create` target that
/// holds exactly this content was written by that attempt: delivered, not "already exists".
pub fn deliver_again(p: &FilePayload) -> Result<String, DeliveryError> {
    if p.mode == FileModeName::Create && std::fs::read(&p.path).is_ok_and(|old| old == p.content.as_bytes()) {
        return Ok(format!("{} was written by the attempt that was cut off", p.shown));
    }
    deliver(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_create_overwrite_and_append() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out/r.md");
        let mk = |mode, content: &str| FilePayload {
            path: path.clone(),
            shown: "out/r.md".into(),
            mode,
            content: content.into(),
        };
        deliver(&mk(FileModeName::Create, "one")).unwrap();
        let refused = deliver(&mk(FileModeName::Create, "two")).unwrap_err();
        assert_eq!(refused.to_string(), "out/r.md already exists and mode is create; use overwrite or append");
        assert!(!refused.retryable());
        deliver(&mk(FileModeName::Append, "two\n")).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\n");
        deliver(&mk(FileModeName::Overwrite, "three")).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "three");
    }

    #[test]
    fn appends_at_the_same_time_keep_every_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out/log.md");
        let writers: Vec<_> = (0..4)
            .map(|w| {
                let path = path.clone();
                std::thread::spawn(move || {
                    for i in 0..100 {
                        let p = FilePayload {
                            path: path.clone(),
                            shown: "out/log.md".into(),
                            mode: FileModeName::Append,
                            content: format!("{w} {i}\n"),
                        };
                        deliver(&p).unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        lines.sort_unstable();
        lines.dedup();
        assert_eq!(lines.len(), 400, "lines were lost");
    }

    #[test]
    fn after_a_cut_off_attempt_only_append_is_not_repeated_and_create_finds_its_own_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.md");
        let mk = |mode| FilePayload { path: path.clone(), shown: "r.md".into(), mode, content: "report\n".into() };
        assert!(repeatable(&mk(FileModeName::Overwrite)));
        assert!(repeatable(&mk(FileModeName::Create)));
        assert!(!repeatable(&mk(FileModeName::Append)));
        // The cut-off attempt never wrote it: written now.
        deliver_again(&mk(FileModeName::Create)).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "report\n");
        // It did: found, delivered, not written again.
        deliver_again(&mk(FileModeName::Create)).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "report\n");
        // Someone else's file stays refused.
        std::fs::write(&path, "another\n").unwrap();
        assert!(matches!(deliver_again(&mk(FileModeName::Create)), Err(DeliveryError::FileExists { .. })));
        deliver_again(&mk(FileModeName::Overwrite)).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "report\n");
    }
}
