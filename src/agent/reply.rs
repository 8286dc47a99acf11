//! Reply checks: whether a reply says nothing needs telling (the run is `silent`), and, for a
//! check that asks for it, a second look at such a reply before it is believed. The engine
//! calls the check a run is given: a routine's silent token ([`SilentToken`]) by default, or
//! one its caller brings (the heartbeat's ok token with its checklist review).

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use super::Agent;
use super::events::{CallRecord, RunEvent, TurnStats};
use crate::llm::{ChatRequest, Message};

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
}

/// The model call that reviews a silent reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Review {
    pub system: String,
    pub prompt: String,
    /// What the review is, for the run's events ("review of what the checks returned").
    pub what: String,
}

/// The default check: a reply equal to the routine's silent token (trimmed) is silent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SilentToken(pub String);

impl ReplyCheck for SilentToken {
    fn is_silent(&self, reply: &str) -> bool {
        reply.trim() == self.0.trim()
    }
}

impl Agent {
    /// Runs `review`: one model call beside the turns, with its own system prompt and no tools
    /// or history, recorded as a model call. Its answer, or `None` when the call failed or said
    /// nothing (the reply under review stands). Its tokens are added to `stats`.
    pub async fn review(&self, review: Review, stats: &mut TurnStats) -> Option<String> {
        let request = ChatRequest {
            model: self.opts.model.clone(),
            messages: vec![Message::system(review.system), Message::user(review.prompt)],
            tools: Arc::from(Vec::new()),
            temperature: Some(0.2),
            max_tokens: self.opts.max_tokens,
        };
        let started = Instant::now();
        let result = self.provider.chat(&request).await;
        let usage = result.as_ref().map(|r| r.usage).unwrap_or_default();
        self.record(RunEvent::Review {
            what: review.what,
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            duration: started.elapsed(),
            error: result.as_ref().err().map(ToString::to_string),
        });
        stats.iterations += 1;
        stats.prompt_tokens += usage.prompt_tokens;
        stats.completion_tokens += usage.completion_tokens;
        match result {
            Ok(r) => r.content.map(|c| c.trim().to_string()).filter(|c| !c.is_empty()),
            Err(e) => {
                tracing::warn!(error = %e, "The review of the reply failed; the reply stands.");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_silent_token_matches_trimmed_and_asks_for_no_second_look() {
        let check = SilentToken("NO_REPLY".into());
        assert!(check.is_silent("  NO_REPLY\n"));
        assert!(!check.is_silent("NO_REPLY, but the disk is full"));
        assert_eq!(check.nudge(), None);
        assert_eq!(check.review(&[]), None);
    }
}
