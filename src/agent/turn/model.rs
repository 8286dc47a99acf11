//! The model calls of a turn: the request, the call and its record, what a reply holds; and the
//! summary of the turn kept in memory.

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;

use crate::agent::events::{AgentEvent, RunEvent};
use crate::agent::hygiene;
use crate::agent::{Agent, AgentError};
use crate::config::{Language, ToolCallMode};
use crate::llm::{ChatRequest, ChatResponse, Message, Role, StreamDelta, ToolCall, ToolSpec, json_calls, repetition};

impl Agent {
    pub(super) fn request(
        &self,
        system: &str,
        turn: &[Message],
        offer_tools: bool,
        specs: &Arc<[ToolSpec]>,
    ) -> ChatRequest {
        let mut messages = Vec::with_capacity(1 + self.history.len() + turn.len());
        messages.push(Message::system(system));
        messages.extend(self.history.iter().cloned());
        messages.extend(turn.iter().cloned());
        let json_mode = self.opts.tool_mode == ToolCallMode::Json;
        if json_mode {
            messages = to_json_mode(messages);
        }
        ChatRequest {
            model: self.opts.model.clone(),
            messages,
            tools: if offer_tools && !json_mode { specs.clone() } else { Arc::new([]) },
            temperature: self.opts.temperature,
            max_tokens: self.opts.max_tokens,
            require_tool: false,
            stop: Vec::new(),
        }
    }

    pub(super) async fn call_model(
        &self,
        request: &ChatRequest,
        iteration: u32,
        tx: Option<&UnboundedSender<AgentEvent>>,
    ) -> Result<(ChatResponse, bool), AgentError> {
        self.hold_the_run().await?;
        // No request is sent larger than the model's context (`budget.rs`).
        let fitted = self.fit_request(request).await?;
        let request = fitted.as_ref();
        let started = Instant::now();
        // Text that may turn out to be a tool call written as JSON is held
        // back until it is clearly prose; the caller shows held text once
        // the reply is known to be an answer. In JSON mode nothing streams.
        let gate = std::sync::Mutex::new((String::new(), false));
        let result = match tx {
            Some(tx) if self.opts.tool_mode == ToolCallMode::Native => {
                let sink = |d: StreamDelta| {
                    let StreamDelta::Text(t) = d else { return };
                    let Ok(mut g) = gate.lock() else { return };
                    let (held, open) = &mut *g;
                    if *open {
                        let _ = tx.send(AgentEvent::TextDelta(t));
                        return;
                    }
                    held.push_str(&t);
                    let start = held.trim_start();
                    if !start.is_empty() && !start.starts_with(['{', '[', '`', '<']) {
                        *open = true;
                        let _ = tx.send(AgentEvent::TextDelta(std::mem::take(held)));
                    }
                };
                self.provider.chat_stream(request, &sink).await
            }
            _ => self.provider.chat(request).await,
        };
        let shown = gate.lock().map(|g| g.1).unwrap_or(false);
        let (usage, calls, error) = match &result {
            Ok(r) => (r.usage, r.tool_calls.len(), None),
            Err(e) => (Default::default(), 0, Some(self.redactor.redact(&e.to_string()).into_owned())),
        };
        self.record(RunEvent::ModelCall {
            iteration,
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            duration: started.elapsed(),
            tool_calls: calls,
            error,
        });
        Ok((result?, shown))
    }

    /// Text, tool calls and reasoning of a response: in JSON mode calls written in the text
    /// are recognized (native replies are judged by [`hygiene::settle`]), runaway repetition
    /// is cut.
    pub(super) fn interpret(
        &self,
        response: ChatResponse,
        offered_tools: bool,
        tx: Option<&UnboundedSender<AgentEvent>>,
    ) -> (String, Vec<ToolCall>, Option<String>) {
        let mut content = response.content.unwrap_or_default();
        let mut calls = response.tool_calls;
        if calls.is_empty() && offered_tools && self.opts.tool_mode == ToolCallMode::Json {
            // JSON mode: a call may stand anywhere in the text, by design; any name is a call
            // (an unknown one is answered as such).
            if let Some(parsed) = json_calls::parse(&hygiene::strip_thinking(&content), &|_| true) {
                calls = parsed.calls;
                content = hygiene::strip_template(&parsed.text);
            }
        }
        if !offered_tools {
            // Tools were withheld; a call now is not honoured.
            calls.clear();
        }
        if let Some((kept, rep)) = repetition::cut(&content) {
            let note =
                format!("the reply repeated a {}-character passage {} times; cut to one copy", rep.period, rep.copies);
            tracing::warn!(period = rep.period, copies = rep.copies, "Runaway repetition cut from a model reply.");
            self.note("repetition_cut", &note);
            if let Some(tx) = tx {
                let _ = tx.send(AgentEvent::Notice(note));
            }
            content = kept;
        }
        (content, calls, response.reasoning_content)
    }

    pub(in crate::agent) fn record(&self, event: RunEvent) {
        if let Some(sink) = &self.sink {
            sink.record(&event);
        }
    }

    pub(in crate::agent) fn note(&self, kind: &'static str, detail: &str) {
        self.record(RunEvent::Note { kind, detail: detail.to_string() });
    }

    /// Stores a short summary of the turn, so later sessions can recall it.
    pub(super) fn remember_turn(&self, message: &str, reply: &str) {
        let Some(memory) = &self.memory else { return };
        if !self.opts.remember_turns || reply.trim().is_empty() {
            return;
        }
        // A silent reply says nothing worth recalling, and recalled, it
        // teaches small models to answer with the token again.
        let silent = self.routine.as_ref().and_then(|r| r.silent_token.as_deref());
        if silent.is_some_and(|t| reply.trim() == t.trim()) {
            return;
        }
        let now = (self.clock)();
        let scope = self.routine.as_ref().map_or_else(|| "chat".to_string(), |r| format!("routine:{}", r.name));
        let key = format!("turn:{scope}:{}:{:04x}", now.format("%Y%m%dT%H%M%S%.3fZ"), rand::random::<u16>());
        let summary = format!("Asked: {}\nAnswered: {}", clip(message, 200), clip(reply, 400));
        let summary = self.redactor.redact(&summary);
        if let Err(e) = memory.store(&key, &summary, crate::memory::CONVERSATION) {
            tracing::warn!(error = %e, "Could not store the turn summary in memory.");
        }
    }
}

/// `text` trimmed, cut to `max` characters with an ellipsis.
fn clip(text: &str, max: usize) -> String {
    let t = text.trim();
    if t.chars().count() <= max { t.to_string() } else { format!("{}…", t.chars().take(max).collect::<String>()) }
}

pub(super) fn limit_note(lang: Language, max: u32) -> String {
    match lang {
        Language::En => {
            format!("[stopped: reached the limit of {max} model calls (agent.max_iterations) before a final answer]")
        }
        Language::Zh => format!("[已停止：在得到最终答案前达到了 {max} 次模型调用的上限（agent.max_iterations）]"),
    }
}

/// For models without native tools: assistant calls become their JSON text,
/// tool results become user messages naming the tool.
fn to_json_mode(messages: Vec<Message>) -> Vec<Message> {
    let mut names: Vec<(String, String)> = Vec::new();
    messages
        .into_iter()
        .map(|m| match m.role {
            Role::Assistant if !m.tool_calls.is_empty() => {
                let mut text = m.content.clone().unwrap_or_default();
                for c in &m.tool_calls {
                    names.push((c.id.clone(), c.name.clone()));
                    let args: Value = serde_json::from_str(&c.arguments).unwrap_or(Value::String(c.arguments.clone()));
                    let call = serde_json::json!({"name": c.name, "arguments": args});
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&call.to_string());
                }
                Message { tool_calls: Vec::new(), ..Message::assistant(text) }
            }
            Role::Tool => {
                let id = m.tool_call_id.clone().unwrap_or_default();
                let name = names.iter().find(|(i, _)| *i == id).map_or("tool", |(_, n)| n.as_str());
                Message::user(format!("[result of {name}]\n{}", m.text()))
            }
            _ => m,
        })
        .collect()
}
