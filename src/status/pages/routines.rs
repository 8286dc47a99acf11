//! `GET /`: every routine with its triggers, next fire in its zone, state,
//! last run and a sparkline of recent runs; above them, one line per routine
//! whose runs of the last day need a look.

use axum::extract::State;
use axum::response::Response;
use chrono::{Duration, Utc};
use serde::Serialize;

use super::{RunItem, blocking, render, run_href, runs_of};
use crate::routine::Routine;
use crate::routine::schedule::next_fires;
use crate::status::svg::{self, Chart, Mark};
use crate::status::{Inner, StatusError, StatusState, format};
use crate::store::{RunBrief, RunMark};

/// How many recent runs a sparkline shows.
const SPARK_RUNS: usize = 30;

/// How far back "needs a look" goes, how many routines it lists, and how many of the newest
/// failures it counts at most.
const ATTENTION_WINDOW_HOURS: i64 = 24;
const ATTENTION_LIMIT: usize = 8;
const ATTENTION_SCAN: usize = 1000;

#[derive(Debug, Serialize)]
struct View {
    routines: Vec<RoutineView>,
    attention: Vec<Attention>,
    attention_hours: i64,
    counts: Counts,
}

#[derive(Debug, Default, Serialize)]
struct Counts {
    total: usize,
    paused: usize,
    disabled: usize,
    failing: usize,
}

#[derive(Debug, Serialize)]
struct RoutineView {
    name: String,
    runs_href: String,
    description: Option<String>,
    triggers: Vec<TriggerView>,
    /// `active`, `paused` or `disabled`.
    state: &'static str,
    next: Option<NextFire>,
    last: Option<RunItem>,
    spark: Chart,
}

/// A routine in "needs a look": its failures in the window, one line however many there were.
#[derive(Debug, Serialize)]
struct Attention {
    /// The newest failure: its routine, status, time, error and link.
    newest: RunItem,
    /// How many runs failed, timed out or were interrupted in the window: `3 failures`;
    /// `1,000+ failures` past the scan.
    failures: String,
    runs_href: Option<String>,
}

#[derive(Debug, Serialize)]
struct TriggerView {
    kind: &'static str,
    text: String,
}

#[derive(Debug, Serialize)]
struct NextFire {
    at: String,
    zone: String,
    rel: String,
}

pub async fn page(State(state): State<StatusState>) -> Response {
    blocking(state, |inner| {
        let view = view(inner)?;
        render(inner, "routines.html", "routines", "Routines", view)
    })
    .await
}

fn view(inner: &Inner) -> Result<View, StatusError> {
    let now = Utc::now();
    let paused = inner.store.paused_routines()?;
    let list = inner.routines.snapshot();
    let mut counts = Counts { total: list.len(), ..Counts::default() };
    let mut routines = Vec::with_capacity(list.len());
    for r in list.iter() {
        let recent = inner.store.recent_runs_of(&r.name, SPARK_RUNS)?;
        let state = if !r.spec.enabled {
            counts.disabled += 1;
            "disabled"
        } else if paused.contains(&r.name) {
            counts.paused += 1;
            "paused"
        } else {
            "active"
        };
        let next = (state == "active").then(|| next_fires(r, now, 1).into_iter().next()).flatten().map(|f| NextFire {
            at: f.at.format("%a %Y-%m-%d %H:%M").to_string(),
            zone: f.at.timezone().name().to_string(),
            rel: format::relative(f.at.with_timezone(&Utc), now),
        });
        let last = match recent.first() {
            Some(m) => inner.store.run_brief(m.id)?.map(|b| RunItem::new(&b, &inner.zone, now)),
            None => None,
        };
        if last.as_ref().is_some_and(|l| matches!(l.status, "failed" | "timed_out" | "interrupted")) {
            counts.failing += 1;
        }
        routines.push(RoutineView {
            name: r.name.clone(),
            runs_href: runs_of(&r.name),
            description: r.spec.description.clone().filter(|d| !d.trim().is_empty()),
            triggers: triggers(r),
            state,
            next,
            last,
            spark: spark(&r.name, &recent, &inner.zone),
        });
    }
    let since = now - Duration::hours(ATTENTION_WINDOW_HOURS);
    let failed = inner.store.attention_runs(since, ATTENTION_SCAN)?;
    // Cut at the limit, older failures went uncounted: each count is then at least that.
    let cut = failed.len() >= ATTENTION_SCAN;
    let attention = group_attention(&failed)
        .into_iter()
        .take(ATTENTION_LIMIT)
        .map(|(newest, n)| Attention {
            failures: format!(
                "{}{} failure{}",
                format::count(n as u64),
                if cut { "+" } else { "" },
                if n == 1 && !cut { "" } else { "s" }
            ),
            runs_href: newest.routine.as_deref().map(runs_of),
            newest: RunItem::new(newest, &inner.zone, now),
        })
        .collect();
    Ok(View { routines, attention, attention_hours: ATTENTION_WINDOW_HOURS, counts })
}

/// The failed runs `failed` (newest first) per routine, in the order of their newest failure:
/// that failure and how many there were. Runs without a routine stay alone.
fn group_attention(failed: &[RunBrief]) -> Vec<(&RunBrief, usize)> {
    let mut groups: Vec<(&RunBrief, usize)> = Vec::new();
    for run in failed {
        match groups.iter_mut().find(|(first, _)| run.routine.is_some() && first.routine == run.routine) {
            Some((_, n)) => *n += 1,
            None => groups.push((run, 1)),
        }
    }
    groups
}

/// Each trigger in a few words; `manual` always comes last.
fn triggers(r: &Routine) -> Vec<TriggerView> {
    let mut out: Vec<TriggerView> = r
        .spec
        .triggers
        .iter()
        .filter_map(|t| {
            if let Some(expr) = &t.cron {
                let zone = t.timezone.clone().unwrap_or_else(|| r.zone.name().to_string());
                Some(TriggerView { kind: "cron", text: format!("{expr} ({zone})") })
            } else if let Some(every) = t.every {
                Some(TriggerView { kind: "every", text: format!("every {every}") })
            } else if let Some(at) = &t.at {
                Some(TriggerView { kind: "at", text: format!("at {at}") })
            } else if let Some(file) = &t.file {
                let events: Vec<&str> = file.events.iter().map(|e| event_name(*e)).collect();
                Some(TriggerView { kind: "file", text: format!("{} ({})", file.paths.join(", "), events.join(", ")) })
            } else {
                t.webhook.as_ref().map(|w| TriggerView { kind: "webhook", text: format!("POST {}", w.path) })
            }
        })
        .collect();
    out.push(TriggerView { kind: "manual", text: "by hand".into() });
    out
}

fn event_name(e: crate::routine::FileEvent) -> &'static str {
    match e {
        crate::routine::FileEvent::Create => "create",
        crate::routine::FileEvent::Modify => "modify",
        crate::routine::FileEvent::Remove => "remove",
    }
}

/// The sparkline of `recent` (newest first), oldest on the left.
fn spark(name: &str, recent: &[RunMark], zone: &chrono_tz::Tz) -> Chart {
    let marks: Vec<Mark> = recent
        .iter()
        .rev()
        .map(|b| {
            let took = format::took(b.started_at, b.finished_at);
            // A fire is recorded at its instant; that is when it was due.
            let when = format::local(b.created_at, zone);
            let mut title = format!("run {} · {} · {when}", b.id, format::words(b.status.as_str()));
            if let Some(ms) = took {
                title.push_str(&format!(" · {}", format::duration_ms(ms)));
            }
            Mark { class: b.status.as_str().to_string(), value: took, title, href: run_href(b.id) }
        })
        .collect();
    svg::sparkline(&marks, SPARK_RUNS, format!("the last {} runs of {name}", marks.len()))
}
