//! One turn of the loop: model calls and tool calls until a final reply.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;

use super::events::{AgentEvent, CallRecord, RunEvent, ToolStatus, TurnStats};
use super::{Agent, AgentError, ConfirmRequest, Confirmation, history};
use crate::config::{Language, ToolCallMode};
use crate::diag::did_you_mean;
use crate::llm::{ChatRequest, ChatResponse, Message, Role, StreamDelta, ToolCall, ToolSpec, json_calls, repetition};
use crate::policy::Decision;
use crate::policy::injection::{self, Severity};
use crate::tools::{ToolError, format_result};

/// Tools whose results carry text from outside and are scanned for injection
/// (file names in a listing are chosen by whoever wrote the files).
const INJECTION_CHECKED: [&str; 5] = ["shell", "file_read", "file_write", "file_list", "http_request"];

/// Per-turn bookkeeping of tool calls.
#[derive(Default)]
struct CallLedger {
    /// (name, canonical arguments) of every call answered this turn.
    answered: HashSet<(String, String)>,
    /// Identical calls made again.
    repeats: u32,
}

impl Agent {
    pub(super) async fn run_turn(
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
        let mut stats = TurnStats::default();
        let mut ledger = CallLedger::default();
        let mut calls_made = Vec::new();
        let mut reply: Option<String> = None;
        let mut last_text = String::new();

        let mut nudge = false;
        for iteration in 1..=self.opts.max_iterations {
            // After a second identical call, or an empty answer, the model must answer.
            let offer_tools = ledger.repeats < 2 && !nudge && !specs.is_empty();
            let mut request = self.request(&system, &turn, offer_tools, &specs);
            if nudge {
                request.messages.push(Message::user(answer_now(self.opts.language)));
            }
            let (response, text_shown) = self.call_model(&request, iteration, tx).await?;
            stats.iterations = iteration;
            stats.prompt_tokens += response.usage.prompt_tokens;
            stats.completion_tokens += response.usage.completion_tokens;

            let (content, calls, reasoning) = self.interpret(response, offer_tools, tx);
            turn.push(Message {
                role: Role::Assistant,
                content: (!content.is_empty() || calls.is_empty()).then(|| content.clone()),
                tool_calls: calls.clone(),
                tool_call_id: None,
                reasoning_content: reasoning,
                images: Vec::new(),
            });
            if calls.is_empty() {
                // Small models sometimes stop without a word after a tool
                // result; ask once for the answer, without tools.
                let used_tools = turn.iter().any(|m| m.role == Role::Tool);
                if is_empty_reply(&content) && used_tools && !nudge && iteration < self.opts.max_iterations {
                    turn.pop();
                    nudge = true;
                    self.note("empty_reply", "the model replied with nothing after using tools; asked it to answer");
                    continue;
                }
                if let (Some(tx), false) = (tx, text_shown) {
                    if !content.is_empty() {
                        let _ = tx.send(AgentEvent::TextDelta(content.clone()));
                    }
                }
                reply = Some(content);
                break;
            }
            if !content.is_empty() {
                last_text = content;
            }
            for call in &calls {
                let (text, outcome) = self.execute(call, &ctx, &mut ledger, status).await?;
                stats.tool_calls += 1;
                calls_made.push(CallRecord {
                    tool: call.name.clone(),
                    arguments: call.arguments.clone(),
                    status: outcome,
                    result: text.clone(),
                });
                turn.push(Message::tool_result(call.id.clone(), text));
            }
        }

        let reply = match reply {
            Some(r) => r,
            None => {
                stats.hit_iteration_limit = true;
                let note = limit_note(self.opts.language, self.opts.max_iterations);
                self.note("iteration_limit", &note);
                let r = if last_text.is_empty() { note } else { format!("{last_text}\n\n{note}") };
                turn.push(Message::assistant(r.clone()));
                r
            }
        };
        self.history.extend(turn);
        self.images.clear();
        history::trim(&mut self.history, self.opts.history_limit);
        self.last = stats;
        self.last_calls = calls_made;
        self.remember_turn(message, &reply);
        Ok(reply)
    }

    fn request(&self, system: &str, turn: &[Message], offer_tools: bool, specs: &Arc<[ToolSpec]>) -> ChatRequest {
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
        }
    }

    async fn call_model(
        &self,
        request: &ChatRequest,
        iteration: u32,
        tx: Option<&UnboundedSender<AgentEvent>>,
    ) -> Result<(ChatResponse, bool), AgentError> {
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
                    if !start.is_empty() && !start.starts_with(['{', '[', '`']) {
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

    /// Text, tool calls and reasoning of a response: calls written as JSON
    /// in the text are recognized, runaway repetition is cut.
    fn interpret(
        &self,
        response: ChatResponse,
        offered_tools: bool,
        tx: Option<&UnboundedSender<AgentEvent>>,
    ) -> (String, Vec<ToolCall>, Option<String>) {
        let mut content = response.content.unwrap_or_default();
        let mut calls = response.tool_calls;
        if calls.is_empty() && offered_tools {
            let json_mode = self.opts.tool_mode == ToolCallMode::Json;
            let known = |name: &str| json_mode || self.tools.get(name).is_some();
            if let Some(parsed) = json_calls::parse(&content, &known) {
                // In native mode a call counts only when the provider returned
                // it as one, or when the whole reply is one call and nothing
                // else: JSON shaped like a call inside prose (a quoted page, an
                // example) is text, never run.
                if json_mode || native_text_call(&parsed) {
                    if !json_mode {
                        self.note("tool_call_in_text", "a tool call arrived as JSON text and was used as a call");
                    }
                    calls = parsed.calls;
                    content = parsed.text;
                } else {
                    self.note("tool_call_in_prose", "JSON shaped like a tool call inside the reply's text was not run");
                }
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

    /// Runs one call (unless it repeats an earlier one of the turn); returns the text the model
    /// gets back and how the call was answered.
    async fn execute(
        &mut self,
        call: &ToolCall,
        ctx: &crate::tools::ToolContext,
        ledger: &mut CallLedger,
        tx: Option<&UnboundedSender<AgentEvent>>,
    ) -> Result<(String, ToolStatus), AgentError> {
        let started = Instant::now();
        let args: Result<Value, String> = if call.arguments.trim().is_empty() {
            Ok(Value::Object(Default::default()))
        } else {
            serde_json::from_str(&call.arguments).map_err(|e| e.to_string())
        };
        let canonical = args.as_ref().map_or_else(|_| call.arguments.clone(), Value::to_string);
        let canonical = self.redactor.redact(&canonical).into_owned();
        let key = (call.name.clone(), canonical.clone());
        if !ledger.answered.insert(key) {
            ledger.repeats += 1;
            let text = duplicate_note(self.opts.language, &call.name);
            self.record_tool(call, &canonical, ToolStatus::Duplicate, started, &text);
            return Ok((text, ToolStatus::Duplicate));
        }

        let (result, status) = self.dispatch(call, args, ctx, tx).await;
        if let Err(ToolError::Fatal(message)) = &result {
            self.record_tool(call, &canonical, ToolStatus::Error, started, message);
            return Err(AgentError::Fatal { tool: call.name.clone(), message: message.clone() });
        }
        let text = format_result(&result, self.opts.language, self.opts.max_result_chars);
        let text = self.redactor.redact(&text).into_owned();
        let text = self.check_injection(&call.name, text);
        if let Some(tx) = tx {
            let event = match &result {
                Ok(_) => AgentEvent::Success {
                    tool: call.name.clone(),
                    first_line: text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").to_string(),
                },
                Err(_) => AgentEvent::Failed {
                    tool: call.name.clone(),
                    lines: text.lines().take(3).collect::<Vec<_>>().join("\n"),
                },
            };
            let _ = tx.send(event);
        }
        self.record_tool(call, &canonical, status, started, &text);
        Ok((text, status))
    }

    async fn dispatch(
        &mut self,
        call: &ToolCall,
        args: Result<Value, String>,
        ctx: &crate::tools::ToolContext,
        tx: Option<&UnboundedSender<AgentEvent>>,
    ) -> (Result<String, ToolError>, ToolStatus) {
        let Some(tool) = self.tools.get(&call.name).cloned().filter(|t| self.policy.exposes(t.effect())) else {
            let names: Vec<String> = self.specs.iter().map(|t| t.name.clone()).collect();
            let hint = match did_you_mean(&call.name, names.iter().map(String::as_str)) {
                Some(best) => format!(" Did you mean `{best}`?"),
                None => String::new(),
            };
            let msg = format!("unknown tool `{}`.{hint} Available tools: {}", call.name, names.join(", "));
            return (Err(ToolError::InvalidArgs(msg)), ToolStatus::UnknownTool);
        };
        let args = match args {
            Ok(v) if v.is_object() || v.is_null() => v,
            Ok(_) | Err(_) => {
                let sig = json_calls::signature(&tool.spec().parameters);
                let msg = format!(
                    "the arguments of {} are not a JSON object; send them as {{...}} matching {}({sig})",
                    call.name, call.name
                );
                return (Err(ToolError::InvalidArgs(msg)), ToolStatus::InvalidArgs);
            }
        };
        let info = match tool.inspect(&args) {
            Ok(i) => i,
            Err(e) => return (Err(e), ToolStatus::InvalidArgs),
        };
        let grants = self.routine.as_ref().map(|_| &self.grants);
        let effect = info.effect.unwrap_or_else(|| tool.effect());
        match self.policy.decide(&call.name, effect, &info, grants, &self.approvals) {
            Decision::Forbidden(reason) => return (Err(ToolError::Refused(reason)), ToolStatus::Refused),
            Decision::Prompt => {
                let Some(confirm) = self.confirm.clone() else {
                    let reason = format!(
                        "{} needs approval and nobody can give it here; report what you wanted to do instead",
                        call.name
                    );
                    return (Err(ToolError::Refused(reason)), ToolStatus::Refused);
                };
                let answer = confirm(ConfirmRequest {
                    tool: call.name.clone(),
                    summary: info.summary.clone(),
                    approval_key: info.approval_key.clone(),
                    arguments: args.to_string(),
                })
                .await;
                match answer {
                    Confirmation::Yes => {}
                    Confirmation::Always => {
                        self.approvals.extend(self.policy.approval_keys(&info).unwrap_or_default());
                    }
                    Confirmation::No => {
                        let reason = format!(
                            "the user declined this {} call; do not retry it, continue another way or ask",
                            call.name
                        );
                        return (Err(ToolError::Refused(reason)), ToolStatus::Refused);
                    }
                }
            }
            Decision::Allow => {}
        }
        // Announced only once it may run, so a confirmation question comes first.
        if let Some(tx) = tx {
            let summary = self.redactor.redact(&info.summary).into_owned();
            let _ = tx.send(AgentEvent::Running { tool: call.name.clone(), summary });
        }
        let result = tool.invoke(args, ctx).await;
        let status = match &result {
            Ok(_) => ToolStatus::Success,
            Err(ToolError::Failed { .. }) => ToolStatus::Failed,
            Err(ToolError::Refused(_)) => ToolStatus::Refused,
            Err(ToolError::InvalidArgs(_)) => ToolStatus::InvalidArgs,
            Err(ToolError::System(_) | ToolError::Fatal(_)) => ToolStatus::Error,
        };
        (result, status)
    }

    /// Results of tools that bring outside text into the conversation are
    /// scanned for prompt injection: `Block` replaces the result with a
    /// warning, `Review` logs WARN, `Warn` logs INFO; each finding is
    /// recorded in the run events.
    fn check_injection(&self, tool: &str, text: String) -> String {
        if !INJECTION_CHECKED.contains(&tool) {
            return text;
        }
        let Some(finding) = injection::scan(&text) else { return text };
        let detail = format!("{tool}: {} ({}): {}", finding.severity.as_str(), finding.rule, finding.excerpt);
        self.record(RunEvent::Note { kind: "injection_check", detail });
        match finding.severity {
            Severity::Block => {
                tracing::warn!(tool, rule = finding.rule, "Tool result blocked as a prompt injection.");
                match self.opts.language {
                    Language::En => injection::blocked_notice(tool, &finding),
                    Language::Zh => injection::blocked_notice_zh(tool, &finding),
                }
            }
            Severity::Review => {
                tracing::warn!(tool, rule = finding.rule, excerpt = %finding.excerpt, "Tool result may carry instructions; passed on for review.");
                text
            }
            Severity::Warn => {
                tracing::info!(tool, rule = finding.rule, "Tool result has a weak sign of injected instructions.");
                text
            }
        }
    }

    pub(super) fn record(&self, event: RunEvent) {
        if let Some(sink) = &self.sink {
            sink.record(&event);
        }
    }

    fn record_tool(&self, call: &ToolCall, arguments: &str, status: ToolStatus, started: Instant, text: &str) {
        self.record(RunEvent::ToolCall {
            tool: call.name.clone(),
            arguments: arguments.to_string(),
            status,
            duration: started.elapsed(),
            detail: text.chars().take(2_000).collect(),
        });
    }

    fn note(&self, kind: &'static str, detail: &str) {
        self.record(RunEvent::Note { kind, detail: detail.to_string() });
    }

    /// Stores a short summary of the turn, so later sessions can recall it.
    fn remember_turn(&self, message: &str, reply: &str) {
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

/// A call written as text in a native-mode reply counts only when it is the
/// whole reply: one call, nothing around it (a code fence aside).
fn native_text_call(parsed: &json_calls::Parsed) -> bool {
    parsed.calls.len() == 1 && parsed.text.trim().is_empty()
}

fn clip(text: &str, max: usize) -> String {
    let t = text.trim();
    if t.chars().count() <= max { t.to_string() } else { format!("{}…", t.chars().take(max).collect::<String>()) }
}

fn duplicate_note(lang: Language, tool: &str) -> String {
    match lang {
        Language::En => format!(
            "You already called {tool} with exactly these arguments in this turn and have its result above. Do not call it again; use that result and answer."
        ),
        Language::Zh => {
            format!("你在本轮已经用完全相同的参数调用过 {tool}，结果就在上面。不要再调用，请直接使用该结果作答。")
        }
    }
}

/// Nothing, or an empty JSON value some models emit instead of an answer.
fn is_empty_reply(text: &str) -> bool {
    matches!(text.trim(), "" | "{}" | "[]" | "\"\"" | "null")
}

fn answer_now(lang: Language) -> &'static str {
    match lang {
        Language::En => "Now give your final answer, based on the tool results above. Do not call tools.",
        Language::Zh => "请根据上面的工具结果给出最终答案，不要再调用工具。",
    }
}

fn limit_note(lang: Language, max: u32) -> String {
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
