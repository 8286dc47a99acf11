//! Whole outputs a user reads, kept as insta snapshots in tests/snapshots/, so that any
//! change of their text shows up in review. A plain `cargo test` compares them and fails on
//! a difference (cargo-insta is not needed; outside CI insta also leaves the new text in a
//! `.snap.new` file beside the old). After an intended change,
//! `INSTA_UPDATE=always cargo test snapshots` rewrites them, or `cargo insta review` does it
//! one by one.

use crate::common::Routines;

/// Compares `value` with tests/snapshots/`name`.snap, which `description` heads.
fn assert_snapshot(name: &str, description: &str, value: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("../snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.set_description(description);
    settings.bind(|| insta::assert_snapshot!(name, value));
}

#[test]
fn the_help_of_routines() {
    let o = Routines::new().run(["--help"]);
    o.success().stderr_is("");
    assert_snapshot("routines_help", "stdout of `routines --help`", &o.stdout);
}

#[test]
fn validate_on_a_folder_of_broken_routines() {
    let p = Routines::offline();
    p.write("routines/ok.yaml", "on:\n  - every: 1h\nprompt: fine\n")
        .write("routines/typo.yaml", "prompt: hi\nshedule: daily\n")
        .write("routines/cron.yaml", "prompt: hi\non:\n  - cron: \"0 25 * * *\"\n")
        .write("routines/template.yaml", "prompt: \"{{ rotuine.name }}\"\nretry: { attempts: 0 }\n")
        .write(
            "routines/deliver.yml",
            "prompt: hi\ndeliver:\n  - file: { path: x.md, mode: apend }\n  - mail: { to: [] }\n",
        );
    let o = p.run(["validate"]);
    o.code(2);
    assert_snapshot(
        "validate_broken_routines",
        "`routines validate` on five routine files, four of them broken",
        &o.to_string(),
    );
}
