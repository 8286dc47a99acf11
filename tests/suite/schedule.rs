//! The `schedule` tool (SPEC §8) through the binary: in chat it asks first and writes a checked
//! routine file in the user's zone that a running daemon then fires; routines get it only by
//! listing it, and what they create gets nothing the creator lacked.

use std::time::Duration;

use chrono::Utc;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::mock_llm::{MockLlm, text, tool_call};
use crate::common::os::free_port;
use crate::common::wait::{self, DEADLINE};
use crate::common::{Routines, Running, last_message};

/// Tomorrow's date in Asia/Shanghai, the zone of [`Routines::project`].
fn tomorrow() -> String {
    let zone: chrono_tz::Tz = "Asia/Shanghai".parse().unwrap();
    (Utc::now().with_timezone(&zone) + chrono::Duration::days(1)).date_naive().to_string()
}

fn tool_names(req: &Value) -> Vec<String> {
    req["tools"]
        .as_array()
        .map_or_else(Vec::new, |t| t.iter().map(|t| t["function"]["name"].as_str().unwrap().to_string()).collect())
}

/// "Remind me tomorrow at 9": asked `[y/N/a]` first, then a one-shot routine at 09:00 in the
/// user's zone, which `validate` accepts like a hand-written one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_schedules_a_reminder_in_the_users_zone_after_asking() {
    let mock = MockLlm::start().await;
    let p = Routines::project(&mock.base_url(), "");
    let day = tomorrow();
    let add = json!({"action": "add", "name": "check-release", "prompt": "Remind me to check the release branch.", "at": format!("{day}T09:00")});
    mock.push_all([
        tool_call("schedule", add.clone()),
        text("Not scheduled."),
        tool_call("schedule", add),
        text("I will remind you tomorrow at 9."),
    ]);
    let o = p
        .command(["chat"])
        .stdin("remind me tomorrow at 9\nn\nremind me tomorrow at 9 to check the release branch\ny\n")
        .run_async()
        .await;
    o.success().stdout_has("I will remind you tomorrow at 9.\n");
    let question = format!("? Allow schedule add check-release (at {day}T09:00)? [y/N/a]");
    assert_eq!(o.stderr.matches(&question).count(), 2, "{o}");
    let reqs = mock.requests();
    assert!(tool_names(&reqs[0]).contains(&"schedule".to_string()), "{:?}", tool_names(&reqs[0]));
    assert!(last_message(&reqs[1])["content"].as_str().unwrap().starts_with("[failed] the user declined"));
    let result = last_message(&reqs[3])["content"].as_str().unwrap().to_string();
    assert_eq!(
        result,
        format!(
            "Scheduled routine `check-release` (routines/check-release.yaml): once, at {day} 09:00 +08:00 (Asia/Shanghai). \
             It delivers nothing; its results are kept in `routines history check-release`. \
             No daemon is running, so nothing fires on schedule: start one with `routines daemon`."
        )
    );
    let file = p.read("routines/check-release.yaml");
    let lines: Vec<&str> = file.lines().collect();
    assert!(lines[0].starts_with("# Created by the agent (routines chat) with the schedule tool on "), "{file}");
    assert_eq!(
        lines[3..].join("\n"),
        format!(
            "name: check-release\ndescription: \"Remind me to check the release branch.\"\ncreated_by: agent\non:\n  - at: \"{day}T09:00:00+08:00\"\nprompt: \"Remind me to check the release branch.\"\nagent:\n  autonomy: supervised\n  tools: []"
        )
    );
    p.run(["validate"]).success().stderr_is("ok: the config and 1 routine are valid\n");
    let o = p.run(["next", "check-release", "--json"]);
    o.success();
    assert_eq!(o.json()[0]["at"], format!("{day}T09:00:00+08:00"), "{o}");
    mock.assert_clean();
}

/// A routine scheduled from chat while the daemon runs is picked up and fired by it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_fires_what_chat_scheduled() {
    let mock = MockLlm::start().await;
    mock.push(tool_call("schedule", json!({"action": "add", "name": "ping", "prompt": "Say pong.", "every": "1s"})));
    mock.push_all((0..30).map(|_| text("pong")));
    let port = free_port();
    // Every second, which an agent-made routine may do only where the config allows it.
    let config = format!("server: {{ listen: 127.0.0.1:{port} }}\nlimits: {{ min_agent_interval: 1s }}\n");
    let p = Routines::project(&mock.base_url(), &config);
    let mut daemon: Running = p.command(["-v", "daemon"]).spawn().await;
    daemon.wait_for_stderr("the ready line", |l| l.starts_with("routines daemon: ")).await;
    daemon.wait_for_http(&format!("http://127.0.0.1:{port}/healthz"), 200).await;

    p.command(["chat"]).stdin("say pong every second\ny\n").run_async().await.success();
    let result = last_message(&mock.requests()[1])["content"].as_str().unwrap().to_string();
    assert!(result.starts_with("Scheduled routine `ping` (routines/ping.yaml): next at "), "{result}");
    assert!(result.ends_with(" The running daemon picks it up within seconds."), "{result}");
    let fired = wait::poll(DEADLINE, Duration::from_millis(50), async || {
        let runs = p.history(&["ping"]).await;
        runs.iter().find(|r| r["status"] == "succeeded" && r["trigger"] == "every").cloned()
    })
    .await
    .unwrap_or_else(|| panic!("the daemon did not fire `ping`; its log:\n{}", daemon.stderr()));
    assert_eq!(fired["routine"], "ping");
    assert!(mock.requests().iter().any(|r| last_message(r)["content"] == "Say pong."));
    daemon.signal(libc::SIGTERM);
    assert_eq!(daemon.exit_code(Duration::from_secs(10)).await, 0);
    mock.assert_clean();
}

/// Only a routine that lists `schedule` gets it; what it creates gets at most its tools and
/// commands, never `schedule`, and `remove` leaves the user's routines alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routines_get_the_tool_only_by_listing_it() {
    let mock = MockLlm::start().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write("routines/plain.yaml", "prompt: Anything.\n");
    p.write(
        "routines/planner.yaml",
        "prompt: Plan the week.\nagent: { tools: [schedule, shell], allow_commands: [git] }\n",
    );
    mock.push(text("ok"));
    p.run_async(["run", "plain"]).await.success();
    let plain_tools = tool_names(&mock.requests()[0]);
    assert!(!plain_tools.contains(&"schedule".to_string()), "{plain_tools:?}");
    // Its other tools are there (`shell` is not: it may run no command, so it is not offered).
    assert!(plain_tools.contains(&"file_read".to_string()), "{plain_tools:?}");

    mock.push_all([
        tool_call("schedule", json!({"action": "add", "name": "greedy", "prompt": "p", "every": "1d", "tools": ["http_request"]})),
        tool_call("schedule", json!({"action": "add", "name": "weekly-log", "prompt": "Show the week's commits.", "cron": "0 9 * * 1", "timezone": "Europe/Berlin", "tools": ["shell"]})),
        tool_call("schedule", json!({"action": "remove", "name": "plain"})),
        text("Planned."),
    ]);
    p.run_async(["run", "planner"]).await.success().stdout_is("Planned.\n");
    let reqs = mock.requests();
    assert_eq!(tool_names(&reqs[1]), ["schedule", "shell"]);
    assert_eq!(
        last_message(&reqs[2])["content"],
        "[failed] the routine cannot get `http_request`: it may only get tools you have (schedule, shell)"
    );
    let created = last_message(&reqs[3])["content"].as_str().unwrap().to_string();
    assert!(created.starts_with("Scheduled routine `weekly-log` (routines/weekly-log.yaml): next at "), "{created}");
    assert!(created.contains("+0") && created.contains("(Europe/Berlin)"), "{created}");
    assert_eq!(
        last_message(&reqs[4])["content"],
        "[failed] routine `plain` (routines/plain.yaml) was not made by the agent; only the user may remove it"
    );
    let file = p.read("routines/weekly-log.yaml");
    assert!(file.starts_with("# Created by the agent (routine `planner`) with the schedule tool on "), "{file}");
    assert!(
        file.ends_with(
            "on:\n  - cron: \"0 9 * * 1\"\n    timezone: \"Europe/Berlin\"\nprompt: \"Show the week's commits.\"\nagent:\n  autonomy: supervised\n  tools: [\"shell\"]\n  allow_commands: [\"git\"]\n"
        ),
        "{file}"
    );
    assert!(p.path().join("routines/plain.yaml").exists());
    assert!(!p.path().join("routines/greedy.yaml").exists());
    p.run(["validate"]).success().stderr_is("ok: the config and 3 routines are valid\n");
    mock.assert_clean();
}
