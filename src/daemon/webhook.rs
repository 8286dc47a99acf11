//! The daemon's webhook listener (SPEC §5, Webhook).
//!
//! A `POST` to a configured path queues one fire of the routine that owns the path. Each
//! request passes these checks in this order, and the first one that fails answers:
//!
//! | check | failure |
//! |---|---|
//! | a route is configured at the path | 404 |
//! | the method is `POST` | 405 with `Allow: POST` |
//! | the route's token bucket has a token | 429 with `Retry-After` in seconds |
//! | the body is at most [`Settings::body_limit`] bytes | 413, decided from `Content-Length` before reading when it is present |
//! | the credentials match the route's [`Auth`] | 401 |
//! | [`Intake::enqueue`] commits the run | 503 ([`IntakeError::Unavailable`]) or 409 ([`IntakeError::Refused`]) |
//!
//! Success is 202 with `{"run_id": N}`, sent only after [`Intake::enqueue`] returned the id.
//! Every error is `application/json` of the form `{"error": "<message>"}`. Messages never
//! contain a secret, a token or a signature, and neither do the logs.
//!
//! Besides the routes, the listener answers `GET /healthz` with `{"status":"ok"}` and
//! `GET /metrics` with [`Intake::metrics`] in the Prometheus text format. These two paths are
//! [`WEBHOOK_PATHS`]: a route configured at one of them is never reached.
//!
//! Routes are looked up in a [`RouteTable`] on every request, so [`RouteTable::replace`]
//! takes effect for the next request without restarting the listener.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use axum::Router;
use axum::body::{Body, HttpBody};
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio::time::Instant;

use crate::routine::reserved::WEBHOOK_PATHS;

/// The header that carries the HMAC-SHA256 signature of the raw body.
const SIGNATURE_HEADER: &str = "x-signature-256";

/// Request headers that are never handed to the engine, because they carry credentials.
const HIDDEN_HEADERS: [&str; 4] = ["authorization", "proxy-authorization", "cookie", SIGNATURE_HEADER];

/// The content type of the Prometheus text exposition format.
const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// How a route authenticates its callers.
///
/// `Debug` prints the kind of authentication only, never the secret.
#[derive(Clone, PartialEq, Eq)]
pub enum Auth {
    /// The caller sends `X-Signature-256: sha256=<hex>`, the HMAC-SHA256 of the raw body keyed
    /// with this secret.
    Hmac(String),
    /// The caller sends `Authorization: Bearer <token>` with this token.
    Bearer(String),
    /// Every caller is accepted (`auth: none` in the routine file).
    None,
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::Hmac(_) => f.write_str("Hmac(<redacted>)"),
            Auth::Bearer(_) => f.write_str("Bearer(<redacted>)"),
            Auth::None => f.write_str("None"),
        }
    }
}

/// One webhook trigger: requests to `path` fire `routine`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The name of the routine to fire.
    pub routine: String,
    /// The request path, matched exactly, for example `/hooks/deploy`.
    pub path: String,
    /// How callers authenticate.
    pub auth: Auth,
}

/// What the listener hands to the engine for one accepted request; the engine exposes it to
/// templates as `trigger` (SPEC §4).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct WebhookRequest {
    /// The HTTP method, always `POST` for an accepted request.
    pub method: String,
    /// The request path, without the query string.
    pub path: String,
    /// The request headers by lower-case name, without `authorization`, `proxy-authorization`,
    /// `cookie` and `x-signature-256`. Repeated headers are joined with `, `; bytes that are
    /// not UTF-8 are replaced with U+FFFD.
    pub headers: BTreeMap<String, String>,
    /// The decoded query parameters; when a name repeats, the last value wins.
    pub query: BTreeMap<String, String>,
    /// The body as text; bytes that are not UTF-8 are replaced with U+FFFD.
    pub body: String,
    /// The body parsed as JSON, when it is valid JSON.
    pub json: Option<serde_json::Value>,
}

/// Why [`Intake::enqueue`] did not queue a run.
#[derive(Debug, thiserror::Error)]
pub enum IntakeError {
    /// The run could not be recorded, for example because the store is unavailable. The
    /// caller gets 503 with a generic message; this message is only logged, because it may
    /// name internal details.
    #[error("{0}")]
    Unavailable(String),
    /// The engine declined the fire, for example because the routine is disabled. The caller
    /// gets 409 with this message, so it must be written for the caller.
    #[error("{0}")]
    Refused(String),
}

/// The engine side of the listener.
#[async_trait::async_trait]
pub trait Intake: Send + Sync + 'static {
    /// Durably queues a fire of `routine`; returns the run id only once it is committed.
    ///
    /// The listener runs this call on its own task, so it runs to completion even when the
    /// caller disconnects while waiting.
    async fn enqueue(&self, routine: &str, request: WebhookRequest) -> Result<i64, IntakeError>;

    /// Returns the Prometheus text exposition served at `GET /metrics`.
    fn metrics(&self) -> String;
}

/// Limits that apply to every route.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// The largest accepted body in bytes.
    pub body_limit: usize,
    /// Tokens added to each route's bucket per second.
    pub rate_per_second: f64,
    /// The capacity of each route's bucket, that is the most requests a route accepts at once
    /// after being idle.
    ///
    /// Rate limiting is off when `burst` is 0 or `rate_per_second` is not a positive number.
    pub burst: u32,
}

impl Default for Settings {
    /// 1 MiB bodies, 50 requests per second per route, bursts of 100.
    fn default() -> Self {
        Settings { body_limit: 1024 * 1024, rate_per_second: 50.0, burst: 100 }
    }
}

impl Settings {
    fn rate_limited(&self) -> bool {
        self.burst > 0 && self.rate_per_second.is_finite() && self.rate_per_second > 0.0
    }
}

/// The routes the listener serves, shared between the listener and whoever reloads routines.
///
/// Clones share one table. The listener reads the table on every request, so a
/// [`replace`](RouteTable::replace) applies to the next request.
#[derive(Clone, Debug, Default)]
pub struct RouteTable(Arc<RwLock<HashMap<String, Arc<Route>>>>);

impl RouteTable {
    /// Creates a table holding `routes`; see [`replace`](RouteTable::replace) for duplicates.
    pub fn new(routes: Vec<Route>) -> Self {
        let table = RouteTable::default();
        table.replace(routes);
        table
    }

    /// Replaces every route at once. When two routes share a path, the later one wins and a
    /// warning is logged; configuration validation is expected to refuse that earlier.
    pub fn replace(&self, routes: Vec<Route>) {
        let mut map = HashMap::with_capacity(routes.len());
        for route in routes {
            if WEBHOOK_PATHS.contains(&route.path.as_str()) {
                tracing::warn!(routine = %route.routine, path = %route.path, "Webhook path is reserved by the listener and will never be reached.");
            }
            if let Some(previous) = map.insert(route.path.clone(), Arc::new(route)) {
                tracing::warn!(routine = %previous.routine, path = %previous.path, "Webhook path is configured twice; the later route wins.");
            }
        }
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = map;
    }

    fn get(&self, path: &str) -> Option<Arc<Route>> {
        self.0.read().unwrap_or_else(PoisonError::into_inner).get(path).cloned()
    }
}

/// Builds the listener's router: `GET /healthz`, `GET /metrics` and every route in `table`.
pub fn router(table: RouteTable, intake: Arc<dyn Intake>, settings: Settings) -> Router {
    let state = AppState { table, intake, settings, buckets: Arc::new(Mutex::new(HashMap::new())) };
    Router::new()
        .route("/healthz", get(healthz).fallback(get_only))
        .route("/metrics", get(metrics).fallback(get_only))
        .fallback(webhook)
        .with_state(state)
}

/// Serves `router` on `listener` until `shutdown` completes, then stops accepting connections
/// and returns once the requests in flight have been answered.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    if let Ok(address) = listener.local_addr() {
        tracing::info!(%address, "Webhook listener started.");
    }
    axum::serve(listener, router).with_graceful_shutdown(shutdown).await
}

#[derive(Clone)]
struct AppState {
    table: RouteTable,
    intake: Arc<dyn Intake>,
    settings: Settings,
    /// One token bucket per route path; a bucket outlives a reload that keeps its path.
    buckets: Arc<Mutex<HashMap<String, Bucket>>>,
}

impl AppState {
    /// Takes a token from the bucket of `path`, or returns how many seconds to wait for one.
    fn take_token(&self, path: &str) -> Result<(), u64> {
        let settings = &self.settings;
        if !settings.rate_limited() {
            return Ok(());
        }
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        let bucket = buckets.entry(path.to_owned()).or_insert_with(|| Bucket::full(settings.burst, now));
        bucket.take(settings.rate_per_second, settings.burst, now)
    }
}

/// A token bucket: holds up to `burst` tokens and gains `rate` tokens per second.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    updated: Instant,
}

impl Bucket {
    fn full(burst: u32, now: Instant) -> Self {
        Bucket { tokens: f64::from(burst), updated: now }
    }

    /// Takes one token at `now`, or returns the whole seconds until one is available (at least 1).
    fn take(&mut self, rate: f64, burst: u32, now: Instant) -> Result<(), u64> {
        let elapsed = now.saturating_duration_since(self.updated).as_secs_f64();
        self.tokens = (self.tokens + elapsed * rate).min(f64::from(burst));
        self.updated = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            // A float-to-integer cast saturates, so a tiny rate cannot overflow.
            Err(((1.0 - self.tokens) / rate).ceil().max(1.0) as u64)
        }
    }
}

async fn healthz() -> Response {
    axum::Json(serde_json::json!({ "status": "ok" })).into_response()
}

async fn metrics(State(state): State<AppState>) -> Response {
    ([(header::CONTENT_TYPE, METRICS_CONTENT_TYPE)], state.intake.metrics()).into_response()
}

async fn get_only() -> Response {
    let mut response = error_response(StatusCode::METHOD_NOT_ALLOWED, "this path only answers GET");
    response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
    response
}

/// Answers every request that is not for a reserved path.
async fn webhook(State(state): State<AppState>, request: Request) -> Response {
    let path = request.uri().path().to_owned();
    let Some(route) = state.table.get(&path) else {
        tracing::debug!(%path, "Webhook request for an unknown path.");
        return error_response(StatusCode::NOT_FOUND, "no webhook is configured at this path");
    };
    let routine = route.routine.as_str();

    if request.method() != Method::POST {
        let mut response = error_response(StatusCode::METHOD_NOT_ALLOWED, "this webhook only accepts POST");
        response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST"));
        return response;
    }

    if let Err(seconds) = state.take_token(&route.path) {
        tracing::info!(routine, %path, retry_after = seconds, "Webhook request refused: rate limit exceeded.");
        let message = format!("too many requests to this webhook; retry in {seconds} s");
        let mut response = error_response(StatusCode::TOO_MANY_REQUESTS, message);
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        return response;
    }

    let limit = state.settings.body_limit;
    let (parts, mut body) = request.into_parts();
    if let Some(length) = content_length(&parts.headers).filter(|length| *length > limit as u64) {
        tracing::info!(routine, %path, limit, "Webhook request refused: declared body too large.");
        // A body left unread makes the kernel reset the connection, and the
        // client may see that instead of the 413: read moderate ones first.
        if length <= DRAIN_CAP {
            drain(&mut body).await;
        }
        return too_large(limit);
    }
    let body = match read_body(&mut body, limit).await {
        Ok(body) => body,
        Err(ReadError::TooLarge) => {
            tracing::info!(routine, %path, limit, "Webhook request refused: body too large.");
            drain(&mut body).await;
            return too_large(limit);
        }
        Err(ReadError::Failed(error)) => {
            tracing::info!(routine, %path, %error, "Webhook request body could not be read.");
            return error_response(StatusCode::BAD_REQUEST, "the request body could not be read");
        }
    };

    if let Err(failure) = check_auth(&route.auth, &parts.headers, &body) {
        tracing::info!(routine, %path, reason = failure.message(), "Webhook request refused: authentication failed.");
        let mut response = error_response(StatusCode::UNAUTHORIZED, failure.message());
        if matches!(route.auth, Auth::Bearer(_)) {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        return response;
    }

    let Ok(Query(query)) = Query::<BTreeMap<String, String>>::try_from_uri(&parts.uri) else {
        return error_response(StatusCode::BAD_REQUEST, "the query string is malformed");
    };
    let request = WebhookRequest {
        method: parts.method.as_str().to_owned(),
        path: path.clone(),
        headers: visible_headers(&parts.headers),
        query,
        json: serde_json::from_slice(&body).ok(),
        body: String::from_utf8_lossy(&body).into_owned(),
    };

    // On its own task, so a caller that hangs up cannot cancel a half-done enqueue.
    let intake = Arc::clone(&state.intake);
    let owner = route.routine.clone();
    match tokio::spawn(async move { intake.enqueue(&owner, request).await }).await {
        Ok(Ok(run_id)) => {
            tracing::info!(routine, %path, run_id, "Webhook request queued a run.");
            (StatusCode::ACCEPTED, axum::Json(serde_json::json!({ "run_id": run_id }))).into_response()
        }
        Ok(Err(IntakeError::Refused(reason))) => {
            tracing::info!(routine, %path, %reason, "Webhook request refused by the engine.");
            error_response(StatusCode::CONFLICT, reason)
        }
        Ok(Err(IntakeError::Unavailable(reason))) => {
            tracing::warn!(routine, %path, %reason, "Webhook request could not be queued.");
            error_response(StatusCode::SERVICE_UNAVAILABLE, "the run could not be queued; try again later")
        }
        Err(error) => {
            tracing::error!(routine, %path, %error, "Bug: the enqueue task failed.");
            error_response(StatusCode::INTERNAL_SERVER_ERROR, "internal error: the run could not be queued")
        }
    }
}

fn error_response(status: StatusCode, message: impl Into<String>) -> Response {
    (status, axum::Json(serde_json::json!({ "error": message.into() }))).into_response()
}

fn too_large(limit: usize) -> Response {
    let mib = 1024 * 1024;
    let limit =
        if limit >= mib && limit % mib == 0 { format!("{} MiB", limit / mib) } else { format!("{limit} bytes") };
    error_response(StatusCode::PAYLOAD_TOO_LARGE, format!("the request body is larger than the limit of {limit}"))
}

fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers.get(header::CONTENT_LENGTH)?.to_str().ok()?.trim().parse().ok()
}

enum ReadError {
    TooLarge,
    Failed(axum::Error),
}

/// Bodies declared larger than the limit but at most this large are read and
/// dropped before the 413 is sent; larger ones are refused at once.
const DRAIN_CAP: u64 = 8 * 1024 * 1024;

/// Reads and drops the rest of a refused body: up to [`DRAIN_CAP`] bytes and
/// 5 seconds, whichever comes first.
async fn drain(body: &mut Body) {
    let read = async {
        let mut seen: u64 = 0;
        while let Some(Ok(frame)) = std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await {
            if let Ok(data) = frame.into_data() {
                seen += data.len() as u64;
                if seen > DRAIN_CAP {
                    return;
                }
            }
        }
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), read).await;
}

/// Reads the whole body, stopping as soon as it grows past `limit` bytes.
async fn read_body(body: &mut Body, limit: usize) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::new();
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await {
        let Ok(data) = frame.map_err(ReadError::Failed)?.into_data() else {
            continue; // trailers
        };
        if bytes.len() + data.len() > limit {
            return Err(ReadError::TooLarge);
        }
        bytes.extend_from_slice(&data);
    }
    Ok(bytes)
}

/// Why a request failed authentication. The messages name what the caller must send, never
/// the expected value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AuthFailure {
    MissingSignature,
    BadSignature,
    MissingToken,
    BadToken,
}

impl AuthFailure {
    fn message(self) -> &'static str {
        match self {
            AuthFailure::MissingSignature => {
                "the request is not signed: send `X-Signature-256: sha256=<hex>` with the HMAC-SHA256 of the body"
            }
            AuthFailure::BadSignature => "the X-Signature-256 signature does not match the request body",
            AuthFailure::MissingToken => "the request has no `Authorization: Bearer <token>` header",
            AuthFailure::BadToken => "the bearer token is not valid",
        }
    }
}

/// Checks the credentials of a request. An empty configured secret or token matches nothing.
fn check_auth(auth: &Auth, headers: &HeaderMap, body: &[u8]) -> Result<(), AuthFailure> {
    match auth {
        Auth::None => Ok(()),
        Auth::Hmac(secret) => {
            let value = headers.get(SIGNATURE_HEADER).ok_or(AuthFailure::MissingSignature)?;
            let value = value.to_str().map_err(|_| AuthFailure::BadSignature)?.trim();
            let hex_digest = match value.split_at_checked(7) {
                Some((prefix, rest)) if prefix.eq_ignore_ascii_case("sha256=") => rest,
                _ => return Err(AuthFailure::BadSignature),
            };
            let signature = hex::decode(hex_digest).map_err(|_| AuthFailure::BadSignature)?;
            if secret.is_empty() {
                tracing::error!("A webhook route has an empty HMAC secret; every request to it is refused.");
                return Err(AuthFailure::BadSignature);
            }
            let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).map_err(|_| AuthFailure::BadSignature)?;
            mac.update(body);
            // `verify_slice` compares in constant time.
            mac.verify_slice(&signature).map_err(|_| AuthFailure::BadSignature)
        }
        Auth::Bearer(expected) => {
            let value = headers.get(header::AUTHORIZATION).ok_or(AuthFailure::MissingToken)?;
            let value = value.to_str().map_err(|_| AuthFailure::BadToken)?.trim();
            let token = match value.split_once(' ') {
                Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => token.trim(),
                _ => return Err(AuthFailure::MissingToken),
            };
            if expected.is_empty() {
                tracing::error!("A webhook route has an empty bearer token; every request to it is refused.");
                return Err(AuthFailure::BadToken);
            }
            // Comparing digests in constant time hides both the content and the length.
            let same = Sha256::digest(token.as_bytes()).ct_eq(&Sha256::digest(expected.as_bytes()));
            if bool::from(same) { Ok(()) } else { Err(AuthFailure::BadToken) }
        }
    }
}

fn visible_headers(headers: &HeaderMap) -> BTreeMap<String, String> {
    let mut visible: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in headers {
        if HIDDEN_HEADERS.contains(&name.as_str()) {
            continue;
        }
        let value = String::from_utf8_lossy(value.as_bytes());
        visible
            .entry(name.as_str().to_owned())
            .and_modify(|joined| {
                joined.push_str(", ");
                joined.push_str(&value);
            })
            .or_insert_with(|| value.into_owned());
    }
    visible
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};
    use tokio::sync::oneshot;
    use tokio::task::JoinHandle;

    const SECRET: &str = "hook-secret";
    const TOKEN: &str = "hook-token";

    #[derive(Clone, Copy)]
    enum Mode {
        Accept,
        Unavailable,
        Refused,
    }

    /// Records every enqueue call and answers it according to `mode`.
    struct Recorder {
        mode: Mode,
        calls: Mutex<Vec<(String, WebhookRequest)>>,
    }

    impl Recorder {
        fn calls(&self) -> Vec<(String, WebhookRequest)> {
            self.calls.lock().unwrap().clone()
        }
    }

    #[async_trait::async_trait]
    impl Intake for Recorder {
        async fn enqueue(&self, routine: &str, request: WebhookRequest) -> Result<i64, IntakeError> {
            match self.mode {
                Mode::Accept => {
                    let mut calls = self.calls.lock().unwrap();
                    calls.push((routine.to_owned(), request));
                    Ok(100 + calls.len() as i64)
                }
                Mode::Unavailable => Err(IntakeError::Unavailable("database is locked at /secret/path".into())),
                Mode::Refused => Err(IntakeError::Refused("routine `deploy` is disabled".into())),
            }
        }

        fn metrics(&self) -> String {
            "# TYPE routines_runs_total counter\nroutines_runs_total 7\n".to_owned()
        }
    }

    struct Server {
        base: String,
        address: std::net::SocketAddr,
        intake: Arc<Recorder>,
        table: RouteTable,
        client: reqwest::Client,
        shutdown: oneshot::Sender<()>,
        task: JoinHandle<std::io::Result<()>>,
    }

    impl Server {
        fn url(&self, path: &str) -> String {
            format!("{}{path}", self.base)
        }

        async fn post(&self, path: &str, body: &str) -> reqwest::Response {
            self.client.post(self.url(path)).body(body.to_owned()).send().await.unwrap()
        }
    }

    fn route(routine: &str, path: &str, auth: Auth) -> Route {
        Route { routine: routine.to_owned(), path: path.to_owned(), auth }
    }

    fn default_routes() -> Vec<Route> {
        vec![
            route("deploy", "/hooks/deploy", Auth::Hmac(SECRET.to_owned())),
            route("bearer", "/hooks/bearer", Auth::Bearer(TOKEN.to_owned())),
            route("open", "/hooks/open", Auth::None),
        ]
    }

    async fn start_with(routes: Vec<Route>, settings: Settings, mode: Mode) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let intake = Arc::new(Recorder { mode, calls: Mutex::new(Vec::new()) });
        let table = RouteTable::new(routes);
        let app = router(table.clone(), intake.clone(), settings);
        let (shutdown, signal) = oneshot::channel::<()>();
        let task = tokio::spawn(serve(listener, app, async move {
            let _ = signal.await;
        }));
        Server {
            base: format!("http://{address}"),
            address,
            intake,
            table,
            client: reqwest::Client::new(),
            shutdown,
            task,
        }
    }

    async fn start() -> Server {
        start_with(default_routes(), Settings::default(), Mode::Accept).await
    }

    fn sign(secret: &str, body: &[u8]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(body);
        format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
    }

    /// Asserts the status and the JSON error shape, and returns the message.
    async fn expect_error(response: reqwest::Response, status: u16) -> String {
        assert_eq!(response.status().as_u16(), status);
        let content_type = response.headers().get("content-type").unwrap().to_str().unwrap().to_owned();
        assert_eq!(content_type, "application/json");
        let body: serde_json::Value = response.json().await.unwrap();
        let object = body.as_object().unwrap();
        assert_eq!(object.len(), 1, "{body}");
        object["error"].as_str().unwrap().to_owned()
    }

    #[tokio::test]
    async fn signed_request_is_queued_with_its_details() {
        let server = start().await;
        let body = r#"{"ref":"main","commits":2}"#;
        let response = server
            .client
            .post(server.url("/hooks/deploy?a=1&b=two%20words"))
            .header("X-Signature-256", sign(SECRET, body.as_bytes()))
            .header("Authorization", "Bearer unrelated")
            .header("Cookie", "session=1")
            .header("X-Custom", "yes")
            .header("Content-Type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();

        assert_eq!(response.status().as_u16(), 202);
        let answer: serde_json::Value = response.json().await.unwrap();
        assert_eq!(answer, serde_json::json!({ "run_id": 101 }));

        let calls = server.intake.calls();
        assert_eq!(calls.len(), 1);
        let (routine, request) = &calls[0];
        assert_eq!(routine, "deploy");
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, "/hooks/deploy");
        assert_eq!(request.body, body);
        assert_eq!(request.json, Some(serde_json::json!({ "ref": "main", "commits": 2 })));
        let query: BTreeMap<String, String> =
            [("a", "1"), ("b", "two words")].into_iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect();
        assert_eq!(request.query, query);
        assert_eq!(request.headers.get("x-custom").map(String::as_str), Some("yes"));
        assert_eq!(request.headers.get("content-type").map(String::as_str), Some("application/json"));
        for hidden in ["authorization", "cookie", "x-signature-256"] {
            assert!(!request.headers.contains_key(hidden), "{hidden} was passed on");
        }
    }

    #[tokio::test]
    async fn signature_prefix_is_case_insensitive_and_text_body_has_no_json() {
        let server = start().await;
        let body = "plain text";
        let signature = sign(SECRET, body.as_bytes()).replacen("sha256=", "SHA256=", 1).to_uppercase();
        let response = server
            .client
            .post(server.url("/hooks/deploy"))
            .header("X-Signature-256", signature)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 202);
        let calls = server.intake.calls();
        assert_eq!(calls[0].1.json, None);
        assert_eq!(calls[0].1.body, body);
    }

    #[tokio::test]
    async fn bad_or_missing_signature_is_refused() {
        let server = start().await;
        let body = "payload";
        for signature in [sign("wrong-secret", body.as_bytes()), sign(SECRET, b"other body"), "sha256=zz".into()] {
            let response = server
                .client
                .post(server.url("/hooks/deploy"))
                .header("X-Signature-256", signature)
                .body(body)
                .send()
                .await
                .unwrap();
            let message = expect_error(response, 401).await;
            assert!(!message.contains(SECRET));
        }
        let message = expect_error(server.post("/hooks/deploy", body).await, 401).await;
        assert!(message.contains("X-Signature-256"), "{message}");
        assert!(server.intake.calls().is_empty());
    }

    #[tokio::test]
    async fn bearer_token_is_checked() {
        let server = start().await;
        let good = server.client.post(server.url("/hooks/bearer")).bearer_auth(TOKEN).send().await.unwrap();
        assert_eq!(good.status().as_u16(), 202);

        let bad = server.client.post(server.url("/hooks/bearer")).bearer_auth("hook-tokem").send().await.unwrap();
        assert_eq!(bad.headers().get("www-authenticate").unwrap(), "Bearer");
        let message = expect_error(bad, 401).await;
        assert!(!message.contains(TOKEN));

        let missing = server.post("/hooks/bearer", "").await;
        expect_error(missing, 401).await;
        let basic = server.client.post(server.url("/hooks/bearer")).basic_auth("user", Some(TOKEN)).send().await;
        expect_error(basic.unwrap(), 401).await;

        assert_eq!(server.intake.calls().len(), 1);
    }

    #[tokio::test]
    async fn auth_none_accepts_any_request() {
        let server = start().await;
        let response = server.post("/hooks/open", "").await;
        assert_eq!(response.status().as_u16(), 202);
        assert_eq!(server.intake.calls()[0].0, "open");
    }

    #[tokio::test]
    async fn body_at_the_limit_is_accepted_and_one_byte_more_is_refused() {
        let server = start().await;
        let limit = Settings::default().body_limit;
        let response = server.client.post(server.url("/hooks/open")).body(vec![b'a'; limit]).send().await.unwrap();
        assert_eq!(response.status().as_u16(), 202);

        let response = server.client.post(server.url("/hooks/open")).body(vec![b'a'; limit + 1]).send().await.unwrap();
        let message = expect_error(response, 413).await;
        assert!(message.contains("1 MiB"), "{message}");
        assert_eq!(server.intake.calls().len(), 1);
    }

    /// Sends `head` (and `body`) on a raw connection and returns the response head.
    async fn raw_exchange(server: &Server, head: &str, body: &[u8]) -> String {
        let mut stream = TcpStream::connect(server.address).await.unwrap();
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(body).await.unwrap();
        let mut response = Vec::new();
        let mut buffer = [0u8; 4096];
        loop {
            let read = stream.read(&mut buffer).await.unwrap();
            response.extend_from_slice(&buffer[..read]);
            if read == 0 || response.windows(4).any(|window| window == b"\r\n\r\n") {
                break;
            }
        }
        String::from_utf8(response).unwrap()
    }

    #[tokio::test]
    async fn declared_oversize_body_is_refused_before_it_is_sent() {
        let server = start().await;
        // The body never follows, so only a decision from Content-Length can answer.
        let head = "POST /hooks/open HTTP/1.1\r\nHost: test\r\nContent-Length: 10000000\r\n\r\n";
        let response = raw_exchange(&server, head, b"").await;
        assert!(response.starts_with("HTTP/1.1 413"), "{response}");
        assert!(server.intake.calls().is_empty());
    }

    #[tokio::test]
    async fn chunked_oversize_body_is_refused() {
        let server = start().await;
        let limit = Settings::default().body_limit;
        let head = "POST /hooks/open HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n";
        let mut body = format!("{limit:x}\r\n").into_bytes();
        body.extend(vec![b'a'; limit]);
        body.extend_from_slice(b"\r\n1\r\na\r\n0\r\n\r\n");
        let response = raw_exchange(&server, head, &body).await;
        assert!(response.starts_with("HTTP/1.1 413"), "{response}");
        assert!(server.intake.calls().is_empty());
    }

    #[tokio::test]
    async fn burst_over_the_rate_limit_is_answered_429() {
        // One token per 1000 s: nothing refills while the test runs.
        let settings = Settings { rate_per_second: 0.001, burst: 5, ..Settings::default() };
        let server = start_with(default_routes(), settings, Mode::Accept).await;
        let mut requests = tokio::task::JoinSet::new();
        for _ in 0..20 {
            let request = server.client.post(server.url("/hooks/open")).send();
            requests.spawn(async move { request.await.unwrap() });
        }
        let (mut accepted, mut limited) = (0, 0);
        while let Some(response) = requests.join_next().await {
            let response = response.unwrap();
            match response.status().as_u16() {
                202 => accepted += 1,
                429 => {
                    let retry_after: u64 = response.headers()["retry-after"].to_str().unwrap().parse().unwrap();
                    assert!(retry_after >= 1);
                    expect_error(response, 429).await;
                    limited += 1;
                }
                other => panic!("unexpected status {other}"),
            }
        }
        assert_eq!((accepted, limited), (5, 15));
        assert_eq!(server.intake.calls().len(), accepted);

        // Another route has its own bucket.
        let other = server.client.post(server.url("/hooks/bearer")).bearer_auth(TOKEN).send().await.unwrap();
        assert_eq!(other.status().as_u16(), 202);
    }

    #[test]
    fn bucket_refills_at_the_configured_rate() {
        let start = Instant::now();
        let mut bucket = Bucket::full(2, start);
        assert_eq!(bucket.take(0.5, 2, start), Ok(()));
        assert_eq!(bucket.take(0.5, 2, start), Ok(()));
        assert_eq!(bucket.take(0.5, 2, start), Err(2));
        assert_eq!(bucket.take(0.5, 2, start + Duration::from_secs(1)), Err(1));
        assert_eq!(bucket.take(0.5, 2, start + Duration::from_secs(2)), Ok(()));
        // Idle time never fills the bucket past its capacity.
        let later = start + Duration::from_secs(3600);
        assert_eq!(bucket.take(0.5, 2, later), Ok(()));
        assert_eq!(bucket.take(0.5, 2, later), Ok(()));
        assert_eq!(bucket.take(0.5, 2, later), Err(2));
        // A vanishing rate saturates instead of overflowing.
        assert_eq!(Bucket::full(0, start).take(1e-300, 1, start), Err(u64::MAX));
    }

    #[tokio::test]
    async fn unknown_path_is_404_and_wrong_method_is_405() {
        let server = start().await;
        expect_error(server.post("/hooks/nothing", "").await, 404).await;
        expect_error(server.client.get(server.url("/")).send().await.unwrap(), 404).await;

        let response = server.client.get(server.url("/hooks/deploy")).send().await.unwrap();
        assert_eq!(response.headers()["allow"], "POST");
        expect_error(response, 405).await;

        let response = server.post("/healthz", "").await;
        assert_eq!(response.headers()["allow"], "GET, HEAD");
        expect_error(response, 405).await;
        assert!(server.intake.calls().is_empty());
    }

    #[tokio::test]
    async fn healthz_and_metrics_answer() {
        let server = start().await;
        let health = server.client.get(server.url("/healthz")).send().await.unwrap();
        assert_eq!(health.status().as_u16(), 200);
        assert_eq!(health.json::<serde_json::Value>().await.unwrap(), serde_json::json!({ "status": "ok" }));

        let metrics = server.client.get(server.url("/metrics")).send().await.unwrap();
        assert_eq!(metrics.status().as_u16(), 200);
        let content_type = metrics.headers()["content-type"].to_str().unwrap().to_owned();
        assert!(content_type.starts_with("text/plain; version=0.0.4"), "{content_type}");
        assert_eq!(metrics.text().await.unwrap(), server.intake.metrics());
    }

    #[tokio::test]
    async fn replaced_routes_apply_to_the_next_request() {
        let server = start().await;
        expect_error(server.post("/hooks/new", "").await, 404).await;

        server.table.replace(vec![route("fresh", "/hooks/new", Auth::None)]);
        assert_eq!(server.post("/hooks/new", "").await.status().as_u16(), 202);
        expect_error(server.post("/hooks/open", "").await, 404).await;
        assert_eq!(server.intake.calls()[0].0, "fresh");
    }

    #[tokio::test]
    async fn intake_errors_map_to_503_and_409() {
        let server = start_with(default_routes(), Settings::default(), Mode::Unavailable).await;
        let message = expect_error(server.post("/hooks/open", "").await, 503).await;
        assert!(!message.contains("/secret/path"), "{message}");

        let server = start_with(default_routes(), Settings::default(), Mode::Refused).await;
        let message = expect_error(server.post("/hooks/open", "").await, 409).await;
        assert_eq!(message, "routine `deploy` is disabled");
    }

    #[tokio::test]
    async fn serve_returns_after_shutdown() {
        let server = start().await;
        assert_eq!(server.post("/hooks/open", "").await.status().as_u16(), 202);
        drop(server.client);
        server.shutdown.send(()).unwrap();
        server.task.await.unwrap().unwrap();
    }

    #[test]
    fn debug_output_hides_secrets() {
        let shown = format!("{:?}", route("deploy", "/hooks/deploy", Auth::Hmac(SECRET.to_owned())));
        assert!(!shown.contains(SECRET), "{shown}");
        assert!(!format!("{:?}", Auth::Bearer(TOKEN.to_owned())).contains(TOKEN));
    }
}
