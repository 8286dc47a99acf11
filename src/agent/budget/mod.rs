//! The model's context as a budget the engine keeps (SPEC §13): no request is sent larger than
//! the window (`provider.context_window`, else what the server reports, else 8192 tokens).
//!
//! Asked for one id in a 600-line log, the engine once sent the whole file in a request of
//! 11,040 tokens to a server with 8,192; the server kept the last 6,944, the question was lost,
//! and the answer described the log (issue 48). Now every request is measured before it goes:
//! the completion's room is kept aside (`max_tokens`, else an eighth of the window), tool
//! results that do not fit what is left are cut with a note of what was left out and how to
//! read it (`cut.rs`), and a request whose prompt and task alone do not fit fails the run with
//! the sizes, never a request the server would cut silently.
//!
//! Tokens are estimated without a tokenizer: a token per three bytes, rounded up. Tokenizers
//! give English prose about four bytes a token and logs and code about three; a CJK character
//! is three bytes in UTF-8, so it counts as one token, which is what tokenizers give it or less.

mod cut;

use std::borrow::Cow;

use super::{Agent, AgentError};
use crate::llm::{ChatRequest, ContextWindow, Message, Role, ToolCall, ToolSpec, WindowSource};
pub(super) use cut::Reading;

/// Tokens a chat template adds around each message (role markers, separators).
const MESSAGE_OVERHEAD: usize = 4;
/// Tokens of the template around a request, and around its tool schemas when it has any.
const REQUEST_OVERHEAD: usize = 8;
const TOOLS_OVERHEAD: usize = 64;
/// What an image counts for; servers differ, and a few hundred to a thousand is usual.
const IMAGE_TOKENS: usize = 1024;
/// The least a cut result keeps: its note.
const MIN_RESULT_TOKENS: usize = 80;

/// Tokens of `text`: one per three bytes, rounded up.
pub(super) fn tokens(text: &str) -> usize {
    text.len().div_ceil(3)
}

pub(super) fn message_tokens(m: &Message) -> usize {
    let calls: usize = m.tool_calls.iter().map(|c| tokens(&c.name) + tokens(&c.arguments) + MESSAGE_OVERHEAD).sum();
    let reasoning = m.reasoning_content.as_deref().map_or(0, tokens);
    MESSAGE_OVERHEAD + tokens(m.text()) + calls + reasoning + m.images.len() * IMAGE_TOKENS
}

pub(super) fn tools_tokens(specs: &[ToolSpec]) -> usize {
    if specs.is_empty() {
        return 0;
    }
    let schemas: usize = specs.iter().map(|s| serde_json::to_string(s).map_or(0, |j| tokens(&j))).sum();
    TOOLS_OVERHEAD + schemas
}

/// Tokens of the whole request as the estimate counts them.
pub(super) fn request_tokens(r: &ChatRequest) -> usize {
    REQUEST_OVERHEAD + tools_tokens(&r.tools) + r.messages.iter().map(message_tokens).sum::<usize>()
}

/// A request that does not fit even with every tool result cut to its note.
#[derive(Debug, thiserror::Error)]
#[error(
    "the request does not fit the model's context window of {window} tokens ({origin}): the system prompt takes about {system} tokens, the tool schemas {tools}, the task and the rest of the conversation {rest}, and {reserve} are kept for the reply; raise provider.context_window if the model holds more, or shorten the prompt, give the routine fewer tools or lower provider.max_tokens"
)]
pub struct TooLarge {
    pub window: u32,
    pub origin: &'static str,
    pub system: usize,
    pub tools: usize,
    pub rest: usize,
    pub reserve: usize,
}

/// The window of one agent's requests and the room kept for the reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Budget {
    pub window: ContextWindow,
    /// Tokens kept for the completion: `max_tokens`, else an eighth of the window.
    pub reserve: usize,
}

impl Budget {
    pub(super) fn new(window: ContextWindow, max_tokens: Option<u32>) -> Budget {
        let tokens = window.tokens as usize;
        Budget { window, reserve: max_tokens.map_or(tokens / 8, |m| m as usize) }
    }

    /// Tokens a request may take.
    pub(super) fn limit(&self) -> usize {
        (self.window.tokens as usize).saturating_sub(self.reserve)
    }

    /// `request` within the window: unchanged when it fits (`None`), else with its tool results
    /// cut, the larger ones first: each result keeps what an equal share of the room allows, a
    /// smaller one all of itself.
    pub(super) fn fit(
        &self,
        request: &ChatRequest,
        lang: crate::config::Language,
    ) -> Result<Option<ChatRequest>, TooLarge> {
        let limit = self.limit();
        if request_tokens(request) <= limit {
            return Ok(None);
        }
        let results: Vec<usize> = (0..request.messages.len()).filter(|i| is_result(&request.messages[*i])).collect();
        let sizes: Vec<usize> = results.iter().map(|i| message_tokens(&request.messages[*i])).collect();
        let fixed = request_tokens(request) - sizes.iter().sum::<usize>();
        if fixed + results.len() * MIN_RESULT_TOKENS > limit {
            return Err(self.too_large(request));
        }
        let shares = water_fill(&sizes, limit - fixed);
        let mut fitted = request.clone();
        for ((i, size), share) in results.iter().zip(&sizes).zip(shares) {
            if *size <= share {
                continue;
            }
            let message = &mut fitted.messages[*i];
            let call = calls_of(&request.messages).into_iter().find(|c| Some(&c.id) == message.tool_call_id.as_ref());
            let max_bytes = share.saturating_sub(MESSAGE_OVERHEAD) * 3;
            let text = message.text();
            // A result in JSON mode is a user message that starts with the tool's name.
            let (label, body) = match (message.role, text.split_once('\n')) {
                (Role::User, Some((label, body))) => (format!("{label}\n"), body),
                _ => (String::new(), text),
            };
            let reading = Reading::of(call);
            if let Some((kept, _)) = cut::cut(body, max_bytes.saturating_sub(label.len()), &reading, lang) {
                message.content = Some(format!("{label}{kept}"));
            }
        }
        if request_tokens(&fitted) > limit {
            return Err(self.too_large(request));
        }
        Ok(Some(fitted))
    }

    fn too_large(&self, request: &ChatRequest) -> TooLarge {
        let system = request.messages.first().filter(|m| m.role == Role::System).map_or(0, message_tokens);
        let tools = tools_tokens(&request.tools);
        let results: usize = request.messages.iter().filter(|m| is_result(m)).map(|_| MIN_RESULT_TOKENS).sum();
        let all: usize = request.messages.iter().filter(|m| !is_result(m)).map(message_tokens).sum();
        TooLarge {
            window: self.window.tokens,
            origin: self.window.source.describe(),
            system,
            tools,
            rest: (all + results + REQUEST_OVERHEAD).saturating_sub(system),
            reserve: self.reserve,
        }
    }
}

/// Whether a message is a tool result: a tool message, or in JSON mode the user message that
/// carries one (`[result of NAME]`).
fn is_result(m: &Message) -> bool {
    m.role == Role::Tool || (m.role == Role::User && m.text().starts_with("[result of "))
}

fn calls_of(messages: &[Message]) -> Vec<&ToolCall> {
    messages.iter().flat_map(|m| m.tool_calls.iter()).collect()
}

/// Shares of `room` for items of `sizes`: the smallest get what they need, the rest an equal
/// part of what is left.
fn water_fill(sizes: &[usize], room: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|i| sizes[*i]);
    let mut shares = vec![0; sizes.len()];
    let mut left = room;
    for (k, i) in order.iter().enumerate() {
        let share = left / (sizes.len() - k);
        shares[*i] = sizes[*i].min(share);
        left -= shares[*i];
    }
    shares
}

impl Agent {
    /// The budget of this agent's requests: `provider.context_window`, else what the server
    /// reports (asked once per provider), else the default.
    pub(super) async fn budget(&self) -> Budget {
        let window = match self.opts.context_window {
            Some(tokens) => ContextWindow { tokens, source: WindowSource::Config },
            None => self.provider.context_window(&self.opts.model).await.unwrap_or_else(ContextWindow::default_window),
        };
        tracing::debug!(tokens = window.tokens, source = window.source.describe(), "Context window of the run.");
        Budget::new(window, self.opts.max_tokens)
    }

    /// `request` as it may be sent: within the window, or the error that says why it cannot be.
    pub(super) async fn fit_request<'r>(&self, request: &'r ChatRequest) -> Result<Cow<'r, ChatRequest>, AgentError> {
        let budget = self.budget().await;
        match budget.fit(request, self.opts.language) {
            Ok(None) => Ok(Cow::Borrowed(request)),
            Ok(Some(fitted)) => {
                tracing::debug!(
                    before = request_tokens(request),
                    after = request_tokens(&fitted),
                    window = budget.window.tokens,
                    "Tool results of a request cut to the context window."
                );
                Ok(Cow::Owned(fitted))
            }
            Err(e) => Err(AgentError::Context(e)),
        }
    }

    /// The result of `call` as the turn's next request has room for it, after `system`, the
    /// history, `turn` and `tools`: `text` itself, or cut with a note (noted as `result_cut`).
    /// What the turn's checks read of the call; the request carries the same cut (`fit`).
    pub(super) async fn within_budget(
        &self,
        system: &str,
        turn: &[Message],
        tools: &[ToolSpec],
        call: &ToolCall,
        text: &str,
    ) -> String {
        let budget = self.budget().await;
        let used = REQUEST_OVERHEAD
            + MESSAGE_OVERHEAD
            + tokens(system)
            + tools_tokens(tools)
            + self.history.iter().chain(turn).map(message_tokens).sum::<usize>();
        let room = budget.limit().saturating_sub(used + MESSAGE_OVERHEAD);
        let reading = Reading::of(Some(call));
        let Some((kept, left)) = cut::cut(text, room * 3, &reading, self.opts.language) else {
            return text.to_string();
        };
        self.note(
            "result_cut",
            &format!(
                "{} result of {} bytes cut to {} bytes ({} lines left out) to fit the context window of {} tokens ({})",
                call.name,
                text.len(),
                kept.len(),
                left.lines,
                budget.window.tokens,
                budget.window.source.describe()
            ),
        );
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Language;
    use std::sync::Arc;

    fn request(messages: Vec<Message>) -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            messages,
            tools: Arc::new([]),
            temperature: None,
            max_tokens: None,
            require_tool: false,
            stop: Vec::new(),
        }
    }

    fn budget(tokens: u32) -> Budget {
        Budget::new(ContextWindow { tokens, source: WindowSource::Config }, None)
    }

    fn call(id: &str, path: &str) -> Message {
        let c = ToolCall { id: id.into(), name: "file_read".into(), arguments: format!("{{\"path\":\"{path}\"}}") };
        Message { tool_calls: vec![c], ..Message::assistant("") }
    }

    #[test]
    fn counts_a_token_per_three_bytes_and_a_cjk_character_as_one() {
        assert_eq!(tokens(""), 0);
        assert_eq!(tokens("abcd"), 2);
        assert_eq!(tokens("日志"), 2);
    }

    #[test]
    fn shares_the_room_so_small_results_stay_whole() {
        assert_eq!(water_fill(&[100, 5_000, 3_000], 2_100), vec![100, 1_000, 1_000]);
        assert_eq!(water_fill(&[10, 20], 100), vec![10, 20]);
    }

    #[test]
    fn a_request_over_the_window_has_its_results_cut_and_keeps_the_task() {
        let log: String = (1..=600).map(|i| format!("10:00:{i:03} INFO job {i} done\n")).collect();
        let r = request(vec![
            Message::system("You are a routine."),
            Message::user("Find the id of the failed job in app.log."),
            call("c1", "app.log"),
            Message::tool_result("c1", log.clone()),
        ]);
        let b = budget(2048);
        let fitted = b.fit(&r, Language::En).unwrap().unwrap();
        assert!(request_tokens(&fitted) <= b.limit(), "{}", request_tokens(&fitted));
        assert_eq!(fitted.messages[1].text(), "Find the id of the failed job in app.log.");
        assert!(fitted.messages[3].text().contains("are left out here to fit the model's context window"));
        assert!(b.fit(&fitted, Language::En).unwrap().is_none(), "a fitted request fits");
        assert!(budget(100_000).fit(&r, Language::En).unwrap().is_none());
    }

    #[test]
    fn an_earlier_result_is_shortened_as_the_turn_grows() {
        let log: String = (1..=300).map(|i| format!("10:00:{i:03} INFO job {i} done\n")).collect();
        let mut messages = vec![Message::system("You are a routine."), Message::user("Which job failed?")];
        messages.extend([call("c1", "a.log"), Message::tool_result("c1", log.clone())]);
        let b = budget(2048);
        let one = b.fit(&request(messages.clone()), Language::En).unwrap().unwrap();
        messages.extend([call("c2", "b.log"), Message::tool_result("c2", log)]);
        let two = b.fit(&request(messages), Language::En).unwrap().unwrap();
        assert!(request_tokens(&two) <= b.limit());
        assert!(two.messages[3].text().len() < one.messages[3].text().len(), "the first read makes room");
        assert_eq!(two.messages[3].text().len(), two.messages[5].text().len(), "equal shares");
    }

    #[test]
    fn a_prompt_that_does_not_fit_names_the_window_and_the_sizes() {
        let r = request(vec![Message::system("x".repeat(9_000)), Message::user("task")]);
        let e = budget(2048).fit(&r, Language::En).unwrap_err();
        assert_eq!((e.window, e.system, e.reserve), (2048, 3_004, 256));
        let text = e.to_string();
        assert!(text.starts_with("the request does not fit the model's context window of 2048 tokens (provider.context_window): the system prompt takes about 3004 tokens"), "{text}");
    }
}
