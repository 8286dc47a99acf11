//! The HTTP handlers: chat completions (JSON or SSE), the model list, and a fallback
//! that records any other request as a violation.

use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::Response;
use futures::StreamExt;
use serde_json::{Value, json};

use super::checks::validate;
use super::conn::{ConnInfo, aborted};
use super::render::{RenderCtx, completion_json, sse_events};
use super::reply::{Kind, Reply};
use super::{MOCK_MODEL, Shared};

pub(super) async fn models(State(shared): State<Arc<Shared>>) -> Response {
    let mut entry = json!({"id": MOCK_MODEL, "object": "model", "created": 0, "owned_by": "mock"});
    let len = {
        let mut state = shared.state();
        state.context_questions += 1;
        state.max_model_len
    };
    if let Some(len) = len {
        entry["max_model_len"] = json!(len);
    }
    json_response(StatusCode::OK, &json!({"object": "list", "data": [entry]}))
}

/// llama.cpp's `GET /props`, when a test set `n_ctx`; else the 404 of other servers.
pub(super) async fn props(State(shared): State<Arc<Shared>>) -> Response {
    let n_ctx = {
        let mut state = shared.state();
        state.context_questions += 1;
        state.n_ctx
    };
    match n_ctx {
        Some(n) => json_response(
            StatusCode::OK,
            &json!({"default_generation_settings": {"n_ctx": n, "temperature": 0.8}, "total_slots": 1}),
        ),
        None => error_response(404, "File Not Found", &[]),
    }
}

pub(super) async fn fallback(State(shared): State<Arc<Shared>>, method: Method, uri: Uri) -> Response {
    let message = format!("mock: unexpected request {method} {uri}");
    shared.state().violations.push(message.clone());
    error_response(404, &message, &[])
}

/// A reply taken from the queue, with everything decided under the lock.
struct Planned {
    index: usize,
    reply: Option<Reply>,
    call_ids: Vec<String>,
    stream: bool,
    include_usage: bool,
    model: String,
}

pub(super) async fn chat(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(conn): ConnectInfo<ConnInfo>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let plan = plan(&shared, &headers, &body);
    let Some(reply) = plan.reply else {
        return error_response(500, "mock: no scripted reply left", &[]);
    };
    let mut shutdown = shared.shutdown_tx.subscribe();
    if let Some(mut gate) = reply.gate.clone() {
        tokio::select! {
            _ = gate.wait_for(|open| *open) => {}
            _ = shutdown.wait_for(|down| *down) => {
                conn.kill.kill();
                return error_response(503, "mock: shutting down", &[]);
            }
        }
    }
    if let Some(delay) = reply.delay {
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = shutdown.wait_for(|down| *down) => {
                conn.kill.kill();
                return error_response(503, "mock: shutting down", &[]);
            }
        }
    }
    match reply.kind {
        Kind::Hang => {
            let _ = shutdown.wait_for(|down| *down).await;
            conn.kill.kill();
            // Never reaches the client: the connection is already cut.
            error_response(503, "mock: shutting down", &[])
        }
        Kind::DropConnection => {
            conn.kill.kill();
            // Never reaches the client: writing to a cut connection fails.
            error_response(500, "mock: connection dropped", &[])
        }
        Kind::Error { status, message } => error_response(status, &message, &reply.headers),
        Kind::Huge { bytes } => huge_response(bytes, plan.stream),
        Kind::Malformed => {
            let (content_type, bytes) = if plan.stream {
                (
                    "text/event-stream",
                    "data: {\"id\":\"chatcmpl-broken\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"oops\"\n\ndata: [DONE]\n\n",
                )
            } else {
                (
                    "application/json",
                    "{\"id\":\"chatcmpl-broken\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,",
                )
            };
            let mut response = Response::new(Body::from(bytes));
            set_header(&mut response, "content-type", content_type);
            add_headers(&mut response, &reply.headers);
            response
        }
        Kind::Completion(completion) => {
            let ctx = RenderCtx {
                id: format!("chatcmpl-mock-{}", plan.index + 1),
                created: shared.created,
                model: plan.model,
                include_usage: plan.include_usage,
            };
            let mut response = if plan.stream {
                let mut events: Vec<Bytes> = sse_events(&completion, &plan.call_ids, &ctx)
                    .into_iter()
                    .map(|e| Bytes::from(format!("data: {e}\n\n")))
                    .collect();
                let body = if reply.abort_mid_body {
                    // Keep at most the first half, never the finish chunk / usage / [DONE].
                    events.truncate((events.len() / 2).max(1));
                    aborting_body(events)
                } else {
                    events.push(Bytes::from_static(b"data: [DONE]\n\n"));
                    Body::from_stream(futures::stream::iter(events.into_iter().map(Ok::<Bytes, io::Error>)))
                };
                let mut r = Response::new(body);
                set_header(&mut r, "content-type", "text/event-stream");
                set_header(&mut r, "cache-control", "no-cache");
                r
            } else {
                let full = completion_json(&completion, &plan.call_ids, &ctx).to_string();
                let body = if reply.abort_mid_body {
                    let half = full.len() / 2;
                    aborting_body(vec![Bytes::from(full.as_bytes()[..half].to_vec())])
                } else {
                    Body::from(full)
                };
                let mut r = Response::new(body);
                set_header(&mut r, "content-type", "application/json");
                r
            };
            add_headers(&mut response, &reply.headers);
            response
        }
    }
}

/// Records and checks the request, takes the next reply and assigns tool-call ids, all
/// under one lock so request N always gets reply N.
fn plan(shared: &Shared, headers: &HeaderMap, body: &[u8]) -> Planned {
    let mut st = shared.state();
    let index = st.requests.len();
    let mut problems = Vec::new();
    let value = match serde_json::from_slice::<Value>(body) {
        Ok(v) => {
            validate(&v, st.sections.as_deref(), &mut problems);
            v
        }
        Err(e) => {
            problems.push(format!("body is not valid JSON ({e})"));
            Value::String(String::from_utf8_lossy(body).into_owned())
        }
    };
    let stream = value.get("stream") == Some(&Value::Bool(true));
    let include_usage = value.pointer("/stream_options/include_usage") == Some(&Value::Bool(true));
    let model = value.get("model").and_then(Value::as_str).unwrap_or(MOCK_MODEL).to_string();
    if st.refuse_tool_choice && value.get("tool_choice").is_some() {
        st.violations.extend(problems.into_iter().map(|p| format!("request #{index}: {p}")));
        st.requests.push(value);
        st.headers.push(header_pairs(headers));
        shared.count_tx.send_replace(index + 1);
        let refusal = super::reply::error(400, "\"tool_choice\" is not supported by this server");
        return Planned { index, reply: Some(refusal), call_ids: Vec::new(), stream, include_usage, model };
    }
    let reply = st.queue.pop_front();
    if reply.is_none() {
        problems.push("no scripted reply left (queue empty); answered HTTP 500".to_string());
    }
    let call_ids = match &reply {
        Some(Reply { kind: Kind::Completion(c), .. }) => c
            .calls
            .iter()
            .map(|call| {
                call.id
                    .clone()
                    .unwrap_or_else(|| format!("call_{}", shared.next_call_id.fetch_add(1, Ordering::SeqCst)))
            })
            .collect(),
        _ => Vec::new(),
    };
    st.violations.extend(problems.into_iter().map(|p| format!("request #{index}: {p}")));
    st.requests.push(value);
    st.headers.push(header_pairs(headers));
    // Publish while still holding the lock so the count only ever grows.
    shared.count_tx.send_replace(index + 1);
    Planned { index, reply, call_ids, stream, include_usage, model }
}

/// A completion of `bytes` bytes of text, generated piece by piece as it is sent.
fn huge_response(bytes: usize, stream: bool) -> Response {
    const PIECE: usize = 64 * 1024;
    let pieces = bytes.div_ceil(PIECE);
    // Words drawn by a small LCG: text that does not repeat (the agent cuts runaway repetition).
    let piece = move |i: usize| {
        let mut state = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut out = String::with_capacity(PIECE);
        while out.len() < PIECE.min(bytes - i * PIECE) {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            out.push(if (state >> 60) == 0 { ' ' } else { char::from(b'a' + ((state >> 33) % 26) as u8) });
        }
        out
    };
    let (head, tail, content_type) = if stream {
        ("", "data: [DONE]\n\n".to_string(), "text/event-stream")
    } else {
        (
            r#"{"id":"chatcmpl-huge","object":"chat.completion","created":0,"model":"mock-model","choices":[{"index":0,"message":{"role":"assistant","content":""#,
            r#""},"finish_reason":"stop"}]}"#.to_string(),
            "application/json",
        )
    };
    let body = futures::stream::once(async move { head.to_string() })
        .chain(futures::stream::iter(0..pieces).map(move |i| {
            if stream {
                let delta = json!({"choices": [{"index": 0, "delta": {"content": piece(i)}, "finish_reason": null}]});
                format!("data: {delta}\n\n")
            } else {
                piece(i)
            }
        }))
        .chain(futures::stream::once(async move { tail }))
        .map(|s| Ok::<Bytes, io::Error>(Bytes::from(s)));
    let mut response = Response::new(Body::from_stream(body));
    set_header(&mut response, "content-type", content_type);
    response
}

/// The headers of a request, by lower-case name.
fn header_pairs(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| (name.as_str().to_string(), String::from_utf8_lossy(value.as_bytes()).into_owned()))
        .collect()
}

/// A body that sends `parts`, pauses briefly so they are flushed, then fails, which makes
/// hyper cut the connection mid-body.
fn aborting_body(parts: Vec<Bytes>) -> Body {
    let data = futures::stream::iter(parts.into_iter().map(Ok::<Bytes, io::Error>));
    let fail = futures::stream::once(async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        Err::<Bytes, io::Error>(aborted())
    });
    Body::from_stream(data.chain(fail))
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    set_header(&mut response, "content-type", "application/json");
    response
}

fn error_response(status: u16, message: &str, headers: &[(String, String)]) -> Response {
    let (kind, code) = match status {
        401 => ("invalid_request_error", json!("invalid_api_key")),
        403 => ("permission_error", Value::Null),
        404 => ("invalid_request_error", json!("model_not_found")),
        429 => ("rate_limit_exceeded", json!("rate_limit_exceeded")),
        500..=599 => ("server_error", Value::Null),
        _ => ("invalid_request_error", Value::Null),
    };
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response =
        json_response(status, &json!({"error": {"message": message, "type": kind, "param": null, "code": code}}));
    add_headers(&mut response, headers);
    response
}

fn set_header(response: &mut Response, name: &str, value: &str) {
    response
        .headers_mut()
        .insert(HeaderName::from_bytes(name.as_bytes()).unwrap(), HeaderValue::from_str(value).unwrap());
}

fn add_headers(response: &mut Response, headers: &[(String, String)]) {
    for (name, value) in headers {
        response
            .headers_mut()
            .append(HeaderName::from_bytes(name.as_bytes()).unwrap(), HeaderValue::from_str(value).unwrap());
    }
}
