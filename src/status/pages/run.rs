//! `GET /runs/{id}`: one run in full: what fired it, the prompt, every model
//! and tool call in order, the output or error, the deliveries, and the
//! attempts before the last.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde::Serialize;

use super::{blocking, render, run_href, runs_of};
use crate::status::render::message;
use crate::status::{Inner, StatusError, StatusState, format};
use crate::store::{DeliveryRow, DeliveryStatus, EventRow, RunRow};

/// What a mail delivered with no SMTP server configured did, in the words `routines run` uses.
const QUEUED: &str = "queued in the outbox (no SMTP configured)";

#[derive(Debug, Serialize)]
struct View {
    id: i64,
    routine: String,
    routine_href: Option<String>,
    status: &'static str,
    status_words: String,
    facts: Vec<Fact>,
    error: Option<String>,
    trigger_context: Option<String>,
    prompt: Option<String>,
    output: Option<String>,
    /// The last attempt's number and events.
    attempt: u32,
    events: Vec<EventView>,
    earlier: Vec<Attempt>,
    failed_calls: usize,
    deliveries: Vec<DeliveryView>,
    older_href: Option<String>,
    newer_href: Option<String>,
}

#[derive(Debug, Serialize)]
struct Fact {
    label: &'static str,
    value: String,
}

#[derive(Debug, Clone, Serialize)]
struct EventView {
    seq: i64,
    anchor: String,
    /// `model_call`, `tool_call` or `note`.
    kind: String,
    /// The tool, `model call`, or the kind of note.
    name: String,
    status: String,
    failed: bool,
    at: String,
    duration: String,
    tokens: Option<String>,
    arguments: Option<String>,
    detail: Option<String>,
}

/// The events of one attempt of the run.
#[derive(Debug, Serialize)]
struct Attempt {
    number: u32,
    /// How it ended, when it was not the last.
    ended: String,
    events: Vec<EventView>,
}

#[derive(Debug, Serialize)]
struct DeliveryView {
    kind: String,
    target: String,
    status: &'static str,
    /// The status in words: a mail delivered with no SMTP configured was queued in the outbox.
    status_words: String,
    failed: bool,
    attempts: u32,
    error: Option<String>,
    on_failure: bool,
    updated: String,
}

pub async fn page(State(state): State<StatusState>, Path(id): Path<String>) -> Response {
    blocking(state, move |inner| {
        let Ok(id) = id.parse::<i64>() else {
            return Ok(not_found(inner, &id));
        };
        match view(inner, id)? {
            Some(view) => {
                let title = format!("Run {} · {}", view.id, view.routine);
                render(inner, "run.html", "runs", &title, view)
            }
            None => Ok(not_found(inner, &id.to_string())),
        }
    })
    .await
}

fn not_found(inner: &Inner, id: &str) -> Response {
    let text = format!("There is no run “{id}” in the database. It may have been pruned from the history.");
    message(&inner.pages, StatusCode::NOT_FOUND, "No such run", &text)
}

fn view(inner: &Inner, id: i64) -> Result<Option<View>, StatusError> {
    let store = &inner.store;
    let Some(run) = store.get_run(id)? else { return Ok(None) };
    let detail = store.run_detail(id)?.unwrap_or_default();
    let extra = store.run_extra(id)?.unwrap_or_default();
    let events = store.run_events(id)?;
    let deliveries = store.deliveries(id)?;
    let (older, newer) = match &run.routine {
        Some(r) => store.run_neighbours(r, id)?,
        None => (None, None),
    };
    let zone = &inner.zone;
    let when = |t: Option<DateTime<Utc>>| t.map(|t| format::local_full(t, zone));

    let mut facts = vec![Fact { label: "Trigger", value: crate::routine::fired_by(&run.trigger) }];
    let mut push = |label: &'static str, value: Option<String>| {
        if let Some(value) = value {
            facts.push(Fact { label, value });
        }
    };
    push("Scheduled for", when(run.scheduled_for));
    push("Not before", when(extra.not_before));
    // A fire is recorded at its instant; other runs when they came in.
    push("Received", when(Some(run.created_at)).filter(|_| run.scheduled_for.is_none()));
    push("Started", when(run.started_at));
    push("Finished", when(run.finished_at));
    push("Took", format::took(run.started_at, run.finished_at).map(format::duration_ms));
    push("Attempt", Some(detail.attempt.max(1).to_string()));
    push("Model calls", Some(run.iterations.to_string()));
    push("Tokens", Some(tokens(&run)));
    push("Reason", extra.reason.clone());

    let mut attempts = split_attempts(&events, run.started_at, detail.attempt, zone);
    let (attempt, last) = attempts.pop().map(|a| (a.number, a.events)).unwrap_or((1, Vec::new()));
    let failed_calls = last.iter().filter(|e| e.kind == "tool_call" && e.failed).count();
    let deliveries = deliveries.iter().map(|d| delivery(d, zone, inner.mail_outbox)).collect();
    Ok(Some(View {
        id,
        routine: run.routine.clone().unwrap_or_else(|| run.kind.as_str().to_string()),
        routine_href: run.routine.as_deref().map(runs_of),
        status: run.status.as_str(),
        status_words: format::words(run.status.as_str()),
        facts,
        error: run.error.clone().filter(|e| !e.trim().is_empty()),
        trigger_context: detail.trigger_context.as_deref().map(format::pretty_json).filter(|t| t != "{}"),
        prompt: detail.prompt,
        output: run.output.clone(),
        attempt,
        events: last,
        earlier: attempts,
        failed_calls,
        deliveries,
        older_href: older.map(run_href),
        newer_href: newer.map(run_href),
    }))
}

fn tokens(run: &RunRow) -> String {
    let total = run.prompt_tokens + run.completion_tokens;
    format!(
        "{} ({} prompt + {} completion)",
        format::count(total),
        format::count(run.prompt_tokens),
        format::count(run.completion_tokens)
    )
}

/// Splits a run's events into attempts. A new attempt starts after a model
/// call that failed (the engine retries the whole turn on provider
/// failures) and where the events cross the run's `started_at` (a run
/// queued again after its process died starts anew). Attempts are numbered
/// so the last one is `attempt`, the run's own count.
fn split_attempts(events: &[EventRow], started_at: Option<DateTime<Utc>>, attempt: u32, zone: &Tz) -> Vec<Attempt> {
    let mut groups: Vec<(Vec<&EventRow>, String)> = vec![(Vec::new(), String::new())];
    let mut previous: Option<&EventRow> = None;
    for e in events {
        let restarted = match (previous, started_at) {
            (Some(p), Some(s)) => p.at < s && e.at >= s,
            _ => false,
        };
        let after_failure = previous.is_some_and(|p| p.kind == "model_call" && p.status == "error");
        if restarted || after_failure {
            let ended = match previous {
                Some(p) if after_failure => {
                    format!("the model call failed: {}", format::first_line(p.detail.as_deref().unwrap_or(""), 200))
                }
                _ => "the process running it stopped; the run was queued again".to_string(),
            };
            if let Some(last) = groups.last_mut() {
                last.1 = ended;
            }
            groups.push((Vec::new(), String::new()));
        }
        if let Some(last) = groups.last_mut() {
            last.0.push(e);
        }
        previous = Some(e);
    }
    let count = u32::try_from(groups.len()).unwrap_or(u32::MAX);
    let first = attempt.max(count).saturating_sub(count) + 1;
    groups
        .into_iter()
        .enumerate()
        .map(|(i, (events, ended))| Attempt {
            number: first + u32::try_from(i).unwrap_or(0),
            ended,
            events: events.into_iter().map(|e| event(e, zone)).collect(),
        })
        .collect()
}

fn event(e: &EventRow, zone: &Tz) -> EventView {
    let failed = match e.kind.as_str() {
        "tool_call" => !matches!(e.status.as_str(), "success" | "duplicate"),
        "model_call" => e.status == "error",
        _ => false,
    };
    let name = match (e.kind.as_str(), &e.tool) {
        ("tool_call", Some(tool)) => tool.clone(),
        ("model_call", _) => "model call".to_string(),
        _ => format::words(&e.status),
    };
    let tokens = match (e.prompt_tokens, e.completion_tokens) {
        (Some(p), Some(c)) => Some(format!("{} + {} tokens", format::count(p), format::count(c))),
        _ => None,
    };
    EventView {
        seq: e.seq,
        anchor: format!("event-{}", e.seq),
        kind: e.kind.clone(),
        name,
        status: format::words(&e.status),
        failed,
        at: e.at.with_timezone(zone).format("%H:%M:%S").to_string(),
        duration: format::duration_ms(e.duration_ms),
        tokens,
        arguments: e.arguments.as_deref().map(format::pretty_json),
        detail: e.detail.clone().filter(|d| !d.is_empty()),
    }
}

fn delivery(d: &DeliveryRow, zone: &Tz, mail_outbox: bool) -> DeliveryView {
    let queued = mail_outbox && d.kind == "mail" && d.status == DeliveryStatus::Delivered;
    DeliveryView {
        kind: d.kind.clone(),
        target: d.target.clone(),
        status: d.status.as_str(),
        status_words: if queued { QUEUED.to_string() } else { format::words(d.status.as_str()) },
        failed: matches!(d.status.as_str(), "failed" | "uncertain"),
        attempts: d.attempts,
        error: d.error.clone().filter(|e| !e.is_empty()),
        on_failure: d.on_failure,
        updated: format::local_full(d.updated_at, zone),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn ev(seq: i64, t: &str, kind: &str, status: &str) -> EventRow {
        EventRow {
            id: seq,
            run_id: 1,
            seq,
            at: at(t),
            kind: kind.into(),
            tool: (kind == "tool_call").then(|| "shell".to_string()),
            status: status.into(),
            arguments: None,
            detail: Some(format!("detail {seq}")),
            prompt_tokens: None,
            completion_tokens: None,
            duration_ms: 5,
        }
    }

    #[test]
    fn one_attempt_without_failures() {
        let events =
            [ev(1, "2025-01-01T08:00:00Z", "model_call", "ok"), ev(2, "2025-01-01T08:00:01Z", "tool_call", "failed")];
        let attempts = split_attempts(&events, Some(at("2025-01-01T07:59:59Z")), 1, &Tz::UTC);
        assert_eq!(attempts.len(), 1);
        assert_eq!((attempts[0].number, attempts[0].events.len()), (1, 2));
        assert!(attempts[0].events[1].failed, "a failed tool call is marked");
    }

    #[test]
    fn a_failed_model_call_and_a_restart_start_new_attempts() {
        let events = [
            // Attempt 1, in a process that died.
            ev(1, "2025-01-01T08:00:00Z", "model_call", "ok"),
            ev(2, "2025-01-01T08:00:01Z", "tool_call", "success"),
            // Attempt 2, after the daemon queued it again: the provider fails...
            ev(3, "2025-01-01T09:00:00Z", "model_call", "error"),
            // ...and attempt 3 goes through.
            ev(4, "2025-01-01T09:00:10Z", "model_call", "ok"),
        ];
        let attempts = split_attempts(&events, Some(at("2025-01-01T08:59:59Z")), 3, &Tz::UTC);
        let shape: Vec<(u32, Vec<i64>)> =
            attempts.iter().map(|a| (a.number, a.events.iter().map(|e| e.seq).collect())).collect();
        assert_eq!(shape, [(1, vec![1, 2]), (2, vec![3]), (3, vec![4])]);
        assert!(attempts[0].ended.contains("queued again"), "{}", attempts[0].ended);
        assert_eq!(attempts[1].ended, "the model call failed: detail 3");
        assert_eq!(attempts[2].ended, "");
    }

    #[test]
    fn numbering_never_goes_below_one() {
        let events =
            [ev(1, "2025-01-01T08:00:00Z", "model_call", "error"), ev(2, "2025-01-01T08:00:05Z", "model_call", "ok")];
        let numbers: Vec<u32> = split_attempts(&events, None, 1, &Tz::UTC).iter().map(|a| a.number).collect();
        assert_eq!(numbers, [1, 2]);
        assert_eq!(split_attempts(&[], None, 2, &Tz::UTC).len(), 1, "no events: one empty attempt");
    }
}
