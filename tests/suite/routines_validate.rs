//! `routines validate` on broken routine files: every problem is printed as
//! `FILE:LINE:COL: message` with a help line, and exit code 2.

use pretty_assertions::assert_eq;

use crate::common::{Outcome, Routines};

/// Validates a project holding only `routines/{stem}.yaml` (and, for
/// template cases, templates/report.md.j2 and templates/daily.md.j2).
fn validate_alone(stem: &str, yaml: &str) -> Outcome {
    let p = Routines::offline();
    p.write("templates/report.md.j2", "# {{ routine.name }}\n\n{{ output }}\n")
        .write("templates/daily.md.j2", "Daily for {{ now }}\n")
        .write(&format!("routines/{stem}.yaml"), yaml);
    p.run(["validate"])
}

/// (file stem, routine file, the exact `validate` output)
const CASES: &[(&str, &str, &str)] = &[
    (
        "unknown-key",
        "prompt: hi\ndescripton: x\n",
        "routines/unknown-key.yaml:2:1: unknown field `descripton`\n  help: did you mean `description`?\n",
    ),
    (
        "agent-key",
        "prompt: hi\nagent:\n  modle: x\n",
        "routines/agent-key.yaml:3:3: unknown field `modle` in `agent`\n  help: did you mean `model`?\n",
    ),
    (
        "retry-key",
        "prompt: hi\nretry:\n  attempts: 2\n  backof: 1s\n",
        "routines/retry-key.yaml:4:3: unknown field `backof` in `retry`\n  help: did you mean `backoff`?\n",
    ),
    (
        "trigger-key",
        "prompt: hi\non:\n  - cron: \"0 9 * * *\"\n    timzone: Europe/Berlin\n",
        "routines/trigger-key.yaml:4:5: unknown field `timzone` in `on[0]`\n  help: did you mean `timezone`?\n",
    ),
    (
        "file-trigger-key",
        "prompt: hi\non:\n  - file: { paths: [\"inbox/*.csv\"], debounse: 2s }\n",
        "routines/file-trigger-key.yaml:3:37: unknown field `debounse` in `on[0].file`\n  help: did you mean `debounce`?\n",
    ),
    (
        "webhook-key",
        "prompt: hi\non:\n  - webhook:\n      path: /hooks/deploy\n      secert_env: DEPLOY_SECRET\n",
        "routines/webhook-key.yaml:5:7: unknown field `secert_env` in `on[0].webhook`\n  help: did you mean `secret_env`?\n",
    ),
    (
        "delivery-key",
        "prompt: hi\ndeliver:\n  - file: { path: out.md, mdoe: append }\n",
        "routines/delivery-key.yaml:3:27: unknown field `mdoe` in `deliver[0].file`\n  help: did you mean `mode`?\n",
    ),
    (
        "on-failure-key",
        "prompt: hi\non_failure:\n  delivr: []\n",
        "routines/on-failure-key.yaml:3:3: unknown field `delivr` in `on_failure`\n  help: did you mean `deliver`?\n",
    ),
    (
        "bad-cron",
        "prompt: hi\non:\n  - cron: \"61 * * * *\"\n",
        "routines/bad-cron.yaml:3:11: invalid cron expression `61 * * * *`: the minute field `61` is not valid\n  help: minute takes 0-59, with `*`, `,`, `-` and `/`\n",
    ),
    (
        "cron-month",
        "prompt: hi\non:\n  - cron: \"0 9 1 13 *\"\n",
        "routines/cron-month.yaml:3:11: invalid cron expression `0 9 1 13 *`: the month field `13` is not valid\n  help: month takes 1-12 or JAN-DEC, with `*`, `,`, `-` and `/`\n",
    ),
    (
        "cron-fields",
        "prompt: hi\non:\n  - cron: \"* * *\"\n",
        "routines/cron-fields.yaml:3:11: invalid cron expression `* * *`: it has 3 fields\n  help: 5 fields (minute hour day-of-month month day-of-week), 6 with seconds first, or @hourly/@daily/@weekly/@monthly/@yearly\n",
    ),
    (
        "cron-shorthand",
        "prompt: hi\non:\n  - cron: \"@fortnightly\"\n",
        "routines/cron-shorthand.yaml:3:11: invalid cron expression `@fortnightly`: unknown shorthand `@fortnightly`\n  help: use @yearly, @annually, @monthly, @weekly, @daily or @hourly\n",
    ),
    (
        "tz-in-cron",
        "prompt: hi\non:\n  - cron: \"TZ=Europe/Berlin 0 9 * * *\"\n",
        "routines/tz-in-cron.yaml:3:11: a time zone inside the cron expression is not supported\n  help: remove TZ=/CRON_TZ= and set `timezone:` next to `cron:`\n",
    ),
    (
        "unknown-zone",
        "prompt: hi\non:\n  - cron: \"0 9 * * *\"\n    timezone: Europe/Berln\n",
        "routines/unknown-zone.yaml:4:15: unknown time zone `Europe/Berln`\n  help: did you mean `Europe/Berlin`?\n",
    ),
    (
        "bad-duration",
        "prompt: hi\ntimeout: 10 fortnights\n",
        "routines/bad-duration.yaml:2:10: invalid duration `10 fortnights`: unknown unit `fortnights` (use ms, s, min, h, d or w, or their words); write a number with a unit, e.g. 90s, 10m, 10min, 2h, 1h 30m or 2 days (at `timeout`)\n",
    ),
    (
        "zone-not-cron",
        "prompt: hi\non:\n  - every: 1h\n    timezone: Europe/Berlin\n",
        "routines/zone-not-cron.yaml:4:5: `timezone` applies only to a cron trigger, not to `every`\n  help: remove it: `every` counts real time and `at` carries its own offset\n",
    ),
    (
        "two-kinds",
        "prompt: hi\non:\n  - cron: \"0 9 * * *\"\n    every: 1h\n",
        "routines/two-kinds.yaml:3:5: one trigger sets cron and every\n  help: write each trigger as its own list item\n",
    ),
    (
        "empty-trigger",
        "prompt: hi\non:\n  - {}\n",
        "routines/empty-trigger.yaml:3:5: a trigger needs one of cron, every, at, file, webhook\n  help: manual runs need no trigger: `manual` is always implied\n",
    ),
    (
        "every-zero",
        "prompt: hi\non:\n  - every: 0s\n",
        "routines/every-zero.yaml:3:12: `every: 0s` is too short; it must be at least 1s\n  help: e.g. every: 30s, every: 10m or every: 1h\n",
    ),
    (
        "at-no-offset",
        "prompt: hi\non:\n  - at: 2026-12-01 09:00\n",
        "routines/at-no-offset.yaml:3:9: `at: 2026-12-01 09:00` has no UTC offset, so the instant is ambiguous\n  help: write it as RFC 3339 with an offset, e.g. 2026-12-01T09:00:00+01:00 or 2026-12-01T08:00:00Z\n",
    ),
    (
        "at-garbage",
        "prompt: hi\non:\n  - at: next tuesday\n",
        "routines/at-garbage.yaml:3:9: `at: next tuesday` is not a date and time\n  help: write it as RFC 3339 with an offset, e.g. 2026-12-01T09:00:00+01:00 or 2026-12-01T08:00:00Z\n",
    ),
    (
        "file-absolute",
        "prompt: hi\non:\n  - file: { paths: [\"/etc/*.conf\"] }\n",
        "routines/file-absolute.yaml:3:21: `/etc/*.conf` leaves the workspace\n  help: file trigger globs are relative to the workspace\n",
    ),
    (
        "file-dotdot",
        "prompt: hi\non:\n  - file:\n      paths: [\"inbox/*.csv\", \"../secrets/*\"]\n",
        "routines/file-dotdot.yaml:4:30: `../secrets/*` leaves the workspace\n  help: file trigger globs are relative to the workspace\n",
    ),
    (
        "webhook-no-auth",
        "prompt: hi\non:\n  - webhook: { path: /hooks/x }\n",
        "routines/webhook-no-auth.yaml:3:5: a webhook without authentication is refused\n  help: set secret_env (HMAC signature) or token_env (bearer token), or `auth: none` to accept anyone\n",
    ),
    (
        "webhook-path",
        "prompt: hi\non:\n  - webhook: { path: hooks/x, auth: none }\n",
        "routines/webhook-path.yaml:3:22: webhook path `hooks/x` must start with /\n  help: e.g. /hooks/deploy\n",
    ),
    (
        "undefined-var",
        "prompt: |\n  Report for {{ rotuine.name }}\n",
        "routines/undefined-var.yaml:2:17: template `prompt` uses `rotuine.name`, which is not defined\n  help: did you mean `routine`?\n",
    ),
    (
        "undefined-deep",
        "description: weekly\nprompt: |\n  Summarize the week.\n  Use {{ vars.repo }} and\n    {{ trigger.kind }} from {{ rnu.id }}.\n",
        "routines/undefined-deep.yaml:5:32: template `prompt` uses `rnu.id`, which is not defined\n  help: templates can use: routine, trigger, now, vars, run\n",
    ),
    (
        "undefined-field",
        "prompt: \"Run {{ run.number }} of {{ routine.name }}\"\n",
        "routines/undefined-field.yaml:1:17: template `prompt` uses `run.number`, which is not defined\n  help: `run` has: id, attempt\n",
    ),
    (
        "template-syntax",
        "prompt: |\n  line one\n  {% for x in vars %}\n",
        "routines/template-syntax.yaml:3:3: syntax error in template `prompt`: unexpected end of input, expected end of block\n  help: close every `{{` with `}}` and `{%` with `%}`, and end each `{% if %}`/`{% for %}` with `{% endif %}`/`{% endfor %}`\n",
    ),
    (
        "missing-template",
        "prompt_template: weekly.md.j2\n",
        "routines/missing-template.yaml:1:18: `prompt_template`: template file `weekly.md.j2` does not exist in templates/\n  help: create templates/weekly.md.j2, or fix the name (it is relative to templates_dir)\n",
    ),
    (
        "template-typo",
        "prompt_template: daily.md\n",
        "routines/template-typo.yaml:1:18: `prompt_template`: template file `daily.md` does not exist in templates/\n  help: did you mean `daily.md.j2`?\n",
    ),
    (
        "both-prompts",
        "prompt: hi\nprompt_template: daily.md.j2\n",
        "routines/both-prompts.yaml:2:18: both `prompt` and `prompt_template` are set\n  help: keep one of them\n",
    ),
    (
        "no-prompt",
        "description: nothing to do\n",
        "routines/no-prompt.yaml:1:1: routine `no-prompt` has no prompt\n  help: add `prompt: |` with the task, or `prompt_template: FILE` from the templates folder\n",
    ),
    (
        "invalid-name",
        "name: Daily Report\nprompt: hi\n",
        "routines/invalid-name.yaml:1:7: `Daily Report` is not a valid routine name\n  help: use lowercase letters, digits, `-` and `_`, starting with a letter or digit\n",
    ),
    (
        "unknown-tool",
        "prompt: hi\nagent:\n  tools: [shell, fille_read]\n",
        "routines/unknown-tool.yaml:3:18: unknown tool `fille_read`\n  help: did you mean `file_read`?\n",
    ),
    (
        "temperature",
        "prompt: hi\nagent:\n  temperature: 3.5\n",
        "routines/temperature.yaml:3:16: temperature 3.5 is out of range\n  help: use a value from 0 to 2\n",
    ),
    (
        "autonomy",
        "prompt: hi\nagent: { autonomy: readonly }\n",
        "routines/autonomy.yaml:2:20: unknown variant `readonly`, expected one of `read_only`, `supervised`, `full` (at `agent.autonomy`)\n  help: did you mean `read_only`?\n",
    ),
    (
        "attempts-zero",
        "prompt: hi\nretry:\n  attempts: 0\n",
        "routines/attempts-zero.yaml:3:13: `retry.attempts` must be at least 1\n  help: it counts the first attempt too: 1 means no retry\n",
    ),
    (
        "overlap",
        "prompt: hi\noverlap: skp\n",
        "routines/overlap.yaml:2:10: unknown variant `skp`, expected one of `skip`, `queue`, `replace`, `allow` (at `overlap`)\n  help: did you mean `skip`?\n",
    ),
    (
        "enabled",
        "prompt: hi\nenabled: maybe\n",
        "routines/enabled.yaml:2:10: invalid type: string \"maybe\", expected a boolean (at `enabled`)\n  help: write true or false\n",
    ),
    (
        "delivery-mode",
        "prompt: hi\ndeliver:\n  - file: { path: out.md, mode: apend }\n",
        "routines/delivery-mode.yaml:3:33: unknown variant `apend`, expected one of `create`, `overwrite`, `append` (at `deliver[0].file.mode`)\n  help: did you mean `append`?\n",
    ),
    (
        "delivery-template",
        "prompt: hi\ndeliver:\n  - file: { path: out.md, template: reprot.md.j2 }\n",
        "routines/delivery-template.yaml:3:37: `deliver[0].file.template`: template file `reprot.md.j2` does not exist in templates/\n  help: did you mean `report.md.j2`?\n",
    ),
    (
        "mail-address",
        "prompt: hi\ndeliver:\n  - mail:\n      to: [ops@example.com]\n      cc: [\"Ops Team <ops@>\"]\n",
        "routines/mail-address.yaml:5:12: `Ops Team <ops@>` in `deliver[0].mail.cc[0]` is not an e-mail address\n  help: write it as name@example.com or \"Name <name@example.com>\"\n",
    ),
    (
        "file-path-syntax",
        "prompt: hi\ndeliver:\n  - file: { path: \"reports/{{ now | date('%Y') }/x.md\" }\n",
        "routines/file-path-syntax.yaml:3:20: syntax error in template `deliver[0].file.path`: unexpected `}`, expected end of variable block\n  help: close every `{{` with `}}` and `{%` with `%}`, and end each `{% if %}`/`{% for %}` with `{% endif %}`/`{% endfor %}`\n",
    ),
    (
        "file-path-variable",
        "prompt: hi\ndeliver:\n  - file: { path: \"reports/{{ nmae }}.md\" }\n",
        "routines/file-path-variable.yaml:3:31: template `deliver[0].file.path` uses `nmae`, which is not defined\n  help: templates can use: routine, trigger, now, vars, run, output, status, error\n",
    ),
    (
        "webhook-reserved",
        "prompt: hi\non:\n  - webhook: { path: /metrics, auth: none }\n",
        "routines/webhook-reserved.yaml:3:22: webhook path `/metrics` is reserved by the daemon's listener\n  help: /healthz, /metrics and the status page (/, /runs, /charts, /static/) are the listener's; use a path like /hooks/NAME\n",
    ),
    (
        "heartbeat",
        "prompt: hi\n",
        "routines/heartbeat.yaml:1:1: the name `heartbeat` belongs to the built-in heartbeat's runs\n  help: choose another name; heartbeats and greetings are configured under `heartbeat:` in routines.yaml\n",
    ),
    (
        "greeting",
        "prompt: hi\n",
        "routines/greeting.yaml:1:1: the name `greeting` belongs to the built-in greeting's runs\n  help: choose another name; heartbeats and greetings are configured under `heartbeat:` in routines.yaml\n",
    ),
    (
        "yaml-syntax",
        "prompt: hi\ndeliver: [ { file: { path: x.md }\n",
        "routines/yaml-syntax.yaml:3:1: invalid YAML: while parsing a flow mapping, did not find expected ',' or '}'\n  help: check the indentation, quotes and brackets on this line and the ones before it\n",
    ),
];

#[test]
fn every_broken_routine_file_is_reported_with_location_and_hint() {
    let mut wrong = Vec::new();
    for (stem, yaml, expected) in CASES {
        let o = validate_alone(stem, yaml);
        if (o.code, o.stdout.as_str(), o.stderr.as_str()) != (2, *expected, "error: 1 problem found\n") {
            wrong.push(format!("{stem}: {o}\n--- expected stdout\n{expected}"));
        }
    }
    assert!(wrong.is_empty(), "{} case(s) differ:\n{}", wrong.len(), wrong.join("\n"));
}

#[test]
fn a_file_with_several_problems_reports_each_of_them() {
    let o = validate_alone(
        "many",
        "timeout: 0s\nagent:\n  max_iterations: 0\n  allow_commands: [\"git log\"]\nsilent_token: \"\"\nprompt: hi\non_failure:\n  deliver:\n    - mail: { to: [], subject: \"{{ routine.nmae }} failed\" }\n",
    );
    o.code(2).stderr_is("error: 6 problems found\n").stdout_is(
        "routines/many.yaml:1:10: timeout must be longer than 0s\n  help: e.g. timeout: 10m\n\
         routines/many.yaml:3:19: max_iterations must be at least 1\n  help: it counts model calls per run; the engine default is 10\n\
         routines/many.yaml:4:20: `git log` is not a command name\n  help: list base commands such as git or ls; arguments are not part of an approval\n\
         routines/many.yaml:5:15: silent_token is empty\n  help: leave it out for the default NO_REPLY, or set a word the model can reply with\n\
         routines/many.yaml:9:15: a mail delivery needs at least one address in `to`\n  help: e.g. mail: { to: [ops@example.com] }\n\
         routines/many.yaml:9:36: template `on_failure.deliver[0].mail.subject` uses `routine.nmae`, which is not defined\n  help: did you mean `routine.name`?\n"
    );
}

#[test]
fn a_duplicate_name_is_reported_in_the_second_file() {
    let p = Routines::offline();
    p.write("routines/a-first.yaml", "name: report\nprompt: hi\n")
        .write("routines/b-second.yaml", "name: report\nprompt: hello\n");
    let o = p.run(["validate"]);
    o.code(2).stderr_is("error: 1 problem found\n").stdout_is("routines/b-second.yaml:1:7: routine `report` is defined twice\n  help: it is already defined in routines/a-first.yaml; names must be unique\n");
    // The first definition still works.
    let o = p.run(["list", "--json"]);
    assert_eq!(o.json()[0]["name"], "report");
}

#[test]
fn a_webhook_path_used_twice_is_reported_in_the_second_routine() {
    let p = Routines::offline();
    p.write("routines/a.yaml", "prompt: hi\non:\n  - webhook: { path: /hooks/x, auth: none }\n")
        .write("routines/b.yaml", "prompt: hi\non:\n  - every: 1h\n  - webhook: { path: /hooks/x, token_env: T }\n");
    let o = p.run(["validate"]);
    o.code(2).stderr_is("error: 1 problem found\n").stdout_is("routines/b.yaml:4:22: webhook path `/hooks/x` is used twice\n  help: routine `a` already listens on it; give each webhook its own path\n");
}

#[test]
fn a_folder_of_broken_routines_is_reported_sorted_and_the_valid_ones_still_load() {
    let p = Routines::offline();
    p.write("routines/ok.yaml", "on:\n  - every: 1h\nprompt: fine\n")
        .write("routines/zeta.yaml", "prompt: hi\non:\n  - cron: \"0 25 * * *\"\n")
        .write("routines/alpha.yaml", "prompt: \"{{ rotuine.name }}\"\nretry: { attempts: 0 }\n")
        .write("routines/mid.yml", "prompt: hi\ndeliver:\n  - file: { path: x.md, mode: apend }\n");
    let o = p.run(["validate"]);
    o.code(2).stderr_is("error: 4 problems found\n").stdout_is(
        "routines/alpha.yaml:1:13: template `prompt` uses `rotuine.name`, which is not defined\n  help: did you mean `routine`?\n\
         routines/alpha.yaml:2:20: `retry.attempts` must be at least 1\n  help: it counts the first attempt too: 1 means no retry\n\
         routines/mid.yml:3:31: unknown variant `apend`, expected one of `create`, `overwrite`, `append` (at `deliver[0].file.mode`)\n  help: did you mean `append`?\n\
         routines/zeta.yaml:3:11: invalid cron expression `0 25 * * *`: the hour field `25` is not valid\n  help: hour takes 0-23, with `*`, `,`, `-` and `/`\n"
    );
    let o = p.run(["list", "--json"]);
    o.success();
    let names: Vec<String> =
        o.json().as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap().to_string()).collect();
    assert_eq!(names, ["ok"]);
    o.stderr_is("warning: 4 problem(s) in routine files; see `routines validate`\n");
}

#[test]
fn a_valid_folder_validates_with_exit_code_0() {
    // The webhook's secret is set, as in the daemon's environment: unset, `validate` warns.
    let p = Routines::offline().env("DEPLOY_HOOK_SECRET", "a-long-random-secret");
    p.write("templates/report.md.j2", "# {{ routine.name }} {{ status }}\n\n{{ output }}{{ error }}\n").write(
        "routines/full.yaml",
        "name: daily-report\ndescription: All the keys\nenabled: true\non:\n  - cron: \"0 9 * * 1-5\"\n    timezone: Europe/Berlin\n  - every: 30m\n  - at: 2026-12-01T09:00:00+01:00\n  - file: { paths: [\"inbox/*.csv\"], events: [create, modify], debounce: 2s }\n  - webhook: { path: /hooks/deploy, secret_env: DEPLOY_HOOK_SECRET }\nprompt: |\n  Summarize {{ vars.repo }}. Fired by {{ trigger.kind }} at {{ now }} (run {{ run.id }}, attempt {{ run.attempt }}).\nvars: { repo: ./app }\nagent:\n  model: deepseek-chat\n  temperature: 0.2\n  max_iterations: 10\n  autonomy: read_only\n  tools: [shell, file_read, file_list]\n  allow_commands: [git]\n  session: isolated\ntimeout: 10m\noverlap: skip\ncatch_up: latest\ncatch_up_window: 24h\njitter: 0s\nretry: { attempts: 3, backoff: 10s, max_backoff: 5m }\nsilent_token: NO_REPLY\ndeliver:\n  - file: { path: \"reports/{{ routine.name }}/{{ now | date('%Y-%m-%d') }}.md\", template: report.md.j2, mode: overwrite }\n  - mail: { to: [ops@example.com], subject: \"Daily report {{ now | date('%Y-%m-%d') }}\" }\non_failure:\n  deliver: [ { mail: { to: [\"On Call <oncall@example.com>\"], subject: \"routine {{ routine.name }} failed: {{ error }}\" } } ]\n",
    );
    let o = p.run(["validate"]);
    o.success().stdout_is("").stderr_is("ok: the config and 1 routine are valid\n");
}

/// A command the routine pre-approves that the engine's allowlist lacks runs nothing: a
/// warning at the entry, and the exit code stays 0. A path on the allowlist counts by its name.
#[test]
fn a_granted_command_the_allowlist_lacks_is_a_warning() {
    let p = Routines::project("http://127.0.0.1:9/v1", "security:\n  allowed_commands: [/usr/bin/git, grep]\n");
    p.write("routines/build.yaml", "prompt: Build it.\nagent:\n  tools: [shell]\n  allow_commands: [git, make]\n");
    p.run(["validate"]).success().stderr_is("ok: the config and 1 routine are valid (1 warning)\n").stdout_is(
        "routines/build.yaml:4:25: warning: `make` is not in security.allowed_commands, so this routine cannot run it\n  help: add `make` to security.allowed_commands in the engine config, or leave it out here\n",
    );
}

#[test]
fn routines_written_inline_in_the_config_are_checked_too() {
    let p = Routines::project(
        "http://127.0.0.1:9/v1",
        "routines:\n  - name: inline\n    prompt: \"Hi {{ rotuine.name }}\"\n    on:\n      - every: 0s\n  - prompt: x\n  - name: ok-one\n    prompt: fine\n",
    );
    let o = p.run(["validate"]);
    let cfg = p.path().join("routines.yaml").display().to_string();
    o.code(2).stderr_is("error: 3 problems found\n").stdout_is(&format!(
        "{cfg}:9:20: template `prompt` uses `rotuine.name`, which is not defined\n  help: did you mean `routine`?\n\
         {cfg}:11:16: `every: 0s` is too short; it must be at least 1s\n  help: e.g. every: 30s, every: 10m or every: 1h\n\
         {cfg}:12:5: an inline routine needs a `name`\n  help: add e.g. `name: daily-report` (lowercase letters, digits, `-` and `_`)\n"
    ));
    let o = p.run(["list", "--json"]);
    assert_eq!(o.json().as_array().unwrap().iter().map(|r| r["name"].clone()).collect::<Vec<_>>(), ["ok-one"]);
}

/// `trigger` has what the routine's triggers give: a field none of them gives is undefined at
/// every fire, and a typo is found before the first one.
#[test]
fn trigger_fields_are_checked_against_the_routines_own_triggers() {
    let p = Routines::offline().env("HOOK_SECRET", "s3cret-value");
    p.write("routines/hook.yaml", "on:\n  - webhook: { path: /hooks/a, secret_env: HOOK_SECRET }\nprompt: \"Deploy {{ trigger.bdy }}\"\n")
        .write("routines/daily.yaml", "on:\n  - cron: \"0 9 * * *\"\nprompt: |\n  Summarize.\n  Body: {{ trigger.body }}\n")
        .write(
            "routines/fine.yaml",
            "on:\n  - every: 1h\n  - file: { paths: [\"inbox/*\"] }\nprompt: \"{{ trigger.kind }} {{ trigger.path }} {{ trigger.event }} {{ trigger.scheduled_for }} {{ trigger.body | default('') }}\"\n",
        );
    p.run(["validate"]).code(2).stderr_is("error: 2 problems found\n").stdout_is(
        "routines/daily.yaml:5:12: template `prompt` uses `trigger.body`, which is not defined\n  help: `trigger.body` is set only by webhook triggers; this routine's triggers: cron\n\
         routines/hook.yaml:3:20: template `prompt` uses `trigger.bdy`, which is not defined\n  help: did you mean `trigger.body`?\n",
    );
}

/// A template file is checked for the routines that use it, and the problem placed in the file.
#[test]
fn trigger_fields_in_template_files_are_placed_in_the_file() {
    let p = Routines::offline();
    p.write("templates/hook.md.j2", "Deploy\n  {{ trigger.json.ref }} {{ trigger.bdy }}\n")
        .write("templates/report.md.j2", "{{ output }} from {{ trigger.path }}\n")
        .write("routines/hook.yaml", "on: [{ webhook: { path: /hooks/a, auth: none } }]\nprompt_template: hook.md.j2\n")
        .write(
            "routines/a.yaml",
            "on: [{ every: 1h }]\nprompt: hi\ndeliver: [{ file: { path: a.md, template: report.md.j2 } }]\n",
        )
        .write(
            "routines/b.yaml",
            "on: [{ every: 2h }]\nprompt: hi\ndeliver: [{ file: { path: b.md, template: report.md.j2 } }]\n",
        );
    p.run(["validate"]).code(2).stderr_is("error: 2 problems found\n").stdout_is(
        "templates/hook.md.j2:2:29: template `hook.md.j2` uses `trigger.bdy`, which is not defined\n  help: did you mean `trigger.body`?\n\
         templates/report.md.j2:1:22: template `report.md.j2` uses `trigger.path`, which is not defined\n  help: `trigger.path` is set only by file and webhook triggers; this routine's triggers: every\n",
    );
}

#[test]
fn delivery_paths_that_leave_the_workspace_are_errors() {
    let p = Routines::offline();
    let inside = p.path().join("reports/in.md").display().to_string();
    p.write(
        "routines/out.yaml",
        &format!(
            "prompt: hi\ndeliver:\n  - file: {{ path: ../outside.md }}\n  - file: {{ path: \"/tmp/{{{{ routine.name }}}}.md\" }}\n  - file: {{ path: \"{inside}\" }}\n  - file: {{ path: \"reports/{{{{ routine.name }}}}/../x.md\" }}\non_failure:\n  deliver: [ {{ file: {{ path: \"a/../../b.md\" }} }} ]\n"
        ),
    );
    let help = "\n  help: deliveries are written only inside the workspace; write the path relative to it\n";
    p.run(["validate"]).code(2).stderr_is("error: 3 problems found\n").stdout_is(&format!(
        "routines/out.yaml:3:19: `../outside.md` leaves the workspace{help}\
         routines/out.yaml:4:19: `/tmp/{{{{ routine.name }}}}.md` leaves the workspace{help}\
         routines/out.yaml:8:30: `a/../../b.md` leaves the workspace{help}"
    ));
}

/// A webhook whose secret is unset refuses every request, and a daemon whose page token is
/// unset does not start: errors. A key, a login or a database URL that only later steps need:
/// warnings. Names written as their defaults are optional and not asked for.
#[test]
fn unset_secret_variables_are_warnings_and_a_half_set_login_an_error() {
    let p = Routines::project(
        "http://127.0.0.1:9/v1",
        "server:\n  token_env: UI_TOKEN\nstore:\n  url_env: PG_URL\nmail:\n  from: r@example.com\n  smtp: { host: smtp.example.com, username_env: SMTP_USER, password_env: SMTP_PASS }\n",
    );
    p.write("routines/hook.yaml", "on:\n  - webhook: { path: /hooks/deploy, secret_env: DEPLOY_SECRET }\nprompt: hi\n");
    // `validate` often runs where the secrets are not (CI, a laptop): what is unset is said,
    // with what the daemon would do without it, and the folder stays valid.
    let o = p.run(["validate"]);
    let cfg = p.path().join("routines.yaml").display().to_string();
    o.success().stderr_is("ok: the config and 1 routine are valid (5 warnings)\n").stdout_is(&format!(
        "{cfg}:8:14: warning: server.token_env names $UI_TOKEN, which is not set: the daemon does not start while it is unset\n  help: export UI_TOKEN with a long random token (e.g. `openssl rand -hex 32`), or remove token_env\n\
         {cfg}:10:12: warning: store.url_env names $PG_URL, which is not set: the state is kept in SQLite in data_dir\n  help: export PG_URL with a postgres:// URL, or remove url_env to keep the state in SQLite\n\
         {cfg}:13:49: warning: mail.smtp.username_env names $SMTP_USER, which is not set: mail is sent without a login, which most servers refuse\n  help: export SMTP_USER in the environment of the daemon and of `routines run`\n\
         {cfg}:13:74: warning: mail.smtp.password_env names $SMTP_PASS, which is not set: mail is sent without a login, which most servers refuse\n  help: export SMTP_PASS in the environment of the daemon and of `routines run`\n\
         routines/hook.yaml:2:49: warning: `secret_env` names $DEPLOY_SECRET, which is not set: the webhook /hooks/deploy refuses every request without it\n  help: export DEPLOY_SECRET in the daemon's environment (e.g. `openssl rand -hex 32`)\n"
    ));
    // A login half set stops the mailer, and every run in this environment: an error.
    let o = p
        .command(["validate"])
        .env("SMTP_USER", "me")
        .env("UI_TOKEN", "t0ken-value")
        .env("DEPLOY_SECRET", "s3cret")
        .run();
    o.code(2).stderr_is("error: 1 problem found (1 warning)\n").stdout_has(
        "password_env names $SMTP_PASS, which is not set: with only one of username and password, `routines run` and the daemon stop with an error\n",
    );
    let all_set = p
        .command(["validate"])
        .env("SMTP_USER", "me")
        .env("SMTP_PASS", "pa55word")
        .env("UI_TOKEN", "t0ken-value")
        .env("DEPLOY_SECRET", "s3cret")
        .env("PG_URL", "postgres://u@127.0.0.1:9/db")
        .run();
    all_set.success().stdout_is("").stderr_is("ok: the config and 1 routine are valid\n");
}

#[test]
fn validate_json_lists_each_problem_with_its_place_and_severity() {
    let p = Routines::project("http://127.0.0.1:9/v1", "store:\n  url_env: PG_URL\n");
    p.write("routines/hook.yaml", "on:\n  - webhook: { path: /hooks/a, auth: none }\nprompt: \"{{ trigger.bdy }}\"\n");
    let o = p.run(["validate", "--json"]);
    o.code(2).stderr_is("error: 1 problem found (1 warning)\n");
    let cfg = p.path().join("routines.yaml").display().to_string();
    assert_eq!(
        o.json(),
        serde_json::json!([
            {"file": cfg, "line": 8, "col": 12, "severity": "warning",
             "message": "store.url_env names $PG_URL, which is not set: the state is kept in SQLite in data_dir",
             "hint": "export PG_URL with a postgres:// URL, or remove url_env to keep the state in SQLite"},
            {"file": "routines/hook.yaml", "line": 3, "col": 13, "severity": "error",
             "message": "template `prompt` uses `trigger.bdy`, which is not defined",
             "hint": "did you mean `trigger.body`?"},
        ])
    );
    p.write("routines/hook.yaml", "on:\n  - webhook: { path: /hooks/a, auth: none }\nprompt: \"{{ trigger.body }}\"\n");
    let o = p.command(["validate", "--json"]).env("PG_URL", "postgres://u@127.0.0.1:9/db").run();
    o.success().stderr_is("ok: the config and 1 routine are valid\n");
    assert_eq!(o.json(), serde_json::json!([]));
    // An invalid config's problems come as the same list.
    let p = Routines::new().config("provider:\n  modle: x\n");
    let o = p.run(["validate", "--json"]);
    o.code(2);
    assert_eq!(o.json()[0]["message"], "unknown field `modle` in `provider`");
    assert_eq!(o.json()[0]["severity"], "error");
    assert_eq!(o.json()[0]["line"], 2);
}
