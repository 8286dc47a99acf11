//! Grounding (SPEC §8, issue 14): the first call of a routine turn calls a tool, final replies
//! are answers (never a call written as text, template tokens or nothing), a silent reply rests
//! on a check, and read-only tools are retried when they fail for a passing reason.

mod assist;
mod code_check;
mod code_stop;
mod commands;
mod difference;
mod edits;
mod failures;
mod first_call;
mod first_check;
mod git_counts;
mod held;
mod hygiene;
mod items;
mod lists;
mod looked;
mod named;
mod newest;
mod numbers;
mod payload;
mod ranges;
mod read_value;
mod redirect;
mod retries;
mod runs;
mod select;
mod select_values;
mod silence_values;
mod times;
mod windows;
mod writes;

use crate::common::Routines;
use routines::agent::{Agent, RunEvent, ToolStatus};
use routines::config::Autonomy;
use routines::config::routine_file::FirstCall;

use serde_json::Value;

use crate::common::Harness;

/// An agent in routine mode with `first_call: tool` and every assist (`agent.assist: full`), as
/// a routine run builds it: these tests are of the assists that help small models.
fn routine_agent(h: &Harness, autonomy: Autonomy) -> Agent {
    let mut agent = h.agent(autonomy, |o, _| {
        o.first_call = FirstCall::Tool;
        o.assists.level = routines::config::AssistLevel::Full;
    });
    agent.set_routine_name("check");
    agent.set_silent_token(Some("NO_REPLY".into()));
    agent
}

/// The tool calls recorded, in order: tool and status.
fn tool_events(h: &Harness) -> Vec<(String, ToolStatus)> {
    h.events
        .all()
        .into_iter()
        .filter_map(|e| match e {
            RunEvent::ToolCall { tool, status, .. } => Some((tool, status)),
            _ => None,
        })
        .collect()
}

/// The names of the tools a request offers.
fn tool_names(req: &Value) -> Vec<String> {
    req["tools"]
        .as_array()
        .map_or_else(Vec::new, |t| t.iter().map(|t| t["function"]["name"].as_str().unwrap().to_string()).collect())
}

/// The text of a request's last message.
fn last_text(req: &Value) -> String {
    crate::common::last_message(req)["content"].as_str().unwrap_or_default().to_string()
}

/// A project whose engine gives every assist (`agent.assist: full`), then `extra`: the tests of
/// this folder are of the assists that help small models, beyond the default `evidence` level.
fn assisted(base_url: &str, extra: &str) -> Routines {
    Routines::project(base_url, &format!("agent:\n  assist: full\n{extra}"))
}

/// Runs `git` with `args` in `dir` (its own `HOME`, no system config) and `env` set, and
/// requires it to succeed: the repositories the git tests run against.
fn git(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// The kinds of the notes recorded, in order.
fn notes(h: &Harness) -> Vec<&'static str> {
    h.events
        .all()
        .into_iter()
        .filter_map(|e| match e {
            RunEvent::Note { kind, .. } => Some(kind),
            _ => None,
        })
        .collect()
}

/// The system prompt headings of routine mode.
const ROUTINE_SECTIONS: [&str; 8] = [
    "## Identity",
    "## Tools",
    "## Safety",
    "## Memory",
    "## Environment",
    "## Decision principles",
    "## Language",
    "## Routine execution",
];

/// The details of the notes of `kind` a run recorded (`routines show --json`), in order.
fn note_details(show: &Value, kind: &str) -> Vec<String> {
    show["events"]
        .as_array()
        .map(|events| {
            events
                .iter()
                .filter(|e| e["kind"] == "note" && e["status"] == kind)
                .filter_map(|e| e["detail"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The kinds of the notes a run recorded (`routines show --json`), in order.
fn note_kinds(show: &Value) -> Vec<String> {
    show["events"]
        .as_array()
        .map(|events| {
            events
                .iter()
                .filter(|e| e["kind"] == "note")
                .filter_map(|e| e["status"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Posts `body` to the daemon's webhook `path` on `port` and waits for that run of `routine`
/// to succeed; the run's row of `history`.
async fn webhook_run(p: &crate::common::Routines, port: u16, path: &str, body: &str, routine: &str) -> Value {
    let c = reqwest::Client::builder().no_proxy().build().unwrap();
    let answer = c.post(format!("http://127.0.0.1:{port}{path}")).body(body.to_string()).send().await.unwrap();
    assert_eq!(answer.status(), 202);
    let id = answer.json::<Value>().await.unwrap()["run_id"].as_i64().unwrap();
    let wait = std::time::Duration::from_secs(20);
    let done = crate::common::wait::poll(wait, std::time::Duration::from_millis(50), async || {
        p.history(&[routine]).await.into_iter().find(|r| r["run_id"] == id && r["status"] == "succeeded")
    })
    .await;
    match done {
        Some(run) => run,
        None => panic!("the run of {routine} did not succeed: {:?}", p.history(&[routine]).await),
    }
}
