//! Configuration errors and usage, through the real binary.

use std::process::Command;

use crate::common::{bin, write_file};

fn run(dir: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin())
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_invalid_config_is_reported_with_locations_and_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    write_file(
        dir.path(),
        "routines.yaml",
        "timezone: Asia/Shanghai\nprovider:\n  modle: qwen\n  timeout: 30\nagent:\n  autonomy: yolo\n",
    );
    let (code, stdout, stderr) = run(dir.path(), &["chat"]);
    assert_eq!(code, 2);
    assert_eq!(stdout, "");
    let expected = format!(
        "error: invalid configuration (3 problems)\n  {f}:3:3: unknown field `modle` in `provider`\n    help: did you mean `model`?\n  {f}:4:12: invalid duration `30`: a unit is missing; write e.g. 30s or 30m (at `provider.timeout`)\n  {f}:6:13: unknown variant `yolo`, expected one of `read_only`, `supervised`, `full` (at `agent.autonomy`)\n    help: expected one of: read_only, supervised, full\n",
        f = dir.path().join("routines.yaml").display()
    );
    assert_eq!(stderr, expected);
}

#[test]
fn a_missing_model_or_config_file_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "routines.yaml", "provider:\n  base_url: http://127.0.0.1:9/v1\n");
    let (code, _, stderr) = run(dir.path(), &["chat"]);
    assert_eq!(code, 2);
    assert_eq!(stderr, "error: no model configured: set provider.model in routines.yaml or export ROUTINES_MODEL\n");

    let (code, _, stderr) = run(dir.path(), &["--config", "nope.yaml", "chat"]);
    assert_eq!(code, 2);
    assert!(stderr.starts_with("error: config file "), "{stderr}");
    assert!(stderr.ends_with("nope.yaml does not exist\n  help: check the path given to --config\n"), "{stderr}");
}

#[test]
fn help_lists_only_commands_that_exist() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, _) = run(dir.path(), &["--help"]);
    assert_eq!(code, 0);
    for built in [
        "  init ",
        "  validate ",
        "  list ",
        "  next ",
        "  run ",
        "  daemon ",
        "  history ",
        "  show ",
        "  deliver ",
        "  heartbeat ",
        "  chat ",
    ] {
        assert!(stdout.contains(built), "{built} is missing:\n{stdout}");
    }
    let (code, _, stderr) = run(dir.path(), &["frobnicate"]);
    assert_eq!(code, 2);
    assert!(stderr.starts_with("error: unrecognized subcommand 'frobnicate'"), "{stderr}");
}
