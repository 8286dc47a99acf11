//! `routines completions SHELL`: the script registers dynamic completion, so bash completes
//! the routines and skills of the project at the moment of the tab.

use std::path::Path;

use crate::common::Routines;

/// What bash offers for `line` (words; the last one is being completed) in project `p`.
fn bash_offers(p: &Routines, script: &str, words: &[&str]) -> Vec<String> {
    let bin_dir = Path::new(Routines::binary()).parent().unwrap().display().to_string();
    let path = format!("{bin_dir}:{}", std::env::var("PATH").unwrap_or_default());
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let program = format!(
        "{script}\nCOMP_WORDS=({}); COMP_CWORD={}; _clap_complete_routines routines '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        quoted.join(" "),
        words.len() - 1,
        words[words.len() - 1],
        words[words.len() - 2],
    );
    let out = p.program("bash").env("PATH", &path).args(["-c", &program]).run();
    out.success();
    out.stdout.lines().map(str::trim).filter(|l| !l.is_empty()).map(String::from).collect()
}

#[test]
fn bash_completes_commands_routine_names_and_skill_names() {
    let p = Routines::offline();
    p.write("routines/nightly-backup.yaml", "prompt: Back up.\n");
    p.write("routines/news-digest.yaml", "prompt: Digest.\n");
    p.write("skills/release-notes/SKILL.md", "---\nname: release-notes\ndescription: Notes\n---\nWrite them.\n");
    let out = p.run(["completions", "bash"]);
    out.success();
    let script = out.stdout.clone();
    assert!(script.contains("ROUTINES_COMPLETE"), "{script}");

    assert_eq!(bash_offers(&p, &script, &["routines", "pa"]), ["pause"]);
    let names = bash_offers(&p, &script, &["routines", "run", "n"]);
    assert_eq!(names, ["news-digest", "nightly-backup"]);
    // A routine added later is offered at the next tab: nothing was written at install time.
    p.write("routines/new-one.yaml", "prompt: New.\n");
    assert_eq!(bash_offers(&p, &script, &["routines", "pause", "new"]), ["new-one", "news-digest"]);
    assert_eq!(bash_offers(&p, &script, &["routines", "skills", "re"]), ["release-notes"]);
}

#[test]
fn zsh_and_fish_scripts_register_the_same_completer() {
    let p = Routines::offline();
    for shell in ["zsh", "fish"] {
        let out = p.run(["completions", shell]);
        out.success();
        assert!(out.stdout.contains("ROUTINES_COMPLETE") && out.stdout.contains("routines"), "{shell}: {}", out.stdout);
    }
    p.run(["completions", "tcsh"]).code(2).stderr_has("invalid value 'tcsh'");
}
