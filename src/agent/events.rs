//! What an agent reports while it works: live events for a person watching
//! (chat), and records for the run history.

use std::time::Duration;

/// Live progress of a turn, for `process_message_stream`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentEvent {
    /// A piece of the reply text.
    TextDelta(String),
    /// A tool call starts: the tool and a short summary (the command, the path).
    Running { tool: String, summary: String },
    /// It succeeded; the first line of its output.
    Success { tool: String, first_line: String },
    /// It failed; the first three lines of the failure.
    Failed { tool: String, lines: String },
    /// Something the watcher should know (a cut repetition, a retry).
    Notice(String),
}

/// How a tool call ended, as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolStatus {
    Success,
    Failed,
    Error,
    Refused,
    InvalidArgs,
    UnknownTool,
    Duplicate,
    /// It failed for a passing reason and was made again (`agent.tool_retries`).
    Retried,
}

impl ToolStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolStatus::Success => "success",
            ToolStatus::Failed => "failed",
            ToolStatus::Error => "error",
            ToolStatus::Refused => "refused",
            ToolStatus::InvalidArgs => "invalid_args",
            ToolStatus::UnknownTool => "unknown_tool",
            ToolStatus::Duplicate => "duplicate",
            ToolStatus::Retried => "retried",
        }
    }
}

/// One tool call of a completed turn, and how it was answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRecord {
    pub tool: String,
    /// The arguments as the model sent them.
    pub arguments: String,
    pub status: ToolStatus,
    /// The result the model was given (redacted, capped, or the note on a repeated call).
    pub result: String,
}

impl CallRecord {
    /// A successful `shell` call of `command` that returned `result`.
    #[cfg(test)]
    pub(crate) fn shell(command: &str, result: &str) -> CallRecord {
        CallRecord {
            tool: "shell".into(),
            arguments: serde_json::json!({ "command": command }).to_string(),
            status: ToolStatus::Success,
            result: result.into(),
        }
    }
}

/// A `shell` call of `command` as a message names the call to make: `shell {"command": ...}`.
pub(crate) fn shell_call(command: &str) -> String {
    format!("shell {}", serde_json::json!({ "command": command }))
}

/// One entry of a run's history.
#[derive(Debug, Clone, PartialEq)]
pub enum RunEvent {
    ModelCall {
        iteration: u32,
        prompt_tokens: u64,
        completion_tokens: u64,
        duration: Duration,
        tool_calls: usize,
        /// `None` when the call succeeded.
        error: Option<String>,
    },
    ToolCall {
        tool: String,
        arguments: String,
        status: ToolStatus,
        duration: Duration,
        /// The start of the result, for `routines show`.
        detail: String,
    },
    /// A model call beside the turns: the review of a reply.
    Review {
        /// What was reviewed, for `routines show`.
        what: String,
        prompt_tokens: u64,
        completion_tokens: u64,
        duration: Duration,
        /// `None` when the call succeeded.
        error: Option<String>,
    },
    Note {
        kind: &'static str,
        detail: String,
    },
}

/// Receives run events (the store implements it for real runs).
pub trait EventSink: Send + Sync {
    fn record(&self, event: &RunEvent);
}

/// Whether the run is still this process's to carry on (SPEC §12: on a shared database another
/// node takes over the runs of a node whose lease lapsed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// It is: the next step may be taken.
    Held,
    /// Another process has it now (queued again, interrupted, or its own): no step more here.
    Lost(String),
    /// It cannot be told now (the database is out of reach): wait and ask again.
    Unsure(String),
}

/// Asked before every step of a run that has side effects or costs: a model call, a tool call.
pub trait RunGuard: Send + Sync {
    fn standing(&self) -> Standing;
}

/// Totals of the last turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TurnStats {
    pub iterations: u32,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub tool_calls: u32,
    pub hit_iteration_limit: bool,
}
