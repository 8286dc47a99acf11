//! Running one tool call of a turn: arguments, the policy's decision (and confirmation where
//! a person is present), the tool itself with retries of transient failures of read-only
//! tools (`agent.tool_retries`), redaction and the injection scan of the result.

use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;

use super::events::{AgentEvent, RunEvent, ToolStatus};
use super::hygiene;
use super::turn::CallLedger;
use super::{Agent, AgentError, ConfirmRequest, Confirmation};
use crate::config::Language;
use crate::diag::did_you_mean;
use crate::llm::{ToolCall, json_calls};
use crate::policy::Decision;
use crate::policy::injection::{self, Severity};
use crate::tools::{DynTool, ToolContext, ToolError, format_result, retry_safe};

/// Tools whose results carry text from outside and are scanned for injection.
const INJECTION_CHECKED: [&str; 5] = ["shell", "file_read", "file_write", "file_list", "http_request"];

/// Longest wait between two attempts of a tool call.
const MAX_TOOL_BACKOFF: Duration = Duration::from_secs(8);

impl Agent {
    /// Runs one call (unless it repeats an earlier one of the turn); returns the text the model
    /// gets back and how the call was answered.
    pub(super) async fn execute(
        &mut self,
        call: &ToolCall,
        ctx: &ToolContext,
        ledger: &mut CallLedger,
        tx: Option<&UnboundedSender<AgentEvent>>,
    ) -> Result<(String, ToolStatus), AgentError> {
        self.hold_the_run().await?;
        let started = Instant::now();
        let args: Result<Value, String> = if call.arguments.trim().is_empty() {
            Ok(Value::Object(Default::default()))
        } else {
            serde_json::from_str(&call.arguments).map_err(|e| e.to_string())
        };
        let canonical = self.canonical(call);
        if !ledger.answered.insert((call.name.clone(), canonical.clone())) {
            ledger.repeats += 1;
            let text = duplicate_note(self.opts.language, &call.name);
            self.record_tool(call, &canonical, ToolStatus::Duplicate, started, &text);
            return Ok((text, ToolStatus::Duplicate));
        }

        let (result, status) = self.dispatch(call, &canonical, args, ctx, tx).await;
        if let Err(ToolError::Fatal(message)) = &result {
            self.record_tool(call, &canonical, ToolStatus::Error, started, message);
            return Err(AgentError::Fatal { tool: call.name.clone(), message: message.clone() });
        }
        let text = self.result_text(&call.name, &result);
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

    /// Records a call the engine did not run (`turn::held_write`) with the text the model gets
    /// back, as a refusal: nothing ran. It is not entered as answered, so the same call made
    /// again after the reads runs.
    pub(super) fn record_held(&self, call: &ToolCall, text: &str) -> (String, ToolStatus) {
        let text =
            format_result(&Err(ToolError::Refused(text.to_string())), self.opts.language, self.opts.max_result_chars);
        self.record_tool(call, &self.canonical(call), ToolStatus::Refused, Instant::now(), &text);
        (text, ToolStatus::Refused)
    }

    /// The arguments of `call` in one canonical form (parsed and written again), redacted: the
    /// key of repeated calls and what is recorded.
    pub(super) fn canonical(&self, call: &ToolCall) -> String {
        let canonical = if call.arguments.trim().is_empty() {
            "{}".to_string()
        } else {
            let parsed = serde_json::from_str::<Value>(&call.arguments);
            parsed.as_ref().map_or_else(|_| call.arguments.clone(), Value::to_string)
        };
        self.redactor.redact(&canonical).into_owned()
    }

    /// What the model reads of a result: formatted, redacted, scanned for injection.
    fn result_text(&self, tool: &str, result: &Result<String, ToolError>) -> String {
        let text = format_result(result, self.opts.language, self.opts.max_result_chars);
        let text = self.redactor.redact(&text).into_owned();
        self.check_injection(tool, text)
    }

    async fn dispatch(
        &mut self,
        call: &ToolCall,
        canonical: &str,
        args: Result<Value, String>,
        ctx: &ToolContext,
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
        if let Some(msg) = template_argument(&args) {
            return (Err(ToolError::InvalidArgs(msg)), ToolStatus::InvalidArgs);
        }
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
        let retries = if retry_safe(&call.name, effect) { self.opts.tool_retries } else { 0 };
        let result = self.invoke_with_retries(&*tool, call, canonical, args, ctx, retries, tx).await;
        let status = match &result {
            Ok(_) => ToolStatus::Success,
            Err(ToolError::Failed { .. } | ToolError::Transient { .. }) => ToolStatus::Failed,
            Err(ToolError::Refused(_)) => ToolStatus::Refused,
            Err(ToolError::InvalidArgs(_)) => ToolStatus::InvalidArgs,
            Err(ToolError::System(_) | ToolError::Fatal(_)) => ToolStatus::Error,
        };
        (result, status)
    }

    /// Invokes `tool`, and again up to `retries` times while it fails for a passing reason,
    /// waiting `tool_retry_backoff`, doubled each time. Each failed attempt is recorded as a
    /// tool call with status `retried`; the last one is recorded by the caller.
    #[allow(clippy::too_many_arguments)]
    async fn invoke_with_retries(
        &self,
        tool: &dyn DynTool,
        call: &ToolCall,
        canonical: &str,
        args: Value,
        ctx: &ToolContext,
        retries: u32,
        tx: Option<&UnboundedSender<AgentEvent>>,
    ) -> Result<String, ToolError> {
        let mut attempt = 0;
        loop {
            let started = Instant::now();
            let result = tool.invoke(args.clone(), ctx).await;
            match &result {
                Err(e) if e.is_transient() && attempt < retries => {
                    attempt += 1;
                    let wait =
                        self.opts.tool_retry_backoff.saturating_mul(1 << (attempt - 1).min(16)).min(MAX_TOOL_BACKOFF);
                    let text = self.result_text(&call.name, &result);
                    let note = retry_note(self.opts.language, attempt, retries, wait);
                    tracing::info!(tool = %call.name, attempt, error = %e, wait_ms = wait.as_millis() as u64, "Tool call failed for a passing reason, trying again.");
                    self.record_tool(call, canonical, ToolStatus::Retried, started, &format!("{text}\n{note}"));
                    if let Some(tx) = tx {
                        let _ = tx.send(AgentEvent::Notice(format!("{}: {e}; {note}", call.name)));
                    }
                    tokio::time::sleep(wait).await;
                }
                _ => return result,
            }
        }
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

    fn record_tool(&self, call: &ToolCall, arguments: &str, status: ToolStatus, started: Instant, text: &str) {
        self.record(RunEvent::ToolCall {
            tool: call.name.clone(),
            arguments: arguments.to_string(),
            status,
            duration: started.elapsed(),
            detail: text.chars().take(2_000).collect(),
        });
    }
}

fn retry_note(lang: Language, attempt: u32, retries: u32, wait: Duration) -> String {
    let ms = wait.as_millis();
    match lang {
        Language::En => format!("[retry {attempt} of {retries} in {ms} ms]"),
        Language::Zh => format!("[{ms} 毫秒后第 {attempt}/{retries} 次重试]"),
    }
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

/// Why a call is not run when one of its text arguments is nothing but chat-template tokens
/// (`{"content": "<tool_response>"}`): a small model that lost its place writes its template
/// into the file, the memory or the command. What reached the argument is not content, so the
/// call is answered with what to send instead, and nothing is written.
fn template_argument(args: &Value) -> Option<String> {
    // The tokens are not quoted back: a result that carries them reads as a forged turn.
    let key =
        args.as_object()?.iter().find_map(|(k, v)| v.as_str().filter(|v| hygiene::template_only(v)).map(|_| k))?;
    Some(format!("the `{key}` argument holds only chat-template tokens, not content; send the real {key}"))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::{Arc, Mutex};

    use async_trait::async_trait;
    use schemars::JsonSchema;
    use serde::Deserialize;

    use super::*;
    use crate::agent::AgentOptions;
    use crate::config::Autonomy;
    use crate::llm::{ChatRequest, ChatResponse, LlmError, Provider};
    use crate::policy::{CallInfo, Effect, Policy};
    use crate::tools::{Registry, Tool};

    /// Calls `file_read` once, then answers with what it read.
    struct Script(Mutex<u32>);

    #[async_trait]
    impl Provider for Script {
        async fn chat(&self, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
            let mut n = self.0.lock().unwrap();
            *n += 1;
            Ok(match *n {
                1 => ChatResponse {
                    tool_calls: vec![ToolCall { id: "c1".into(), name: "file_read".into(), arguments: "{}".into() }],
                    ..Default::default()
                },
                _ => ChatResponse { content: Some("read it".into()), ..Default::default() },
            })
        }
    }

    /// A `file_read` that times out `failures` times, noting when (in tokio time) it was called.
    struct Flaky {
        failures: u32,
        calls: Arc<AtomicU32>,
        at: Arc<Mutex<Vec<tokio::time::Instant>>>,
    }

    #[derive(Deserialize, JsonSchema)]
    struct NoArgs {}

    #[async_trait]
    impl Tool for Flaky {
        const NAME: &'static str = "file_read";
        type Args = NoArgs;
        fn description(&self) -> &'static str {
            "flaky"
        }
        fn effect(&self) -> Effect {
            Effect::ReadOnly
        }
        fn info(&self, _: &NoArgs) -> CallInfo {
            CallInfo::new("", "file_read")
        }
        async fn call(&self, _: NoArgs, _: &ToolContext) -> Result<String, ToolError> {
            self.at.lock().unwrap().push(tokio::time::Instant::now());
            match self.calls.fetch_add(1, Ordering::SeqCst) < self.failures {
                true => Err(ToolError::transient("timed out")),
                false => Ok("contents".into()),
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn transient_failures_are_retried_with_doubling_waits_on_tokio_time() {
        let dir = tempfile::tempdir().unwrap();
        let calls = Arc::new(AtomicU32::new(0));
        let at = Arc::new(Mutex::new(Vec::new()));
        let mut tools = Registry::new();
        tools.add(Flaky { failures: 2, calls: calls.clone(), at: at.clone() });
        let policy = Arc::new(Policy::new(Autonomy::ReadOnly, dir.path(), &[]).unwrap());
        let mut opts = AgentOptions::new("m");
        opts.tool_retries = 3;
        let mut agent = Agent::new(Arc::new(Script(Mutex::new(0))), tools, policy, opts);
        assert_eq!(agent.process_message("read").await.unwrap(), "read it");
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        let at = at.lock().unwrap();
        let waits: Vec<Duration> = at.windows(2).map(|w| w[1] - w[0]).collect();
        assert_eq!(waits, [Duration::from_millis(500), Duration::from_millis(1000)]);
        assert_eq!(agent.last_calls()[0].status, ToolStatus::Success);
    }
}
