//! `GET /charts`: runs per day by status and tokens per day over the last
//! 14 days (days of the engine's zone), and the p50/p95 duration of each
//! routine's recent runs.

use axum::extract::State;
use axum::response::Response;
use chrono::{DateTime, Days, NaiveDate, TimeZone, Utc};
use chrono_tz::Tz;
use serde::Serialize;

use super::{STATUS_ORDER, blocking, render, runs_of};
use crate::routine::reserved::RUN_NAMES;
use crate::status::svg::{self, Chart, Column, Segment, Spread};
use crate::status::{Inner, StatusError, StatusState, format};
use crate::store::DayStatusCount;

/// Days the charts cover, today included.
pub const DAYS: u64 = 14;

/// The newest runs of each routine in the window that the durations are
/// taken from.
pub const DURATION_RUNS: usize = 200;

#[derive(Debug, Serialize)]
struct View {
    days: u64,
    duration_runs: usize,
    runs_chart: Chart,
    tokens_chart: Chart,
    durations_chart: Option<Chart>,
    legend: Vec<Legend>,
    table: Vec<DayRow>,
    durations: Vec<DurationRow>,
    totals: Totals,
}

#[derive(Debug, Serialize)]
struct Legend {
    class: &'static str,
    label: String,
}

#[derive(Debug, Serialize)]
struct DayRow {
    day: String,
    runs: String,
    failed: String,
    tokens: String,
}

#[derive(Debug, Serialize)]
struct DurationRow {
    routine: String,
    href: String,
    runs: usize,
    p50: String,
    p95: String,
}

#[derive(Debug, Serialize)]
struct Totals {
    runs: String,
    failed: String,
    tokens: String,
}

pub async fn page(State(state): State<StatusState>) -> Response {
    blocking(state, |inner| {
        let view = view(inner)?;
        render(inner, "charts.html", "charts", "Charts", view)
    })
    .await
}

/// The local midnights that start each of the last `days` days and end
/// today, in UTC.
fn day_bounds(now: DateTime<Utc>, zone: &Tz, days: u64) -> Vec<(NaiveDate, DateTime<Utc>)> {
    let today = now.with_timezone(zone).date_naive();
    let first = today.checked_sub_days(Days::new(days - 1)).unwrap_or(today);
    (0..=days).filter_map(|i| first.checked_add_days(Days::new(i))).map(|d| (d, midnight(d, zone))).collect()
}

/// The first instant of local day `d` (later than 00:00 where a DST change
/// skips midnight).
fn midnight(d: NaiveDate, zone: &Tz) -> DateTime<Utc> {
    (0..=3)
        .find_map(|h| d.and_hms_opt(h, 0, 0).and_then(|t| zone.from_local_datetime(&t).earliest()))
        .map_or_else(|| d.and_time(chrono::NaiveTime::MIN).and_utc(), |t| t.with_timezone(&Utc))
}

fn view(inner: &Inner) -> Result<View, StatusError> {
    let now = Utc::now();
    let bounds = day_bounds(now, &inner.zone, DAYS);
    let instants: Vec<DateTime<Utc>> = bounds.iter().map(|(_, t)| *t).collect();
    let stats = inner.store.day_stats(&instants)?;
    let days: Vec<NaiveDate> = bounds.iter().take(bounds.len().saturating_sub(1)).map(|(d, _)| *d).collect();
    let label = |d: &NaiveDate| d.format("%a %-d").to_string();
    let long = |d: &NaiveDate| d.format("%a %Y-%m-%d").to_string();

    let of_day = |i: usize| stats.iter().filter(move |s| s.day == i);
    let run_columns: Vec<Column> = days
        .iter()
        .enumerate()
        .map(|(i, d)| Column {
            label: label(d),
            segments: STATUS_ORDER
                .iter()
                .map(|status| {
                    let n: u64 = of_day(i).filter(|s| s.status == *status).map(|s| s.runs).sum();
                    Segment {
                        class: status.as_str().to_string(),
                        value: n as f64,
                        title: format!("{}: {} {}", long(d), format::count(n), format::words(status.as_str())),
                    }
                })
                .collect(),
        })
        .collect();
    let token_columns: Vec<Column> = days
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let (p, c) = of_day(i).fold((0, 0), |(p, c), s| (p + s.prompt_tokens, c + s.completion_tokens));
            let seg = |class: &str, v: u64, what: &str| Segment {
                class: class.to_string(),
                value: v as f64,
                title: format!("{}: {} {what} tokens", long(d), format::count(v)),
            };
            Column { label: label(d), segments: vec![seg("prompt", p, "prompt"), seg("completion", c, "completion")] }
        })
        .collect();

    let table = days.iter().enumerate().rev().map(|(i, d)| day_row(long(d), of_day(i))).collect();
    let totals = {
        let all = stats.iter();
        let runs: u64 = all.clone().map(|s| s.runs).sum();
        let failed: u64 = all.clone().filter(|s| is_failure(s)).map(|s| s.runs).sum();
        let tokens: u64 = all.map(|s| s.prompt_tokens + s.completion_tokens).sum();
        Totals { runs: format::count(runs), failed: format::count(failed), tokens: format::count(tokens) }
    };

    let since = instants.first().copied().unwrap_or(now);
    let mut names: Vec<String> = inner.routines.snapshot().iter().map(|r| r.name.clone()).collect();
    // Heartbeats and greetings are runs under reserved names; charted when they ran.
    let built_in = RUN_NAMES.iter().filter(|b| !names.iter().any(|n| n == *b)).map(|b| b.to_string());
    names.extend(built_in.collect::<Vec<_>>());
    let mut spreads = Vec::new();
    let mut durations = Vec::new();
    for name in names {
        let mut ms = inner.store.run_durations(&name, since, DURATION_RUNS)?;
        ms.sort_unstable();
        let (Some(p50), Some(p95)) = (svg::percentile(&ms, 50.0), svg::percentile(&ms, 95.0)) else { continue };
        let (p50s, p95s) = (format::duration_ms(p50), format::duration_ms(p95));
        spreads.push(Spread {
            label: name.clone(),
            p50: p50 as f64,
            p95: p95 as f64,
            title: format!("{name}: p50 {p50s}, p95 {p95s} over {} runs", ms.len()),
        });
        durations.push(DurationRow { href: runs_of(&name), routine: name, runs: ms.len(), p50: p50s, p95: p95s });
    }
    let tick: fn(f64) -> String = |v| format::duration_tick(v.max(0.0) as u64);
    let durations_chart = (!spreads.is_empty())
        .then(|| svg::spreads(&spreads, 1120.0, "p50 and p95 run duration per routine".into(), tick));

    Ok(View {
        days: DAYS,
        duration_runs: DURATION_RUNS,
        runs_chart: svg::stacked_columns(
            &run_columns,
            1120.0,
            240.0,
            format!("runs per day by status, last {DAYS} days"),
            format::compact,
        ),
        tokens_chart: svg::stacked_columns(
            &token_columns,
            1120.0,
            200.0,
            format!("tokens per day, last {DAYS} days"),
            format::compact,
        ),
        durations_chart,
        legend: STATUS_ORDER.iter().map(|s| Legend { class: s.as_str(), label: format::words(s.as_str()) }).collect(),
        table,
        durations,
        totals,
    })
}

fn is_failure(s: &DayStatusCount) -> bool {
    crate::store::ATTENTION_STATUSES.contains(&s.status)
}

fn day_row<'a>(day: String, stats: impl Iterator<Item = &'a DayStatusCount> + Clone) -> DayRow {
    let runs: u64 = stats.clone().map(|s| s.runs).sum();
    let failed: u64 = stats.clone().filter(|s| is_failure(s)).map(|s| s.runs).sum();
    let tokens: u64 = stats.map(|s| s.prompt_tokens + s.completion_tokens).sum();
    DayRow { day, runs: format::count(runs), failed: format::count(failed), tokens: format::count(tokens) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_start_at_local_midnight_also_across_dst() {
        // Berlin moves to summer time on 2025-03-30; the window crosses it.
        let now = DateTime::parse_from_rfc3339("2025-04-02T10:00:00Z").unwrap().with_timezone(&Utc);
        let bounds = day_bounds(now, &chrono_tz::Europe::Berlin, 14);
        assert_eq!(bounds.len(), 15);
        assert_eq!(bounds[0].0.to_string(), "2025-03-20");
        assert_eq!(bounds[0].1.to_rfc3339(), "2025-03-19T23:00:00+00:00");
        assert_eq!(bounds[14].1.to_rfc3339(), "2025-04-02T22:00:00+00:00", "the end of today, in summer time");
        assert!(bounds.windows(2).all(|w| w[0].1 < w[1].1));
    }

    #[test]
    fn a_skipped_midnight_starts_the_day_at_the_first_hour_that_exists() {
        // Santiago skipped 00:00 on 2024-09-08 (clocks went to 01:00).
        let d = NaiveDate::from_ymd_opt(2024, 9, 8).unwrap();
        let start = midnight(d, &chrono_tz::America::Santiago);
        assert_eq!(start.with_timezone(&chrono_tz::America::Santiago).format("%H:%M").to_string(), "01:00");
    }
}
