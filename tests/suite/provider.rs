//! The OpenAI-compatible client: wire format, retries and typed errors.

use std::time::{Duration, Instant};

use routines::config::Autonomy;
use routines::llm::{ChatRequest, LlmError, Message, OpenAiProvider, Provider, ToolSpec};
use serde_json::json;

use crate::common::mock_llm::{MockLlm, drop_connection, error, hang, malformed, text, tool_call};
use crate::common::{Harness, provider_options};

fn request() -> ChatRequest {
    ChatRequest {
        model: "mock-model".into(),
        messages: vec![Message::system("## Identity\nx"), Message::user("hi")],
        tools: vec![ToolSpec {
            name: "self_info".into(),
            description: "who".into(),
            parameters: json!({"type": "object", "properties": {}}),
        }]
        .into(),
        temperature: Some(0.2),
        max_tokens: Some(64),
        require_tool: false,
        stop: Vec::new(),
    }
}

fn client(mock: &MockLlm, retries: u32, timeout: Duration) -> OpenAiProvider {
    let mut o = provider_options(mock);
    o.retry.max_retries = retries;
    o.timeout = timeout;
    OpenAiProvider::new(o).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sends_the_wire_format_with_the_key_and_reads_usage() {
    let mock = MockLlm::start().await;
    mock.push(text("hello").with_usage(12, 3));
    let r = client(&mock, 0, Duration::from_secs(5)).chat(&request()).await.unwrap();
    assert_eq!(r.content.as_deref(), Some("hello"));
    assert_eq!((r.usage.prompt_tokens, r.usage.completion_tokens), (12, 3));
    let body = &mock.requests()[0];
    assert_eq!(body["model"], "mock-model");
    assert_eq!(body["temperature"], json!(0.2f32));
    assert_eq!(body["max_tokens"], 64);
    assert_eq!(body["tools"][0]["function"]["name"], "self_info");
    assert!(body.get("stream").is_none());
    let headers = &mock.request_headers()[0];
    assert!(headers.iter().any(|(k, v)| k == "authorization" && v == "Bearer sk-test-key"));
    mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assembles_streamed_tool_call_deltas() {
    let mock = MockLlm::start().await;
    mock.push(tool_call("file_read", json!({"path": "some/long/path/name.txt", "limit": 10})).with_content("Reading."));
    let seen = std::sync::Mutex::new(String::new());
    let sink = |d: routines::llm::StreamDelta| {
        if let routines::llm::StreamDelta::Text(t) = d {
            seen.lock().unwrap().push_str(&t);
        }
    };
    let r = client(&mock, 0, Duration::from_secs(5)).chat_stream(&request(), &sink).await.unwrap();
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(r.tool_calls[0].name, "file_read");
    let args: serde_json::Value = serde_json::from_str(&r.tool_calls[0].arguments).unwrap();
    assert_eq!(args, json!({"path": "some/long/path/name.txt", "limit": 10}));
    assert_eq!(*seen.lock().unwrap(), "Reading.");
    assert_eq!(r.usage.prompt_tokens, 10, "usage arrives in the include_usage chunk");
    assert_eq!(mock.requests()[0]["stream_options"]["include_usage"], json!(true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn honours_retry_after_on_429() {
    let mock = MockLlm::start().await;
    mock.push_all([error(429, "slow down").with_header("Retry-After", "1"), text("ok")]);
    let started = Instant::now();
    let r = client(&mock, 2, Duration::from_secs(5)).chat(&request()).await.unwrap();
    assert_eq!(r.content.as_deref(), Some("ok"));
    assert_eq!(mock.request_count(), 2);
    assert!(started.elapsed() >= Duration::from_secs(1), "waited only {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_server_errors_malformed_bodies_and_dropped_connections() {
    let mock = MockLlm::start().await;
    mock.push_all([error(500, "boom"), malformed(), drop_connection(), text("finally")]);
    let r = client(&mock, 3, Duration::from_secs(5)).chat(&request()).await.unwrap();
    assert_eq!(r.content.as_deref(), Some("finally"));
    assert_eq!(mock.request_count(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gives_up_after_max_retries_with_the_last_error() {
    let mock = MockLlm::start().await;
    mock.push_all([error(503, "overloaded"), error(503, "overloaded"), error(503, "still overloaded")]);
    let e = client(&mock, 2, Duration::from_secs(5)).chat(&request()).await.unwrap_err();
    assert_eq!(e.to_string(), "the model server failed (HTTP 503): still overloaded");
    assert_eq!(mock.request_count(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_response_times_out_and_is_retried() {
    let mock = MockLlm::start().await;
    mock.push_all([hang(), text("after the hang")]);
    let r = client(&mock, 1, Duration::from_millis(300)).chat(&request()).await.unwrap();
    assert_eq!(r.content.as_deref(), Some("after the hang"));
    mock.push(hang());
    let e = client(&mock, 0, Duration::from_millis(300)).chat(&request()).await.unwrap_err();
    assert!(matches!(e, LlmError::Timeout { .. }), "{e:?}");
    assert_eq!(e.to_string(), "no answer from the model within 0.3s; raise provider.timeout or check the server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_errors_are_not_retried_and_say_what_to_do() {
    let mock = MockLlm::start().await;
    mock.push(error(401, "invalid api key"));
    let e = client(&mock, 3, Duration::from_secs(5)).chat(&request()).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "the API key in $TEST_KEY was rejected (HTTP 401): invalid api key; set a valid key in $TEST_KEY"
    );
    assert_eq!(mock.request_count(), 1);

    mock.push(error(404, "model not found"));
    let e = client(&mock, 3, Duration::from_secs(5)).chat(&request()).await.unwrap_err();
    assert!(e.to_string().contains("check provider.base_url and provider.model (`mock-model`)"), "{e}");
    mock.push(error(400, "context too long"));
    let e = client(&mock, 3, Duration::from_secs(5)).chat(&request()).await.unwrap_err();
    assert_eq!(e.to_string(), "the model API refused the request (HTTP 400): context too long");
    assert_eq!(mock.request_count(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_is_named() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let mock = MockLlm::start().await;
    let mut o = provider_options(&mock);
    o.base_url = format!("http://{addr}/v1");
    o.retry.max_retries = 0;
    let e = OpenAiProvider::new(o).unwrap().chat(&request()).await.unwrap_err();
    assert!(e.to_string().starts_with(&format!("cannot reach the model API at http://{addr}/v1")), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_turn_leaves_the_history_unchanged() {
    let h = Harness::new().await;
    h.mock.push_all([text("first"), tool_call("self_info", json!({})), error(400, "bad")]);
    let mut agent = h.agent(Autonomy::Supervised, |_, p| p.retry.max_retries = 0);
    agent.process_message("one").await.unwrap();
    let before = agent.history().to_vec();
    let e = agent.process_message("two").await.unwrap_err();
    assert_eq!(e.to_string(), "the model API refused the request (HTTP 400): bad");
    assert_eq!(agent.history(), before.as_slice());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_refuses_stop_is_asked_again_without_it_from_then_on() {
    let mock = MockLlm::start().await;
    mock.push_all([
        error(400, "Unsupported parameter: 'stop' is not supported with this model."),
        text("first"),
        text("second"),
    ]);
    let provider = client(&mock, 0, Duration::from_secs(5));
    let mut with_stop = request();
    with_stop.stop = vec!["\n\n#".into()];
    assert_eq!(provider.chat(&with_stop).await.unwrap().content.as_deref(), Some("first"));
    assert_eq!(provider.chat(&with_stop).await.unwrap().content.as_deref(), Some("second"));
    let stops: Vec<Option<serde_json::Value>> = mock.requests().iter().map(|r| r.get("stop").cloned()).collect();
    assert_eq!(stops, vec![Some(json!(["\n\n#"])), None, None], "sent once, then never again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_bad_request_to_a_request_with_stop_is_not_sent_again() {
    let mock = MockLlm::start().await;
    mock.push_all([error(400, "context length exceeded"), text("ok")]);
    let provider = client(&mock, 3, Duration::from_secs(5));
    let mut with_stop = request();
    with_stop.stop = vec!["\n\n#".into()];
    let e = provider.chat(&with_stop).await.unwrap_err();
    assert!(matches!(e, LlmError::BadRequest { status: 400, .. }), "{e}");
    assert_eq!(mock.request_count(), 1);
    assert_eq!(provider.chat(&with_stop).await.unwrap().content.as_deref(), Some("ok"));
    assert_eq!(mock.requests()[1]["stop"], json!(["\n\n#"]), "still sent: the server did not refuse it");
}
