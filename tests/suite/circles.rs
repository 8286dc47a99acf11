//! No import circles between the files of src/. `layering.rs` keeps the arrows between
//! top-level modules pointing down; this test looks inside them: every path written in a
//! file's own code (`crate::…`, `super::…`, `self::…`, `use` groups included; tests left
//! out) is resolved to the file module it names, and the arrows between file modules must
//! form no circle. A file may use its ancestors (`super::Agent` from `agent/turn/mod.rs`):
//! those are its context, not an import, and are not arrows. A module reaches its children
//! (what it exports may be theirs), so an arrow into a module is an arrow into them too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use regex::Regex;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Module path of a file under src/: `agent/turn/mod.rs` is `[agent, turn]`, `lib.rs` is `[]`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string()).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib" || p == "main") {
        parts.pop();
    }
    parts
}

/// The paths that follow a `prefix::` at the start of `text`, as name lists: `a::b::c` is one,
/// `a::{b, c::d}` two (`a::b`, `a::c::d`), groups inside groups expanded too.
fn paths_after(text: &str) -> Vec<Vec<String>> {
    let mut names = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            let (mut depth, mut item, mut items) = (0, String::new(), Vec::new());
            for ch in group.chars() {
                match ch {
                    '{' => {
                        depth += 1;
                        item.push(ch);
                    }
                    '}' if depth == 0 => break,
                    '}' => {
                        depth -= 1;
                        item.push(ch);
                    }
                    ',' if depth == 0 => items.push(std::mem::take(&mut item)),
                    _ => item.push(ch),
                }
            }
            items.push(item);
            return items
                .iter()
                .flat_map(|i| paths_after(i))
                .map(|tail| names.iter().cloned().chain(tail).collect())
                .collect();
        }
        let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
        if end == 0 {
            return vec![names];
        }
        let name = &rest[..end];
        if name != "self" {
            names.push(name.to_string());
        }
        rest = &rest[end..];
        match rest.strip_prefix("::") {
            Some(more) => rest = more,
            None => return vec![names],
        }
    }
}

/// Every arrow between file modules, with the first place each is written.
fn arrows(modules: &BTreeSet<Vec<String>>) -> BTreeMap<(Vec<String>, Vec<String>), String> {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let prefix = Regex::new(r"(?:^|[^\w:])(crate|self|(?:super::)*super)::").unwrap();
    let test_mod = Regex::new(r"^(\s*)(?:pub(?:\([a-z]+\))? )?mod \w+ \{$").unwrap();
    let mut found = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap().to_path_buf();
        let module = module_path(&rel);
        let text = std::fs::read_to_string(&file).unwrap();
        let mut inline: Option<String> = None;
        let mut start = 0;
        for (n, line) in text.split('\n').enumerate() {
            let line_start = start;
            start += line.len() + 1;
            if let Some(indent) = &inline {
                if line.strip_prefix(indent.as_str()) == Some("}") {
                    inline = None;
                }
                continue;
            }
            if let Some(c) = test_mod.captures(line) {
                inline = Some(c[1].to_string());
                continue;
            }
            if line.trim_start().starts_with("//") {
                continue;
            }
            for c in prefix.captures_iter(line) {
                let base: Vec<String> = match &c[1] {
                    "crate" => Vec::new(),
                    "self" => module.clone(),
                    supers => module[..module.len().saturating_sub(supers.matches("super").count())].to_vec(),
                };
                for tail in paths_after(&text[line_start + c.get(0).unwrap().end()..]) {
                    let full: Vec<String> = base.iter().cloned().chain(tail).collect();
                    let target = (0..=full.len()).rev().map(|k| full[..k].to_vec()).find(|m| modules.contains(m));
                    let Some(target) = target else { continue };
                    // Itself or an ancestor: its own context, not an import.
                    if module.starts_with(&target) {
                        continue;
                    }
                    found.entry((module.clone(), target)).or_insert_with(|| format!("src/{}:{}", rel.display(), n + 1));
                }
            }
        }
    }
    found
}

#[test]
fn the_files_of_src_import_each_other_in_no_circle() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeSet<Vec<String>> =
        files.iter().map(|f| module_path(f.strip_prefix(&src).unwrap())).filter(|m| !m.is_empty()).collect();
    let mut found = arrows(&modules);
    // A module holds its children: what it exports may be theirs (`pub use runs::OwnedEnd`), so
    // an arrow into a module reaches its children too.
    for child in &modules {
        if child.len() > 1 {
            let parent = child[..child.len() - 1].to_vec();
            found.entry((parent, child.clone())).or_insert_with(|| "holds it".to_string());
        }
    }
    // The scanner sees `use super::…` groups and `crate::` paths, or this would pass vacuously.
    let seen = |from: &str, to: &str| {
        let split = |s: &str| s.split("::").map(str::to_string).collect::<Vec<_>>();
        found.contains_key(&(split(from), split(to)))
    };
    assert!(seen("agent::evidence", "agent::comparison"), "use super::comparison");
    assert!(seen("agent::select::dates", "agent::count_word"), "crate::agent::count_word::number");
    assert!(seen("engine", "agent"));
    // Repeatedly remove modules no remaining arrow leaves or enters; what is left sits on a circle.
    let mut left: BTreeSet<&Vec<String>> = found.keys().flat_map(|(f, t)| [f, t]).collect();
    loop {
        let live = |(f, t): &(Vec<String>, Vec<String>)| left.contains(f) && left.contains(t);
        let ends: Vec<&Vec<String>> = left
            .iter()
            .copied()
            .filter(|m| !found.keys().any(|e| live(e) && e.0 == **m) || !found.keys().any(|e| live(e) && e.1 == **m))
            .collect();
        if ends.is_empty() {
            break;
        }
        for m in ends {
            left.remove(m);
        }
    }
    // The store's PostgreSQL files and its SQLite body use each other until the store is one
    // contract with two sibling backends (issue 49); nothing else may.
    let on_circle: Vec<String> = found
        .iter()
        .filter(|((f, t), _)| left.contains(f) && left.contains(t))
        .filter(|((f, t), _)| f[0] != "store" || t[0] != "store")
        .map(|((f, t), at)| format!("{} → {} ({at})", f.join("::"), t.join("::")))
        .collect();
    assert!(on_circle.is_empty(), "imports that form circles:\n{}", on_circle.join("\n"));
}
