//! `routines init [DIR]`: a working setup to start from (config, a routine, a template, the
//! heartbeat checklist and an example skill). Never overwrites.

use std::path::Path;

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
    eprintln!(
        "Next: set provider.base_url and provider.model in routines.yaml, then `routines run hello`; `routines skills` lists the example skill."
    );
    Ok(())
}
