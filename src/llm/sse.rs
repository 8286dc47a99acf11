//! Server-sent events of a streamed completion, assembled into one answer.

use serde::Deserialize;
use serde_json::Value;

use super::wire::WireUsage;
use super::{ChatResponse, StreamDelta, ToolCall};

/// Splits a byte stream into SSE `data:` payloads.
#[derive(Debug, Default)]
pub struct SseParser {
    buf: String,
    data: Vec<String>,
}

impl SseParser {
    /// Feeds bytes; returns the payloads of the events completed by them.
    pub fn push(&mut self, chunk: &str) -> Vec<String> {
        self.buf.push_str(chunk);
        let mut out = Vec::new();
        while let Some(nl) = self.buf.find('\n') {
            let line: String = self.buf.drain(..=nl).collect();
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if !self.data.is_empty() {
                    out.push(self.data.join("\n"));
                    self.data.clear();
                }
            } else if let Some(rest) = line.strip_prefix("data:") {
                self.data.push(rest.strip_prefix(' ').unwrap_or(rest).to_string());
            }
            // `event:`, `id:`, `retry:` and `:` comments carry nothing we use.
        }
        out
    }

    /// Whatever event is left when the stream ends without a blank line.
    pub fn finish(&mut self) -> Option<String> {
        if let Some(rest) = self.buf.trim().strip_prefix("data:") {
            self.data.push(rest.trim_start().to_string());
        }
        self.buf.clear();
        (!self.data.is_empty()).then(|| std::mem::take(&mut self.data).join("\n"))
    }
}

#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Delta,
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Delta {
    content: Option<String>,
    reasoning_content: Option<String>,
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Debug, Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<usize>,
    id: Option<String>,
    function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
struct FunctionDelta {
    name: Option<String>,
    arguments: Option<Value>,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Builds one [`ChatResponse`] from the chunks of a stream.
#[derive(Debug, Default)]
pub struct Assembler {
    content: String,
    reasoning: String,
    calls: Vec<PartialCall>,
    usage: Option<WireUsage>,
    finish_reason: Option<String>,
    pub done: bool,
    /// Whether any text was handed to the caller (a retry would repeat it).
    pub emitted: bool,
}

impl Assembler {
    /// Applies one `data:` payload. Returns an error text for a payload that
    /// is not a valid chunk.
    pub fn apply(&mut self, payload: &str, on_delta: &(dyn Fn(StreamDelta) + Send + Sync)) -> Result<(), String> {
        if payload.trim() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let v: Value = serde_json::from_str(payload).map_err(|e| format!("chunk is not JSON ({e}): {payload:.120}"))?;
        if let Some(err) = v.get("error") {
            return Err(format!("the server reported an error mid-stream: {err}"));
        }
        let chunk: Chunk = serde_json::from_value(v).map_err(|e| format!("unexpected chunk shape ({e})"))?;
        if let Some(u) = chunk.usage {
            self.usage = Some(u);
        }
        for choice in chunk.choices {
            if let Some(r) = choice.finish_reason {
                self.finish_reason = Some(r);
            }
            let d = choice.delta;
            if let Some(r) = d.reasoning_content.filter(|s| !s.is_empty()) {
                self.reasoning.push_str(&r);
                on_delta(StreamDelta::Reasoning(r));
            }
            if let Some(t) = d.content.filter(|s| !s.is_empty()) {
                self.content.push_str(&t);
                self.emitted = true;
                on_delta(StreamDelta::Text(t));
            }
            for tc in d.tool_calls.unwrap_or_default() {
                let index = tc.index.unwrap_or(self.calls.len().saturating_sub(1));
                while self.calls.len() <= index {
                    self.calls.push(PartialCall::default());
                }
                let call = &mut self.calls[index];
                if let Some(id) = tc.id.filter(|s| !s.is_empty()) {
                    call.id = id;
                }
                if let Some(f) = tc.function {
                    if let Some(n) = f.name {
                        call.name.push_str(&n);
                    }
                    match f.arguments {
                        Some(Value::String(s)) => call.arguments.push_str(&s),
                        Some(Value::Null) | None => {}
                        Some(other) => call.arguments.push_str(&other.to_string()),
                    }
                }
            }
        }
        Ok(())
    }

    pub fn finish(self) -> ChatResponse {
        let tool_calls = self
            .calls
            .into_iter()
            .enumerate()
            .filter(|(_, c)| !c.name.is_empty())
            .map(|(i, c)| ToolCall {
                id: if c.id.is_empty() { format!("call_{i}") } else { c.id },
                name: c.name,
                arguments: if c.arguments.trim().is_empty() { "{}".into() } else { c.arguments },
            })
            .collect();
        ChatResponse {
            content: (!self.content.is_empty()).then_some(self.content),
            tool_calls,
            reasoning_content: (!self.reasoning.is_empty()).then_some(self.reasoning),
            usage: self.usage.map(Into::into).unwrap_or_default(),
            finish_reason: self.finish_reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn splits_events_across_arbitrary_chunk_boundaries() {
        let mut p = SseParser::default();
        assert!(p.push("data: {\"a\"").is_empty());
        assert_eq!(p.push(":1}\r\n\r\n: comment\n\ndata: [DO"), vec!["{\"a\":1}".to_string()]);
        assert_eq!(p.push("NE]\n\n"), vec!["[DONE]".to_string()]);
        assert_eq!(p.finish(), None);
    }

    #[test]
    fn assembles_tool_call_deltas_and_text() {
        let seen = Mutex::new(Vec::new());
        let sink = |d: StreamDelta| seen.lock().unwrap().push(d);
        let mut a = Assembler::default();
        let chunks = [
            r#"{"choices":[{"delta":{"role":"assistant","reasoning_content":"think"}}]}"#,
            r#"{"choices":[{"delta":{"content":"Hel"}}]}"#,
            r#"{"choices":[{"delta":{"content":"lo"}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"file_read","arguments":"{\"pa"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":\"a\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"c2","function":{"name":"self_info","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3}}"#,
            "[DONE]",
        ];
        for c in chunks {
            a.apply(c, &sink).unwrap();
        }
        assert!(a.done);
        let r = a.finish();
        assert_eq!(r.content.as_deref(), Some("Hello"));
        assert_eq!(r.reasoning_content.as_deref(), Some("think"));
        assert_eq!(
            r.tool_calls,
            vec![
                ToolCall { id: "c1".into(), name: "file_read".into(), arguments: "{\"path\":\"a\"}".into() },
                ToolCall { id: "c2".into(), name: "self_info".into(), arguments: "{}".into() },
            ]
        );
        assert_eq!((r.usage.prompt_tokens, r.usage.completion_tokens), (7, 3));
        assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(seen.lock().unwrap()[1], StreamDelta::Text("Hel".into()));
    }

    #[test]
    fn reports_a_broken_chunk() {
        let mut a = Assembler::default();
        let err = a.apply("{not json", &|_| {}).unwrap_err();
        assert!(err.starts_with("chunk is not JSON"), "{err}");
    }
}
