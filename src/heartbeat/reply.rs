//! The reply check of a beat: an all-is-well is the ok token, loosely
//! matched ([`is_ok`]); one from a turn that ran no check is not believed
//! (the agent is asked once to do the checks), and one after checks is
//! reviewed by a short model call that sees only the checklist and what the
//! checks returned ([`review_prompt`]).

use crate::agent::{CallRecord, ReplyCheck, Review};

/// The reply check of a beat: its ok token and its checklist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OkCheck {
    pub token: String,
    pub checklist: String,
}

impl ReplyCheck for OkCheck {
    fn is_silent(&self, reply: &str) -> bool {
        is_ok(reply, &self.token)
    }

    /// Small models answer the token at once, without checking.
    fn nudge(&self) -> Option<String> {
        Some(format!(
            "You answered {} without running any check. Do the first check now with a tool call, then the \
             others, and then answer as asked.",
            self.token
        ))
    }

    /// Small models answer the token even after reading an ERROR line.
    fn review(&self, calls: &[CallRecord]) -> Option<Review> {
        Some(Review {
            system: "You review the results of checks against a checklist.".into(),
            prompt: review_prompt(&self.checklist, calls, &self.token)?,
            what: "review of what the checks returned".into(),
        })
    }
}

/// Words a model adds around the ok token when all is well ("All good!
/// HEARTBEAT_OK"); a reply made only of these and the token is silent.
const CHATTER: &[&str] = &[
    "all",
    "good",
    "fine",
    "ok",
    "okay",
    "nothing",
    "to",
    "report",
    "everything",
    "is",
    "looks",
    "no",
    "issues",
    "attention",
    "needed",
    "needs",
    "here",
    "the",
    "checklist",
    "items",
    "are",
    "clear",
    "status",
    "done",
    "checked",
];

/// Whether a heartbeat reply means "nothing needs attention": the ok token,
/// also wrapped in punctuation or markdown, or with only all-is-well words
/// around it. A reply that says anything else is delivered.
pub fn is_ok(reply: &str, token: &str) -> bool {
    let token = token.trim();
    if token.is_empty() {
        return false;
    }
    let words: Vec<String> = reply
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let token_lower = token.to_lowercase();
    let mentions = words.iter().filter(|w| **w == token_lower).count();
    mentions >= 1 && words.iter().all(|w| *w == token_lower || CHATTER.contains(&w.as_str()))
}

/// The prompt of the review of an all-is-well beat: the checklist and what each tool call of
/// the beat returned (see [`crate::agent::review_prompt`]).
pub fn review_prompt(checklist: &str, calls: &[CallRecord], token: &str) -> Option<String> {
    crate::agent::review_prompt("Checklist", "the checklist says to report", checklist, calls, token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::ToolStatus;

    #[test]
    fn the_ok_token_is_recognized_wrapped_or_with_all_is_well_chatter() {
        for reply in [
            "HEARTBEAT_OK",
            "  HEARTBEAT_OK.\n",
            "**HEARTBEAT_OK**",
            "`HEARTBEAT_OK`",
            "\"HEARTBEAT_OK\"",
            "heartbeat_ok",
            "All good! HEARTBEAT_OK",
            "HEARTBEAT_OK - everything looks fine, nothing to report.",
        ] {
            assert!(is_ok(reply, "HEARTBEAT_OK"), "{reply:?}");
        }
        for reply in [
            "",
            "All good.",
            "HEARTBEAT_OK except the disk is 95% full",
            "The backup failed last night. HEARTBEAT_OK",
            "HEARTBEAT_OKAY",
            "NO_HEARTBEAT_OK",
        ] {
            assert!(!is_ok(reply, "HEARTBEAT_OK"), "{reply:?}");
        }
    }

    fn call(tool: &str, arguments: &str, status: ToolStatus, result: &str) -> CallRecord {
        CallRecord { tool: tool.into(), arguments: arguments.into(), status, result: result.into() }
    }

    #[test]
    fn the_review_sees_each_distinct_check_once_and_not_the_agents_own_notes() {
        let calls = [
            call("shell", r#"{"command":"df -h"}"#, ToolStatus::Success, "/dev/sda1 95%\n"),
            call("shell", r#"{"command":"df -h"}"#, ToolStatus::Duplicate, "You already called shell ..."),
            call("disk", "{}", ToolStatus::UnknownTool, "[failed] unknown tool `disk`."),
            call("file_read", r#"{"path":"log"}"#, ToolStatus::Failed, "[failed] no such file"),
        ];
        let prompt = review_prompt("- disk space\n", &calls, "HEARTBEAT_OK").unwrap();
        assert!(prompt.starts_with("Checklist:\n- disk space\n\nResults of the checks:\n"), "{prompt}");
        assert!(prompt.contains("--- shell {\"command\":\"df -h\"} ---\n/dev/sda1 95%\n"), "{prompt}");
        assert!(prompt.contains("--- file_read {\"path\":\"log\"} ---\n[failed] no such file\n"), "{prompt}");
        assert_eq!(prompt.matches("--- ").count(), 2, "{prompt}");
        assert!(!prompt.contains("unknown tool") && !prompt.contains("already called"), "{prompt}");
        assert_eq!(review_prompt("- disk space", &calls[1..3], "HEARTBEAT_OK"), None);
    }
}
