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
//! - After [`MockLlm::refuse_tool_choice`]: a request carrying `tool_choice` gets HTTP 400
//!   `"tool_choice" is not supported by this server` and consumes no scripted reply.
//!
//! `tool_choice` is checked on every request: `"none"`, `"auto"`, `"required"`, or
//! `{"type": "function", "function": {"name"}}` naming one of the request's `tools`, and
//! never in a request without `tools`.
//!
//! A user message may carry images in the content-parts form; each part is checked to the exact
//! wire shape (`{"type":"text","text"}` beside `{"type":"image_url","image_url":{"url":"data:image/
//! png;base64,..."}}`, the declared type matching the decoded bytes), and [`images`] decodes them.
//!
//! Only `POST /v1/chat/completions` requests are counted, recorded and checked; any other
//! path (except `GET /v1/models` and `GET /props`) gets a 404 and records a violation.
//! `GET /props` answers 404, as servers other than llama.cpp do, until [`MockLlm::report_n_ctx`]
//! gives it llama.cpp's body; [`MockLlm::report_max_model_len`] adds vLLM's `max_model_len` to
//! the model list. Both count the questions ([`MockLlm::context_questions`]).
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

mod checks;
mod conn;
mod images;
mod render;
mod reply;
mod serve;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::routing::{get, post};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::watch;

use conn::{ConnInfo, KillSwitch, MockListener};
pub use images::{SentImage, images, user_text};
pub use reply::{
    Gate, Reply, drop_connection, error, hang, huge, malformed, raw_tool_call_args, text, tool_call, tool_call_with_id,
    tool_calls,
};

/// Model id reported by `GET /v1/models` (and echoed when a request has no string `model`).
pub const MOCK_MODEL: &str = "mock-model";

/// How long [`MockLlm::wait_for_requests`] waits before panicking.
pub const WAIT_TIMEOUT: Duration = Duration::from_secs(30);

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
    /// Answer every request carrying `tool_choice` with a 400 naming it ([`MockLlm::refuse_tool_choice`]).
    refuse_tool_choice: bool,
    /// `n_ctx` that `GET /props` reports; `None`: a 404.
    n_ctx: Option<u64>,
    /// `max_model_len` of the model `GET /v1/models` lists.
    max_model_len: Option<u64>,
    /// `GET /props` and `GET /v1/models` requests received.
    context_questions: usize,
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
            .route("/v1/chat/completions", post(serve::chat))
            .route("/v1/models", get(serve::models))
            .route("/props", get(serve::props))
            .fallback(serve::fallback)
            // Requests with images are large: a few 5 MB images, base64-encoded.
            .layer(axum::extract::DefaultBodyLimit::max(64 * 1024 * 1024))
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

    /// From now on, answer every request that carries `tool_choice` with HTTP 400
    /// `"tool_choice" is not supported by this server`, as servers without it do, without
    /// consuming a scripted reply (the request is still recorded and checked).
    pub fn refuse_tool_choice(&self) {
        self.shared.state().refuse_tool_choice = true;
    }

    /// From now on, `GET /props` answers as llama.cpp does, with `n_ctx` in
    /// `default_generation_settings`.
    pub fn report_n_ctx(&self, n_ctx: u64) {
        self.shared.state().n_ctx = Some(n_ctx);
    }

    /// From now on, the model `GET /v1/models` lists carries vLLM's `max_model_len`.
    pub fn report_max_model_len(&self, tokens: u64) {
        self.shared.state().max_model_len = Some(tokens);
    }

    /// How many `GET /props` and `GET /v1/models` requests arrived.
    pub fn context_questions(&self) -> usize {
        self.shared.state().context_questions
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
