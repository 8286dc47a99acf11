//! Grounding (SPEC §8, issue 14): the first call of a routine turn calls a tool, final replies
//! are answers (never a call written as text, template tokens or nothing), a silent reply rests
//! on a check, and read-only tools are retried when they fail for a passing reason.

mod code_check;
mod commands;
mod failures;
mod first_call;
mod held;
mod hygiene;
mod looked;
mod named;
mod payload;
mod retries;
mod runs;

use routines::agent::{Agent, RunEvent, ToolStatus};
use routines::config::Autonomy;
use routines::config::routine_file::FirstCall;

use serde_json::Value;

use crate::common::Harness;

/// An agent in routine mode with `first_call: tool`, as a routine run builds it.
fn routine_agent(h: &Harness, autonomy: Autonomy) -> Agent {
    let mut agent = h.agent(autonomy, |o, _| o.first_call = FirstCall::Tool);
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
