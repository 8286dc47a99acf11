//! No text of an `evals/` task in `src/`: a task is fixed by a mechanism, never by its words.
//! The text of a task is every string scalar of its `task.yaml` and `routines/*.yaml` and the
//! whole of every other file under `evals/TASK/` (workspace, site files); whitespace runs
//! collapse to one space. Every 20-character window of it without template braces and with at
//! least 5 distinct characters is a literal, and no line of `src/**/*.rs` (comments and unit
//! tests included, whitespace collapsed the same way) may hold one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

const WIDTH: usize = 20;

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn strings(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::String(s) => out.push(collapse(s)),
        serde_json::Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// The texts of one file of a task: its string scalars for the task's YAML, else all of it.
fn texts_of(path: &Path, rel: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(path) else { return Vec::new() };
    let parts: Vec<_> = rel.iter().map(|p| p.to_string_lossy()).collect();
    let yaml = path.extension().is_some_and(|e| e == "yaml" || e == "yml");
    if yaml && matches!(parts.get(2).map(|p| p.as_ref()), Some("task.yaml" | "routines")) {
        let loaded = routines::yaml::from_str::<serde_json::Value>(path, &text)
            .unwrap_or_else(|e| panic!("{} does not parse: {e:?}", rel.display()));
        let mut out = Vec::new();
        strings(&loaded.value, &mut out);
        return out;
    }
    vec![collapse(&text)]
}

/// The 20-character windows of `text`, as byte ranges.
fn windows(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let starts: Vec<usize> = text.char_indices().map(|(i, _)| i).chain([text.len()]).collect();
    (0..starts.len().saturating_sub(WIDTH)).map(move |i| (starts[i], starts[i + WIDTH]))
}

fn is_literal(window: &str) -> bool {
    if window.contains("{{") || window.contains("}}") || window.contains("{%") {
        return false;
    }
    let mut distinct: Vec<char> = window.chars().collect();
    distinct.sort_unstable();
    distinct.dedup();
    distinct.len() >= 5
}

/// Every literal of every task, with the file (`evals/TASK/FILE`) it first comes from.
fn literals(texts: &[(String, String)]) -> HashMap<&str, &str> {
    let mut found = HashMap::new();
    for (from, text) in texts {
        for (a, b) in windows(text) {
            let window = &text[a..b];
            if is_literal(window) {
                found.entry(window).or_insert(from.as_str());
            }
        }
    }
    found
}

fn eval_texts(root: &Path) -> Vec<(String, String)> {
    let evals = root.join("evals");
    let mut files = Vec::new();
    files_under(&evals, &mut files);
    files.sort();
    let mut texts = Vec::new();
    for path in files {
        let rel = path.strip_prefix(root).unwrap().to_path_buf();
        if rel.iter().count() < 3 {
            continue; // evals/README.md and anything else outside a task
        }
        let from = rel.display().to_string();
        texts.extend(texts_of(&path, &rel).into_iter().map(|t| (from.clone(), t)));
    }
    texts
}

/// The literals in one line of source: each run of overlapping windows as one quote.
fn hits_in(line: &str, literals: &HashMap<&str, &str>) -> Vec<(String, String)> {
    let line = collapse(line);
    let mut hits: Vec<(usize, usize, String)> = Vec::new();
    for (a, b) in windows(&line) {
        let Some(from) = literals.get(&line[a..b]) else { continue };
        match hits.last_mut() {
            Some(last) if a < last.1 => last.1 = b,
            _ => hits.push((a, b, from.to_string())),
        }
    }
    hits.into_iter().map(|(a, b, from)| (line[a..b].to_string(), from)).collect()
}

#[test]
fn no_line_of_src_holds_a_literal_of_an_eval_task() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let texts = eval_texts(&root);
    let literals = literals(&texts);
    assert!(literals.len() > 10_000, "only {} literals read from evals/", literals.len());
    // The scanner finds a task's words inside a line of code, or it would pass vacuously.
    let (from, prompt) = texts.iter().find(|(f, t)| f.ends_with("task.yaml") && t.len() > 60).unwrap();
    let window = windows(prompt).map(|(a, b)| &prompt[a..b]).find(|w| is_literal(w)).unwrap();
    let planted = hits_in(&format!("    let prompt =  \"{window}\";"), &literals);
    assert!(planted.iter().any(|(w, _)| w.contains(window)), "{window:?} of {from} not found");

    let src = root.join("src");
    let mut files = Vec::new();
    files_under(&src, &mut files);
    files.retain(|f| f.extension().is_some_and(|e| e == "rs"));
    files.sort();
    let mut found = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let rel = path.strip_prefix(&root).unwrap().display().to_string();
        for (n, line) in text.lines().enumerate() {
            for (window, from) in hits_in(line, &literals) {
                found.push(format!("{rel}:{}: {window:?} (from {from})", n + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "{} quotes of an eval task in src/; describe the case in other words or write other data:\n{}",
        found.len(),
        found.join("\n")
    );
}
