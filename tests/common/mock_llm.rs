//! A scripted stand-in for an OpenAI-compatible chat-completions server.
//!
//! [`MockLlm::start`] binds a real HTTP server on `127.0.0.1:<random port>` that speaks
//! `POST /v1/chat/completions` (JSON or SSE, depending on the request's `"stream"` flag)
//! and `GET /v1/models`. Each chat request consumes the next scripted [`Reply`] (FIFO),
//! is recorded (body and headers), and is checked for protocol mistakes; every problem
//! found becomes a violation string (see [`MockLlm::violations`], [`MockLlm::assert_clean`]).
//!
//! What a client sees for the failure replies:
//! - [`error`]: the given HTTP status with `{"error":{"message","type","param","code"}}`
//!   (plus any [`Reply::with_header`] headers, e.g. `Retry-After`), in both modes.
//! - [`malformed`]: HTTP 200; non-streaming: an `application/json` body that is not JSON;
//!   streaming: `text/event-stream` with one `data:` line of broken JSON, then `data: [DONE]`.
//! - [`hang`]: the request is read and never answered; a client-side timeout fires.
//!   When the [`MockLlm`] is dropped the connection is closed, so the client gets a
//!   connection error (not a response).
//! - [`drop_connection`]: the connection is closed after the request was read and before
//!   any response byte is sent: `reqwest::RequestBuilder::send` returns `Err`
//!   (reqwest: `is_request()`, not `is_timeout()`, `status()` is `None`; source is hyper's
//!   `IncompleteMessage`, "connection closed before message completed").
//! - [`Reply::abort_mid_body`]: HTTP 200 and headers and part of the body are sent, then
//!   the connection is cut: `send()` succeeds, reading the body (`json()`, `bytes()`, or the
//!   SSE byte stream after a few events) fails with a reqwest error that `is_decode()`
//!   ("unexpected EOF during chunk size line"); no `finish_reason` chunk and no `[DONE]`.
//! - Empty queue: HTTP 500 with the error message "mock: no scripted reply left", and a
//!   violation.
//!
//! Only `POST /v1/chat/completions` requests are counted, recorded and checked; any other
//! path (except `GET /v1/models`) gets a 404 and records a violation.
//! Violation strings start with `request #N:` where N is the index into [`MockLlm::requests`].
//!
//! The server runs as tasks on the caller's Tokio runtime: with the default
//! `#[tokio::test]` (current-thread) runtime, do not block that thread (blocking I/O,
//! `std::thread::sleep`, `block_on`) while a request to the mock is in flight.
//!
//! Tool-call ids are generated when the reply is served: `call_1`, `call_2`, ... unique for
//! the server's life (use [`tool_call_with_id`] to choose one).
//!
//! Streaming format: first chunk `delta: {"role":"assistant","content":""}` (`content: null`
//! when the reply has no text), then `reasoning_content` pieces, `content` pieces, tool-call
//! deltas (first delta of call `i` carries `index`, `id`, `type`, `function.name` and the
//! first piece of `function.arguments`; later ones only `index` and `function.arguments`),
//! then a chunk with empty `delta` and `finish_reason`, then (with
//! `stream_options.include_usage`) a chunk with `"choices": []` and `usage`, then
//! `data: [DONE]`. With `include_usage`, the other chunks carry `"usage": null`, as OpenAI does.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::{HashSet, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::connect_info::Connected;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::Response;
use axum::routing::{get, post};
use axum::serve::{IncomingStream, Listener};
use futures::StreamExt;
use futures::task::AtomicWaker;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// Model id reported by `GET /v1/models` (and echoed when a request has no string `model`).
pub const MOCK_MODEL: &str = "mock-model";

/// How long [`MockLlm::wait_for_requests`] waits before panicking.
pub const WAIT_TIMEOUT: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------
// Replies
// ---------------------------------------------------------------------------------------

/// One scripted answer to one chat-completions request.
#[derive(Debug, Clone)]
pub struct Reply {
    kind: Kind,
    headers: Vec<(String, String)>,
    delay: Option<Duration>,
    abort_mid_body: bool,
}

#[derive(Debug, Clone)]
enum Kind {
    Completion(Completion),
    Error { status: u16, message: String },
    Malformed,
    Hang,
    DropConnection,
}

#[derive(Debug, Clone)]
struct Completion {
    content: Option<String>,
    reasoning: Option<String>,
    calls: Vec<CallSpec>,
    finish_reason: Option<String>,
    usage: (u64, u64),
}

#[derive(Debug, Clone)]
struct CallSpec {
    id: Option<String>,
    name: String,
    arguments: String,
}

impl Reply {
    fn new(kind: Kind) -> Reply {
        Reply { kind, headers: Vec::new(), delay: None, abort_mid_body: false }
    }

    fn completion(content: Option<String>, calls: Vec<CallSpec>) -> Reply {
        Reply::new(Kind::Completion(Completion {
            content,
            reasoning: None,
            calls,
            finish_reason: None,
            usage: (10, 5),
        }))
    }

    fn completion_mut(&mut self, what: &str) -> &mut Completion {
        match &mut self.kind {
            Kind::Completion(c) => c,
            other => {
                panic!("mock_llm: {what} only applies to text/tool-call replies, not {other:?}")
            }
        }
    }

    /// Adds `reasoning_content` (message field / `delta.reasoning_content` pieces).
    pub fn with_reasoning(mut self, reasoning: &str) -> Reply {
        self.completion_mut("with_reasoning").reasoning = Some(reasoning.to_string());
        self
    }

    /// Sets the assistant text (e.g. text alongside tool calls).
    pub fn with_content(mut self, content: &str) -> Reply {
        self.completion_mut("with_content").content = Some(content.to_string());
        self
    }

    /// Sets `usage` (default 10 prompt / 5 completion tokens).
    pub fn with_usage(mut self, prompt: u64, completion: u64) -> Reply {
        self.completion_mut("with_usage").usage = (prompt, completion);
        self
    }

    /// Adds a response header (any reply kind), e.g. `Retry-After` on an error.
    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        HeaderName::from_bytes(name.as_bytes()).expect("mock_llm: invalid header name");
        HeaderValue::from_str(value).expect("mock_llm: invalid header value");
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// Overrides `finish_reason` (default `"stop"`, or `"tool_calls"` when there are calls).
    pub fn with_finish_reason(mut self, reason: &str) -> Reply {
        self.completion_mut("with_finish_reason").finish_reason = Some(reason.to_string());
        self
    }

    /// Waits this long (server side) before answering. Dropping the server ends the wait.
    pub fn with_delay(mut self, delay: Duration) -> Reply {
        self.delay = Some(delay);
        self
    }

    /// Sends status 200, the headers and roughly the first half of the body (for SSE: the
    /// first half of the events, never the finish chunk or `[DONE]`), then cuts the
    /// connection. The client's `send()` succeeds and reading the body fails.
    pub fn abort_mid_body(mut self) -> Reply {
        self.completion_mut("abort_mid_body");
        self.abort_mid_body = true;
        self
    }
}

/// Assistant text, `finish_reason: "stop"`.
pub fn text(content: &str) -> Reply {
    Reply::completion(Some(content.to_string()), Vec::new())
}

/// One tool call (id generated by the server: `call_N`), `content: null`,
/// `finish_reason: "tool_calls"`.
pub fn tool_call(name: &str, args: Value) -> Reply {
    tool_calls(vec![(name, args)])
}

/// One tool call with a chosen id.
pub fn tool_call_with_id(id: &str, name: &str, args: Value) -> Reply {
    Reply::completion(
        None,
        vec![CallSpec { id: Some(id.to_string()), name: name.to_string(), arguments: args.to_string() }],
    )
}

/// Several tool calls in one reply.
pub fn tool_calls(calls: Vec<(&str, Value)>) -> Reply {
    Reply::completion(
        None,
        calls
            .into_iter()
            .map(|(name, args)| CallSpec { id: None, name: name.to_string(), arguments: args.to_string() })
            .collect(),
    )
}

/// One tool call whose `arguments` string is sent verbatim (e.g. invalid JSON).
pub fn raw_tool_call_args(name: &str, raw_arguments: &str) -> Reply {
    Reply::completion(None, vec![CallSpec { id: None, name: name.to_string(), arguments: raw_arguments.to_string() }])
}

/// HTTP `status` with an OpenAI error body `{"error":{"message","type","param","code"}}`.
pub fn error(status: u16, message: &str) -> Reply {
    StatusCode::from_u16(status).expect("mock_llm: invalid HTTP status");
    Reply::new(Kind::Error { status, message: message.to_string() })
}

/// HTTP 200 whose body is not valid JSON (streaming: a `data:` line of broken JSON).
pub fn malformed() -> Reply {
    Reply::new(Kind::Malformed)
}

/// Reads the request and never answers, until the [`MockLlm`] is dropped (then the
/// connection is closed without a response).
pub fn hang() -> Reply {
    Reply::new(Kind::Hang)
}

/// Reads the request, then closes the connection without sending any response byte.
/// The client's `send()` fails ("connection closed before message completed").
pub fn drop_connection() -> Reply {
    Reply::new(Kind::DropConnection)
}

// ---------------------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------------------

/// The mock server. Dropping it shuts the server down and closes every open connection.
pub struct MockLlm {
    shared: Arc<Shared>,
    addr: SocketAddr,
}

struct Shared {
    state: Mutex<ServerState>,
    count_tx: watch::Sender<usize>,
    shutdown_tx: watch::Sender<bool>,
    conns: Arc<Mutex<Vec<Weak<KillSwitch>>>>,
    next_call_id: AtomicU64,
    created: u64,
}

#[derive(Default)]
struct ServerState {
    queue: VecDeque<Reply>,
    requests: Vec<Value>,
    headers: Vec<Vec<(String, String)>>,
    violations: Vec<String>,
    sections: Option<Vec<String>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, ServerState> {
        lock(&self.state)
    }
}

impl MockLlm {
    /// Starts the server on `127.0.0.1:0`. Must be called inside a Tokio runtime.
    pub async fn start() -> MockLlm {
        let tcp = TcpListener::bind("127.0.0.1:0").await.expect("mock_llm: bind 127.0.0.1:0");
        let addr = tcp.local_addr().expect("mock_llm: local_addr");
        let created = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        let shared = Arc::new(Shared {
            state: Mutex::new(ServerState::default()),
            count_tx: watch::Sender::new(0),
            shutdown_tx: watch::Sender::new(false),
            conns: Arc::new(Mutex::new(Vec::new())),
            next_call_id: AtomicU64::new(1),
            created,
        });
        let listener = MockListener { inner: tcp, conns: shared.conns.clone() };
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/v1/models", get(models))
            .fallback(fallback)
            .with_state(shared.clone());
        let mut shutdown_rx = shared.shutdown_tx.subscribe();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app.into_make_service_with_connect_info::<ConnInfo>())
                .with_graceful_shutdown(async move {
                    let _ = shutdown_rx.wait_for(|down| *down).await;
                })
                .await;
        });
        MockLlm { shared, addr }
    }

    /// `http://127.0.0.1:PORT/v1`
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Enqueues one reply; each chat request consumes the next one (FIFO).
    pub fn push(&self, reply: Reply) {
        self.shared.state().queue.push_back(reply);
    }

    /// Enqueues several replies, in order.
    pub fn push_all(&self, replies: impl IntoIterator<Item = Reply>) {
        self.shared.state().queue.extend(replies);
    }

    /// Replies not consumed yet.
    pub fn remaining_replies(&self) -> usize {
        self.shared.state().queue.len()
    }

    /// Every chat request body received, in order (a body that is not JSON is recorded as
    /// a JSON string holding the raw text).
    pub fn requests(&self) -> Vec<Value> {
        self.shared.state().requests.clone()
    }

    /// Number of chat requests received.
    pub fn request_count(&self) -> usize {
        self.shared.state().requests.len()
    }

    /// Headers of each chat request (lower-case names), in order.
    pub fn request_headers(&self) -> Vec<Vec<(String, String)>> {
        self.shared.state().headers.clone()
    }

    /// From now on, check that the system prompt of every request contains these headings,
    /// each as a whole line (surrounding whitespace ignored), in this order.
    pub fn expect_sections(&self, headings: &[&str]) {
        self.shared.state().sections = Some(headings.iter().map(|h| h.to_string()).collect());
    }

    /// Every problem found so far.
    pub fn violations(&self) -> Vec<String> {
        self.shared.state().violations.clone()
    }

    /// Panics listing every violation, if there are any.
    pub fn assert_clean(&self) {
        let violations = self.violations();
        if !violations.is_empty() {
            panic!("mock LLM recorded {} violation(s):\n  - {}", violations.len(), violations.join("\n  - "));
        }
    }

    /// Resolves once `n` chat requests have arrived (recorded, checked and matched to a
    /// reply). Panics after 30 s.
    pub async fn wait_for_requests(&self, n: usize) {
        self.wait_for_requests_timeout(n, WAIT_TIMEOUT).await;
    }

    /// Like [`MockLlm::wait_for_requests`] with a chosen timeout.
    pub async fn wait_for_requests_timeout(&self, n: usize, timeout: Duration) {
        let mut rx = self.shared.count_tx.subscribe();
        let arrived = tokio::time::timeout(timeout, rx.wait_for(|count| *count >= n)).await.is_ok_and(|r| r.is_ok());
        if !arrived {
            panic!(
                "mock LLM: timed out after {timeout:?} waiting for {n} request(s); {} arrived",
                self.request_count()
            );
        }
    }
}

impl Drop for MockLlm {
    fn drop(&mut self) {
        self.shared.shutdown_tx.send_replace(true);
        for conn in lock(&self.shared.conns).drain(..) {
            if let Some(kill) = conn.upgrade() {
                kill.kill();
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Connections that can be cut from a handler
// ---------------------------------------------------------------------------------------

#[derive(Debug, Default)]
struct KillSwitch {
    killed: AtomicBool,
    read: AtomicWaker,
    write: AtomicWaker,
}

impl KillSwitch {
    fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        self.read.wake();
        self.write.wake();
    }

    fn is_killed(&self) -> bool {
        self.killed.load(Ordering::SeqCst)
    }
}

fn aborted() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionAborted, "mock_llm: connection cut")
}

struct KillableStream {
    inner: TcpStream,
    kill: Arc<KillSwitch>,
}

impl AsyncRead for KillableStream {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        self.kill.read.register(cx.waker());
        if self.kill.is_killed() {
            return Poll::Ready(Err(aborted()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for KillableStream {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.kill.write.register(cx.waker());
        if self.kill.is_killed() {
            return Poll::Ready(Err(aborted()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.kill.is_killed() {
            return Poll::Ready(Err(aborted()));
        }
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.kill.is_killed() {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[derive(Debug, Clone)]
struct ConnInfo {
    peer: SocketAddr,
    kill: Arc<KillSwitch>,
}

struct MockListener {
    inner: TcpListener,
    conns: Arc<Mutex<Vec<Weak<KillSwitch>>>>,
}

impl Listener for MockListener {
    type Io = KillableStream;
    type Addr = ConnInfo;

    async fn accept(&mut self) -> (KillableStream, ConnInfo) {
        loop {
            match self.inner.accept().await {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let kill = Arc::new(KillSwitch::default());
                    let mut conns = lock(&self.conns);
                    conns.retain(|c| c.strong_count() > 0);
                    conns.push(Arc::downgrade(&kill));
                    let info = ConnInfo { peer, kill: kill.clone() };
                    return (KillableStream { inner: stream, kill }, info);
                }
                // e.g. too many open files: back off instead of spinning
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<ConnInfo> {
        Ok(ConnInfo { peer: self.inner.local_addr()?, kill: Arc::default() })
    }
}

impl Connected<IncomingStream<'_, MockListener>> for ConnInfo {
    fn connect_info(stream: IncomingStream<'_, MockListener>) -> Self {
        stream.remote_addr().clone()
    }
}

// ---------------------------------------------------------------------------------------
// Handlers
// ---------------------------------------------------------------------------------------

async fn models() -> Response {
    json_response(
        StatusCode::OK,
        &json!({
            "object": "list",
            "data": [{"id": MOCK_MODEL, "object": "model", "created": 0, "owned_by": "mock"}]
        }),
    )
}

async fn fallback(State(shared): State<Arc<Shared>>, method: Method, uri: Uri) -> Response {
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

async fn chat(
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
    st.headers.push(
        headers
            .iter()
            .map(|(name, value)| (name.as_str().to_string(), String::from_utf8_lossy(value.as_bytes()).into_owned()))
            .collect(),
    );
    // Publish while still holding the lock so the count only ever grows.
    shared.count_tx.send_replace(index + 1);
    Planned { index, reply, call_ids, stream, include_usage, model }
}

// ---------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------

struct RenderCtx {
    id: String,
    created: u64,
    model: String,
    include_usage: bool,
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

fn completion_json(c: &Completion, call_ids: &[String], ctx: &RenderCtx) -> Value {
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

fn sse_events(c: &Completion, call_ids: &[String], ctx: &RenderCtx) -> Vec<String> {
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

// ---------------------------------------------------------------------------------------
// Request checks
// ---------------------------------------------------------------------------------------

const ROLES: [&str; 4] = ["system", "user", "assistant", "tool"];

fn describe(v: Option<&Value>) -> String {
    match v {
        None => "nothing".to_string(),
        Some(Value::Null) => "null".to_string(),
        Some(Value::Bool(_)) => "a boolean".to_string(),
        Some(Value::Number(_)) => "a number".to_string(),
        Some(Value::String(s)) if s.chars().count() > 60 => {
            format!("the string {:?}...", s.chars().take(60).collect::<String>())
        }
        Some(Value::String(s)) => format!("the string {s:?}"),
        Some(Value::Array(_)) => "an array".to_string(),
        Some(Value::Object(_)) => "an object".to_string(),
    }
}

fn validate(body: &Value, sections: Option<&[String]>, out: &mut Vec<String>) {
    let Some(obj) = body.as_object() else {
        out.push(format!("body must be a JSON object, got {}", describe(Some(body))));
        return;
    };
    match obj.get("model") {
        Some(Value::String(s)) if !s.is_empty() => {}
        other => out.push(format!("`model` must be a non-empty string, got {}", describe(other))),
    }
    match obj.get("stream") {
        None | Some(Value::Bool(_)) => {}
        other => out.push(format!("`stream` must be a boolean, got {}", describe(other))),
    }
    if obj.contains_key("stream_options") && obj.get("stream") != Some(&Value::Bool(true)) {
        out.push("`stream_options` is only allowed when `stream` is true".to_string());
    }
    match obj.get("messages") {
        Some(Value::Array(messages)) if !messages.is_empty() => {
            validate_messages(messages, out);
            if let Some(headings) = sections {
                validate_sections(messages, headings, out);
            }
        }
        other => out.push(format!("`messages` must be a non-empty array, got {}", describe(other))),
    }
    if let Some(tools) = obj.get("tools") {
        validate_tools(tools, out);
    }
}

fn has_content(m: &serde_json::Map<String, Value>) -> bool {
    matches!(m.get("content"), Some(Value::String(_) | Value::Array(_)))
}

fn validate_messages(messages: &[Value], out: &mut Vec<String>) {
    let first_role = messages[0].get("role").and_then(Value::as_str);
    if first_role != Some("system") {
        out.push(format!("first message must have role `system`, got {}", describe(messages[0].get("role"))));
    }
    let mut seen: HashSet<String> = HashSet::new();
    let mut answered: HashSet<String> = HashSet::new();
    // Unanswered calls of the currently open tool turn, and the assistant message index.
    let mut pending: Vec<String> = Vec::new();
    let mut turn: Option<usize> = None;

    let close_turn = |pending: &mut Vec<String>, turn: &mut Option<usize>, at: String, out: &mut Vec<String>| {
        if let Some(j) = turn.take() {
            if !pending.is_empty() {
                out.push(format!(
                    "tool call(s) {:?} of messages[{j}] (assistant) not answered by a `tool` message before {at}",
                    pending
                ));
            }
        }
        pending.clear();
    };

    for (k, message) in messages.iter().enumerate() {
        let Some(m) = message.as_object() else {
            out.push(format!("messages[{k}] must be an object, got {}", describe(Some(message))));
            continue;
        };
        let role = m.get("role").and_then(Value::as_str);
        match role {
            Some("system") | Some("user") => {
                let role = role.unwrap_or_default();
                close_turn(&mut pending, &mut turn, format!("messages[{k}] ({role})"), out);
                if !has_content(m) {
                    out.push(format!(
                        "messages[{k}] ({role}) `content` must be a string or an array, got {}",
                        describe(m.get("content"))
                    ));
                }
            }
            Some("assistant") => {
                close_turn(&mut pending, &mut turn, format!("messages[{k}] (assistant)"), out);
                match m.get("tool_calls") {
                    None | Some(Value::Null) => {
                        if !has_content(m) {
                            out.push(format!("messages[{k}] (assistant) has neither `content` nor `tool_calls`"));
                        }
                    }
                    Some(Value::Array(calls)) => {
                        if calls.is_empty() {
                            out.push(format!(
                                "messages[{k}] (assistant) `tool_calls` is an empty array (omit it instead)"
                            ));
                        }
                        for (c, call) in calls.iter().enumerate() {
                            let at = format!("messages[{k}].tool_calls[{c}]");
                            match call.get("id").and_then(Value::as_str) {
                                Some(id) if !id.is_empty() => {
                                    if !seen.insert(id.to_string()) {
                                        out.push(format!("{at} repeats tool call id {id:?}"));
                                    }
                                    pending.push(id.to_string());
                                }
                                _ => out.push(format!(
                                    "{at} `id` must be a non-empty string, got {}",
                                    describe(call.get("id"))
                                )),
                            }
                            if call.get("type").and_then(Value::as_str) != Some("function") {
                                out.push(format!(
                                    "{at} `type` must be \"function\", got {}",
                                    describe(call.get("type"))
                                ));
                            }
                            let function = call.get("function");
                            if function.and_then(|f| f.get("name")).and_then(Value::as_str).is_none() {
                                out.push(format!(
                                    "{at} `function.name` must be a string, got {}",
                                    describe(function.and_then(|f| f.get("name")))
                                ));
                            }
                            let arguments = function.and_then(|f| f.get("arguments"));
                            if !matches!(arguments, Some(Value::String(_))) {
                                out.push(format!(
                                    "{at} `function.arguments` must be a JSON-encoded string, got {}",
                                    describe(arguments)
                                ));
                            }
                        }
                        turn = Some(k);
                    }
                    other => out.push(format!(
                        "messages[{k}] (assistant) `tool_calls` must be an array, got {}",
                        describe(other)
                    )),
                }
            }
            Some("tool") => {
                if !has_content(m) {
                    out.push(format!(
                        "messages[{k}] (tool) `content` must be a string or an array, got {}",
                        describe(m.get("content"))
                    ));
                }
                let Some(id) = m.get("tool_call_id").and_then(Value::as_str) else {
                    out.push(format!(
                        "messages[{k}] (tool) `tool_call_id` must be a string, got {}",
                        describe(m.get("tool_call_id"))
                    ));
                    continue;
                };
                if let Some(pos) = pending.iter().position(|p| p == id) {
                    pending.remove(pos);
                    answered.insert(id.to_string());
                } else if answered.contains(id) {
                    out.push(format!("messages[{k}] (tool) answers tool call {id:?} a second time"));
                } else if seen.contains(id) {
                    out.push(format!(
                        "messages[{k}] (tool) answers tool call {id:?} after its turn was closed by a later message"
                    ));
                } else if turn.is_none() {
                    out.push(format!(
                        "messages[{k}] (tool) is an orphan: tool_call_id {id:?} but the previous message is not an assistant message with `tool_calls` (or its tool answers)"
                    ));
                } else {
                    out.push(format!(
                        "messages[{k}] (tool) tool_call_id {id:?} does not match any tool call of an earlier assistant message (open calls: {pending:?})"
                    ));
                }
            }
            Some(other) => out.push(format!("messages[{k}] has invalid role {other:?} (expected one of {ROLES:?})")),
            None => out.push(format!("messages[{k}] `role` must be a string, got {}", describe(m.get("role")))),
        }
    }
    close_turn(&mut pending, &mut turn, "the end of `messages`".to_string(), out);
}

fn message_text(message: &Value) -> String {
    match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => {
            parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n")
        }
        _ => String::new(),
    }
}

fn validate_sections(messages: &[Value], headings: &[String], out: &mut Vec<String>) {
    let Some(system) = messages.iter().find(|m| m.get("role").and_then(Value::as_str) == Some("system")) else {
        out.push(format!("expected system prompt sections {headings:?} but there is no system message"));
        return;
    };
    let prompt = message_text(system);
    let lines: Vec<&str> = prompt.lines().map(str::trim).collect();
    let mut found: Vec<(usize, &str)> = Vec::new();
    let mut missing: Vec<&str> = Vec::new();
    for heading in headings {
        match lines.iter().position(|l| *l == heading.trim()) {
            Some(line) => found.push((line + 1, heading)),
            None => missing.push(heading),
        }
    }
    if !missing.is_empty() {
        out.push(format!("system prompt lacks section heading line(s) {missing:?} (expected {headings:?})"));
    }
    if found.windows(2).any(|w| w[0].0 >= w[1].0) {
        let mut actual = found.clone();
        actual.sort();
        let actual: Vec<String> = actual.iter().map(|(line, h)| format!("{h} (line {line})")).collect();
        out.push(format!("system prompt sections out of order: expected {headings:?}, found {actual:?}"));
    }
}

fn validate_tools(tools: &Value, out: &mut Vec<String>) {
    let Some(tools) = tools.as_array() else {
        out.push(format!("`tools` must be an array, got {}", describe(Some(tools))));
        return;
    };
    let mut names = HashSet::new();
    for (i, tool) in tools.iter().enumerate() {
        let at = format!("tools[{i}]");
        if tool.get("type").and_then(Value::as_str) != Some("function") {
            out.push(format!("{at} `type` must be \"function\", got {}", describe(tool.get("type"))));
        }
        let Some(function) = tool.get("function").and_then(Value::as_object) else {
            out.push(format!("{at} `function` must be an object, got {}", describe(tool.get("function"))));
            continue;
        };
        match function.get("name").and_then(Value::as_str) {
            Some(name) => {
                let valid = !name.is_empty()
                    && name.len() <= 64
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                if !valid {
                    out.push(format!("{at} function name {name:?} must match ^[a-zA-Z0-9_-]{{1,64}}$"));
                }
                if !names.insert(name.to_string()) {
                    out.push(format!("{at} repeats function name {name:?}"));
                }
            }
            None => out.push(format!("{at} `function.name` must be a string, got {}", describe(function.get("name")))),
        }
        if !matches!(function.get("description"), Some(Value::String(_))) {
            out.push(format!(
                "{at} `function.description` must be a string, got {}",
                describe(function.get("description"))
            ));
        }
        if !matches!(function.get("parameters"), Some(Value::Object(_))) {
            out.push(format!(
                "{at} `function.parameters` must be a JSON-schema object, got {}",
                describe(function.get("parameters"))
            ));
        }
    }
}
