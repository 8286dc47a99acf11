//! Shell globs in a `shell` call, expanded by the engine inside the workspace.
//!
//! Commands run without a shell (`shell.rs`), so `du -sh data/*` reached `du` as the
//! literal `data/*` and failed; the 1.5B model then ran the same command again and answered
//! that the folder had no files (bench/README.md, stop 39). Models write globs as they would
//! at a prompt, so the engine expands them the way a POSIX shell does, with these limits:
//!
//! - only a word with an unquoted, unescaped `*`, `?` or `[` is a pattern (`find -name '*.log'`
//!   stays as written), and never the program itself;
//! - only relative patterns without `..`: nothing outside the workspace is listed; an absolute
//!   or `..` pattern, like one that matches nothing, reaches the command as written;
//! - a folder is listed only when its real path (symlinks resolved) is inside the workspace,
//!   and names under a forbidden or hidden path are left out, so a link cannot make the
//!   engine list what the sandbox hides;
//! - names that start with `.` match only a pattern part that starts with `.`, as in a shell;
//! - a match that starts with `-` is written `./-name`, so a file's name cannot become an
//!   option of the command;
//! - at most [`MAX_MATCHES`] names per word, sorted; past that the word stays as written.
//!
//! The expanded argv goes through the policy's forbidden-path check and into the sandbox like
//! any other; the allowlist was checked on the command as written, and expansion never
//! changes the program.

use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};

/// The most names one pattern may expand to.
pub const MAX_MATCHES: usize = 1000;

/// `argv` (the words of `line`) with every pattern word expanded in `cwd`. `skip(path)` says
/// whether a path must stay out of sight (forbidden or hidden).
pub fn expand(line: &str, argv: &[String], cwd: &Path, skip: &dyn Fn(&Path) -> bool) -> Vec<String> {
    let Some(patterns) = pattern_words(line) else { return argv.to_vec() };
    if patterns.len() != argv.len() {
        return argv.to_vec();
    }
    let Ok(root) = cwd.canonicalize() else { return argv.to_vec() };
    let mut out = Vec::with_capacity(argv.len());
    for (k, word) in argv.iter().enumerate() {
        if k == 0 || !patterns[k] {
            out.push(word.clone());
            continue;
        }
        match matches(word, &root, skip) {
            Some(names) if !names.is_empty() => out.extend(names),
            _ => out.push(word.clone()),
        }
    }
    out
}

/// For each word of `line`, split as `shell_words` splits it, whether it holds an unquoted,
/// unescaped `*`, `?` or `[`. `None` when the line ends inside a quote.
fn pattern_words(line: &str) -> Option<Vec<bool>> {
    let mut words = Vec::new();
    let mut in_word = false;
    let mut glob = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(glob);
                }
                in_word = false;
                glob = false;
            }
            '#' if !in_word => break,
            '\\' => {
                in_word = true;
                chars.next();
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        _ => continue,
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => {
                            chars.next()?;
                        }
                        _ => continue,
                    }
                }
            }
            '*' | '?' | '[' => {
                in_word = true;
                glob = true;
            }
            _ => in_word = true,
        }
    }
    if in_word {
        words.push(glob);
    }
    Some(words)
}

/// The sorted names `pattern` matches under `root`, written relative as the pattern was;
/// `None` when the pattern may not be expanded (absolute, `..`, bad syntax, too many names).
fn matches(pattern: &str, root: &Path, skip: &dyn Fn(&Path) -> bool) -> Option<Vec<String>> {
    let path = Path::new(pattern);
    if pattern.starts_with('~') || path.is_absolute() {
        return None;
    }
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str()?.to_string()),
            Component::CurDir => parts.push(".".into()),
            _ => return None,
        }
    }
    let dir_only = pattern.ends_with('/');
    // (the path as written so far, the real folder it names)
    let mut found: Vec<(String, PathBuf)> = vec![(String::new(), root.to_path_buf())];
    for (k, part) in parts.iter().enumerate() {
        let last = k + 1 == parts.len();
        let mut next = Vec::new();
        for (written, real) in &found {
            let join = |name: &str| if written.is_empty() { name.to_string() } else { format!("{written}/{name}") };
            // Nothing is looked up in a folder outside the workspace or out of sight, even by
            // name: `*/id_rsa` must not tell whether a link's target holds one.
            let inside = real.canonicalize().is_ok_and(|dir| dir.starts_with(root) && !skip(&dir));
            if !inside {
                continue;
            }
            if !has_glob(part) {
                let candidate = real.join(part);
                if (last && !dir_only) || candidate.is_dir() {
                    next.push((join(part), candidate));
                }
                continue;
            }
            for name in listed(real, root, skip)? {
                if name.starts_with('.') && !part.starts_with('.') {
                    continue;
                }
                if !matcher(part)?.is_match(&name) {
                    continue;
                }
                let candidate = real.join(&name);
                if (!last || dir_only) && !candidate.is_dir() {
                    continue;
                }
                next.push((join(&name), candidate));
                if next.len() > MAX_MATCHES {
                    return None;
                }
            }
        }
        found = next;
    }
    let mut names: Vec<String> = found
        .into_iter()
        .filter(|(_, real)| real.symlink_metadata().is_ok())
        .map(|(written, _)| {
            let written = if dir_only { format!("{written}/") } else { written };
            if written.starts_with('-') { format!("./{written}") } else { written }
        })
        .collect();
    names.sort();
    Some(names)
}

fn has_glob(part: &str) -> bool {
    part.contains(['*', '?', '['])
}

/// One part of a pattern as a matcher of one name (`**` is `*`, as in a shell without globstar).
fn matcher(part: &str) -> Option<GlobMatcher> {
    let part = if part == "**" { "*" } else { part };
    GlobBuilder::new(part).literal_separator(true).backslash_escape(true).build().ok().map(|g| g.compile_matcher())
}

/// The names in folder `dir`, when its real path is inside `root` and not out of sight; names
/// whose path is out of sight are left out.
fn listed(dir: &Path, root: &Path, skip: &dyn Fn(&Path) -> bool) -> Option<Vec<String>> {
    let real = dir.canonicalize().ok()?;
    if !real.starts_with(root) || skip(&real) {
        return Some(Vec::new());
    }
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&real).ok()?.flatten() {
        let Ok(name) = entry.file_name().into_string() else { continue };
        if skip(&real.join(&name)) {
            continue;
        }
        names.push(name);
        if names.len() > MAX_MATCHES * 10 {
            return None;
        }
    }
    Some(names)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<bool> {
        pattern_words(line).unwrap()
    }

    #[test]
    fn only_unquoted_glob_characters_make_a_pattern() {
        assert_eq!(words("du -sh data/*"), [false, false, true]);
        assert_eq!(words("find . -name '*.log'"), [false, false, false, false]);
        assert_eq!(words("grep -r --include=\"*.py\" x ."), [false, false, false, false, false]);
        assert_eq!(words(r"ls a\*b c?"), [false, false, true]);
        assert_eq!(words("ls 'a b'*"), [false, true]);
        assert_eq!(words("ls x # *"), [false, false]);
        assert_eq!(pattern_words("ls 'open"), None);
    }

    fn tree() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        for f in ["data/big.bin", "data/small.txt", "data/.hidden", "logs/a.log", "logs/b.log", "-rf", "secret/key"] {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        std::fs::create_dir_all(dir.path().join("outside")).unwrap();
        std::fs::write(dir.path().join("outside/id_rsa"), "k").unwrap();
        std::os::unix::fs::symlink(dir.path().join("outside"), root.join("link")).unwrap();
        (dir, root)
    }

    fn run(line: &str, root: &Path) -> Vec<String> {
        let argv = shell_words::split(line).unwrap();
        let secret = root.canonicalize().unwrap().join("secret");
        expand(line, &argv, root, &|p: &Path| p.starts_with(&secret))
    }

    #[test]
    fn patterns_expand_like_a_shell_inside_the_workspace() {
        let (_d, root) = tree();
        assert_eq!(run("du -sh data/*", &root), ["du", "-sh", "data/big.bin", "data/small.txt"]);
        assert_eq!(run("wc -l logs/*.log", &root), ["wc", "-l", "logs/a.log", "logs/b.log"]);
        assert_eq!(run("ls */", &root), ["ls", "data/", "link/", "logs/"]);
        assert_eq!(run("ls ./data/s*", &root), ["ls", "./data/small.txt"]);
        assert_eq!(run("ls data/.h*", &root), ["ls", "data/.hidden"]);
        assert_eq!(run("ls nothing/*", &root), ["ls", "nothing/*"]);
        assert_eq!(run("find . -name '*.log'", &root), ["find", ".", "-name", "*.log"]);
    }

    #[test]
    fn nothing_outside_the_workspace_or_out_of_sight_is_listed() {
        let (_d, root) = tree();
        assert_eq!(run("ls link/*", &root), ["ls", "link/*"]);
        assert_eq!(run("ls ../outside/*", &root), ["ls", "../outside/*"]);
        assert_eq!(run("ls /etc/pass*", &root), ["ls", "/etc/pass*"]);
        assert_eq!(run("ls secret/*", &root), ["ls", "secret/*"]);
        assert_eq!(run("ls */id_rsa", &root), ["ls", "*/id_rsa"], "a name is not looked up through a link");
        assert_eq!(run("ls */key", &root), ["ls", "*/key"], "nor in a folder out of sight");
        assert!(!run("ls *", &root).iter().any(|w| w.contains("secret")));
    }

    #[test]
    fn a_name_that_looks_like_an_option_stays_a_path() {
        let (_d, root) = tree();
        let argv = run("ls *", &root);
        assert!(argv.contains(&"./-rf".to_string()), "{argv:?}");
        assert!(!argv.contains(&"-rf".to_string()), "{argv:?}");
    }
}
