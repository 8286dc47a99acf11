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
//! [`crate::routine::reserved::WEBHOOK_PATHS`]: a route configured at one of them is never reached.
//!
//! Routes are looked up in a [`RouteTable`] on every request, so [`RouteTable::replace`]
//! takes effect for the next request without restarting the listener.

mod auth;
mod body;
mod rate;
mod serve;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use axum::Router;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::time::Instant;

use crate::routine::WebhookRequest;
use crate::routine::reserved::is_reserved_path;
pub use auth::Auth;
use auth::{check_auth, visible_headers};
use body::{DRAIN_CAP, ReadError, content_length, drain, read_body};
use rate::Bucket;
pub use serve::{Limits, raise_open_files_limit, serve};

/// The content type of the Prometheus text exposition format.
const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

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
    /// The durable queue is full (`limits.max_queued`): 503 with `Retry-After`, this message
    /// for the caller.
    #[error("{message}")]
    Full { message: String, retry_after: u64 },
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
            if is_reserved_path(&route.path) {
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

/// Builds the listener's router: `GET /healthz`, `GET /metrics` (behind the status page's
/// token, `metrics_token`) and every route in `table`.
pub fn router(
    table: RouteTable,
    intake: Arc<dyn Intake>,
    settings: Settings,
    metrics_token: Option<crate::config::Secret>,
) -> Router {
    let state = AppState { table, intake, settings, buckets: Arc::new(Mutex::new(HashMap::new())) };
    let metrics_route =
        crate::status::guard(Router::new().route("/metrics", get(metrics).fallback(get_only)), metrics_token);
    Router::new()
        .route("/healthz", get(healthz).fallback(get_only))
        .merge(metrics_route)
        .fallback(webhook)
        .with_state(state)
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
        Ok(Err(IntakeError::Full { message, retry_after })) => {
            tracing::warn!(routine, %path, "Webhook request refused: the queue is full.");
            let mut response = error_response(StatusCode::SERVICE_UNAVAILABLE, message);
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
            response
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
