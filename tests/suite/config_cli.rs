//! Configuration errors and usage, through the real binary.

use crate::common::Routines;

#[test]
fn an_invalid_config_is_reported_with_locations_and_exit_code_2() {
    let p = Routines::new()
        .config("timezone: Asia/Shanghai\nprovider:\n  modle: qwen\n  timeout: 30\nagent:\n  autonomy: yolo\n");
    let expected = format!(
        "error: invalid configuration (3 problems)\n  {f}:3:3: unknown field `modle` in `provider`\n    help: did you mean `model`?\n  {f}:4:12: invalid duration `30`: a unit is missing; write e.g. 30s or 30m (at `provider.timeout`)\n  {f}:6:13: unknown variant `yolo`, expected one of `read_only`, `supervised`, `full` (at `agent.autonomy`)\n    help: expected one of: read_only, supervised, full\n",
        f = p.path().join("routines.yaml").display()
    );
    p.run(["chat"]).code(2).stdout_is("").stderr_is(&expected);
}

#[test]
fn a_missing_model_or_config_file_is_a_usage_error() {
    let p = Routines::new().config("provider:\n  base_url: http://127.0.0.1:9/v1\n");
    p.run(["chat"])
        .code(2)
        .stderr_is("error: no model configured: set provider.model in routines.yaml or export ROUTINES_MODEL\n");

    let o = p.run(["--config", "nope.yaml", "chat"]);
    o.code(2);
    assert!(o.stderr.starts_with("error: config file "), "{o}");
    assert!(o.stderr.ends_with("nope.yaml does not exist\n  help: check the path given to --config\n"), "{o}");
}

#[test]
fn help_lists_only_commands_that_exist() {
    let p = Routines::new();
    let o = p.run(["--help"]);
    o.success();
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
        o.stdout_has(built);
    }
    let o = p.run(["frobnicate"]);
    o.code(2);
    assert!(o.stderr.starts_with("error: unrecognized subcommand 'frobnicate'"), "{o}");
}

/// A default that depends on another setting follows it (issue 50, item 6): `lease: 5s` alone
/// is valid (max_skew follows lease), and greetings enabled inside short active hours fit
/// (min_gap follows the hours). What the user wrote is still checked.
#[test]
fn defaults_follow_the_settings_they_depend_on() {
    let offline = "provider: { base_url: http://127.0.0.1:9/v1, model: m }\n";
    let p = Routines::new().config(&format!("{offline}cluster: {{ lease: 5s }}\n"));
    p.run(["validate"]).success();

    let p = Routines::new().config(&format!(
        "{offline}heartbeat:\n  active_hours: {{ start: '09:00', end: '12:00' }}\n  greeting: {{ enabled: true }}\n"
    ));
    p.run(["validate"]).success();
    let p = Routines::new().config(&format!(
        "{offline}heartbeat:\n  active_hours: {{ start: '09:00', end: '10:00' }}\n  greeting: {{ enabled: true, min_gap: 2h }}\n"
    ));
    p.run(["validate"]).success();

    let p = Routines::new().config(&format!("{offline}cluster: {{ lease: 5s, max_skew: 5s }}\n"));
    let o = p.run(["validate"]);
    o.code(2).stderr_has("max_skew 5s must be shorter than lease 5s");
    o.stderr_has("leave max_skew unset to use its default: 5s, or a sixth of lease when that is shorter");
    let p = Routines::new().config(&format!(
        "{offline}heartbeat:\n  active_hours: {{ start: '09:00', end: '12:00' }}\n  greeting: {{ enabled: true, max_per_day: 2, min_gap: 4h }}\n"
    ));
    p.run(["validate"])
        .code(2)
        .stderr_has("2 greetings at least 4h apart do not fit in the greeting hours 09:00–12:00");
}

/// `init` asks only for what the provider still lacks: nothing when the environment or the
/// config already names the model and its URL.
#[test]
fn init_names_only_the_provider_settings_still_missing() {
    let p = Routines::new().env("ROUTINES_BASE_URL", "http://127.0.0.1:8088/v1").env("ROUTINES_MODEL", "qwen-coder");
    let o = p.run(["init", "demo"]);
    o.success().stderr_has(
        "Next: `routines run hello` asks qwen-coder at http://127.0.0.1:8088/v1 (from $ROUTINES_BASE_URL); `routines skills` lists the example skill.\n",
    );
    assert!(!o.stderr.contains("set provider"), "{o}");

    let p = Routines::new().config("provider:\n  base_url: http://127.0.0.1:9/v1\n");
    p.run(["init"]).success().stderr_has(
        "Next: set provider.model in routines.yaml (or export ROUTINES_MODEL), then `routines run hello`; `routines skills` lists the example skill.\n",
    );
}
