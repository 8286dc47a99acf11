//! Reply checks: whether a reply says nothing needs telling (the run is `silent`), and, for a
//! check that asks for it, a second look at such a reply before it is believed. The engine
//! calls the check a run is given: a routine's silent token ([`SilentToken`]) by default, or
//! one its caller brings (the heartbeat's ok token with its checklist review).

use std::fmt;

use super::Agent;
use super::code_check::SilenceTask;
use super::events::{CallRecord, ToolStatus, TurnStats};
use crate::llm::Message;

/// How a reply is judged.
pub trait ReplyCheck: fmt::Debug + Send + Sync {
    /// Whether `reply` means nothing needs telling: the run is `silent` and delivers nothing.
    fn is_silent(&self, reply: &str) -> bool;

    /// The message sent once when a silent reply came from a turn that ran no tool though tools
    /// were offered; the agent's answer to it replaces the reply. `None` believes such replies.
    fn nudge(&self) -> Option<String> {
        None
    }

    /// A review of a silent reply after the tool calls `calls` ([`Agent::review`]): a short
    /// model call whose answer, when it has one, replaces the reply. `None`: no review.
    fn review(&self, calls: &[CallRecord]) -> Option<Review> {
        let _ = calls;
        None
    }

    /// What a silent reply after tool calls is checked against by code ([`Agent::code_check`])
    /// before any review. `None`: no code check.
    fn silence_task(&self) -> Option<SilenceTask> {
        None
    }
}

/// The model call that reviews a silent reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Review {
    pub system: String,
    pub prompt: String,
    /// What the review is, for the run's events ("review of what the checks returned").
    pub what: String,
}

/// The default check: a reply equal to the routine's silent token (`.0`) is silent, also
/// wrapped in markdown or quotes or followed by a full stop (`**NO_REPLY**`, `NO_REPLY.`). A
/// silent reply from a turn that looked at nothing is not believed: the agent is asked once to
/// check. With the task (`.1`, the rendered prompt), a silent reply after tool calls is
/// reviewed once against what they returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SilentToken(pub String, pub Option<String>);

impl ReplyCheck for SilentToken {
    fn is_silent(&self, reply: &str) -> bool {
        let token = self.0.trim();
        !token.is_empty() && bare(reply) == token
    }

    /// Small models answer the token even after a tool showed the problem the task asks about
    /// (an ERROR line, a service down): the results are reviewed once against the task.
    fn review(&self, calls: &[CallRecord]) -> Option<Review> {
        let task = self.1.as_deref()?;
        Some(Review {
            system: "You review the results of checks against a task.".into(),
            prompt: review_prompt("Task", "the task says to report", task, calls, self.0.trim())?,
            what: "review of what the tools returned".into(),
        })
    }

    /// Small models answer the token next to the problem they read; code compares better.
    fn silence_task(&self) -> Option<SilenceTask> {
        SilenceTask::new(self.1.as_deref()?, &self.0)
    }

    /// Small models answer the token at once, without looking.
    fn nudge(&self) -> Option<String> {
        Some(format!(
            "You answered {} without looking at anything. Use the tools now to check what the task is about, \
             then answer as the task says.",
            self.0.trim()
        ))
    }
}

/// A reply without the wrapping models put around a lone word: whitespace, markdown emphasis,
/// code ticks, quotes, and a closing full stop or exclamation mark.
fn bare(reply: &str) -> &str {
    let wrap: &[char] = &['*', '_', '`', '"', '\'', ' ', '\n', '\t'];
    let t = reply.trim().trim_end_matches(['.', '!', '。', '！']);
    // The token itself may contain `_` (NO_REPLY): only strip `_` that wraps a word.
    let t = t.trim_matches(|c: char| wrap.contains(&c) && c != '_');
    t.trim_end_matches(['.', '!', '。', '！']).trim()
}

impl Agent {
    /// Runs `review`: one model call beside the turns, with its own system prompt and no tools
    /// or history, recorded as a model call. Its answer, or `None` when the call failed or said
    /// nothing (the reply under review stands). Its tokens are added to `stats`.
    pub async fn review(&self, review: Review, stats: &mut TurnStats) -> Option<String> {
        let messages = vec![Message::system(review.system), Message::user(review.prompt)];
        self.side_call(&review.what, messages, Some(0.2), self.opts.max_tokens, stats).await
    }
}

/// How much of one check's output the review sees, and of all of them.
const REVIEW_PER_CHECK: usize = 2000;
const REVIEW_TOTAL: usize = 8000;

/// The prompt of the review of a silent reply: the instructions (`label`: "Checklist" for a
/// beat, "Task" for a routine) and what each tool call returned, and one question. `None`
/// when no tool returned anything to review. Results of repeated calls and calls of unknown
/// tools are left out: they are the agent's own notes, not what was checked.
pub fn review_prompt(label: &str, asks: &str, instructions: &str, calls: &[CallRecord], token: &str) -> Option<String> {
    let results = super::evidence::result_blocks(
        calls,
        |c| !matches!(c.status, ToolStatus::Duplicate | ToolStatus::UnknownTool),
        REVIEW_PER_CHECK,
        REVIEW_TOTAL,
    );
    if results.is_empty() {
        return None;
    }
    // Quoting lines is a task a small model does well; judging "does this
    // need attention" it does not (a 1.5B model said all was well next to
    // an ERROR line in most tries, and quoted it in all).
    Some(format!(
        "{label}:\n{}\n\nResults of the checks:\n{results}---\n\n\
         Quote every line of the results that {asks}, or that shows a problem it asks \
         about, one per line, and nothing else. If there is no such line, reply with exactly {token}.",
        instructions.trim_end()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_silent_token_matches_the_bare_word_and_asks_once_when_nothing_was_checked() {
        let check = SilentToken("NO_REPLY".into(), None);
        for reply in ["  NO_REPLY\n", "**NO_REPLY**", "`NO_REPLY`", "NO_REPLY.", "\"NO_REPLY\""] {
            assert!(check.is_silent(reply), "{reply}");
        }
        for reply in ["NO_REPLY, but the disk is full", "NO_REPLY_X", "no_reply", ""] {
            assert!(!check.is_silent(reply), "{reply}");
        }
        assert!(check.nudge().unwrap().starts_with("You answered NO_REPLY without looking at anything."));
        assert_eq!(check.review(&[]), None);
    }
}
