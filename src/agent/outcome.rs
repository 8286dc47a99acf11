//! How a routine turn ends without an answer to deliver (SPEC §13): the model said it could not
//! do the task, every tool call failed, or the model was still calling tools at the limit. Each
//! ends the run `failed` with an error that names what happened, so `on_failure` tells a person,
//! instead of a report that only says the task could not be done delivered as a success.
//!
//! The model's own word is one fixed marker at the start of its reply ([`TASK_FAILED`], which
//! the Routine execution section of the prompt teaches), never a reading of its wording. The
//! rest rests on what the turn's calls returned.

use super::events::{CallRecord, ToolStatus};
use super::hygiene::BadReply;
use super::{Agent, AgentError};
use crate::llm::{ToolCall, ToolSpec};

pub use super::prompt::TASK_FAILED;

/// Longest reason or list of failures kept in a run's error.
const MAX_ERROR_CHARS: usize = 600;
/// Longest call shown in an error.
const MAX_CALL_CHARS: usize = 120;

/// Why a routine turn ended without an answer to deliver.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unfinished {
    /// The reply started with [`TASK_FAILED`].
    #[error("the model reported that the task could not be done: {0}")]
    Declared(String),
    /// Tool calls were made and none returned anything to answer from.
    #[error("every tool call failed: {0}")]
    AllCallsFailed(String),
    /// The turn reached `max_iterations` with the model still calling tools.
    #[error("the model was still calling tools after {calls} model calls: last call {last}")]
    StillCalling { calls: u32, last: String },
}

/// The reason of a reply that starts with [`TASK_FAILED`] (markdown emphasis or a code span
/// around the marker allowed); `None` for any other reply.
pub(super) fn declared(reply: &str) -> Option<String> {
    let start = reply.trim_start().trim_start_matches(['*', '`', '_']);
    let word = TASK_FAILED.trim_end_matches(':');
    let rest = start.strip_prefix(word)?.trim_start_matches(['*', '`', '_']).strip_prefix(':')?;
    let reason = rest.trim().trim_start_matches(['*', '`', '_']).trim();
    Some(clip(if reason.is_empty() { "no reason given" } else { reason }, MAX_ERROR_CHARS))
}

/// Whether a call returned something to answer from: it succeeded, or its exit status is the
/// answer (a search that matched no line, files that differ).
fn answered(call: &CallRecord) -> bool {
    call.status == ToolStatus::Success
        || (call.status == ToolStatus::Failed && crate::tools::status_answers(&call.result))
}

/// The failures of a turn that made calls and got nothing to answer from, one per call (a
/// repeat is not listed again); `None` when no call was made or one answered.
pub(super) fn all_failed(calls: &[CallRecord]) -> Option<String> {
    if calls.is_empty() || calls.iter().any(answered) {
        return None;
    }
    let mut parts: Vec<String> = Vec::new();
    for c in calls.iter().filter(|c| c.status != ToolStatus::Duplicate) {
        let part = match c.status {
            ToolStatus::UnknownTool => format!("`{}` is not a tool", c.tool),
            _ => format!("{} {}: {}", c.tool, arguments(&c.arguments), first_line(&c.result)),
        };
        if !parts.contains(&part) {
            parts.push(part);
        }
    }
    Some(clip(&parts.join("; "), MAX_ERROR_CHARS))
}

/// The error of a turn that ended after `calls` model calls while calling `last` (name and
/// arguments).
pub(super) fn still_calling(calls: u32, last: Option<(&str, &str)>) -> Unfinished {
    let last = last.map_or_else(|| "unknown".to_string(), |(name, args)| format!("{name} `{}`", arguments(args)));
    Unfinished::StillCalling { calls, last }
}

impl Agent {
    /// A reply that starts with [`TASK_FAILED`] ends the turn with its reason.
    pub(super) fn declared_failure(&self, reply: &str) -> Result<(), AgentError> {
        match declared(reply) {
            Some(reason) => {
                self.note("task_failed", &format!("the model replied {TASK_FAILED} {reason}"));
                Err(Unfinished::Declared(reason).into())
            }
            None => Ok(()),
        }
    }

    /// A routine turn with tools whose calls were all made and all failed has no answer: the
    /// failures are the error. Not where the task carries its data (a webhook's body): that is
    /// evidence no call had to return.
    pub(super) fn grounded(&self, task: &str, specs: &[ToolSpec], calls: &[CallRecord]) -> Result<(), AgentError> {
        if self.routine.is_none() || specs.is_empty() || super::payload::own_words(task).is_some() {
            return Ok(());
        }
        match all_failed(calls) {
            Some(failures) => {
                self.note("calls_failed", &format!("every tool call failed; the answer is not delivered: {failures}"));
                Err(Unfinished::AllCallsFailed(failures).into())
            }
            None => Ok(()),
        }
    }

    /// The error of a routine turn whose last reply was no answer: the model still calling
    /// tools (`dropped`: a call made where the tools were withheld), else the bad reply.
    pub(super) fn no_answer(&self, bad: BadReply, dropped: Option<&ToolCall>, calls: u32) -> AgentError {
        match dropped {
            Some(c) if self.routine.is_some() => still_calling(calls, Some((&c.name, &c.arguments))).into(),
            _ => AgentError::NoAnswer(bad),
        }
    }

    /// The error of a routine turn stopped by `max_iterations`, naming its last call.
    pub(super) fn still_calling(&self, calls: &[CallRecord]) -> AgentError {
        let last = calls.last().map(|c| (c.tool.as_str(), c.arguments.as_str()));
        still_calling(self.opts.max_iterations, last).into()
    }
}

/// A call's arguments in one short line: the values of a JSON object, else the text.
fn arguments(raw: &str) -> String {
    let text = match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(serde_json::Value::Object(map)) => {
            map.values().map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string)).collect::<Vec<_>>().join(" ")
        }
        _ => raw.trim().to_string(),
    };
    clip(&text.replace('\n', " "), MAX_CALL_CHARS)
}

/// The first line of a result without its `[failed]` or `[error]` label.
fn first_line(result: &str) -> String {
    let line = result.lines().find(|l| !l.trim().is_empty()).unwrap_or_default().trim();
    let line = match line.split_once("] ") {
        Some((label, rest)) if label.starts_with('[') && !label.contains(' ') => rest,
        _ => line,
    };
    clip(line, MAX_CALL_CHARS)
}

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tool: &str, args: &str, status: ToolStatus, result: &str) -> CallRecord {
        CallRecord { tool: tool.into(), arguments: args.into(), status, result: result.into() }
    }

    #[test]
    fn the_marker_at_the_start_gives_the_reason() {
        assert_eq!(declared("TASK_FAILED: notes.md does not exist").as_deref(), Some("notes.md does not exist"));
        assert_eq!(declared("  **TASK_FAILED**: no access\n").as_deref(), Some("no access"));
        assert_eq!(declared("`TASK_FAILED:` the log is empty").as_deref(), Some("the log is empty"));
        assert_eq!(declared("TASK_FAILED:").as_deref(), Some("no reason given"));
        assert_eq!(declared("The backup ran. TASK_FAILED: none"), None, "only at the start");
        assert_eq!(declared("TASK_FAILEDX: x"), None);
        assert_eq!(declared("Three errors were logged."), None);
    }

    #[test]
    fn every_failure_is_named_once_and_an_answer_by_status_counts() {
        let calls = [
            call("teleport", "{\"to\":\"mars\"}", ToolStatus::UnknownTool, "[failed] unknown tool `teleport`."),
            call("file_read", "{\"path\":\"notes.md\"}", ToolStatus::Failed, "[failed] `notes.md` does not exist"),
            call("file_read", "{\"path\":\"notes.md\"}", ToolStatus::Duplicate, "already answered"),
        ];
        assert_eq!(
            all_failed(&calls).as_deref(),
            Some("`teleport` is not a tool; file_read notes.md: `notes.md` does not exist")
        );
        let searched = call(
            "shell",
            "{\"command\":\"grep -i error app.log\"}",
            ToolStatus::Failed,
            "[failed] exit code 1; no line matched\n[partial output]\n",
        );
        assert_eq!(all_failed(&[calls[1].clone(), searched]), None, "an empty search is an answer");
        assert_eq!(all_failed(&[]), None);
        let ok = call("file_list", "{}", ToolStatus::Success, "a.txt");
        assert_eq!(all_failed(&[calls[0].clone(), ok]), None);
    }

    #[test]
    fn the_limit_names_the_last_call() {
        assert_eq!(
            still_calling(10, Some(("shell", "{\"command\":\"ls -la\"}"))).to_string(),
            "the model was still calling tools after 10 model calls: last call shell `ls -la`"
        );
    }
}
