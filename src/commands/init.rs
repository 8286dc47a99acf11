//! `routines init [DIR]`: a working setup to start from (config, a routine, a template, the
//! heartbeat checklist and an example skill). Never overwrites.

use std::path::Path;

use routines::config::ProcessEnv;

use crate::app::Error;

const CONFIG: &str = include_str!("../../routines.example.yaml");
const ROUTINE: &str = r#"# A first routine: `routines run hello` fires it by hand.
description: Say what is in the workspace
prompt: |
  Use the file_list tool to see which files are in the workspace. Then describe them in two sentences.
agent:
  autonomy: read_only
  tools: [file_list, file_read]
deliver:
  - file: { path: "reports/hello/{{ now | date('%Y-%m-%d') }}.md", template: report.md.j2 }
"#;
const TEMPLATE: &str = "# {{ routine.name }} — {{ now | date('%Y-%m-%d %H:%M') }}\n\n{{ output }}\n";
/// An example skill (SPEC §10), useful in any git repository: `routines skills release-notes`.
const SKILL: &str = include_str!("../../skills/release-notes/SKILL.md");
const SKILL_FORMAT: &str = include_str!("../../skills/release-notes/format.md");
const HEARTBEAT: &str = "# Heartbeat checklist\n\nWrite here what the agent should check on each heartbeat, one item per line.\nAn empty file means no heartbeat model calls.\n";

pub fn run(cwd: &Path, dir: Option<&Path>) -> Result<(), Error> {
    let root = dir.map_or_else(|| cwd.to_path_buf(), |d| cwd.join(d));
    let files = [
        ("routines.yaml", CONFIG),
        ("routines/hello.yaml", ROUTINE),
        ("templates/report.md.j2", TEMPLATE),
        ("HEARTBEAT.md", HEARTBEAT),
        ("skills/release-notes/SKILL.md", SKILL),
        ("skills/release-notes/format.md", SKILL_FORMAT),
    ];
    for (rel, content) in files {
        let path = root.join(rel);
        if path.exists() {
            eprintln!("kept     {} (already exists)", path.display());
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| Error::Write { path: parent.to_path_buf(), source })?;
        }
        std::fs::write(&path, content).map_err(|source| Error::Write { path: path.clone(), source })?;
        eprintln!("created  {}", path.display());
    }
    eprintln!("Next: {}; `routines skills` lists the example skill.", next_step(cwd, &root.join("routines.yaml")));
    Ok(())
}

/// What to do next with the config at `file`: set what the provider lacks (in the file, or
/// by environment), or run `hello` against the model already set.
fn next_step(cwd: &Path, file: &Path) -> String {
    let Ok(config) = routines::config::load(Some(file), cwd, &ProcessEnv) else {
        return "fix routines.yaml as `routines validate` says, then `routines run hello`".into();
    };
    let p = &config.provider;
    if let (Some(url), Some(model)) = (&p.base_url, &p.model) {
        return format!("`routines run hello` asks {model} at {url} (from {})", p.base_url_source);
    }
    let (fields, vars): (Vec<&str>, Vec<&str>) = [
        p.base_url.is_none().then_some(("provider.base_url", "ROUTINES_BASE_URL")),
        p.model.is_none().then_some(("provider.model", "ROUTINES_MODEL")),
    ]
    .into_iter()
    .flatten()
    .unzip();
    format!(
        "set {} in routines.yaml (or export {}), then `routines run hello`",
        fields.join(" and "),
        vars.join(" and ")
    )
}
