//! The pages: each reads the store, builds a view of plain strings and
//! shapes, and renders its template. What several pages show the same way
//! (a run in a list, the layout) lives here.

pub mod charts;
pub mod routines;
pub mod run;
pub mod runs;

use axum::response::{Html, IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::Serialize;

use super::format;
use super::render::failure;
use super::{Inner, StatusError, StatusState};
use crate::store::{RunBrief, RunStatus};

/// Runs `make` on the blocking pool (the store is synchronous) and turns
/// its error into an answer.
async fn blocking(
    state: StatusState,
    make: impl FnOnce(&Inner) -> Result<Response, StatusError> + Send + 'static,
) -> Response {
    let task = tokio::task::spawn_blocking(move || make(&state.inner));
    match task.await {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => failure(&e),
        Err(e) => failure(&StatusError::Task(e.to_string())),
    }
}

/// Renders `template` with the layout's values and `view` as `page`.
fn render(
    inner: &Inner,
    template: &'static str,
    nav: &str,
    title: &str,
    view: impl Serialize,
) -> Result<Response, StatusError> {
    let now = Utc::now();
    let ctx = minijinja::context! {
        nav,
        title,
        zone => inner.zone.name(),
        now => format::local_full(now, &inner.zone),
        page => minijinja::Value::from(minijinja::value::Serde(view)),
    };
    Ok(Html(inner.pages.render(template, ctx)?).into_response())
}

/// A run as a row of a list.
#[derive(Debug, Clone, Serialize)]
pub struct RunItem {
    pub id: i64,
    pub href: String,
    /// The routine, or the kind of run for one without a routine.
    pub routine: String,
    pub routine_href: Option<String>,
    pub status: &'static str,
    pub status_words: String,
    pub trigger: String,
    /// When it was due (or started, or recorded), in the engine's zone.
    pub when: String,
    pub when_full: String,
    pub when_rel: String,
    pub took: Option<String>,
    pub tokens: Option<String>,
    pub error: Option<String>,
    pub reason: Option<String>,
}

impl RunItem {
    pub fn new(r: &RunBrief, zone: &chrono_tz::Tz, now: DateTime<Utc>) -> Self {
        let when = r.scheduled_for.or(r.started_at).unwrap_or(r.created_at);
        let tokens = r.prompt_tokens + r.completion_tokens;
        RunItem {
            id: r.id,
            href: run_href(r.id),
            routine: r.routine.clone().unwrap_or_else(|| r.kind.as_str().to_string()),
            routine_href: r.routine.as_deref().map(runs_of),
            status: r.status.as_str(),
            status_words: format::words(r.status.as_str()),
            trigger: r.trigger.clone(),
            when: format::local(when, zone),
            when_full: format::local_full(when, zone),
            when_rel: format::relative(when, now),
            took: format::took(r.started_at, r.finished_at).map(format::duration_ms),
            tokens: (tokens > 0).then(|| format::count(tokens)),
            error: r.error.as_deref().map(|e| format::first_line(e, 160)).filter(|e| !e.is_empty()),
            reason: r.reason.clone(),
        }
    }
}

/// The address of run `id`.
pub fn run_href(id: i64) -> String {
    format!("/runs/{id}")
}

/// The runs page filtered to `routine`. Routine names are
/// `[a-z0-9][a-z0-9_-]*`; anything else is encoded anyway.
pub fn runs_of(routine: &str) -> String {
    format!("/runs?routine={}", encode(routine))
}

/// Characters a query value keeps as they are (RFC 3986 unreserved).
const QUERY_VALUE: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

/// Percent-encodes a query value.
pub fn encode(value: &str) -> String {
    percent_encoding::utf8_percent_encode(value, QUERY_VALUE).to_string()
}

/// Statuses in the order filters and legends list them.
pub const STATUS_ORDER: [RunStatus; 8] = [
    RunStatus::Succeeded,
    RunStatus::Silent,
    RunStatus::Failed,
    RunStatus::TimedOut,
    RunStatus::Interrupted,
    RunStatus::Skipped,
    RunStatus::Running,
    RunStatus::Queued,
];
