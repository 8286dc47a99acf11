//! The OpenAI chat-completions wire format, as sent and received.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{ChatRequest, Message, Role, ToolCall, Usage};

pub fn request_body(req: &ChatRequest, stream: bool) -> Value {
    let messages: Vec<Value> = req.messages.iter().map(message).collect();
    let mut body = json!({ "model": req.model, "messages": messages });
    if let Some(t) = req.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(m) = req.max_tokens {
        body["max_tokens"] = json!(m);
    }
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters,
                }})
            })
            .collect();
        body["tools"] = json!(tools);
        if req.require_tool {
            body["tool_choice"] = json!("required");
        }
    }
    if !req.stop.is_empty() {
        body["stop"] = json!(req.stop);
    }
    if stream {
        body["stream"] = json!(true);
        body["stream_options"] = json!({ "include_usage": true });
    }
    body
}

fn message(m: &Message) -> Value {
    let role = match m.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    // A user message with images is the content-parts form; every other message keeps plain
    // string content, which every OpenAI-compatible server takes.
    let content = if m.images.is_empty() {
        json!(m.content)
    } else {
        let mut parts = vec![json!({"type": "text", "text": m.content.as_deref().unwrap_or("")})];
        parts.extend(m.images.iter().map(|i| json!({"type": "image_url", "image_url": {"url": i.data_url()}})));
        Value::Array(parts)
    };
    let mut v = json!({ "role": role, "content": content });
    if !m.tool_calls.is_empty() {
        let calls: Vec<Value> = m
            .tool_calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
            .collect();
        v["tool_calls"] = json!(calls);
    }
    if let Some(id) = &m.tool_call_id {
        v["tool_call_id"] = json!(id);
    }
    if let Some(r) = &m.reasoning_content {
        v["reasoning_content"] = json!(r);
    }
    v
}

#[derive(Debug, Deserialize)]
pub struct Completion {
    #[serde(default)]
    pub choices: Vec<Choice>,
    pub usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
pub struct Choice {
    pub message: WireMessage,
    pub finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct WireMessage {
    pub content: Option<String>,
    #[serde(default)]
    pub tool_calls: Option<Vec<WireToolCall>>,
    pub reasoning_content: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct WireToolCall {
    #[serde(default)]
    pub id: Option<String>,
    pub function: WireFunction,
}

#[derive(Debug, Deserialize)]
pub struct WireFunction {
    pub name: String,
    /// Usually a JSON string; some servers send an object.
    #[serde(default)]
    pub arguments: Option<Value>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize, Serialize)]
pub struct WireUsage {
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
}

impl From<WireUsage> for Usage {
    fn from(u: WireUsage) -> Self {
        Usage { prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens }
    }
}

/// Arguments as JSON text, whatever form the server used.
pub fn arguments_text(v: Option<Value>) -> String {
    match v {
        None | Some(Value::Null) => "{}".into(),
        Some(Value::String(s)) => s,
        Some(other) => other.to_string(),
    }
}

pub fn tool_calls(calls: Option<Vec<WireToolCall>>) -> Vec<ToolCall> {
    calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, c)| ToolCall {
            id: c.id.filter(|s| !s.is_empty()).unwrap_or_else(|| format!("call_{i}")),
            name: c.function.name,
            arguments: arguments_text(c.function.arguments),
        })
        .collect()
}

/// The message of an OpenAI error body, or the body itself.
pub fn error_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let msg = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("error"))
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    let text = msg.unwrap_or_else(|| body.trim().to_string());
    let mut out: String = text.chars().take(300).collect();
    if out.is_empty() {
        out = "(empty body)".into();
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::llm::Image;

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

    #[test]
    fn a_user_message_with_images_becomes_content_parts() {
        let mut user = Message::user("What is on this screenshot?");
        user.images = vec![Image { media_type: "image/png", base64: "iVBORw0KGgo=".into() }];
        let body = request_body(&request(vec![Message::system("s"), user, Message::assistant("a")]), false);
        assert_eq!(body["messages"][0], json!({"role": "system", "content": "s"}));
        assert_eq!(
            body["messages"][1],
            json!({"role": "user", "content": [
                {"type": "text", "text": "What is on this screenshot?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            ]})
        );
        // Everything else keeps plain string content.
        assert_eq!(body["messages"][2], json!({"role": "assistant", "content": "a"}));
        let plain = request_body(&request(vec![Message::user("hi")]), false);
        assert_eq!(plain["messages"][0], json!({"role": "user", "content": "hi"}));
    }
}
