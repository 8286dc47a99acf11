//! How large the database grows over a month of a 20-second routine, with and without the
//! history limits (issue 50, item 3), written through the store's own API as the daemon writes
//! each run: a claimed fire, its start, a model call and a tool call, its end with output and
//! tokens. Also a month of the same routine paused: a `skipped` row per fire (as before) against
//! one row per stretch of the pause (now).
//!
//!     cargo run --example history_size -- [FIRES] [MAX_RUNS]
//!
//! FIRES defaults to 129,600 (30 days of one fire every 20 s), MAX_RUNS to 1,000 (the default
//! `history.max_runs_per_routine`). Pruning runs every 180 fires, a simulated hour, as the
//! daemon's hourly pass. Within a month the default `max_age` (30d) prunes nothing; the count
//! limit is what bounds the file.

use std::path::Path;
use std::time::{Duration, Instant};

use chrono::{TimeDelta, TimeZone, Utc};
use routines::store::{
    EventKind, HistoryLimits, NewEvent, NewFire, NewRun, PausedFire, RunKind, RunOutcome, RunStatus, Store, StoreError,
    reason,
};

const PROMPT: &str = "Check the disk usage of the data folder and the size of the newest log files; \
    report anything above 80 percent or any log that grew by more than 100 MB since the last check, \
    with the numbers, in two sentences at most. If everything is fine, answer NOTHING_TO_REPORT.";
const OUTPUT: &str = "Disk usage of /srv/data is 41 percent (205 GB of 500 GB); the newest log, \
    app.log, is 12 MB and grew 2 MB since the last check. Nothing is above the limits.";
const ARGS: &str = r#"{"command":"du -sh /srv/data/logs/*.log","timeout":"30s"}"#;
const RESULT: &str = "12M\t/srv/data/logs/app.log\n3.1M\t/srv/data/logs/worker.log\n640K\t/srv/data/logs/cron.log";

fn main() -> Result<(), StoreError> {
    let mut args = std::env::args().skip(1);
    let fires: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(129_600);
    let max_runs: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let dir = tempfile::tempdir().map_err(|e| StoreError::Unreadable(e.to_string()))?;
    let limits = HistoryLimits { max_age: Duration::from_secs(30 * 86_400), max_runs_per_routine: max_runs };
    println!("{fires} fires of one routine every 20 s ({:.1} days)", f64::from(fires) * 20.0 / 86_400.0);
    for (name, prune) in [("no pruning", false), ("pruned hourly", true)] {
        let path = dir.path().join(format!("{}.db", name.replace(' ', "-")));
        let store = Store::open(&path)?;
        let began = Instant::now();
        for i in 0..fires {
            run_once(&store, i)?;
            if prune && i % 180 == 179 {
                store.prune_history(limits, Utc::now())?;
            }
        }
        report(&store, &path, name, began.elapsed())?;
        if !prune {
            // The first pass of a daemon started on a database that was never pruned.
            let began = Instant::now();
            let deleted = store.prune_history(limits, Utc::now())?;
            report(&store, &path, &format!("then one pass ({deleted} deleted)"), began.elapsed())?;
        }
    }
    for (name, spans) in [("paused, a row per fire (before)", false), ("paused, a row per stretch (now)", true)] {
        let path = dir.path().join(if spans { "spans.db" } else { "rows.db" });
        let store = Store::open(&path)?;
        store.pause("tick", Utc::now() - TimeDelta::days(31))?;
        let began = Instant::now();
        let why = "`tick` is paused; `routines resume tick` fires it again";
        for i in 0..fires {
            let at = instant(i);
            if spans {
                store.record_paused_fire(&PausedFire {
                    routine: "tick",
                    trigger: "every",
                    scheduled_for: Some(at),
                    why,
                })?;
            } else {
                let id = store.create_run(&NewRun {
                    kind: RunKind::Routine,
                    routine: Some("tick".into()),
                    trigger: "every".into(),
                    scheduled_for: Some(at),
                    status: RunStatus::Queued,
                })?;
                store.finish_run(id, &RunOutcome::skipped(reason::PAUSED, why))?;
            }
        }
        report(&store, &path, name, began.elapsed())?;
    }
    Ok(())
}

/// The instant of fire `i`.
fn instant(i: u32) -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).single().unwrap_or_default() + TimeDelta::seconds(i64::from(i) * 20)
}

/// One run as the daemon records it.
fn run_once(store: &Store, i: u32) -> Result<(), StoreError> {
    let context = format!(r#"{{"kind":"every","scheduled_for":"{}"}}"#, instant(i).to_rfc3339());
    let fire = NewFire {
        routine: "disk-check",
        trigger: "every",
        scheduled_for: Some(instant(i)),
        context: &context,
        not_before: None,
        skip_if_active: None,
        key: None,
    };
    let Some(id) = store.claim_fire(&fire)? else { return Ok(()) };
    store.start_run(id)?;
    store.set_prompt(id, PROMPT)?;
    let call = |kind, tool, arguments, detail, tokens: Option<u64>| NewEvent {
        kind,
        tool,
        status: "ok",
        arguments,
        detail,
        prompt_tokens: tokens,
        completion_tokens: tokens.map(|t| t / 10),
        duration_ms: 850,
    };
    store.record_event(id, &call(EventKind::ModelCall, None, None, None, Some(1_650)))?;
    store.record_event(id, &call(EventKind::ToolCall, Some("shell"), Some(ARGS), Some(RESULT), None))?;
    store.record_event(id, &call(EventKind::ModelCall, None, None, None, Some(1_820)))?;
    let outcome = RunOutcome {
        output: Some(OUTPUT.into()),
        prompt_tokens: 3_470,
        completion_tokens: 347,
        iterations: 2,
        ..RunOutcome::new(RunStatus::Succeeded, None)
    };
    store.finish_run(id, &outcome)
}

/// Prints the runs kept and the file's size, its write-ahead log folded in.
fn report(store: &Store, path: &Path, name: &str, took: Duration) -> Result<(), StoreError> {
    let (runs, events, pages, free, page_size): (i64, i64, i64, i64, i64) = store.with_conn(|c| {
        c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")?;
        Ok((
            c.query_row("SELECT COUNT(*) FROM runs", [], |r| r.get(0))?,
            c.query_row("SELECT COUNT(*) FROM run_events", [], |r| r.get(0))?,
            c.pragma_query_value(None, "page_count", |r| r.get(0))?,
            c.pragma_query_value(None, "freelist_count", |r| r.get(0))?,
            c.pragma_query_value(None, "page_size", |r| r.get(0))?,
        ))
    })?;
    let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let mib = |b: f64| b / 1_048_576.0;
    println!(
        "{name:<36} {runs:>7} runs {events:>7} events  file {:>7.2} MiB  (in use {:>6.2} MiB, free pages {free:>5})  {:.0} s",
        mib(bytes as f64),
        mib(((pages - free) * page_size) as f64),
        took.as_secs_f64()
    );
    Ok(())
}
