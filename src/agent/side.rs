//! Model calls beside the turn: without tools or history, recorded as reviews (the answer from
//! the evidence, the code checks, the reviews of a reply).
//!
//! A call that asks for one Python function stops the model where the function ends. Asked
//! for `keep(item)`, the 1.5B model wrote the function and then, in 20 of 233 recorded
//! replies, a script around it (`# Load the JSON data`, `with open('users.json') as f: ...`,
//! a `print`): 60 to 180 tokens written at about 27 ms each, and code that the harness then
//! ran (a file it cannot open fails the selection). Every such script began after a blank line
//! with a comment, a `with`, a `print` or a `__main__` test at the line's start; no reply put a
//! comment between its imports and its function (bench/README.md, stop 47). The `stop` strings
//! below end the reply there. A reply they cut before the function (its code fence left open
//! and no function in it) is asked for again without them.

use std::sync::Arc;
use std::time::Instant;

use super::events::{RunEvent, TurnStats};
use super::{Agent, python};
use crate::llm::{ChatRequest, Message};

/// Where a reply that holds one Python function has gone past it: a blank line, then a line
/// that starts with one of these. Four strings, the most the OpenAI API takes.
const AFTER_FUNCTION: [&str; 4] = ["\n\n#", "\n\nwith ", "\n\nprint(", "\n\nif __name__"];

impl Agent {
    /// One model call beside the turns, without tools or history, recorded as a review; its
    /// text, or `None` when it failed or was empty.
    pub(super) async fn side_call(
        &self,
        what: &str,
        messages: Vec<Message>,
        temperature: Option<f32>,
        max_tokens: Option<u32>,
        stats: &mut TurnStats,
    ) -> Option<String> {
        self.side_request(what, messages, temperature, max_tokens, Vec::new(), stats).await
    }

    /// A side call at temperature 0 for a reply of one Python function called `name`, ended
    /// where the function ends (see the module). A cut reply comes back with its fence closed.
    pub(super) async fn code_call(
        &self,
        what: &str,
        name: &str,
        messages: Vec<Message>,
        max_tokens: Option<u32>,
        stats: &mut TurnStats,
    ) -> Option<String> {
        let stop = AFTER_FUNCTION.iter().map(ToString::to_string).collect();
        let reply = self.side_request(what, messages.clone(), Some(0.0), max_tokens, stop, stats).await?;
        if !open_fence(&reply) {
            return Some(reply);
        }
        if python::code_of(&reply, name).is_some() {
            return Some(format!("{reply}\n```"));
        }
        self.record(RunEvent::Note {
            kind: "code_cut",
            detail: format!("the {what} was cut before its `{name}` function; asked again without stop strings"),
        });
        self.side_request(what, messages, Some(0.0), max_tokens, Vec::new(), stats).await
    }

    async fn side_request(
        &self,
        what: &str,
        messages: Vec<Message>,
        temperature: Option<f32>,
        max_tokens: Option<u32>,
        stop: Vec<String>,
        stats: &mut TurnStats,
    ) -> Option<String> {
        let request = ChatRequest {
            model: self.opts.model.clone(),
            messages,
            tools: Arc::from(Vec::new()),
            temperature,
            max_tokens,
            require_tool: false,
            stop,
        };
        // A run another node took over makes no call more (`guard.rs`); its end is fenced.
        if let Err(e) = self.hold_the_run().await {
            tracing::warn!(what, error = %e, "A side call was not made.");
            return None;
        }
        // No request is sent larger than the model's context (`budget.rs`).
        let request = match self.fit_request(&request).await {
            Ok(fitted) => fitted.into_owned(),
            Err(e) => {
                tracing::warn!(what, error = %e, "A side call was not made.");
                return None;
            }
        };
        let started = Instant::now();
        let result = self.provider.chat(&request).await;
        let usage = result.as_ref().map(|r| r.usage).unwrap_or_default();
        self.record(RunEvent::Review {
            what: what.to_string(),
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
                tracing::warn!(error = %e, what, "A model call beside the turn failed.");
                None
            }
        }
    }
}

/// Whether `reply` opens a code fence it does not close: a stop string ended it inside its code.
fn open_fence(reply: &str) -> bool {
    reply.matches("```").count() % 2 == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fence_left_open_is_a_cut_reply() {
        assert!(open_fence("```python\ndef keep(item):\n    return True"));
        assert!(!open_fence("```python\ndef keep(item):\n    return True\n```"));
        assert!(!open_fence("def keep(item):\n    return True"));
    }
}
