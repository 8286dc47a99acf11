//! Lexical and resolved path handling for the policy: confinement of tool
//! paths to the workspace, forbidden paths, and the paths that arguments of a
//! shell command name. The one home of this logic: tools ask here.

use std::path::{Component, Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("the workspace {} cannot be used: {reason}", path.display())]
    Workspace { path: PathBuf, reason: String },
    #[error("`{input}` is outside the workspace; use a path inside {}", workspace.display())]
    Outside { input: String, workspace: PathBuf },
    #[error("`{input}` is a forbidden path")]
    Forbidden { input: String },
    /// A write to the engine's own files (config, routines, templates, skills, data, identity
    /// files, `.git` internals, `security.protected_paths`).
    #[error(
        "`{input}` is one of the engine's own files, which no tool may write; write your result elsewhere in the workspace"
    )]
    Protected { input: String },
    /// A regular file with more than one name: it may be a file from outside the workspace.
    #[error("`{input}` has other hard links (it may be a file from outside the workspace); it is not used")]
    HardLinked { input: String },
    #[error("`{input}` is not a usable path: {reason}")]
    Invalid { input: String, reason: String },
    /// A FIFO, socket or device where a file would be written: writing could block, or reach
    /// something other than a file.
    #[error("`{input}` is a {kind}, not a regular file; only regular files are written")]
    Special { input: String, kind: &'static str },
}

/// Resolves `input` against `workspace` (canonical), following symlinks of
/// every part that exists, and checks the result stays inside and avoids
/// every forbidden path. Parts that do not exist yet may not contain `..`.
pub fn confine(workspace: &Path, forbidden: &[PathBuf], input: &str) -> Result<PathBuf, PathError> {
    let expanded = expand(input)?;
    let joined = if expanded.is_absolute() { expanded } else { workspace.join(expanded) };
    if under_any(forbidden, &lexical(&joined)) {
        return Err(PathError::Forbidden { input: input.into() });
    }

    // Walk the components, resolving every symlink as it is met, so `..`
    // always steps out of the real (not the apparent) folder. `full` stays
    // canonical: it starts at the (canonical) workspace or the root, and one
    // lstat per component keeps this cheap.
    let outside = || PathError::Outside { input: input.into(), workspace: workspace.to_path_buf() };
    let (mut full, rest) = match joined.strip_prefix(workspace) {
        Ok(rest) => (workspace.to_path_buf(), rest.to_path_buf()),
        Err(_) => (PathBuf::from("/"), joined.clone()),
    };
    for comp in rest.components() {
        match comp {
            Component::RootDir | Component::Prefix(_) => full = PathBuf::from("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                full.pop();
            }
            Component::Normal(name) => {
                full.push(name);
                let is_link = full.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink());
                if is_link {
                    // A dangling symlink would let a write land wherever it points.
                    full = full.canonicalize().map_err(|_| outside())?;
                }
            }
        }
    }
    if !full.starts_with(workspace) {
        return Err(outside());
    }
    if under_any(forbidden, &full) {
        return Err(PathError::Forbidden { input: input.into() });
    }
    Ok(full)
}

/// `input` as a path relative to `workspace` (canonical), without touching the file system:
/// `~` expanded, an absolute path (`.` and `..` taken lexically) made relative when it lies
/// inside the workspace and refused otherwise, a forbidden path as written refused. A relative
/// path is kept as given: where its `..` and symlinks lead is for the open beneath the
/// workspace to find ([`super::beneath`]).
pub fn relative(workspace: &Path, forbidden: &[PathBuf], input: &str) -> Result<PathBuf, PathError> {
    let expanded = expand(input)?;
    let joined = lexical(&workspace.join(&expanded));
    if under_any(forbidden, &joined) {
        return Err(PathError::Forbidden { input: input.into() });
    }
    if !expanded.is_absolute() {
        return Ok(expanded);
    }
    match joined.strip_prefix(workspace) {
        Ok(rel) => Ok(rel.to_path_buf()),
        Err(_) => Err(PathError::Outside { input: input.into(), workspace: workspace.to_path_buf() }),
    }
}

/// `input` as a path, `~` expanded; a NUL byte refused.
fn expand(input: &str) -> Result<PathBuf, PathError> {
    if input.contains('\0') {
        return Err(PathError::Invalid { input: input.into(), reason: "it contains a NUL byte".into() });
    }
    let raw = Path::new(input);
    Ok(match (raw.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => raw.to_path_buf(),
    })
}

/// Whether `path` is one of `forbidden` or lies under one (compared by components).
pub fn under_any(forbidden: &[PathBuf], path: &Path) -> bool {
    forbidden.iter().any(|f| path.starts_with(f))
}

/// The file an argument of a shell command names (`/x`, `./x`, `a/b`, `~/x`,
/// `--opt=/x`), made absolute against `cwd` with `.` and `..` taken
/// lexically, then with symlinks resolved where the path exists, so a link
/// cannot hide a forbidden target. `None` for an argument that does not look
/// like a path (`-la`, `README.md`).
pub fn argument_path(arg: &str, cwd: &Path) -> Option<PathBuf> {
    let value = arg.split_once('=').map_or(arg, |(_, v)| v);
    let looks_like_path = value.starts_with(['/', '~', '.']) || value.contains('/');
    if !looks_like_path || value.is_empty() {
        return None;
    }
    let p = match value.strip_prefix("~") {
        Some(rest) => PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(rest.trim_start_matches('/')),
        None => cwd.join(value),
    };
    let out = lexical(&p);
    Some(out.canonicalize().unwrap_or(out))
}

/// `a/b/../c` → `a/c` without touching the file system.
pub(crate) fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Refuses an existing regular file with more than one hard link: a link made inside the
/// workspace to a file outside it would otherwise let a tool read or change that file. A path
/// that does not exist yet passes.
pub fn refuse_hard_link(path: &Path, input: &str) -> Result<(), PathError> {
    use std::os::unix::fs::MetadataExt;
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() && meta.nlink() > 1 => Err(PathError::HardLinked { input: input.into() }),
        _ => Ok(()),
    }
}

/// `paths` with the canonical form of each that exists beside it, for [`engine_write`].
pub fn with_canonical_forms(paths: &[PathBuf]) -> Vec<PathBuf> {
    paths.iter().flat_map(|p| std::iter::once(p.clone()).chain(p.canonicalize().ok())).collect()
}

/// Whether writing the resolved `path` would write the engine's own files: anything under a
/// `.git` folder of the (canonical) `workspace`, or under one of `protected` (the engine's
/// files and `security.protected_paths`, see [`with_canonical_forms`]). Tools and file
/// deliveries alike refuse these.
pub fn engine_write(workspace: &Path, protected: &[PathBuf], path: &Path) -> bool {
    let in_git = path.strip_prefix(workspace).is_ok_and(|rel| rel.components().any(|c| c.as_os_str() == ".git"));
    in_git || under_any(protected, path)
}

/// Refuses an existing path that is a FIFO, a socket or a device: a write there could block
/// the run or reach something other than a file. A path that does not exist yet passes.
pub fn refuse_special(path: &Path, input: &str) -> Result<(), PathError> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else { return Ok(()) };
    let t = meta.file_type();
    let kind = if t.is_fifo() {
        "FIFO"
    } else if t.is_socket() {
        "socket"
    } else if t.is_block_device() || t.is_char_device() {
        "device"
    } else {
        return Ok(());
    };
    Err(PathError::Special { input: input.into(), kind })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_paths_inside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        let ws = dir.path().join("ws").canonicalize().unwrap();
        std::fs::write(ws.join("a.txt"), "a").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "s").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), ws.join("link")).unwrap();
        let secrets = ws.join(".secrets");
        std::fs::create_dir_all(&secrets).unwrap();

        assert_eq!(confine(&ws, &[], "a.txt").unwrap(), ws.join("a.txt"));
        assert_eq!(confine(&ws, &[], "new/dir/file.md").unwrap(), ws.join("new/dir/file.md"));
        assert!(matches!(confine(&ws, &[], "../secret.txt"), Err(PathError::Outside { .. })));
        assert!(matches!(confine(&ws, &[], "link"), Err(PathError::Outside { .. })));
        assert!(matches!(confine(&ws, &[], "/etc/passwd"), Err(PathError::Outside { .. })));
        assert!(matches!(confine(&ws, &[], "missing/../../x"), Err(PathError::Outside { .. })));
        assert!(matches!(
            confine(&ws, std::slice::from_ref(&secrets), ".secrets/key"),
            Err(PathError::Forbidden { .. })
        ));
        assert!(matches!(confine(&ws, &[secrets], "./x/../.secrets"), Err(PathError::Forbidden { .. })));
        assert!(matches!(confine(&ws, &[], "a\0b"), Err(PathError::Invalid { .. })));
        std::os::unix::fs::symlink("/nonexistent/target", ws.join("dangling")).unwrap();
        assert!(matches!(confine(&ws, &[], "dangling"), Err(PathError::Outside { .. })));
        assert_eq!(confine(&ws, &[], "new/../a.txt").unwrap(), ws.join("a.txt"));
    }

    #[test]
    fn recognizes_path_arguments() {
        let ws = Path::new("/ws");
        assert_eq!(argument_path("--file=/etc/shadow", ws), Some(PathBuf::from("/etc/shadow")));
        assert_eq!(argument_path("./a/../b", ws), Some(PathBuf::from("/ws/b")));
        assert_eq!(argument_path("-la", ws), None);
        assert_eq!(argument_path("README.md", ws), None);
    }
}
