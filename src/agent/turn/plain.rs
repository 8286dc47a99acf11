//! The plain loop of `agent.assist: off` (SPEC §13): model call, tool calls, results fed back,
//! until a final reply or the iteration limit. Beyond that only answer hygiene (a tool call
//! written as text is run, template tokens are removed, a reply that is no answer is asked once
//! more) and, in the engine, the silent token. No assist steps in; what a routine turn's end
//! means is judged as at every level (`outcome.rs`: the model's `TASK_FAILED:`, the iteration
//! limit reached while calling tools, an answer over calls that all failed).

use tokio::sync::mpsc::UnboundedSender;

use super::CallLedger;
use super::model::limit_note;
use crate::agent::events::{AgentEvent, CallRecord, TurnStats};
use crate::agent::hygiene::{self, BadReply, Verdict};
use crate::agent::{Agent, AgentError, grounding, history};
use crate::llm::{Message, Role};

impl Agent {
    pub(in crate::agent) async fn run_plain_turn(
        &mut self,
        message: &str,
        tx: Option<&UnboundedSender<AgentEvent>>,
        status: Option<&UnboundedSender<AgentEvent>>,
    ) -> Result<String, AgentError> {
        history::repair(&mut self.history);
        history::clear_reasoning(&mut self.history);
        let specs = self.tool_specs();
        let recalled = self.recall(message);
        let system = self.build_prompt(&specs, &recalled, message);
        let ctx = self.tool_context();
        let mut turn = vec![self.user_message(message)];
        let (mut stats, mut ledger, mut calls_made) = (TurnStats::default(), CallLedger::default(), Vec::new());
        self.last = stats;
        // A reply that was no answer is asked again once; the message goes with the next request.
        let (mut asked, mut pending): (Option<BadReply>, Option<&'static str>) = (None, None);
        let (mut reply, mut last_text) = (None, String::new());
        for iteration in 1..=self.opts.max_iterations {
            let offer_tools = !specs.is_empty() && !asked.is_some_and(BadReply::withholds_tools);
            let mut request = self.request(&system, &turn, offer_tools, &specs);
            if let Some(text) = pending.take() {
                grounding::append_user(&mut request.messages, text);
            }
            let (response, text_shown) = self.call_model(&request, iteration, tx).await?;
            stats.iterations += 1;
            stats.prompt_tokens += response.usage.prompt_tokens;
            stats.completion_tokens += response.usage.completion_tokens;
            self.last = stats;
            let (mut content, mut calls, reasoning) = self.interpret(response, offer_tools, tx);
            if calls.is_empty() {
                let known = |name: &str| self.tools.get(name).is_some();
                let bad = match hygiene::settle(&content, &known) {
                    Verdict::Answer(text) => {
                        if self.routine.is_some() {
                            self.declared_failure(&text)?;
                        }
                        if text != content.trim() {
                            self.note("reply_cleaned", "template tokens or reasoning were removed from the reply");
                        }
                        if let (Some(tx), false) = (tx, text_shown) {
                            let _ = tx.send(AgentEvent::TextDelta(text.clone()));
                        }
                        turn.push(Message { reasoning_content: reasoning, ..Message::assistant(text.clone()) });
                        reply = Some(text);
                        break;
                    }
                    Verdict::Call(call) if !ledger.answered.contains(&(call.name.clone(), self.canonical(&call))) => {
                        self.note("tool_call_in_text", "the whole reply was a tool call written as text; it was run");
                        calls.push(call);
                        content.clear();
                        None
                    }
                    Verdict::Call(_) => Some(BadReply::RepeatedCall),
                    Verdict::Bad(bad) => Some(bad),
                };
                if let Some(bad) = bad {
                    if asked.is_some() {
                        self.note(bad.note_kind(), bad.describe());
                        return Err(AgentError::NoAnswer(bad));
                    }
                    self.note(bad.note_kind(), &format!("{}; asked once more", bad.describe()));
                    (asked, pending) = (Some(bad), Some(bad.request(self.opts.language)));
                    continue;
                }
            }
            if !content.is_empty() {
                last_text = content.clone();
            }
            turn.push(Message {
                role: Role::Assistant,
                content: (!content.is_empty()).then_some(content),
                tool_calls: calls.clone(),
                tool_call_id: None,
                reasoning_content: reasoning,
                images: Vec::new(),
            });
            asked = None;
            for call in &calls {
                let (text, outcome) = self.execute(call, &ctx, &mut ledger, status).await?;
                stats.tool_calls += 1;
                self.last = stats;
                calls_made.push(CallRecord {
                    tool: call.name.clone(),
                    arguments: call.arguments.clone(),
                    status: outcome,
                    result: text.clone(),
                });
                turn.push(Message::tool_result(call.id.clone(), text));
            }
        }
        if reply.is_none() && self.routine.is_some() {
            self.last = stats;
            return Err(self.still_calling(&calls_made));
        }
        self.grounded(message, &specs, &calls_made)?;
        let reply = self.close_turn(message, turn, reply, &last_text, stats);
        self.last_calls = calls_made;
        Ok(reply)
    }

    /// Ends a turn: the reply, or at the iteration limit the last text with a note saying so;
    /// the turn joins the history, trimmed, and its summary is remembered.
    fn close_turn(
        &mut self,
        message: &str,
        mut turn: Vec<Message>,
        reply: Option<String>,
        last_text: &str,
        mut stats: TurnStats,
    ) -> String {
        let reply = reply.unwrap_or_else(|| {
            stats.hit_iteration_limit = true;
            let note = limit_note(self.opts.language, self.opts.max_iterations);
            self.note("iteration_limit", &note);
            let r = if last_text.is_empty() { note } else { format!("{last_text}\n\n{note}") };
            turn.push(Message::assistant(r.clone()));
            r
        });
        self.history.extend(turn);
        self.images.clear();
        history::trim(&mut self.history, self.opts.history_limit);
        self.last = stats;
        self.remember_turn(message, &reply);
        reply
    }
}
