//! One more request after an answer the engine questions: the request the answer came from,
//! the answer, and what the engine says about it. Used by the checks of an answer's count
//! (`counted.rs`), its comparison with the last check (`since_last.rs`), the comparisons of numbers
//! it states (`false_comparison.rs`) and the value it leaves out (`value_stated.rs`); each decides
//! whether the new answer is taken.

use super::Agent;
use super::events::TurnStats;
use crate::llm::Message;

impl Agent {
    /// The answer (after its `ANSWER:` marker, trimmed) to `ask`, sent after `messages` and the
    /// model's `reply` to them; empty when the call failed. `what` names the call in the run's
    /// events.
    pub(super) async fn asked_again(
        &self,
        what: &str,
        messages: &[Message],
        reply: &str,
        ask: String,
        stats: &mut TurnStats,
    ) -> String {
        let mut more = messages.to_vec();
        more.push(Message::assistant(reply.to_string()));
        more.push(Message::user(ask));
        let again = self.side_call(what, more, self.opts.temperature, self.opts.max_tokens, stats).await;
        again.map(|r| super::answer::answer_of(&r).trim().to_string()).unwrap_or_default()
    }
}
