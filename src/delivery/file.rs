//! File delivery: atomic writes (temporary file + rename) in `create`, `overwrite` or `append`
//! mode, folders created, inside the workspace. The payload keeps the path relative to the
//! workspace, as rendered and unredacted: it is what the engine acts on. Each attempt opens the
//! workspace and resolves the path beneath that handle ([`Confinement::write_target`]), so a
//! symlink swapped in meanwhile never leads a write out, and an attempt after the workspace
//! moved still lands inside it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::DeliveryError;
use crate::config::FileMode;
use crate::policy::paths::{engine_write, lexical, relative};
use crate::policy::{Confinement, OpenError, PathError, WriteTarget};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilePayload {
    /// Relative to the workspace (older rows: absolute inside it), never redacted: where the
    /// file is written.
    pub path: String,
    /// As rendered, for people (redacted where it is stored).
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

/// The top-level payload fields the engine acts on: stored as they are, never redacted.
pub const ACTED_ON: &[&str] = &["kind", "path", "mode"];

/// A rendered path as the payload keeps it: relative to the workspace (an absolute path must
/// lie inside it). Refuses, without touching the file system, a path outside the workspace as
/// written, a forbidden path, and the engine's own files (`protected`, with canonical forms):
/// a path rendered from a webhook body must not write a routine file, the config or a git
/// hook. Where symlinks lead is checked again, on what is opened, at each attempt.
pub fn resolve(
    workspace: &Path,
    forbidden: &[PathBuf],
    protected: &[PathBuf],
    rendered: &str,
) -> Result<String, DeliveryError> {
    if rendered.trim().is_empty() {
        return Err(DeliveryError::EmptyPath);
    }
    let root = workspace.canonicalize().unwrap_or_else(|_| workspace.to_path_buf());
    let rel = relative(&root, forbidden, rendered)?;
    if engine_write(&root, protected, &lexical(&root.join(&rel))) {
        return Err(PathError::Protected { input: rendered.into() }.into());
    }
    Ok(rel.to_string_lossy().into_owned())
}

/// Where `p` is written, beneath the open workspace `fs`; its folder is created.
fn target(p: &FilePayload, fs: &Confinement) -> Result<WriteTarget, DeliveryError> {
    fs.write_target(&p.path, true).map_err(|e| match e {
        OpenError::Refused(e) => DeliveryError::Path(e),
        OpenError::Io(source) => DeliveryError::Write { shown: p.shown.clone(), source },
    })
}

/// Writes the file; returns a description for the history.
pub fn deliver(p: &FilePayload, fs: &Confinement) -> Result<String, DeliveryError> {
    let io = |source| DeliveryError::Write { shown: p.shown.clone(), source };
    let target = target(p, fs)?;
    // The file is read, changed and replaced whole: another writer of it (a second run, a
    // second node sharing the folder) must wait, or one of the two appended lines is lost.
    let _lock = target.lock().map_err(io)?;
    let existing = target.read().map_err(io)?;
    let data = match (p.mode, existing) {
        (FileModeName::Create, Some(_)) => {
            return Err(DeliveryError::FileExists { shown: p.shown.clone() });
        }
        (FileModeName::Append, Some(mut old)) => {
            if !old.is_empty() && !old.ends_with(b"\n") {
                old.push(b'\n');
            }
            old.extend_from_slice(p.content.as_bytes());
            old
        }
        _ => p.content.as_bytes().to_vec(),
    };
    target.write_atomic(&data).map_err(io)?;
    Ok(format!("wrote {} ({} bytes)", p.shown, data.len()))
}

/// Whether it may be written again after an attempt that was cut off without ever being
/// written twice: `overwrite` writes the same whole file again, and `create` finds its own
/// complete file ([`deliver_again`]); `append` would add the content a second time.
pub fn repeatable(p: &FilePayload) -> bool {
    p.mode != FileModeName::Append
}

/// [`deliver`] after an attempt that was cut off. Writes are atomic, so a `create` target that
/// holds exactly this content was written by that attempt: delivered, not "already exists".
pub fn deliver_again(p: &FilePayload, fs: &Confinement) -> Result<String, DeliveryError> {
    if p.mode == FileModeName::Create
        && target(p, fs)?.read().ok().flatten().is_some_and(|old| old == p.content.as_bytes())
    {
        return Ok(format!("{} was written by the attempt that was cut off", p.shown));
    }
    deliver(p, fs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fs(dir: &Path) -> Confinement {
        Confinement::open(&dir.canonicalize().unwrap(), Vec::new(), Vec::new()).unwrap()
    }

    #[test]
    fn modes_create_overwrite_and_append() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out/r.md");
        let fs = fs(dir.path());
        let deliver = |p: &FilePayload| deliver(p, &fs);
        let mk = |mode, content: &str| FilePayload {
            path: "out/r.md".into(),
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
        let fs = fs(dir.path());
        let writers: Vec<_> = (0..4)
            .map(|w| {
                let fs = fs.clone();
                std::thread::spawn(move || {
                    for i in 0..100 {
                        let p = FilePayload {
                            path: "out/log.md".into(),
                            shown: "out/log.md".into(),
                            mode: FileModeName::Append,
                            content: format!("{w} {i}\n"),
                        };
                        deliver(&p, &fs).unwrap();
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
        let fs = fs(dir.path());
        let deliver_again = |p: &FilePayload| deliver_again(p, &fs);
        let mk = |mode| FilePayload { path: "r.md".into(), shown: "r.md".into(), mode, content: "report\n".into() };
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

    #[test]
    fn a_delivery_never_lands_outside_while_its_folder_is_swapped_with_a_link() {
        use crate::policy::confinement::tests::{Swapper, swap_scene};
        let (_dir, ws, outside) = swap_scene();
        let fs = fs(&ws);
        let (folder, link) = (ws.join("data/t"), ws.join("data/l"));
        let swapper = Swapper::start(&folder, &link);
        let payload = |name: &str| FilePayload {
            path: format!("data/t/{name}"),
            shown: format!("data/t/{name}"),
            mode: FileModeName::Create,
            content: "report\n".into(),
        };
        for i in 0..300 {
            let _ = deliver(&payload(&format!("w{i}.md")), &fs);
        }
        assert!(swapper.stop(&folder, &link) > 0);
        let leaked: Vec<_> = std::fs::read_dir(&outside).unwrap().collect();
        assert!(leaked.is_empty(), "{} deliveries landed outside: {leaked:?}", leaked.len());
        deliver(&payload("after.md"), &fs).unwrap();
        assert!(folder.join("after.md").is_file());
    }

    #[test]
    fn the_payload_keeps_the_path_relative_and_an_older_absolute_one_still_works() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        assert_eq!(resolve(&ws, &[], &[], "out/r.md").unwrap(), "out/r.md");
        assert_eq!(resolve(&ws, &[], &[], &ws.join("out/r.md").display().to_string()).unwrap(), "out/r.md");
        assert!(matches!(resolve(&ws, &[], &[], "/tmp/r.md"), Err(DeliveryError::Path(PathError::Outside { .. }))));
        let protected = [ws.join("routines")];
        assert!(matches!(
            resolve(&ws, &[], &protected, "x/../routines/a.yaml"),
            Err(DeliveryError::Path(PathError::Protected { .. }))
        ));
        let old = FilePayload {
            path: ws.join("out/old.md").display().to_string(),
            shown: "out/old.md".into(),
            mode: FileModeName::Create,
            content: "old\n".into(),
        };
        deliver(&old, &fs(&ws)).unwrap();
        assert_eq!(std::fs::read_to_string(ws.join("out/old.md")).unwrap(), "old\n");
    }
}
