//! Tests of the mock LLM server itself, driven with a real HTTP client.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};

use crate::common::mock_llm::{
    self, MockLlm, drop_connection, error, hang, malformed, raw_tool_call_args, text, tool_call, tool_call_with_id,
    tool_calls,
};

fn client() -> reqwest::Client {
    reqwest::Client::new()
}

fn good_body(stream: bool) -> Value {
    json!({
        "model": "test-model",
        "stream": stream,
        "messages": [
            {"role": "system", "content": "You are a test.\n## Tools\nsome\n## Rules\nmore"},
            {"role": "user", "content": "hi"}
        ]
    })
}

async fn post(mock: &MockLlm, body: &Value) -> reqwest::Response {
    client()
        .post(format!("{}/chat/completions", mock.base_url()))
        .bearer_auth("sk-test")
        .json(body)
        .send()
        .await
        .expect("send")
}

/// Result of reading an SSE body: parsed `data:` payloads, whether `[DONE]` arrived, and
/// the transport error that ended the stream early, if any.
struct Sse {
    events: Vec<Value>,
    done: bool,
    error: Option<reqwest::Error>,
    raw_data: Vec<String>,
}

async fn read_sse(response: reqwest::Response) -> Sse {
    let mut sse = Sse { events: Vec::new(), done: false, error: None, raw_data: Vec::new() };
    let mut buf = String::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(bytes) => buf.push_str(std::str::from_utf8(&bytes).unwrap()),
            Err(e) => {
                sse.error = Some(e);
                break;
            }
        }
        while let Some(end) = buf.find("\n\n") {
            let event: String = buf.drain(..end + 2).collect();
            for line in event.lines() {
                let Some(data) = line.strip_prefix("data: ") else {
                    continue;
                };
                assert!(!sse.done, "data after [DONE]: {data}");
                sse.raw_data.push(data.to_string());
                if data == "[DONE]" {
                    sse.done = true;
                } else if let Ok(v) = serde_json::from_str(data) {
                    sse.events.push(v);
                }
            }
        }
    }
    sse
}

/// Reassembled streamed message.
#[derive(Debug, Default)]
struct Assembled {
    role: Option<String>,
    content: String,
    content_pieces: usize,
    reasoning: String,
    reasoning_pieces: usize,
    /// (id, name, arguments, number of argument pieces)
    calls: Vec<(String, String, String, usize)>,
    finish_reason: Option<String>,
    usage: Option<Value>,
}

fn assemble(events: &[Value]) -> Assembled {
    let mut a = Assembled::default();
    for event in events {
        assert_eq!(event["object"], "chat.completion.chunk");
        if let Some(usage) = event.get("usage").filter(|u| !u.is_null()) {
            assert_eq!(event["choices"], json!([]));
            a.usage = Some(usage.clone());
        }
        for choice in event["choices"].as_array().unwrap() {
            let delta = &choice["delta"];
            if let Some(role) = delta["role"].as_str() {
                assert!(a.role.is_none(), "role sent twice");
                a.role = Some(role.to_string());
            }
            if let Some(c) = delta["content"].as_str().filter(|c| !c.is_empty()) {
                a.content.push_str(c);
                a.content_pieces += 1;
            }
            if let Some(r) = delta["reasoning_content"].as_str() {
                a.reasoning.push_str(r);
                a.reasoning_pieces += 1;
            }
            for call in delta["tool_calls"].as_array().into_iter().flatten() {
                let index = call["index"].as_u64().unwrap() as usize;
                if index == a.calls.len() {
                    a.calls.push((
                        call["id"].as_str().expect("first delta has id").to_string(),
                        call["function"]["name"].as_str().unwrap().to_string(),
                        String::new(),
                        0,
                    ));
                } else {
                    assert!(call.get("id").is_none(), "later delta repeats id");
                    assert!(call["function"].get("name").is_none());
                }
                let slot = &mut a.calls[index];
                slot.2.push_str(call["function"]["arguments"].as_str().unwrap());
                slot.3 += 1;
            }
            if let Some(f) = choice["finish_reason"].as_str() {
                a.finish_reason = Some(f.to_string());
            }
        }
    }
    a
}

#[tokio::test]
async fn non_streaming_text() {
    let mock = MockLlm::start().await;
    assert!(mock.base_url().starts_with("http://127.0.0.1:"));
    assert!(mock.base_url().ends_with("/v1"));
    mock.push(text("Hello there").with_usage(42, 7));
    let response = post(&mock, &good_body(false)).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], "test-model");
    assert!(body["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert!(body["created"].is_u64());
    let choice = &body["choices"][0];
    assert_eq!(choice["index"], 0);
    assert_eq!(choice["finish_reason"], "stop");
    assert_eq!(choice["message"]["role"], "assistant");
    assert_eq!(choice["message"]["content"], "Hello there");
    assert!(choice["message"].get("tool_calls").is_none());
    assert!(choice["message"].get("reasoning_content").is_none());
    assert_eq!(body["usage"], json!({"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49}));
    assert_eq!(mock.request_count(), 1);
    assert_eq!(mock.requests()[0], good_body(false));
    let headers = &mock.request_headers()[0];
    assert!(headers.iter().any(|(k, v)| k == "authorization" && v == "Bearer sk-test"));
    mock.assert_clean();
}

#[tokio::test]
async fn non_streaming_tool_calls() {
    let mock = MockLlm::start().await;
    mock.push_all([
        tool_calls(vec![("read_file", json!({"path": "a.txt"})), ("list_dir", json!({"path": "."}))])
            .with_content("Let me look.")
            .with_reasoning("need files"),
        tool_call("read_file", json!({"path": "b.txt", "n": [1, 2]})),
        raw_tool_call_args("broken", "{\"path\": "),
        tool_call_with_id("my_id", "x", json!({})).with_finish_reason("length"),
    ]);

    let body: Value = post(&mock, &good_body(false)).await.json().await.unwrap();
    let message = &body["choices"][0]["message"];
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(message["content"], "Let me look.");
    assert_eq!(message["reasoning_content"], "need files");
    let calls = message["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["id"], "call_1");
    assert_eq!(calls[0]["type"], "function");
    assert_eq!(calls[0]["function"]["name"], "read_file");
    let args: Value =
        serde_json::from_str(calls[0]["function"]["arguments"].as_str().unwrap()).expect("arguments is a JSON string");
    assert_eq!(args, json!({"path": "a.txt"}));
    assert_eq!(calls[1]["id"], "call_2");

    let body: Value = post(&mock, &good_body(false)).await.json().await.unwrap();
    let message = &body["choices"][0]["message"];
    assert!(message["content"].is_null());
    assert!(message.get("content").is_some(), "content present as null");
    let call = &message["tool_calls"][0];
    assert_eq!(call["id"], "call_3", "ids unique across the server's life");
    let args: Value = serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"path": "b.txt", "n": [1, 2]}));

    let body: Value = post(&mock, &good_body(false)).await.json().await.unwrap();
    let raw = &body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"];
    assert_eq!(raw, "{\"path\": ");

    let body: Value = post(&mock, &good_body(false)).await.json().await.unwrap();
    assert_eq!(body["choices"][0]["message"]["tool_calls"][0]["id"], "my_id");
    assert_eq!(body["choices"][0]["finish_reason"], "length");
    mock.assert_clean();
}

#[tokio::test]
async fn streaming_text() {
    let mock = MockLlm::start().await;
    mock.push(text("The quick brown fox jumps over the lazy dog. Ünïcödé ✓"));
    let response = post(&mock, &good_body(true)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"].to_str().unwrap(), "text/event-stream");
    let sse = read_sse(response).await;
    assert!(sse.error.is_none());
    assert!(sse.done);
    assert_eq!(sse.raw_data.last().unwrap(), "[DONE]");
    assert_eq!(sse.events[0]["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(sse.events[0]["model"], "test-model");
    let a = assemble(&sse.events);
    assert_eq!(a.role.as_deref(), Some("assistant"));
    assert_eq!(a.content, "The quick brown fox jumps over the lazy dog. Ünïcödé ✓");
    assert!(a.content_pieces >= 2, "content split: {}", a.content_pieces);
    assert_eq!(a.finish_reason.as_deref(), Some("stop"));
    assert!(a.usage.is_none(), "no usage chunk without include_usage");
    assert!(a.calls.is_empty());
    assert!(sse.events.iter().all(|e| e.get("usage").is_none()));
    mock.assert_clean();
}

#[tokio::test]
async fn streaming_tool_calls_and_reasoning() {
    let mock = MockLlm::start().await;
    mock.push(text("warm-up"));
    mock.push(
        tool_calls(vec![("read_file", json!({"path": "src/main.rs", "lines": [1, 20]})), ("noargs", json!({}))])
            .with_reasoning("I should read the file first.")
            .with_content("Reading."),
    );
    let _ = post(&mock, &good_body(false)).await.text().await.unwrap();
    let sse = read_sse(post(&mock, &good_body(true)).await).await;
    assert!(sse.done && sse.error.is_none());
    let a = assemble(&sse.events);
    assert_eq!(a.reasoning, "I should read the file first.");
    assert!(a.reasoning_pieces >= 2);
    assert_eq!(a.content, "Reading.");
    assert_eq!(a.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(a.calls.len(), 2);
    let (id, name, args, pieces) = &a.calls[0];
    assert_eq!((id.as_str(), name.as_str()), ("call_1", "read_file"));
    assert!(*pieces >= 2, "arguments split into {pieces} pieces");
    let args: Value = serde_json::from_str(args).unwrap();
    assert_eq!(args, json!({"path": "src/main.rs", "lines": [1, 20]}));
    let (id, name, args, pieces) = &a.calls[1];
    assert_eq!((id.as_str(), name.as_str(), args.as_str()), ("call_2", "noargs", "{}"));
    assert!(*pieces >= 2);
    // The reply has text, so the first delta carries `content: ""`.
    assert_eq!(sse.events[0]["choices"][0]["delta"]["content"], "");

    // Tool-call-only reply: first delta has content null.
    mock.push(tool_call("x", json!({"a": 1})));
    let sse = read_sse(post(&mock, &good_body(true)).await).await;
    assert!(sse.events[0]["choices"][0]["delta"]["content"].is_null());
    assert_eq!(assemble(&sse.events).calls[0].0, "call_3");
    mock.assert_clean();
}

#[tokio::test]
async fn streaming_include_usage() {
    let mock = MockLlm::start().await;
    mock.push(text("counted").with_usage(100, 20));
    let mut body = good_body(true);
    body["stream_options"] = json!({"include_usage": true});
    let sse = read_sse(post(&mock, &body).await).await;
    assert!(sse.done);
    let last = sse.events.last().unwrap();
    assert_eq!(last["choices"], json!([]));
    assert_eq!(last["usage"], json!({"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}));
    for e in &sse.events[..sse.events.len() - 1] {
        assert!(e["usage"].is_null());
    }
    let a = assemble(&sse.events);
    assert_eq!(a.content, "counted");
    assert!(a.usage.is_some());
    mock.assert_clean();
}

#[tokio::test]
async fn error_with_retry_after() {
    let mock = MockLlm::start().await;
    mock.push(error(429, "slow down").with_header("Retry-After", "2"));
    mock.push(error(503, "overloaded"));
    let response = post(&mock, &good_body(false)).await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "2");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["message"], "slow down");
    assert!(body["error"]["type"].is_string());
    assert!(body["error"].get("code").is_some());

    // Streaming requests get the same plain JSON error.
    let response = post(&mock, &good_body(true)).await;
    assert_eq!(response.status(), 503);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["message"], "overloaded");
    mock.assert_clean();
}

#[tokio::test]
async fn malformed_bodies() {
    let mock = MockLlm::start().await;
    mock.push_all([malformed(), malformed()]);
    let response = post(&mock, &good_body(false)).await;
    assert_eq!(response.status(), 200);
    let raw = response.text().await.unwrap();
    assert!(serde_json::from_str::<Value>(&raw).is_err());

    let sse = read_sse(post(&mock, &good_body(true)).await).await;
    assert!(sse.error.is_none());
    let first = &sse.raw_data[0];
    assert!(serde_json::from_str::<Value>(first).is_err(), "{first}");
    assert!(sse.events.is_empty());
    mock.assert_clean();
}

#[tokio::test]
async fn hang_times_out_and_ends_on_drop() {
    let mock = MockLlm::start().await;
    mock.push_all([hang(), hang()]);
    let err = client()
        .post(format!("{}/chat/completions", mock.base_url()))
        .timeout(Duration::from_millis(300))
        .json(&good_body(false))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err:?}");

    // A request without client timeout ends when the server is dropped.
    let url = format!("{}/chat/completions", mock.base_url());
    let pending = tokio::spawn(async move { client().post(url).json(&good_body(true)).send().await });
    mock.wait_for_requests(2).await;
    drop(mock);
    let result =
        tokio::time::timeout(Duration::from_secs(10), pending).await.expect("hung request ended after drop").unwrap();
    assert!(result.is_err(), "{result:?}");
}

#[tokio::test]
async fn drop_connection_is_a_send_error() {
    let mock = MockLlm::start().await;
    mock.push_all([drop_connection(), drop_connection(), text("still alive")]);
    for stream in [false, true] {
        let err = client()
            .post(format!("{}/chat/completions", mock.base_url()))
            .json(&good_body(stream))
            .send()
            .await
            .unwrap_err();
        assert!(!err.is_timeout());
        assert!(err.status().is_none());
        assert!(err.is_request(), "{err:?}");
    }
    // The server keeps serving afterwards.
    let body: Value = post(&mock, &good_body(false)).await.json().await.unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "still alive");
    assert_eq!(mock.request_count(), 3);
    mock.assert_clean();
}

#[tokio::test]
async fn abort_mid_body() {
    let mock = MockLlm::start().await;
    mock.push(text("a fairly long answer that will be cut").abort_mid_body());
    mock.push(text("a fairly long answer that will be cut").with_reasoning("thinking hard").abort_mid_body());
    let response = post(&mock, &good_body(false)).await;
    assert_eq!(response.status(), 200);
    assert!(response.bytes().await.is_err());

    let response = post(&mock, &good_body(true)).await;
    assert_eq!(response.status(), 200);
    let sse = read_sse(response).await;
    assert!(sse.error.is_some(), "stream must fail");
    assert!(!sse.done);
    assert!(!sse.events.is_empty(), "some events arrive before the cut");
    assert!(assemble(&sse.events).finish_reason.is_none());
    mock.assert_clean();
}

#[tokio::test]
async fn empty_queue_is_500_and_violation() {
    let mock = MockLlm::start().await;
    let response = post(&mock, &good_body(false)).await;
    assert_eq!(response.status(), 500);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["message"], "mock: no scripted reply left");
    let v = mock.violations();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].starts_with("request #0:") && v[0].contains("no scripted reply"));
}

#[tokio::test]
async fn models_endpoint() {
    let mock = MockLlm::start().await;
    let body: Value = client().get(format!("{}/models", mock.base_url())).send().await.unwrap().json().await.unwrap();
    assert_eq!(body["object"], "list");
    assert_eq!(body["data"][0]["id"], mock_llm::MOCK_MODEL);
    assert_eq!(mock.request_count(), 0);
    mock.assert_clean();
}

#[tokio::test]
async fn unexpected_path_is_a_violation() {
    let mock = MockLlm::start().await;
    let response =
        client().post(format!("{}/v1/chat/completions", mock.base_url())).json(&good_body(false)).send().await.unwrap();
    assert_eq!(response.status(), 404);
    assert!(mock.violations()[0].contains("/v1/v1/chat/completions"));
}

/// A realistic multi-turn conversation with tools that must pass every check.
fn good_conversation() -> Value {
    json!({
        "model": "m",
        "messages": [
            {"role": "system", "content": "Intro\n## Tools\nread_file\n## Rules\nbe nice\n"},
            {"role": "user", "content": "read a and b"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}},
                {"id": "call_2", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"b\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_2", "content": "B"},
            {"role": "tool", "tool_call_id": "call_1", "content": "A"},
            {"role": "assistant", "content": "both read"},
            {"role": "user", "content": "again"},
            {"role": "assistant", "content": "sure", "tool_calls": [
                {"id": "call_3", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_3", "content": [{"type": "text", "text": "C"}]}
        ],
        "tools": [{"type": "function", "function": {
            "name": "read_file", "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}
        }}],
        "stream": true,
        "stream_options": {"include_usage": true}
    })
}

#[tokio::test]
async fn assert_clean_passes_for_good_conversation() {
    let mock = MockLlm::start().await;
    mock.expect_sections(&["## Tools", "## Rules"]);
    mock.push(text("done"));
    let sse = read_sse(post(&mock, &good_conversation()).await).await;
    assert!(sse.done);
    assert!(mock.violations().is_empty(), "{:?}", mock.violations());
    mock.assert_clean();
}

/// Sends `body` (with a reply queued) and returns the violations it caused.
async fn violations_for(body: Value) -> Vec<String> {
    let mock = MockLlm::start().await;
    mock.push(text("ok"));
    let _ = post(&mock, &body).await.text().await.unwrap();
    mock.violations()
}

fn assert_violation(violations: &[String], needle: &str) {
    assert!(
        violations.iter().any(|v| v.contains(needle)),
        "expected a violation containing {needle:?}, got {violations:#?}"
    );
}

#[tokio::test]
async fn detects_orphan_tool_message() {
    let mut body = good_body(false);
    body["messages"].as_array_mut().unwrap().push(json!({"role": "tool", "tool_call_id": "call_9", "content": "x"}));
    let v = violations_for(body).await;
    assert_eq!(v.len(), 1, "{v:#?}");
    assert_violation(&v, "request #0: messages[2] (tool) is an orphan");
}

#[tokio::test]
async fn detects_unknown_tool_call_id() {
    let mut body = good_conversation();
    body["messages"][4]["tool_call_id"] = json!("call_nope");
    let v = violations_for(body).await;
    assert_violation(&v, "messages[4] (tool) tool_call_id \"call_nope\" does not match");
    // call_1 is then left unanswered.
    assert_violation(&v, "tool call(s) [\"call_1\"] of messages[2] (assistant) not answered");
}

#[tokio::test]
async fn detects_unanswered_and_duplicate_answers_and_bad_arguments() {
    let mut body = good_conversation();
    let messages = body["messages"].as_array_mut().unwrap();
    messages[7]["tool_calls"][0]["function"]["arguments"] = json!({"path": "a"});
    messages.pop(); // call_3 unanswered at the end
    messages.insert(5, json!({"role": "tool", "tool_call_id": "call_1", "content": "again"}));
    let v = violations_for(body).await;
    assert_violation(&v, "messages[5] (tool) answers tool call \"call_1\" a second time");
    assert_violation(&v, "messages[8].tool_calls[0] `function.arguments` must be a JSON-encoded string");
    assert_violation(&v, "[\"call_3\"] of messages[8] (assistant) not answered by a `tool` message before the end");
}

#[tokio::test]
async fn detects_missing_system_message_and_bad_shape() {
    let v = violations_for(json!({
        "model": 5,
        "messages": [{"role": "user", "content": "hi"}, {"role": "robot", "content": "x"}]
    }))
    .await;
    assert_violation(&v, "first message must have role `system`");
    assert_violation(&v, "`model` must be a non-empty string");
    assert_violation(&v, "messages[1] has invalid role \"robot\"");

    let v = violations_for(json!({"model": "m", "messages": []})).await;
    assert_violation(&v, "`messages` must be a non-empty array");

    let v = violations_for(json!("just a string")).await;
    assert_violation(&v, "body must be a JSON object");
}

#[tokio::test]
async fn detects_bad_tools() {
    let mut body = good_body(false);
    body["tools"] = json!([
        {"type": "function", "function": {"name": "ok", "description": "d", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "ok", "parameters": "{}"}},
        {"function": {"name": "bad name!", "description": "d", "parameters": {}}}
    ]);
    let v = violations_for(body).await;
    assert_violation(&v, "tools[1] repeats function name \"ok\"");
    assert_violation(&v, "tools[1] `function.description` must be a string");
    assert_violation(&v, "tools[1] `function.parameters` must be a JSON-schema object");
    assert_violation(&v, "tools[2] `type` must be \"function\"");
    assert_violation(&v, "tools[2] function name \"bad name!\"");
}

#[tokio::test]
async fn detects_sections_out_of_order_or_missing() {
    let mock = MockLlm::start().await;
    mock.push_all([text("a"), text("b"), text("c")]);
    // Not checked before expect_sections.
    let _ = post(&mock, &good_body(false)).await.text().await.unwrap();
    mock.expect_sections(&["## Rules", "## Tools"]);
    let _ = post(&mock, &good_body(false)).await.text().await.unwrap();
    mock.expect_sections(&["## Tools", "## Memory"]);
    let _ = post(&mock, &good_body(false)).await.text().await.unwrap();
    let v = mock.violations();
    assert_eq!(v.len(), 2, "{v:#?}");
    assert!(v[0].starts_with("request #1: system prompt sections out of order"));
    assert!(v[0].contains("## Tools (line 2)"), "{}", v[0]);
    assert!(v[1].starts_with("request #2: system prompt lacks section heading"));
    assert!(v[1].contains("## Memory"));
}

#[tokio::test]
async fn assert_clean_panics_listing_violations() {
    let mock = MockLlm::start().await;
    mock.push(text("x"));
    let _ = post(&mock, &json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}))
        .await
        .text()
        .await
        .unwrap();
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| mock.assert_clean()))
        .expect_err("assert_clean must panic");
    let message = panic.downcast_ref::<String>().unwrap();
    assert!(message.contains("1 violation"), "{message}");
    assert!(message.contains("request #0: first message must have role `system`"));
}

#[tokio::test]
async fn stream_options_without_stream_is_a_violation() {
    let mut body = good_body(false);
    body["stream_options"] = json!({"include_usage": true});
    let v = violations_for(body).await;
    assert_violation(&v, "`stream_options` is only allowed when `stream` is true");
}

#[tokio::test]
async fn wait_for_requests_with_concurrent_clients() {
    let mock = MockLlm::start().await;
    mock.push_all((0..3).map(|i| text(&format!("reply {i}")).with_delay(Duration::from_millis(50))));
    let url = format!("{}/chat/completions", mock.base_url());
    let tasks: Vec<_> = (0..3)
        .map(|_| {
            let url = url.clone();
            tokio::spawn(async move {
                let body: Value =
                    client().post(url).json(&good_body(false)).send().await.unwrap().json().await.unwrap();
                body["choices"][0]["message"]["content"].as_str().unwrap().to_string()
            })
        })
        .collect();
    mock.wait_for_requests(3).await;
    assert_eq!(mock.request_count(), 3);
    assert_eq!(mock.remaining_replies(), 0);
    let mut replies = Vec::new();
    for t in tasks {
        replies.push(t.await.unwrap());
    }
    replies.sort();
    assert_eq!(replies, ["reply 0", "reply 1", "reply 2"]);
    // Already satisfied: resolves at once.
    mock.wait_for_requests(2).await;
    mock.assert_clean();
}

#[tokio::test]
async fn wait_for_requests_times_out_with_clear_message() {
    let mock = MockLlm::start().await;
    let waited = tokio::spawn(async move {
        mock.wait_for_requests_timeout(1, Duration::from_millis(50)).await;
    })
    .await;
    let panic = waited.unwrap_err().into_panic();
    let message = panic.downcast_ref::<String>().unwrap();
    assert!(message.contains("waiting for 1 request(s); 0 arrived"), "{message}");
}

/// The same failure modes on a multi-threaded runtime, with the exact error kinds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failure_modes_on_multi_thread_runtime() {
    let mock = MockLlm::start().await;
    mock.push_all([
        drop_connection(),
        text("abc def ghi").abort_mid_body(),
        text("abc def ghi").abort_mid_body(),
        hang(),
    ]);
    let err = client()
        .post(format!("{}/chat/completions", mock.base_url()))
        .json(&good_body(false))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_request() && !err.is_timeout(), "{err:?}");

    let err = post(&mock, &good_body(false)).await.bytes().await.unwrap_err();
    assert!(err.is_decode(), "{err:?}");

    let sse = read_sse(post(&mock, &good_body(true)).await).await;
    let err = sse.error.expect("stream error");
    assert!(err.is_decode(), "{err:?}");

    let url = format!("{}/chat/completions", mock.base_url());
    let pending = tokio::spawn(async move { client().post(url).json(&good_body(true)).send().await });
    mock.wait_for_requests(4).await;
    drop(mock);
    let err = tokio::time::timeout(Duration::from_secs(10), pending)
        .await
        .expect("hung request ended after drop")
        .unwrap()
        .unwrap_err();
    assert!(err.is_request(), "{err:?}");
}
