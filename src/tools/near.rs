//! Where a path the model named does not exist: the workspace files it most likely meant.
//!
//! Small models drop folders from paths (`app.log` for `logs/app.log`) and then take the
//! "does not exist" as the answer. A failure that names the file that does exist lets them
//! correct the call instead. The search is bounded (entries visited, depth), skips hidden
//! folders and never follows symbolic links, so it costs little and shows nothing a
//! `file_list` of the workspace would not.

use std::path::Path;

/// Most directory entries looked at for one hint.
const MAX_VISITED: usize = 5_000;
/// Deepest folder looked into, below the workspace.
const MAX_DEPTH: usize = 6;
/// Most paths suggested.
const MAX_SUGGESTED: usize = 3;

/// Workspace files (relative paths) whose name is the last component of `wanted`, compared
/// without case, that `allowed` lets through (the policy's forbidden paths stay unnamed); empty
/// when there is none or `wanted` names no file.
pub fn similar_paths(workspace: &Path, wanted: &str, allowed: &dyn Fn(&Path) -> bool) -> Vec<String> {
    let wanted = wanted.trim().trim_matches(['\'', '"', '`']);
    let Some(name) = Path::new(wanted).file_name().and_then(|n| n.to_str()) else {
        return Vec::new();
    };
    let name = name.to_lowercase();
    let mut found = Vec::new();
    let mut visited = 0usize;
    let mut queue = std::collections::VecDeque::from([(workspace.to_path_buf(), 0usize)]);
    while let Some((dir, depth)) = queue.pop_front() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            visited += 1;
            if visited > MAX_VISITED {
                return found;
            }
            let Ok(kind) = entry.file_type() else { continue };
            let file_name = entry.file_name();
            let Some(file_name) = file_name.to_str() else { continue };
            if kind.is_dir() && !file_name.starts_with('.') && depth < MAX_DEPTH {
                queue.push_back((entry.path(), depth + 1));
            } else if kind.is_file() && file_name.to_lowercase() == name && allowed(&entry.path()) {
                let path = entry.path();
                let Ok(rel) = path.strip_prefix(workspace) else { continue };
                let rel = rel.to_string_lossy().into_owned();
                if rel != wanted {
                    found.push(rel);
                }
                if found.len() == MAX_SUGGESTED {
                    return found;
                }
            }
        }
    }
    found
}

/// What every suggestion says.
const NOT_THERE_BUT: &str = "is not there, but ";

/// The sentence that suggests `similar` for `wanted`, or `None` when there is nothing to say.
pub fn suggestion(wanted: &str, similar: &[String]) -> Option<String> {
    match similar {
        [] => None,
        [one] => Some(format!("`{wanted}` {NOT_THERE_BUT}`{one}` exists: use that path")),
        many => Some(format!(
            "`{wanted}` {NOT_THERE_BUT}these exist: {}",
            many.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// The one path a result suggests for the one it could not find (`wanted`, `instead`), when it
/// names exactly one: "`app.log` is not there, but `logs/app.log` exists: use that path".
pub fn near_path(result: &str) -> Option<(&str, &str)> {
    result.lines().find_map(|line| {
        let (before, after) = line.split_once(NOT_THERE_BUT)?;
        let (_, wanted) = before.strip_suffix("` ")?.rsplit_once('`')?;
        let one = after.strip_prefix('`')?.strip_suffix("` exists: use that path")?;
        (!wanted.is_empty() && !one.is_empty() && !one.contains('`')).then_some((wanted, one))
    })
}

/// Whether a tool result carries a suggestion of [`suggestion`].
pub fn names_a_near_path(result: &str) -> bool {
    result.contains(NOT_THERE_BUT)
}

/// The paths a command's error output says do not exist, as commands write it
/// (`grep: app.log: No such file or directory`,
/// `ls: cannot access 'x': No such file or directory`), at most three.
pub fn missing_in_output(output: &str) -> Vec<String> {
    const MARK: &str = ": No such file or directory";
    let mut paths: Vec<String> = Vec::new();
    for line in output.lines() {
        let Some(head) = line.strip_suffix(MARK).or_else(|| line.split_once(MARK).map(|(h, _)| h)) else {
            continue;
        };
        // The last `: `-separated field before the mark is the path; the first names the program.
        let Some((_, path)) = head.rsplit_once(": ") else { continue };
        let path = path.trim_start_matches("cannot access ").trim().trim_matches(['\'', '"', '`']);
        if !path.is_empty() && !paths.iter().any(|p| p == path) {
            paths.push(path.to_string());
        }
        if paths.len() == 3 {
            break;
        }
    }
    paths
}

/// The hint lines for a failed command's output: one per missing path with a likely match.
pub fn command_hint(workspace: &Path, output: &str, allowed: &dyn Fn(&Path) -> bool) -> Option<String> {
    let hints: Vec<String> =
        missing_in_output(output).iter().filter_map(|p| suggestion(p, &similar_paths(workspace, p, allowed))).collect();
    (!hints.is_empty()).then(|| hints.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_one_suggested_path_is_read_back_from_a_result() {
        let one = suggestion("app.log", &["logs/app.log".to_string()]).unwrap();
        assert_eq!(
            near_path(&format!("[failed] exit code 2; {one}\ngrep: app.log: none")),
            Some(("app.log", "logs/app.log"))
        );
        let many = suggestion("a.md", &["x/a.md".to_string(), "y/a.md".to_string()]).unwrap();
        assert_eq!(near_path(&many), None, "a choice is the model's");
        assert_eq!(near_path("`a` is there"), None);
    }

    fn any(_: &Path) -> bool {
        true
    }

    fn workspace() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for path in ["logs/app.log", "logs/old/App.log", "notes/todo.md", ".git/app.log", "README.md"] {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        dir
    }

    #[test]
    fn a_file_named_without_its_folder_is_found_where_it_is() {
        let dir = workspace();
        assert_eq!(similar_paths(dir.path(), "app.log", &any), ["logs/app.log", "logs/old/App.log"]);
        assert_eq!(similar_paths(dir.path(), "./todo.md", &any), ["notes/todo.md"]);
        assert_eq!(similar_paths(dir.path(), "missing.txt", &any), Vec::<String>::new());
        assert_eq!(similar_paths(dir.path(), "", &any), Vec::<String>::new());
        assert_eq!(
            suggestion("todo.md", &similar_paths(dir.path(), "todo.md", &any)).unwrap(),
            "`todo.md` is not there, but `notes/todo.md` exists: use that path"
        );
    }

    #[test]
    fn paths_the_policy_forbids_are_never_suggested() {
        let dir = workspace();
        let root = dir.path().to_path_buf();
        let not_old = move |p: &Path| !p.starts_with(root.join("logs/old"));
        assert_eq!(similar_paths(dir.path(), "app.log", &not_old), ["logs/app.log"]);
    }

    #[test]
    fn hidden_folders_and_symbolic_links_are_not_searched() {
        let dir = workspace();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        assert_eq!(similar_paths(dir.path(), "secret.txt", &any), Vec::<String>::new());
        assert!(!similar_paths(dir.path(), "app.log", &any).iter().any(|p| p.starts_with(".git")));
    }

    #[test]
    fn missing_paths_are_read_from_what_commands_print() {
        let output = "grep: app.log: No such file or directory\n\
                      ls: cannot access 'data/x.csv': No such file or directory\n\
                      wc: app.log: No such file or directory\n\
                      some other line";
        assert_eq!(missing_in_output(output), ["app.log", "data/x.csv"]);
        let dir = workspace();
        assert_eq!(
            command_hint(dir.path(), "cat: todo.md: No such file or directory", &any).unwrap(),
            "`todo.md` is not there, but `notes/todo.md` exists: use that path"
        );
        assert_eq!(command_hint(dir.path(), "cat: nothing.md: No such file or directory", &any), None);
    }
}
