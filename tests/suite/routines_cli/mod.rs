//! Routines through the real binary: init, validate, list, next, run,
//! deliver, history and show, in a tempdir, against the mock model server.

mod delivery;
mod history;
mod latest;
mod listing;
mod looks;
mod postgres;
mod postgres_tls;
mod pruning;
mod run;
mod trigger_data;

use chrono::{DateTime, FixedOffset};
use serde_json::Value;

use crate::common::CHAT_SECTIONS;
use crate::common::mock_llm::MockLlm;

/// The system prompt headings of routine mode, in order.
const ROUTINE_SECTIONS: [&str; 8] = [
    CHAT_SECTIONS[0],
    CHAT_SECTIONS[1],
    CHAT_SECTIONS[2],
    CHAT_SECTIONS[3],
    CHAT_SECTIONS[4],
    CHAT_SECTIONS[5],
    CHAT_SECTIONS[6],
    "## Routine execution",
];

/// A mock that checks every request is a routine-mode request.
pub(super) async fn mock() -> MockLlm {
    let mock = MockLlm::start().await;
    mock.expect_sections(&ROUTINE_SECTIONS);
    mock
}

pub(super) fn system(req: &Value) -> String {
    crate::common::content(req, 0)
}

pub(super) fn user(req: &Value) -> String {
    crate::common::content(req, 1)
}

/// An RFC 3339 timestamp with the engine's offset (+08:00).
pub(super) fn parse_local(v: &Value) -> DateTime<FixedOffset> {
    let s = v.as_str().unwrap_or_else(|| panic!("not a timestamp: {v}"));
    assert!(s.ends_with("+08:00"), "{s} is not in the engine's zone");
    DateTime::parse_from_rfc3339(s).unwrap()
}

/// A model's reply to the code check of a silent reply: a function that finds nothing.
pub(super) const NOTHING_FOUND: &str = "```python\ndef findings(output):\n    return []\n```";

pub(super) const DAILY: &str = "description: The daily digest\nvars: { repo: acme/app }\nprompt: Summarize {{ vars.repo }} for {{ routine.name }}.\n";
