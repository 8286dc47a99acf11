//! Dependencies point down. Every path in src/ that leaves its top-level module
//! (`crate::x`, `routines::x`, `super::x` out of the module, and in `main.rs`
//! the binary's own `x::`) is checked against [`LAYERS`]: a module may use any
//! module of a lower layer, a module of its own layer only along the arrows
//! listed there (which form no circle), and never one of a higher layer. The
//! "Layers" table of docs/ARCHITECTURE.md must say the same, which is checked
//! too, so the two cannot drift apart.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use regex::Regex;

/// One layer: its name, its modules, and the arrows allowed inside it.
struct Layer {
    name: &'static str,
    modules: &'static [&'static str],
    arrows: &'static [(&'static str, &'static [&'static str])],
}

/// Top to bottom. Modules that other work will add (`eval`, `skills`) have
/// their place already.
const LAYERS: &[Layer] = &[
    Layer {
        name: "commands",
        modules: &["main", "cli", "commands", "chat", "eval", "app"],
        arrows: &[
            ("main", &["cli", "commands", "chat", "app"]),
            ("commands", &["app", "eval"]),
            ("chat", &["app"]),
            ("app", &["eval"]),
            ("cli", &["app"]),
        ],
    },
    Layer {
        name: "services",
        modules: &["daemon", "heartbeat", "status"],
        arrows: &[("daemon", &["heartbeat", "status"])],
    },
    Layer { name: "engine", modules: &["engine"], arrows: &[] },
    Layer { name: "stages", modules: &["agent", "delivery"], arrows: &[] },
    Layer {
        name: "capabilities",
        modules: &["tools", "skills", "llm", "policy", "routine", "memory"],
        arrows: &[
            ("tools", &["policy", "llm", "memory", "routine", "skills"]),
            ("routine", &["skills", "policy"]),
            ("skills", &["policy"]),
            ("llm", &["policy"]),
        ],
    },
    Layer {
        name: "foundation",
        modules: &["config", "store", "clock", "diag", "yaml", "sandbox"],
        arrows: &[("config", &["yaml", "diag", "sandbox"]), ("yaml", &["diag"])],
    },
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.modules.contains(&module))
}

fn allowed_within(from: &str, to: &str) -> bool {
    LAYERS.iter().flat_map(|l| l.arrows).any(|(f, tos)| *f == from && tos.contains(&to))
}

/// The top-level modules a crate root declares (`mod x;` / `pub mod x;`).
fn declared(root_file: &Path) -> BTreeSet<String> {
    let re = Regex::new(r"(?m)^\s*(?:pub )?mod (\w+);").unwrap();
    let text = std::fs::read_to_string(root_file).unwrap();
    re.captures_iter(&text).map(|c| c[1].to_string()).collect()
}

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

/// Module path of a file under src/: `daemon/watch/mod.rs` is `[daemon, watch]`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string()).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The first names of the paths in `text` after `prefix::` — one name, or each
/// item of a `{a, b::c}` group (which may run over several lines).
fn first_names(text: &str) -> Vec<String> {
    let ident = Regex::new(r"^\s*(\w+)").unwrap();
    let Some(group) = text.strip_prefix('{') else {
        return ident.captures(text).map(|c| vec![c[1].to_string()]).unwrap_or_default();
    };
    let (mut depth, mut item, mut items) = (0, String::new(), Vec::new());
    for ch in group.chars() {
        match ch {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => items.push(std::mem::take(&mut item)),
            _ if depth == 0 => item.push(ch),
            _ => {}
        }
    }
    items.push(item);
    items.iter().filter_map(|i| ident.captures(i).map(|c| c[1].to_string())).filter(|n| n != "self").collect()
}

/// Every arrow between top-level modules in src/, with where each is written.
fn arrows() -> BTreeMap<(String, String), Vec<String>> {
    let src = root().join("src");
    let bin = declared(&src.join("main.rs"));
    let lib = declared(&src.join("lib.rs"));
    let path_re = Regex::new(r"(?:^|[^\w$:])(crate::|routines::|(?:super::)+)\s*").unwrap();
    let inline_mod = Regex::new(r"^(\s*)(?:pub(?:\([a-z]+\))? )?mod \w+ \{$").unwrap();
    let bin_root_path = Regex::new(r"(?:^|[^\w:])(\w+)::").unwrap();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut found: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap().to_path_buf();
        let module = module_path(&rel);
        if module == ["lib"] {
            continue;
        }
        let top = module[0].clone();
        let in_bin = bin.contains(&top) || top == "main";
        let depth = if top == "main" { 0 } else { module.len() };
        let text = std::fs::read_to_string(&file).unwrap();
        let mut nested: Vec<String> = Vec::new();
        let mut start = 0;
        for (n, line) in text.split('\n').enumerate() {
            let line_start = start;
            start += line.len() + 1;
            if nested.last().is_some_and(|indent| line.strip_prefix(indent.as_str()) == Some("}")) {
                nested.pop();
            }
            if let Some(c) = inline_mod.captures(line) {
                nested.push(c[1].to_string());
                continue;
            }
            if line.trim_start().starts_with("//") {
                continue;
            }
            let mut targets = Vec::new();
            for c in path_re.captures_iter(line) {
                let names = first_names(&text[line_start + c.get(0).unwrap().end()..]);
                match &c[1] {
                    "crate::" => targets.extend(names.into_iter().map(|m| (m, in_bin))),
                    "routines::" if in_bin => targets.extend(names.into_iter().map(|m| (m, false))),
                    "routines::" => {}
                    supers => {
                        let ups = supers.matches("super").count();
                        if ups >= depth + nested.len() {
                            targets.extend(names.into_iter().map(|m| (m, in_bin)));
                        }
                    }
                }
            }
            if top == "main" && nested.is_empty() {
                let own = bin_root_path.captures_iter(line).map(|c| c[1].to_string()).filter(|m| bin.contains(m));
                targets.extend(own.map(|m| (m, true)));
            }
            for (target, target_in_bin) in targets {
                let known = if target_in_bin { &bin } else { &lib };
                if target != top && known.contains(&target) {
                    found.entry((top.clone(), target)).or_default().push(format!("src/{}:{}", rel.display(), n + 1));
                }
            }
        }
    }
    found
}

#[test]
fn no_import_runs_from_a_lower_layer_to_a_higher_one() {
    let found = arrows();
    // The scanner sees arrows of every kind of path, or this test would pass vacuously.
    for (from, to) in [("engine", "agent"), ("main", "commands"), ("commands", "app"), ("heartbeat", "engine")] {
        assert!(found.contains_key(&(from.into(), to.into())), "{from} → {to} not found: {found:?}");
    }
    let mut wrong = Vec::new();
    for ((from, to), places) in &found {
        let verdict = match (layer_of(from), layer_of(to)) {
            (None, _) => Some(format!("`{from}` is in no layer; add it to LAYERS here and in docs/ARCHITECTURE.md")),
            (_, None) => Some(format!("`{to}` is in no layer; add it to LAYERS here and in docs/ARCHITECTURE.md")),
            (Some(a), Some(b)) if a > b => {
                Some(format!("{from} → {to} runs up, from {} to {}", LAYERS[a].name, LAYERS[b].name))
            }
            (Some(a), Some(b)) if a == b && !allowed_within(from, to) => {
                Some(format!("{from} → {to} inside {} is not a listed arrow", LAYERS[a].name))
            }
            _ => None,
        };
        if let Some(v) = verdict {
            wrong.push(format!("{v} ({})", places.join(", ")));
        }
    }
    assert!(wrong.is_empty(), "arrows against the layering:\n{}", wrong.join("\n"));
}

#[test]
fn arrows_inside_a_layer_form_no_circle() {
    let edges: Vec<(&str, &str)> =
        LAYERS.iter().flat_map(|l| l.arrows).flat_map(|(f, tos)| tos.iter().map(move |t| (*f, *t))).collect();
    for (from, to) in &edges {
        assert_eq!(layer_of(from), layer_of(to), "{from} → {to} is listed inside a layer but crosses layers");
    }
    // Repeatedly remove modules no remaining arrow leaves; what is left sits on a circle.
    let mut left: BTreeSet<&str> = edges.iter().flat_map(|(f, t)| [*f, *t]).collect();
    loop {
        let sinks: Vec<&str> =
            left.iter().copied().filter(|m| !edges.iter().any(|(f, t)| f == m && left.contains(t))).collect();
        if sinks.is_empty() {
            break;
        }
        for s in sinks {
            left.remove(s);
        }
    }
    assert!(left.is_empty(), "arrows inside a layer form a circle through {left:?}");
}

/// One row of the layer table: the layer's name, its modules, and its arrows (from, to).
type Row = (String, Vec<String>, Vec<(String, Vec<String>)>);

/// The "Layers" table of docs/ARCHITECTURE.md.
fn documented() -> Vec<Row> {
    let text = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let section = text.split("\n## Layers\n").nth(1).expect("docs/ARCHITECTURE.md has a `## Layers` section");
    let ticked = Regex::new(r"`(\w+)`").unwrap();
    let names = |cell: &str| ticked.captures_iter(cell).map(|c| c[1].to_string()).collect::<Vec<_>>();
    section
        .lines()
        .skip_while(|l| !l.starts_with("| layer |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|row| {
            let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
            let layer = cells[0].split_whitespace().last().unwrap_or_default().to_string();
            let arrows = cells[2]
                .split(';')
                .filter_map(|a| a.split_once('→'))
                .map(|(from, to)| (names(from).concat(), names(to)))
                .collect();
            (layer, names(cells[1]), arrows)
        })
        .collect()
}

#[test]
fn the_architecture_document_shows_the_same_layers() {
    let here: Vec<Row> = LAYERS
        .iter()
        .map(|l| {
            let arrows = l.arrows.iter().map(|(f, tos)| (f.to_string(), tos.iter().map(|t| t.to_string()).collect()));
            (l.name.to_string(), l.modules.iter().map(|m| m.to_string()).collect(), arrows.collect())
        })
        .collect();
    assert_eq!(documented(), here);
}
