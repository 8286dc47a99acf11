use std::time::Duration;

/// Why a model call failed, worded so the reader knows what to do.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    #[error("the API key in ${var} was rejected (HTTP {status}): {message}; set a valid key in ${var}")]
    KeyRejected { status: u16, var: String, message: String },
    #[error(
        "the model API requires a key (HTTP {status}): {message}; set provider.api_key_env to the variable that holds it, or export ROUTINES_API_KEY"
    )]
    KeyMissing { status: u16, message: String },
    #[error("not found (HTTP 404) at {url}: {message}; check provider.base_url and provider.model (`{model}`)")]
    NotFound { url: String, model: String, message: String },
    #[error("the model API refused the request (HTTP {status}): {message}")]
    BadRequest { status: u16, message: String },
    /// A 4xx answer naming `tool_choice` to a request that required a tool call: the server
    /// does not take the field. The same request without it may pass.
    #[error("the model API does not accept `tool_choice` (HTTP {status}): {message}")]
    ToolChoiceRefused { status: u16, message: String },
    #[error("rate limited by the model API (HTTP 429): {message}{}", retry_hint(.retry_after))]
    RateLimited { retry_after: Option<Duration>, message: String },
    #[error("the model server failed (HTTP {status}): {message}")]
    Server { status: u16, message: String },
    #[error("no answer from the model within {}s; raise provider.timeout or check the server", .after.as_secs_f64())]
    Timeout { after: Duration },
    #[error("cannot reach the model API at {url}: {detail}; is the server running?")]
    Connect { url: String, detail: String },
    #[error("the connection to the model API broke: {detail}")]
    Dropped { detail: String },
    #[error("the model API sent a response that is not valid: {detail}")]
    Malformed { detail: String },
    #[error(
        "the model API sent a reply larger than {limit} bytes; it was not read further (a broken or hostile server?)"
    )]
    TooLarge { limit: usize },
    #[error("no model provider configured: {0}")]
    NotConfigured(String),
}

fn retry_hint(after: &Option<Duration>) -> String {
    match after {
        Some(d) => format!(" (the server asked to wait {}s)", d.as_secs()),
        None => String::new(),
    }
}

impl LlmError {
    /// Failures that may pass: 429, 5xx, timeouts, broken connections and
    /// broken responses. 400/401/404 will fail the same way again.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            LlmError::RateLimited { .. }
                | LlmError::Server { .. }
                | LlmError::Timeout { .. }
                | LlmError::Connect { .. }
                | LlmError::Dropped { .. }
                | LlmError::Malformed { .. }
        )
    }

    /// How long the server asked us to wait, if it did.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::RateLimited { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The exit code of a command stopped by it: 2 when no provider is configured (the config
    /// must change), else 1. Messages already say what to do, so there is no separate hint.
    pub fn exit_code(&self) -> u8 {
        match self {
            LlmError::NotConfigured(_) => 2,
            _ => 1,
        }
    }
}
