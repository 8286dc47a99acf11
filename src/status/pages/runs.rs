//! `GET /runs?routine=&status=&before=&after=`: recent runs, newest first,
//! filtered by routine and status, 50 a page. Pages are cut by run id
//! (`before` the oldest shown, `after` the newest), so every page is a
//! short walk of an index however deep it is.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::Utc;
use serde::{Deserialize, Serialize};

use super::{RunItem, STATUS_ORDER, blocking, encode, render};
use crate::status::render::message;
use crate::status::{Inner, StatusError, StatusState, format};
use crate::store::{RunPageQuery, RunStatus};

/// Runs on one page.
pub const PAGE_SIZE: usize = 50;

/// The query string as sent; every value is checked by hand so a bad one
/// gets a page that says what is wrong.
#[derive(Debug, Default, Deserialize)]
pub struct Params {
    routine: Option<String>,
    status: Option<String>,
    before: Option<String>,
    after: Option<String>,
}

#[derive(Debug, Serialize)]
struct View {
    heading: String,
    routine: Option<String>,
    status: Option<&'static str>,
    routine_options: Vec<Choice>,
    status_options: Vec<Choice>,
    chips: Vec<Chip>,
    runs: Vec<RunItem>,
    newer_href: Option<String>,
    older_href: Option<String>,
    /// The filters without paging: the first page.
    first_href: String,
}

#[derive(Debug, Serialize)]
struct Choice {
    value: String,
    label: String,
    selected: bool,
}

#[derive(Debug, Serialize)]
struct Chip {
    label: String,
    href: String,
    active: bool,
    class: &'static str,
}

pub async fn page(State(state): State<StatusState>, Query(params): Query<Params>) -> Response {
    blocking(state, move |inner| match parse(&params) {
        Ok(filter) => {
            let view = view(inner, &filter)?;
            let title = view.heading.clone();
            render(inner, "runs.html", "runs", &title, view)
        }
        Err(why) => Ok(message(&inner.pages, StatusCode::BAD_REQUEST, "That filter does not work", &why)),
    })
    .await
}

/// The checked filter.
#[derive(Debug, Default)]
struct Filter {
    routine: Option<String>,
    status: Option<RunStatus>,
    before: Option<i64>,
    after: Option<i64>,
}

fn parse(p: &Params) -> Result<Filter, String> {
    let non_empty = |v: &Option<String>| v.as_deref().map(str::trim).filter(|v| !v.is_empty()).map(str::to_string);
    let status = match non_empty(&p.status) {
        None => None,
        Some(s) => Some(s.parse::<RunStatus>().map_err(|_| {
            let known: Vec<&str> = STATUS_ORDER.iter().map(|s| s.as_str()).collect();
            format!("There is no run status “{s}”. The statuses are: {}.", known.join(", "))
        })?),
    };
    let id = |name: &str, v: &Option<String>| -> Result<Option<i64>, String> {
        non_empty(v)
            .map(|v| v.parse::<i64>().map_err(|_| format!("“{name}” takes a run number, not “{v}”.")))
            .transpose()
    };
    Ok(Filter {
        routine: non_empty(&p.routine),
        status,
        before: id("before", &p.before)?,
        after: id("after", &p.after)?,
    })
}

fn view(inner: &Inner, f: &Filter) -> Result<View, StatusError> {
    let now = Utc::now();
    let page = inner.store.run_page(&RunPageQuery {
        routine: f.routine.as_deref(),
        status: f.status,
        before: f.before,
        after: f.after,
        limit: PAGE_SIZE,
    })?;
    let link = |routine: Option<&str>, status: Option<RunStatus>, paging: Option<(&str, i64)>| {
        let mut parts = Vec::new();
        if let Some(r) = routine {
            parts.push(format!("routine={}", encode(r)));
        }
        if let Some(s) = status {
            parts.push(format!("status={}", s.as_str()));
        }
        if let Some((key, id)) = paging {
            parts.push(format!("{key}={id}"));
        }
        if parts.is_empty() { "/runs".to_string() } else { format!("/runs?{}", parts.join("&")) }
    };
    let routine = f.routine.as_deref();
    let newer_href = page.runs.first().filter(|_| page.newer).map(|r| link(routine, f.status, Some(("after", r.id))));
    let older_href = page.runs.last().filter(|_| page.older).map(|r| link(routine, f.status, Some(("before", r.id))));

    let mut names: Vec<String> = inner.routines.snapshot().iter().map(|r| r.name.clone()).collect();
    if let Some(r) = routine.filter(|r| !names.iter().any(|n| n == r)) {
        names.push(r.to_string());
    }
    let mut routine_options =
        vec![Choice { value: String::new(), label: "all routines".into(), selected: routine.is_none() }];
    routine_options.extend(names.into_iter().map(|n| Choice {
        selected: Some(n.as_str()) == routine,
        label: n.clone(),
        value: n,
    }));
    let mut status_options =
        vec![Choice { value: String::new(), label: "any status".into(), selected: f.status.is_none() }];
    status_options.extend(STATUS_ORDER.iter().map(|s| Choice {
        value: s.as_str().to_string(),
        label: format::words(s.as_str()),
        selected: f.status == Some(*s),
    }));
    let mut chips =
        vec![Chip { label: "all".into(), href: link(routine, None, None), active: f.status.is_none(), class: "" }];
    chips.extend(STATUS_ORDER.iter().map(|s| Chip {
        label: format::words(s.as_str()),
        href: link(routine, Some(*s), None),
        active: f.status == Some(*s),
        class: s.as_str(),
    }));

    let heading = match (f.status, routine) {
        (None, None) => "Recent runs".to_string(),
        (None, Some(r)) => format!("Runs of {r}"),
        (Some(s), None) => format!("Runs that {}", status_phrase(s)),
        (Some(s), Some(r)) => format!("Runs of {r} that {}", status_phrase(s)),
    };
    Ok(View {
        heading,
        routine: f.routine.clone(),
        status: f.status.map(RunStatus::as_str),
        routine_options,
        status_options,
        chips,
        runs: page.runs.iter().map(|b| RunItem::new(b, &inner.zone, now)).collect(),
        newer_href,
        older_href,
        first_href: link(routine, f.status, None),
    })
}

fn status_phrase(s: RunStatus) -> &'static str {
    match s {
        RunStatus::Queued => "are queued",
        RunStatus::Running => "are running",
        RunStatus::Succeeded => "succeeded",
        RunStatus::Silent => "ended silent",
        RunStatus::Failed => "failed",
        RunStatus::TimedOut => "timed out",
        RunStatus::Skipped => "were skipped",
        RunStatus::Interrupted => "were interrupted",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(routine: &str, status: &str, before: &str) -> Params {
        let some = |s: &str| Some(s.to_string());
        Params { routine: some(routine), status: some(status), before: some(before), after: None }
    }

    #[test]
    fn empty_values_mean_no_filter() {
        let f = parse(&params("", " ", "")).unwrap();
        assert_eq!((f.routine, f.status, f.before, f.after), (None, None, None, None));
    }

    #[test]
    fn bad_values_say_what_is_wrong() {
        let err = parse(&params("daily", "done", "")).unwrap_err();
        assert!(err.contains("“done”") && err.contains("timed_out"), "{err}");
        let err = parse(&params("daily", "failed", "12x")).unwrap_err();
        assert!(err.contains("“before” takes a run number"), "{err}");
        let f = parse(&params("daily", "timed_out", "120")).unwrap();
        assert_eq!((f.routine.as_deref(), f.status, f.before), (Some("daily"), Some(RunStatus::TimedOut), Some(120)));
    }
}
