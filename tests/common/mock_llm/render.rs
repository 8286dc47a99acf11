//! The completion a client receives: one JSON body, or the SSE chunks of a stream.

use serde_json::{Value, json};

use super::reply::Completion;

pub(super) struct RenderCtx {
    pub(super) id: String,
    pub(super) created: u64,
    pub(super) model: String,
    pub(super) include_usage: bool,
}

fn finish_reason(c: &Completion) -> &str {
    match &c.finish_reason {
        Some(reason) => reason,
        None if c.calls.is_empty() => "stop",
        None => "tool_calls",
    }
}

fn usage_json(c: &Completion) -> Value {
    json!({
        "prompt_tokens": c.usage.0,
        "completion_tokens": c.usage.1,
        "total_tokens": c.usage.0 + c.usage.1,
    })
}

pub(super) fn completion_json(c: &Completion, call_ids: &[String], ctx: &RenderCtx) -> Value {
    let mut message = json!({"role": "assistant", "content": c.content});
    if !c.calls.is_empty() {
        message["tool_calls"] = c
            .calls
            .iter()
            .zip(call_ids)
            .map(|(call, id)| {
                json!({
                    "id": id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                })
            })
            .collect();
    }
    if let Some(reasoning) = &c.reasoning {
        message["reasoning_content"] = json!(reasoning);
    }
    json!({
        "id": ctx.id,
        "object": "chat.completion",
        "created": ctx.created,
        "model": ctx.model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(c)}],
        "usage": usage_json(c),
    })
}

/// Splits into `min(chars, 3)` pieces on char boundaries (one empty piece for "").
fn pieces(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    if chars.len() <= 1 {
        return vec![s.to_string()];
    }
    let size = chars.len().div_ceil(3);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

pub(super) fn sse_events(c: &Completion, call_ids: &[String], ctx: &RenderCtx) -> Vec<String> {
    let chunk = |delta: Value, finish: Value| {
        let mut v = json!({
            "id": ctx.id,
            "object": "chat.completion.chunk",
            "created": ctx.created,
            "model": ctx.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        });
        if ctx.include_usage {
            v["usage"] = Value::Null;
        }
        v.to_string()
    };
    let mut events = Vec::new();
    let first_content = if c.content.is_some() { json!("") } else { Value::Null };
    events.push(chunk(json!({"role": "assistant", "content": first_content}), Value::Null));
    if let Some(reasoning) = &c.reasoning {
        for piece in pieces(reasoning) {
            events.push(chunk(json!({"reasoning_content": piece}), Value::Null));
        }
    }
    if let Some(content) = c.content.as_deref().filter(|s| !s.is_empty()) {
        for piece in pieces(content) {
            events.push(chunk(json!({"content": piece}), Value::Null));
        }
    }
    for (i, (call, id)) in c.calls.iter().zip(call_ids).enumerate() {
        for (p, piece) in pieces(&call.arguments).into_iter().enumerate() {
            let delta = if p == 0 {
                json!({"index": i, "id": id, "type": "function",
                       "function": {"name": call.name, "arguments": piece}})
            } else {
                json!({"index": i, "function": {"arguments": piece}})
            };
            events.push(chunk(json!({"tool_calls": [delta]}), Value::Null));
        }
    }
    events.push(chunk(json!({}), json!(finish_reason(c))));
    if ctx.include_usage {
        events.push(
            json!({
                "id": ctx.id,
                "object": "chat.completion.chunk",
                "created": ctx.created,
                "model": ctx.model,
                "choices": [],
                "usage": usage_json(c),
            })
            .to_string(),
        );
    }
    events
}
