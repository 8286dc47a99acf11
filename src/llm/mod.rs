//! Talking to models: the [`Provider`] trait, its message types, and one
//! client for any OpenAI-compatible chat-completions API.

pub mod context;
mod error;
pub mod json_calls;
mod openai;
pub mod repetition;
mod retry;
mod sse;
mod wire;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

pub use context::{ContextWindow, DEFAULT_CONTEXT_WINDOW, WindowSource};
pub use error::LlmError;
pub use openai::{OpenAiProvider, ProviderOptions};
pub use retry::RetryPolicy;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// One tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments exactly as the model wrote them (JSON text).
    pub arguments: String,
}

/// A message of the conversation, in the engine's own form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Reasoning of thinking models (DeepSeek, GLM), kept within a turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// Images sent with a user message (content parts on the wire). Never serialized: a stored
    /// session keeps the text, not the pictures.
    #[serde(skip)]
    pub images: Vec<Image>,
}

/// An image of a user message, base64-encoded once and shared between the requests of a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// `image/png`, `image/jpeg`, `image/webp` or `image/gif`.
    pub media_type: &'static str,
    pub base64: std::sync::Arc<str>,
}

impl Image {
    /// The `data:` URL the OpenAI wire format carries.
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.media_type, self.base64)
    }
}

impl Message {
    pub fn system(text: impl Into<String>) -> Self {
        Self::plain(Role::System, text)
    }

    pub fn user(text: impl Into<String>) -> Self {
        Self::plain(Role::User, text)
    }

    pub fn assistant(text: impl Into<String>) -> Self {
        Self::plain(Role::Assistant, text)
    }

    pub fn tool_result(call_id: impl Into<String>, text: impl Into<String>) -> Self {
        Message { tool_call_id: Some(call_id.into()), ..Self::plain(Role::Tool, text) }
    }

    fn plain(role: Role, text: impl Into<String>) -> Self {
        Message {
            role,
            content: Some(text.into()),
            tool_calls: Vec::new(),
            tool_call_id: None,
            reasoning_content: None,
            images: Vec::new(),
        }
    }

    pub fn text(&self) -> &str {
        self.content.as_deref().unwrap_or("")
    }
}

/// A tool as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<Message>,
    /// Empty: the request carries no `tools` field. Shared, since the same
    /// specs go out with every call of a turn.
    pub tools: std::sync::Arc<[ToolSpec]>,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
    /// The answer must call a tool (`tool_choice: "required"` on the wire). Only meaningful with
    /// `tools`; a provider that refuses it answers [`LlmError::ToolChoiceRefused`].
    pub require_tool: bool,
    /// Where the model stops writing (`stop` on the wire, at most four strings): the end of
    /// what the engine asked for, so that the model does not go on past it. Empty: no `stop`
    /// field. A provider that refuses the field is asked again without it.
    pub stop: Vec<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// The model's answer to one request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatResponse {
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub reasoning_content: Option<String>,
    pub usage: Usage,
    pub finish_reason: Option<String>,
}

/// A piece of a streamed answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamDelta {
    Text(String),
    Reasoning(String),
}

/// Receives stream deltas as they arrive.
pub type DeltaSink<'a> = &'a (dyn Fn(StreamDelta) + Send + Sync);

/// A chat model behind some API.
#[async_trait]
pub trait Provider: Send + Sync {
    /// One non-streaming completion (with the provider's own retries).
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError>;

    /// One streaming completion: `on_delta` sees text as it arrives; the
    /// assembled response (tool calls included) is returned at the end.
    async fn chat_stream(&self, request: &ChatRequest, on_delta: DeltaSink<'_>) -> Result<ChatResponse, LlmError> {
        let response = self.chat(request).await?;
        if let Some(text) = &response.content {
            on_delta(StreamDelta::Text(text.clone()));
        }
        Ok(response)
    }

    /// Whether requests may carry `require_tool` (`tool_choice: "required"`): false once the
    /// server refused it.
    fn accepts_tool_choice(&self) -> bool {
        true
    }

    /// The context window of `model` as the server reports it, asked at most once per provider
    /// (`context.rs`); `None` when the server does not say.
    async fn context_window(&self, _model: &str) -> Option<ContextWindow> {
        None
    }
}
