//! Confinement of tool paths to the workspace.

use std::path::{Component, Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("the workspace {} cannot be used: {reason}", path.display())]
    Workspace { path: PathBuf, reason: String },
    #[error("`{input}` is outside the workspace; use a path inside {}", workspace.display())]
    Outside { input: String, workspace: PathBuf },
    #[error("`{input}` is a forbidden path")]
    Forbidden { input: String },
    #[error("`{input}` is not a usable path: {reason}")]
    Invalid { input: String, reason: String },
}

/// Resolves `input` against `workspace` (canonical), following symlinks of
/// every part that exists, and checks the result stays inside and avoids
/// every forbidden path. Parts that do not exist yet may not contain `..`.
pub fn confine(workspace: &Path, forbidden: &[PathBuf], input: &str) -> Result<PathBuf, PathError> {
    if input.contains('\0') {
        return Err(PathError::Invalid { input: input.into(), reason: "it contains a NUL byte".into() });
    }
    let raw = Path::new(input);
    let expanded = match (raw.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => raw.to_path_buf(),
    };
    let joined = if expanded.is_absolute() { expanded } else { workspace.join(expanded) };
    let forbidden_hit = |p: &Path| forbidden.iter().any(|f| p.starts_with(f));
    if forbidden_hit(&lexical(&joined)) {
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
    if forbidden_hit(&full) {
        return Err(PathError::Forbidden { input: input.into() });
    }
    Ok(full)
}

/// `a/b/../c` → `a/c` without touching the file system.
fn lexical(p: &Path) -> PathBuf {
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
}
