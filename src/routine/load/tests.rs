//! Tests of loading: what the routine checks also find outside routine files.

use std::collections::HashMap;

use super::*;

fn config(dir: &Path, text: &str) -> Config {
    crate::config::from_str(&dir.join("routines.yaml"), text, &HashMap::new()).unwrap()
}

fn load(config: &Config) -> LoadedRoutines {
    let inline = config.source.as_ref().map(|s| (config.inline_routines.as_slice(), s));
    load_all(config, inline, &["file_read"])
}

#[test]
fn heartbeat_deliveries_are_checked_like_a_routines_deliveries() {
    let dir = tempfile::tempdir().unwrap();
    let text = "heartbeat:\n  deliver:\n    - mail: { to: [ops@], subject: \"{{ routine.nmae }}\" }\n    - file: { path: beats.md, template: beat.md.j2 }\n";
    let loaded = load(&config(dir.path(), text));
    let shown: Vec<String> = loaded.diagnostics.0.iter().map(|d| d.to_string()).collect();
    let file = dir.path().join("routines.yaml");
    let file = file.display();
    assert_eq!(
        shown,
        [
            format!(
                "{file}:3:20: `ops@` in `heartbeat.deliver[0].mail.to[0]` is not an e-mail address\n  help: write it as name@example.com or \"Name <name@example.com>\""
            ),
            format!(
                "{file}:3:40: template `heartbeat.deliver[0].mail.subject` uses `routine.nmae`, which is not defined\n  help: did you mean `routine.name`?"
            ),
            format!(
                "{file}:4:41: `heartbeat.deliver[1].file.template`: template file `beat.md.j2` does not exist in templates/\n  help: create templates/beat.md.j2, or fix the name (it is relative to templates_dir)"
            ),
        ]
    );
    assert!(loaded.routines.is_empty());
}

#[test]
fn valid_heartbeat_deliveries_add_no_problem() {
    let dir = tempfile::tempdir().unwrap();
    let text = "heartbeat:\n  deliver: [ { file: { path: \"beats/{{ now | date('%Y-%m-%d') }}.md\" } } ]\n";
    assert!(load(&config(dir.path(), text)).diagnostics.is_empty());
}
