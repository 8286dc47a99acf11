//! The second look at a silent reply that a run's [`ReplyCheck`] may ask for.

use std::sync::Arc;
use std::time::Instant;

use super::{Engine, RunOptions};
use crate::agent::{Agent, AgentError, CallRecord, ReplyCheck, SilentToken, ToolStatus, TurnStats, Verdict};
use crate::routine::Routine;

/// The check of a run: the one of its options, else its routine's silent token.
pub(super) fn check_of(routine: &Routine, opts: &RunOptions, task: &str) -> Arc<dyn ReplyCheck> {
    opts.reply_check
        .clone()
        .unwrap_or_else(|| Arc::new(SilentToken(routine.spec.silent_token.clone(), Some(task.to_string()))))
}

impl Engine {
    /// [`Engine::attempts`], then the reply check's second look at a silent reply: a nudge
    /// when no tool looked at anything (small models answer the token at once; SPEC §8
    /// Grounding: for every routine with tools); after checks, the code check (the model writes
    /// a function that finds what the task asks to report, the engine runs it on the results in
    /// the sandbox: nothing found keeps the silence, something found asks for the report), and
    /// where it cannot decide, a review (small models answer the token even after reading an
    /// ERROR line). `earlier` receives the stats of the turns and calls before the last.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn checked_attempts(
        &self,
        routine: &Routine,
        agent: &mut Agent,
        prompt: &str,
        run_id: i64,
        deadline: Instant,
        check: &dyn ReplyCheck,
        earlier: &mut TurnStats,
    ) -> Result<String, AgentError> {
        let mut reply = self.attempts(routine, agent, prompt, run_id, deadline).await?;
        if !check.is_silent(&reply) {
            return Ok(reply);
        }
        let assists = agent.options().assists.clone();
        if !looked(agent.last_calls()) && !agent.tool_specs().is_empty() && assists.allows("silence_nudge") {
            if let Some(nudge) = check.nudge() {
                *earlier = agent.last_turn();
                reply = self.attempts(routine, agent, &nudge, run_id, deadline).await?;
            }
        }
        if check.is_silent(&reply) && looked(agent.last_calls()) && assists.allows("code_check") {
            if let Some(task) = check.silence_task() {
                let verdict = agent.code_check(&task, earlier).await;
                match &verdict {
                    Verdict::Nothing => return Ok(reply),
                    Verdict::Found(strings) | Verdict::Seen(strings) => {
                        let by_code = matches!(verdict, Verdict::Found(_));
                        if let Some((report, corrected)) = agent.report_found(&task, strings, by_code, earlier).await {
                            // What the check found rested on a comparison that does not hold,
                            // and asked again, the model answered the silence: it stands.
                            if !check.is_silent(&report) || corrected {
                                return Ok(if check.is_silent(&report) { reply } else { report });
                            }
                        }
                    }
                    Verdict::Unknown(_) => {}
                }
            }
        }
        if check.is_silent(&reply) && assists.allows("silence_review") {
            if let Some(review) = check.review(agent.last_calls()) {
                if let Some(second) = agent.review(review, earlier).await {
                    reply = second;
                }
            }
        }
        Ok(reply)
    }
}

/// Whether a tool call of the turn looked at something: it ran, successfully or not. Refused,
/// unknown, malformed and repeated calls looked at nothing.
fn looked(calls: &[CallRecord]) -> bool {
    calls.iter().any(|c| matches!(c.status, ToolStatus::Success | ToolStatus::Failed))
}
