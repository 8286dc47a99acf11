//! init, validate, list and next; and what a mistyped or broken routine name gets.

use chrono::{DateTime, Datelike, TimeZone, Utc};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{DAILY, mock};
use crate::common::Routines;
use crate::common::mock_llm::text;

#[test]
fn init_scaffolds_a_valid_project_and_never_overwrites() {
    let p = Routines::new();
    let o = p.run(["init", "site"]);
    o.success().stdout_is("");
    let site = p.path().join("site");
    let created: Vec<String> = ["routines.yaml", "routines/hello.yaml", "templates/report.md.j2", "HEARTBEAT.md"]
        .iter()
        .map(|f| format!("created  {}", site.join(f).display()))
        .collect();
    assert_eq!(o.stderr.lines().take(4).collect::<Vec<_>>(), created);
    std::fs::write(site.join("routines/hello.yaml"), "prompt: mine\n").unwrap();

    let o = p.run(["init", "site"]);
    o.success();
    o.stderr_has(&format!("kept     {} (already exists)\n", site.join("routines/hello.yaml").display()));
    assert!(!o.stderr.contains("created"), "{o}");
    assert_eq!(std::fs::read_to_string(site.join("routines/hello.yaml")).unwrap(), "prompt: mine\n");

    let o = p.run(["--config", "site/routines.yaml", "validate"]);
    o.success().stdout_is("").stderr_is("ok: the config and 1 routine are valid\n");
}

#[test]
fn list_shows_every_routine_with_triggers_next_fire_and_last_status() {
    let p = Routines::offline();
    p.write("routines/report.yaml", "on:\n  - cron: \"0 9 * * *\"\n    timezone: Europe/Berlin\nprompt: hi\n")
        .write(
            "routines/poll.yaml",
            "on:\n  - every: 30m\n  - webhook: { path: /hooks/poll, auth: none }\nprompt: hi\n",
        )
        .write("routines/by-hand.yaml", DAILY)
        .write("routines/off.yaml", "enabled: false\non:\n  - at: 2099-01-01T09:00:00+01:00\nprompt: hi\n")
        .write("routines/once.yaml", "on:\n  - at: 2099-01-01T09:00:00+01:00\nprompt: hi\n");
    let before = Utc::now();
    let o = p.run(["list", "--json"]);
    o.success();
    let rows = o.json();
    let rows = rows.as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["by-hand", "off", "once", "poll", "report"]);
    let pick = |r: &Value| json!({"name": r["name"], "enabled": r["enabled"], "triggers": r["triggers"], "last_status": r["last_status"]});
    assert_eq!(
        rows.iter().map(pick).collect::<Vec<_>>(),
        [
            json!({"name": "by-hand", "enabled": true, "triggers": ["manual"], "last_status": null}),
            json!({"name": "off", "enabled": false, "triggers": ["at", "manual"], "last_status": null}),
            json!({"name": "once", "enabled": true, "triggers": ["at", "manual"], "last_status": null}),
            json!({"name": "poll", "enabled": true, "triggers": ["every", "webhook", "manual"], "last_status": null}),
            json!({"name": "report", "enabled": true, "triggers": ["cron", "manual"], "last_status": null}),
        ]
    );
    // Manual only, and disabled: nothing fires.
    assert_eq!((&rows[0]["next_fire"], &rows[1]["next_fire"]), (&Value::Null, &Value::Null));
    // `at` is shown in the engine's zone, cron in the trigger's zone.
    assert_eq!(rows[2]["next_fire"], "2099-01-01T16:00:00+08:00");
    let poll = DateTime::parse_from_rfc3339(rows[3]["next_fire"].as_str().unwrap()).unwrap();
    assert!(poll > before && poll.timestamp() % 1800 == 0, "{poll}");
    let report = rows[4]["next_fire"].as_str().unwrap();
    assert!(report.ends_with("T09:00:00+01:00") || report.ends_with("T09:00:00+02:00"), "{report}");
    assert_eq!(rows[4]["next_fire_zone"], "Europe/Berlin");

    let o = p.run(["list"]);
    o.success();
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["NAME", "ENABLED", "TRIGGERS", "NEXT", "FIRE", "LAST", "STATUS", "SKIPPED", "MISSED"]
    );
    assert_eq!(lines[1].split_whitespace().collect::<Vec<_>>(), ["by-hand", "yes", "manual", "-", "-", "0", "0"]);
    assert_eq!(lines[2].split_whitespace().collect::<Vec<_>>(), ["off", "no", "at,", "manual", "-", "-", "0", "0"]);
    assert_eq!(
        lines[3].split_whitespace().collect::<Vec<_>>(),
        ["once", "yes", "at,", "manual", "2099-01-01", "16:00:00", "+08:00", "(Asia/Shanghai)", "-", "0", "0"]
    );
    assert!(lines[5].contains("(Europe/Berlin)"), "{o}");
}

/// The next `n` weekday 09:30 instants in New York strictly after `after`.
fn weekday_mornings(after: DateTime<Utc>, n: usize) -> Vec<String> {
    let ny = chrono_tz::America::New_York;
    let mut day = after.with_timezone(&ny).date_naive();
    let mut out = Vec::new();
    while out.len() < n {
        let at = ny.from_local_datetime(&day.and_hms_opt(9, 30, 0).unwrap()).single().unwrap();
        if at.with_timezone(&Utc) > after && at.weekday().num_days_from_monday() < 5 {
            out.push(at.to_rfc3339());
        }
        day = day.succ_opt().unwrap();
    }
    out
}

#[test]
fn next_lists_the_fire_times_in_the_triggers_zone() {
    let p = Routines::offline();
    p.write("routines/standup.yaml", "on:\n  - cron: \"30 9 * * 1-5\"\n    timezone: America/New_York\nprompt: hi\n")
        .write("routines/once.yaml", "on:\n  - at: 2099-01-01T09:00:00+01:00\nprompt: hi\n")
        .write("routines/by-hand.yaml", DAILY);
    let before = Utc::now();
    let o = p.run(["next", "standup", "-n", "3", "--json"]);
    let after = Utc::now();
    o.success();
    let got: Vec<Value> = o.json().as_array().unwrap().clone();
    let at: Vec<String> = got.iter().map(|f| f["at"].as_str().unwrap().to_string()).collect();
    assert!(at == weekday_mornings(before, 3) || at == weekday_mornings(after, 3), "{at:?}");
    for f in &got {
        assert_eq!((f["zone"].as_str(), f["trigger"].as_str()), (Some("America/New_York"), Some("cron")));
    }

    let o = p.run(["next", "standup", "-n", "3"]);
    o.success();
    assert_eq!(o.stdout.lines().count(), 3, "{o}");
    for line in o.stdout.lines() {
        assert!(
            line.ends_with(" 09:30:00 -05:00 (America/New_York)  cron")
                || line.ends_with(" 09:30:00 -04:00 (America/New_York)  cron"),
            "{line}"
        );
    }

    let o = p.run(["next", "once", "-n", "3"]);
    o.stdout_is("2099-01-01 16:00:00 +08:00 (Asia/Shanghai)  at\n");
    let o = p.run(["next", "by-hand"]);
    o.success()
        .stdout_is("")
        .stderr_is("`by-hand` has no upcoming time triggers (it runs by hand, on files or webhooks)\n");
    let o = p.run(["next", "standpu"]);
    o.code(2).stderr_is("error: no routine named `standpu`; did you mean `standup`?\n");
}

#[test]
fn an_unknown_or_broken_routine_is_a_usage_error() {
    let p = Routines::offline();
    p.write("routines/daily.yaml", DAILY).write("routines/broken.yaml", "prompt: hi\novrelap: skip\n");
    let o = p.run(["run", "dialy"]);
    o.code(2).stdout_is("").stderr_is("error: no routine named `dialy`; did you mean `daily`?\n");
    let o = p.run(["run", "weekly"]);
    o.stderr_is("error: no routine named `weekly`; routines: daily\n");
    let o = p.run(["run", "broken"]);
    o.code(2).stderr_is(
        "error: routine `broken` is invalid:\n  routines/broken.yaml:2:1: unknown field `ovrelap`\n    help: did you mean `overlap`?\n",
    );
    let o = p.run(["run", "daily", "--var", "novalue"]);
    o.code(2).stderr_has("`novalue` is not KEY=VALUE");
    let o = p.run(["history", "--status", "done"]);
    o.code(2).stderr_is(
        "error: unknown status `done`; use one of: succeeded, silent, failed, timed_out, skipped, interrupted, running, queued\n",
    );
    let o = p.run(["show", "42"]);
    o.code(2).stderr_is("error: no run with id 42; see `routines history`\n");
}

#[test]
fn a_disabled_routine_is_refused_with_exit_code_3() {
    let p = Routines::offline();
    p.write("routines/off.yaml", "enabled: false\nprompt: hi\n");
    let o = p.run(["run", "off"]);
    o.code(3)
        .stdout_is("")
        .stderr_is("error: routine `off` is disabled; set `enabled: true` in routines/off.yaml to run it\n");
    let o = p.run(["history", "--json"]);
    assert_eq!(o.stdout.trim(), "[]");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_broken_routine_does_not_hide_the_others() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write("routines/daily.yaml", DAILY).write("routines/broken.yaml", "prompt: \"{{ oops\"\n");
    let o = p.run_async(["list", "--json"]).await;
    o.success();
    assert_eq!(o.json().as_array().unwrap().iter().map(|r| r["name"].clone()).collect::<Vec<_>>(), [json!("daily")]);
    o.stderr_is("warning: 1 problem(s) in routine files; see `routines validate`\n");
    mock.push(text("Fine."));
    let o = p.run_async(["run", "daily"]).await;
    o.success().stdout_is("Fine.\n");
    let o = p.run_async(["validate"]).await;
    o.code(2);
    assert!(o.stdout.starts_with("routines/broken.yaml:1:"), "{o}");
    mock.assert_clean();
}
