//! The client for OpenAI-compatible chat-completions APIs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use reqwest::StatusCode;
use tracing::{debug, warn};

use super::sse::{Assembler, SseParser};
use super::wire::{self, Completion};
use super::{ChatRequest, ChatResponse, DeltaSink, LlmError, Provider, RetryPolicy};
use crate::config::{ProviderConfig, Secret};
use crate::policy::Redactor;

/// Largest reply body read, streamed or not: a model's answer is a few KB,
/// and a server sending 100 MB must not make the engine hold 100 MB.
pub const DEFAULT_MAX_REPLY_BYTES: usize = 8 * 1024 * 1024;
/// Most of an error body read; the rest is dropped unread (the message kept
/// is shorter still, see [`wire::error_message`]).
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// What the client needs to know; built from [`ProviderConfig`].
#[derive(Debug, Clone)]
pub struct ProviderOptions {
    /// Base URL ending before `/chat/completions`, e.g. `http://127.0.0.1:8088/v1`.
    pub base_url: String,
    pub api_key: Option<Secret>,
    /// The variable the key came from, named when the key is rejected.
    pub api_key_var: Option<String>,
    /// Per-request timeout (time to the whole answer; for streams, the
    /// longest silence between two chunks).
    pub timeout: Duration,
    pub retry: RetryPolicy,
}

impl ProviderOptions {
    pub fn from_config(c: &ProviderConfig) -> Result<Self, LlmError> {
        let base_url = c.base_url.clone().ok_or_else(|| {
            LlmError::NotConfigured(
                "set provider.base_url in routines.yaml or export ROUTINES_BASE_URL (e.g. http://127.0.0.1:11434/v1)"
                    .into(),
            )
        })?;
        Ok(ProviderOptions {
            base_url,
            api_key: c.api_key.clone(),
            api_key_var: c.api_key_var.clone(),
            timeout: c.timeout.get(),
            retry: RetryPolicy { max_retries: c.max_retries, ..RetryPolicy::default() },
        })
    }
}

pub struct OpenAiProvider {
    http: reqwest::Client,
    options: ProviderOptions,
    url: String,
    /// Largest reply body read ([`DEFAULT_MAX_REPLY_BYTES`]).
    max_reply: usize,
    /// The key, kept out of error messages a server echoes it in.
    key: Redactor,
    /// The server answered a request carrying `tool_choice` with a 4xx naming it; later
    /// requests of this provider (one per base URL and process) leave it out.
    refuses_tool_choice: AtomicBool,
    /// The server answered a request carrying `stop` with a 4xx naming it (OpenAI's reasoning
    /// models do): that request went again without it, and so do later ones.
    refuses_stop: AtomicBool,
    /// What the server said about its context window, asked once (`context.rs`).
    server_context: tokio::sync::OnceCell<super::context::ServerContext>,
}

impl OpenAiProvider {
    pub fn new(options: ProviderOptions) -> Result<Self, LlmError> {
        let mut builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10).min(options.timeout))
            .user_agent(concat!("routines/", env!("CARGO_PKG_VERSION")));
        if options.base_url.starts_with("http://") {
            // A plain-HTTP server (a local model) needs no trust roots; not
            // loading the system's saves time and memory on every start.
            builder = builder.tls_certs_only(Vec::new());
        }
        let http =
            builder.build().map_err(|e| LlmError::NotConfigured(format!("cannot build the HTTP client: {e}")))?;
        let url = format!("{}/chat/completions", options.base_url.trim_end_matches('/'));
        let key = Redactor::new(options.api_key.iter().map(|k| k.expose().to_string()));
        Ok(OpenAiProvider {
            http,
            options,
            url,
            max_reply: DEFAULT_MAX_REPLY_BYTES,
            key,
            refuses_tool_choice: AtomicBool::new(false),
            refuses_stop: AtomicBool::new(false),
            server_context: tokio::sync::OnceCell::new(),
        })
    }

    /// The same provider reading at most `bytes` of a reply body.
    pub fn with_max_reply(mut self, bytes: usize) -> Self {
        self.max_reply = bytes;
        self
    }

    async fn with_retries<F, Fut>(&self, mut attempt_fn: F) -> Result<ChatResponse, LlmError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<ChatResponse, (LlmError, bool)>>,
    {
        let policy = self.options.retry;
        let mut retry = 0;
        loop {
            match attempt_fn().await {
                Ok(r) => return Ok(r),
                Err((e, may_retry)) => {
                    if !may_retry || !e.is_retryable() || retry >= policy.max_retries {
                        return Err(e);
                    }
                    let delay = match e.retry_after() {
                        Some(after) if after > policy.max_retry_after => return Err(e),
                        Some(after) => after,
                        None => policy.backoff(retry),
                    };
                    warn!(error = %e, retry = retry + 1, delay_ms = delay.as_millis() as u64, "Model call failed, retrying.");
                    tokio::time::sleep(delay).await;
                    retry += 1;
                }
            }
        }
    }

    async fn send(&self, body: &serde_json::Value) -> Result<reqwest::Response, LlmError> {
        tracing::trace!(url = %self.url, body = %body, "Model request.");
        let mut req = self.http.post(&self.url).json(body);
        if let Some(key) = &self.options.api_key {
            req = req.bearer_auth(key.expose());
        }
        let fut = req.send();
        let resp = tokio::time::timeout(self.options.timeout, fut)
            .await
            .map_err(|_| LlmError::Timeout { after: self.options.timeout })?
            .map_err(|e| self.transport_error(e))?;
        if resp.status().is_success() {
            return Ok(resp);
        }
        let status = resp.status();
        let retry_after =
            resp.headers().get(reqwest::header::RETRY_AFTER).and_then(|v| v.to_str().ok()).and_then(parse_retry_after);
        let bytes = tokio::time::timeout(self.options.timeout, read_body(resp, MAX_ERROR_BODY_BYTES))
            .await
            .ok()
            .and_then(Result::ok)
            .map(|(bytes, _)| bytes)
            .unwrap_or_default();
        let message = wire::error_message(&String::from_utf8_lossy(&bytes));
        let message = self.key.redact(&message);
        Err(self.status_error(status, retry_after, &message, body))
    }

    fn status_error(
        &self,
        status: StatusCode,
        retry_after: Option<Duration>,
        message: &str,
        body: &serde_json::Value,
    ) -> LlmError {
        let message = message.to_string();
        let code = status.as_u16();
        match code {
            401 | 403 => match &self.options.api_key_var {
                Some(var) => LlmError::KeyRejected { status: code, var: var.clone(), message },
                None => LlmError::KeyMissing { status: code, message },
            },
            404 => LlmError::NotFound {
                url: self.url.clone(),
                model: body.get("model").and_then(|m| m.as_str()).unwrap_or("").to_string(),
                message,
            },
            429 => LlmError::RateLimited { retry_after, message },
            400..=499 if body.get("tool_choice").is_some() && message.to_ascii_lowercase().contains("tool_choice") => {
                warn!(status = code, "The model API does not accept tool_choice; leaving it out from now on.");
                self.refuses_tool_choice.store(true, Ordering::Relaxed);
                LlmError::ToolChoiceRefused { status: code, message }
            }
            500..=599 => LlmError::Server { status: code, message },
            _ => LlmError::BadRequest { status: code, message },
        }
    }

    /// The wire body of `request`, without `stop` once the server refused it.
    fn body(&self, request: &ChatRequest, stream: bool) -> serde_json::Value {
        let mut body = wire::request_body(request, stream);
        if self.refuses_stop.load(Ordering::Relaxed) {
            body.as_object_mut().map(|b| b.remove("stop"));
        }
        body
    }

    /// Whether `result` is the server refusing the `stop` field of `body` (a 4xx whose message
    /// names it); then it is left out from now on, and the caller sends the request again.
    fn stop_refused(&self, body: &serde_json::Value, result: &Result<ChatResponse, LlmError>) -> bool {
        let Err(LlmError::BadRequest { status, message }) = result else { return false };
        if body.get("stop").is_none() || !message.to_ascii_lowercase().contains("stop") {
            return false;
        }
        warn!(status, "The model API does not accept stop; leaving it out from now on.");
        self.refuses_stop.store(true, Ordering::Relaxed);
        true
    }

    fn transport_error(&self, e: reqwest::Error) -> LlmError {
        if e.is_timeout() {
            LlmError::Timeout { after: self.options.timeout }
        } else if e.is_connect() {
            LlmError::Connect { url: self.options.base_url.clone(), detail: root_cause(&e) }
        } else {
            LlmError::Dropped { detail: root_cause(&e) }
        }
    }

    async fn chat_once(&self, body: &serde_json::Value) -> Result<ChatResponse, LlmError> {
        let resp = self.send(body).await?;
        if resp.content_length().is_some_and(|n| n > self.max_reply as u64) {
            return Err(LlmError::TooLarge { limit: self.max_reply });
        }
        let (bytes, complete) = tokio::time::timeout(self.options.timeout, read_body(resp, self.max_reply))
            .await
            .map_err(|_| LlmError::Timeout { after: self.options.timeout })?
            .map_err(|e| self.transport_error(e))?;
        if !complete {
            return Err(LlmError::TooLarge { limit: self.max_reply });
        }
        tracing::trace!(body = %String::from_utf8_lossy(&bytes), "Model response.");
        let completion: Completion = serde_json::from_slice(&bytes).map_err(|e| LlmError::Malformed {
            detail: format!("{e}; body starts with {:?}", String::from_utf8_lossy(&bytes[..bytes.len().min(120)])),
        })?;
        let choice = completion
            .choices
            .into_iter()
            .next()
            .ok_or_else(|| LlmError::Malformed { detail: "the response has no choices".into() })?;
        Ok(ChatResponse {
            content: choice.message.content.filter(|c| !c.is_empty()),
            tool_calls: wire::tool_calls(choice.message.tool_calls),
            reasoning_content: choice.message.reasoning_content.filter(|r| !r.is_empty()),
            usage: completion.usage.map(Into::into).unwrap_or_default(),
            finish_reason: choice.finish_reason,
        })
    }

    /// One streamed attempt. The flag says whether a retry is safe (nothing
    /// was shown to the user yet).
    async fn stream_once(
        &self,
        body: &serde_json::Value,
        on_delta: DeltaSink<'_>,
    ) -> Result<ChatResponse, (LlmError, bool)> {
        let resp = self.send(body).await.map_err(|e| (e, true))?;
        let mut stream = resp.bytes_stream();
        let mut parser = SseParser::default();
        let mut asm = Assembler::default();
        let mut utf8_tail: Vec<u8> = Vec::new();
        let mut received = 0usize;
        loop {
            let next = tokio::time::timeout(self.options.timeout, stream.next()).await;
            let chunk = match next {
                Err(_) => {
                    let e = LlmError::Timeout { after: self.options.timeout };
                    return Err((e, !asm.emitted));
                }
                Ok(None) => break,
                Ok(Some(Err(e))) => return Err((self.transport_error(e), !asm.emitted)),
                Ok(Some(Ok(bytes))) => bytes,
            };
            received = received.saturating_add(chunk.len());
            if received > self.max_reply {
                return Err((LlmError::TooLarge { limit: self.max_reply }, false));
            }
            utf8_tail.extend_from_slice(&chunk);
            let valid = match std::str::from_utf8(&utf8_tail) {
                Ok(_) => utf8_tail.len(),
                Err(e) if e.error_len().is_none() => e.valid_up_to(),
                Err(e) => {
                    let err = LlmError::Malformed { detail: format!("stream is not UTF-8: {e}") };
                    return Err((err, !asm.emitted));
                }
            };
            let text = String::from_utf8_lossy(&utf8_tail[..valid]).into_owned();
            utf8_tail.drain(..valid);
            for payload in parser.push(&text) {
                asm.apply(&payload, on_delta).map_err(|detail| (LlmError::Malformed { detail }, !asm.emitted))?;
            }
            if asm.done {
                break;
            }
        }
        if let Some(payload) = parser.finish() {
            asm.apply(&payload, on_delta).map_err(|detail| (LlmError::Malformed { detail }, !asm.emitted))?;
        }
        if !asm.done {
            debug!("Stream ended without [DONE]; using what arrived.");
        }
        Ok(asm.finish())
    }
}

#[async_trait]
impl Provider for OpenAiProvider {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut body = self.body(request, false);
        let result = self.with_retries(|| async { self.chat_once(&body).await.map_err(|e| (e, true)) }).await;
        if !self.stop_refused(&body, &result) {
            return result;
        }
        body.as_object_mut().map(|b| b.remove("stop"));
        self.with_retries(|| async { self.chat_once(&body).await.map_err(|e| (e, true)) }).await
    }

    async fn chat_stream(&self, request: &ChatRequest, on_delta: DeltaSink<'_>) -> Result<ChatResponse, LlmError> {
        let mut body = self.body(request, true);
        let result = self.with_retries(|| self.stream_once(&body, on_delta)).await;
        if !self.stop_refused(&body, &result) {
            return result;
        }
        body.as_object_mut().map(|b| b.remove("stop"));
        self.with_retries(|| self.stream_once(&body, on_delta)).await
    }

    fn accepts_tool_choice(&self) -> bool {
        !self.refuses_tool_choice.load(Ordering::Relaxed)
    }

    async fn context_window(&self, model: &str) -> Option<super::ContextWindow> {
        let found = self
            .server_context
            .get_or_init(|| super::context::probe(&self.http, &self.options.base_url, self.options.api_key.as_ref()))
            .await;
        found.window_of(model)
    }
}

/// At most `limit` bytes of a body, read chunk by chunk; the flag says
/// whether that was all of it (`false`: more was there, left unread).
async fn read_body(mut resp: reqwest::Response, limit: usize) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        let room = limit.saturating_sub(out.len());
        if chunk.len() > room {
            out.extend_from_slice(chunk.get(..room).unwrap_or_default());
            return Ok((out, false));
        }
        out.extend_from_slice(&chunk);
    }
    Ok((out, true))
}

/// `Retry-After` in seconds (HTTP dates are rare from model APIs and are
/// treated as absent).
fn parse_retry_after(v: &str) -> Option<Duration> {
    let secs: f64 = v.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs))
}

fn root_cause(e: &reqwest::Error) -> String {
    let mut source: &dyn std::error::Error = e;
    while let Some(next) = source.source() {
        source = next;
    }
    source.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_retry_after_seconds() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }
}
