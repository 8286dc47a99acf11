//! `file_write` and `file_edit`: changing files in the workspace.

use std::io::Write as _;
use std::path::Path;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Tool, ToolContext, ToolError};
use crate::policy::{CallInfo, Effect, OpenError};

/// Largest file these tools write or edit.
const MAX_WRITE_BYTES: usize = 8 * 1024 * 1024;

pub struct FileWrite;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileWriteArgs {
    /// Path relative to the workspace; missing folders are created.
    pub path: String,
    /// The whole new content.
    pub content: String,
    /// Add to the end instead of replacing.
    pub append: Option<bool>,
}

#[async_trait]
impl Tool for FileWrite {
    const NAME: &'static str = "file_write";
    type Args = FileWriteArgs;

    fn description(&self) -> &'static str {
        "Write a text file in the workspace (replaces it, or appends)."
    }

    fn effect(&self) -> Effect {
        Effect::Mutating
    }

    fn info(&self, args: &FileWriteArgs) -> CallInfo {
        CallInfo::new(args.path.clone(), Self::NAME)
    }

    async fn call(&self, args: FileWriteArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        if args.content.len() > MAX_WRITE_BYTES {
            return Err(ToolError::failed(format!("content is larger than {MAX_WRITE_BYTES} bytes")));
        }
        let append = args.append.unwrap_or(false);
        let shown = args.path.clone();
        let policy = ctx.policy.clone();
        tokio::task::spawn_blocking(move || {
            let target = policy.fs().write_target(&shown, true).map_err(|e| open_failure(&shown, e))?;
            let mut data = Vec::new();
            if append && let Some(old) = target.read().map_err(|e| io_failure(&shown, &e))? {
                data = old;
            }
            data.extend_from_slice(args.content.as_bytes());
            target.write_atomic(&data).map_err(|e| io_failure(&shown, &e))?;
            let verb = if append { "Appended" } else { "Wrote" };
            Ok(format!("{verb} {} bytes to {shown}.", args.content.len()))
        })
        .await
        .map_err(|e| ToolError::System(format!("writing failed: {e}")))?
    }
}

pub struct FileEdit;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileEditArgs {
    /// Path relative to the workspace.
    pub path: String,
    /// Exact text to replace; it must occur exactly once.
    pub old_string: String,
    /// Replacement text.
    pub new_string: String,
}

#[async_trait]
impl Tool for FileEdit {
    const NAME: &'static str = "file_edit";
    type Args = FileEditArgs;

    fn description(&self) -> &'static str {
        "Replace one exact, unique piece of text in a workspace file."
    }

    fn effect(&self) -> Effect {
        Effect::Mutating
    }

    fn info(&self, args: &FileEditArgs) -> CallInfo {
        CallInfo::new(args.path.clone(), Self::NAME)
    }

    async fn call(&self, args: FileEditArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        if args.old_string.is_empty() {
            return Err(ToolError::InvalidArgs("old_string is empty; give the exact text to replace".into()));
        }
        let policy = ctx.policy.clone();
        tokio::task::spawn_blocking(move || {
            let target = policy.fs().write_target(&args.path, false).map_err(|e| open_failure(&args.path, e))?;
            let bytes = target.read().map_err(|e| io_failure(&args.path, &e))?;
            let bytes = bytes.ok_or_else(|| ToolError::failed(format!("`{}` does not exist", args.path)))?;
            let text = String::from_utf8(bytes)
                .map_err(|_| ToolError::failed(format!("`{}` is not UTF-8 text", args.path)))?;
            let count = text.matches(&args.old_string).count();
            match count {
                0 => {
                    let near = lines_sharing_a_word(&text, &args.old_string);
                    let shown = if near.is_empty() {
                        String::new()
                    } else {
                        format!(". The lines that share a word with it:\n{}", near.join("\n"))
                    };
                    return Err(ToolError::failed(format!(
                        "old_string was not found in {}; read the file and copy the text exactly{shown}",
                        args.path
                    )));
                }
                1 => {}
                n => {
                    return Err(ToolError::failed(format!(
                        "old_string occurs {n} times in {}; include more surrounding text so it matches once",
                        args.path
                    )));
                }
            }
            let at = text.find(&args.old_string).unwrap_or(0);
            let line = text[..at].matches('\n').count() + 1;
            let updated = text.replacen(&args.old_string, &args.new_string, 1);
            if updated.len() > MAX_WRITE_BYTES {
                return Err(ToolError::failed(format!("the edited file would be larger than {MAX_WRITE_BYTES} bytes")));
            }
            target.write_atomic(updated.as_bytes()).map_err(|e| io_failure(&args.path, &e))?;
            Ok(format!("Edited {} at line {line}: replaced 1 occurrence.", args.path))
        })
        .await
        .map_err(|e| ToolError::System(format!("editing failed: {e}")))?
    }
}

/// Writes through a temporary file in the same folder and a rename, so a
/// reader never sees half a file; creates missing folders. By path, for the engine's own
/// files only (routine files the `schedule` tool writes); whatever lies in the workspace is
/// written through [`crate::policy::WriteTarget::write_atomic`].
pub fn write_atomic(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().ok_or_else(|| std::io::Error::other("the path has no folder"))?;
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}-{:08x}", std::process::id(), rand::random::<u32>()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
        if let Ok(meta) = std::fs::metadata(path) {
            std::fs::set_permissions(&tmp, meta.permissions())?;
        }
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// A path the policy refused is a refusal; a failed open is a failure.
fn open_failure(shown: &str, e: OpenError) -> ToolError {
    match e {
        OpenError::Refused(e) => e.into(),
        OpenError::Io(e) => io_failure(shown, &e),
    }
}

fn io_failure(shown: &str, e: &std::io::Error) -> ToolError {
    match e.kind() {
        std::io::ErrorKind::NotFound => ToolError::failed(format!("`{shown}` does not exist")),
        std::io::ErrorKind::PermissionDenied => ToolError::failed(format!("`{shown}`: permission denied")),
        _ => ToolError::System(format!("`{shown}`: {e}")),
    }
}

/// The lines of `text` (at most three, each cut at 200 characters) that share a word of three
/// letters or more with `wanted`, ignoring case: what an edit whose `old_string` is not in the
/// file most likely meant. The 1.5B model sent `debug mode on` for `  debug: true`, twice, after
/// reading the file (bench/README.md, stop 42).
fn lines_sharing_a_word(text: &str, wanted: &str) -> Vec<String> {
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_alphanumeric() && c != '_')
            .filter(|w| w.chars().count() >= 3)
            .map(str::to_lowercase)
            .collect()
    };
    let wanted = words(wanted);
    text.lines()
        .filter(|l| words(l).iter().any(|w| wanted.contains(w)))
        .take(3)
        .map(|l| if l.chars().count() > 200 { l.chars().take(200).collect() } else { l.to_string() })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Autonomy;
    use crate::policy::Policy;

    fn ctx(dir: &Path) -> ToolContext {
        ToolContext::for_test(Policy::new(Autonomy::Full, dir, &[]).unwrap())
    }

    #[tokio::test]
    async fn writes_appends_and_creates_folders() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let c = ctx(&root);
        let w = |p: &str, t: &str, a| FileWriteArgs { path: p.into(), content: t.into(), append: a };
        assert_eq!(FileWrite.call(w("out/r.md", "one\n", None), &c).await.unwrap(), "Wrote 4 bytes to out/r.md.");
        assert_eq!(
            FileWrite.call(w("out/r.md", "two\n", Some(true)), &c).await.unwrap(),
            "Appended 4 bytes to out/r.md."
        );
        assert_eq!(std::fs::read_to_string(root.join("out/r.md")).unwrap(), "one\ntwo\n");
        assert!(matches!(FileWrite.call(w("../x", "", None), &c).await, Err(ToolError::Refused(_))));
        let leftovers: Vec<_> = std::fs::read_dir(root.join("out")).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary files are left behind");
    }

    #[tokio::test]
    async fn edits_only_a_unique_match() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("a.txt"), "x = 1\ny = 1\nz = 2\n").unwrap();
        let c = ctx(&root);
        let e = |o: &str, n: &str| FileEditArgs { path: "a.txt".into(), old_string: o.into(), new_string: n.into() };
        assert_eq!(
            FileEdit.call(e("= 1", "= 3"), &c).await.unwrap_err(),
            ToolError::failed("old_string occurs 2 times in a.txt; include more surrounding text so it matches once")
        );
        assert_eq!(
            FileEdit.call(e("w = 9", "w = 0"), &c).await.unwrap_err(),
            ToolError::failed("old_string was not found in a.txt; read the file and copy the text exactly")
        );
        std::fs::write(root.join("config.yaml"), "app:\n  name: shop\n  debug: true\n  port: 8080\n").unwrap();
        let edit = FileEditArgs {
            path: "config.yaml".into(),
            old_string: "debug mode on".into(),
            new_string: "debug mode off".into(),
        };
        assert_eq!(
            FileEdit.call(edit, &c).await.unwrap_err(),
            ToolError::failed(
                "old_string was not found in config.yaml; read the file and copy the text exactly. The lines that share a word with it:\n  debug: true"
            )
        );
        assert_eq!(
            FileEdit.call(e("y = 1", "y = 5"), &c).await.unwrap(),
            "Edited a.txt at line 2: replaced 1 occurrence."
        );
        assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "x = 1\ny = 5\nz = 2\n");
    }
}
