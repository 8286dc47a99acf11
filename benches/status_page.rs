//! How fast the status page answers with 100,000 runs (SPEC §11: every page
//! within 50 ms).
//!
//! `cargo bench --bench status_page` fills a database with 100,000 runs of
//! 50 routines over the last 30 days (ids growing with time, as the daemon
//! writes them), each with its events (a model call, a tool call, a second
//! model call, sometimes a note) and a delivery, a prompt and an output of a
//! realistic size; then it serves the page on 127.0.0.1 and requests each
//! page over HTTP, printing p50/p95/max per page, and runs the criterion
//! benchmarks. The filled database is kept under the target folder and
//! reused for six hours. Without `--bench` (`cargo test --benches`) a small
//! smoke version runs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use chrono::{DateTime, Utc};
use criterion::Criterion;
use routines::config::ProcessEnv;
use routines::routine::load_all;
use routines::status::{RoutineList, StatusState, router};
use routines::store::{Store, to_db_time};
use routines::tools::Registry;
use rusqlite::params;

const ROUTINES: usize = 50;
const SPAN_DAYS: i64 = 30;

/// Deterministic 64-bit LCG (Knuth's MMIX constants).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 11
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The status of a run: mostly successes, as in life.
fn status(rng: &mut Lcg) -> &'static str {
    match rng.below(100) {
        0..=89 => "succeeded",
        90..=92 => "failed",
        93..=94 => "silent",
        95..=96 => "skipped",
        97 => "timed_out",
        98 => "interrupted",
        _ => "succeeded",
    }
}

/// One event of a filled run: kind, tool, status, arguments, detail, prompt tokens.
type Event<'a> = (&'a str, Option<&'a str>, &'a str, Option<&'a str>, &'a str, Option<u64>);

/// Fills `store` with `runs` runs ending at `now`, in one transaction.
fn fill(store: &Store, runs: u64, now: DateTime<Utc>) {
    let mut rng = Lcg(0x5747_7553);
    let span_ms = SPAN_DAYS * 86_400_000;
    let prompt =
        "Summarize what changed in the repository since yesterday and list anything that needs a reply. ".repeat(5);
    let output = "## Summary\n\n- 12 commits by 3 authors; the release branch is green.\n".repeat(14);
    store
        .with_conn(|c| {
            let tx = c.unchecked_transaction()?;
            {
                let mut run = tx.prepare(
                    "INSERT INTO runs (kind, routine, trigger, scheduled_for, status, started_at, finished_at, output,
                                       error, prompt_tokens, completion_tokens, iterations, created_at, prompt,
                                       trigger_context, attempt, pid, reason)
                     VALUES ('routine', ?1, 'cron', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 2, ?2, ?10, '{\"kind\":\"cron\"}', 1,
                             1, ?11)",
                )?;
                let mut event = tx.prepare(
                    "INSERT INTO run_events (run_id, seq, at, kind, tool, status, arguments, detail, prompt_tokens,
                                             completion_tokens, duration_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                )?;
                let mut delivery = tx.prepare(
                    "INSERT INTO deliveries (run_id, seq, kind, target, on_failure, payload, status, attempts, error,
                                             created_at, updated_at)
                     VALUES (?1, 0, 'file', 'reports/daily.md', 0, '{}', ?2, 1, ?3, ?4, ?4)",
                )?;
                for i in 0..runs {
                    // Evenly over the span, oldest first, a little jitter.
                    let offset = span_ms - (span_ms * i as i64) / runs as i64 + rng.below(1000) as i64;
                    let at = now - chrono::Duration::milliseconds(offset.max(1));
                    let routine = format!("routine-{:02}", rng.below(ROUTINES as u64));
                    let status = status(&mut rng);
                    let ran = status != "skipped";
                    let took = chrono::Duration::milliseconds(2_000 + rng.below(90_000) as i64);
                    let (t0, t1) = (to_db_time(at), to_db_time(at + took));
                    let failed = matches!(status, "failed" | "timed_out" | "interrupted");
                    let error = failed.then_some("the model provider failed: server error 503 Service Unavailable");
                    let reason = match status {
                        "skipped" => Some("missed"),
                        "interrupted" => Some("crash"),
                        _ => None,
                    };
                    let (p, cpl) = if ran { (2_000 + rng.below(4_000), 100 + rng.below(600)) } else { (0, 0) };
                    run.execute(params![
                        routine,
                        t0,
                        status,
                        ran.then_some(&t0),
                        &t1,
                        (status == "succeeded").then_some(&output),
                        error,
                        p,
                        cpl,
                        ran.then_some(&prompt),
                        reason,
                    ])?;
                    let id = tx.last_insert_rowid();
                    if !ran {
                        continue;
                    }
                    let tool_status = if failed { "failed" } else { "success" };
                    let events: [Event<'_>; 3] = [
                        ("model_call", None, "ok", None, "iteration 1: 1 tool call(s)", Some(p / 2)),
                        (
                            "tool_call",
                            Some("shell"),
                            tool_status,
                            Some(r#"{"command":"git log --since=yesterday --stat"}"#),
                            "a1b2c3 Fix the release script\n 3 files changed, 41 insertions(+), 7 deletions(-)",
                            None,
                        ),
                        ("model_call", None, "ok", None, "iteration 2: 0 tool call(s)", Some(p / 2)),
                    ];
                    for (seq, (kind, tool, st, args, detail, tokens)) in events.iter().enumerate() {
                        event.execute(params![
                            id,
                            seq as i64 + 1,
                            t0,
                            kind,
                            tool,
                            st,
                            args,
                            detail,
                            tokens,
                            tokens.map(|_| cpl / 2),
                            800 + rng.below(3000)
                        ])?;
                    }
                    if rng.below(10) == 0 {
                        event.execute(params![
                            id,
                            4,
                            t1,
                            "note",
                            Option::<&str>::None,
                            "injection_check",
                            Option::<&str>::None,
                            "review: instructions in a tool result",
                            Option::<u64>::None,
                            Option::<u64>::None,
                            0
                        ])?;
                    }
                    let (d_status, d_error) =
                        if rng.below(50) == 0 { ("failed", Some("the disk is full")) } else { ("delivered", None) };
                    delivery.execute(params![id, d_status, d_error, t1])?;
                }
            }
            tx.commit()
        })
        .unwrap();
}

/// A project with `ROUTINES` routines, cron in a few zones and intervals.
fn project(dir: &Path) -> RoutineList {
    std::fs::create_dir_all(dir.join("routines")).unwrap();
    std::fs::write(dir.join("routines.yaml"), "timezone: Europe/Berlin\nprovider: { model: m }\n").unwrap();
    let zones = ["Europe/Berlin", "America/New_York", "Asia/Shanghai", "UTC"];
    for i in 0..ROUTINES {
        let trigger = if i % 5 == 0 {
            "  - every: 30m\n".to_string()
        } else {
            format!("  - cron: \"{} {} * * *\"\n    timezone: {}\n", i % 60, i % 24, zones[i % zones.len()])
        };
        let yaml = format!("description: Routine number {i}\non:\n{trigger}prompt: Do task {i}.\n");
        std::fs::write(dir.join(format!("routines/routine-{i:02}.yaml")), yaml).unwrap();
    }
    let config = routines::config::load(Some(&dir.join("routines.yaml")), dir, &ProcessEnv).unwrap();
    let loaded = load_all(&config, None, &Registry::builtin().names());
    assert!(loaded.diagnostics.is_empty(), "{}", loaded.diagnostics);
    RoutineList::new(loaded.routines.into_iter().map(Arc::new))
}

/// The database of `runs` runs: kept from an earlier run of the benchmark
/// when it is younger than six hours (the charts are relative to now).
fn database(path: &Path, runs: u64) -> Store {
    let fresh = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age < Duration::from_secs(6 * 3600));
    if fresh {
        let store = Store::open(path).unwrap();
        let n: u64 = store.with_conn(|c| c.query_row("SELECT COUNT(*) FROM runs", [], |r| r.get(0))).unwrap();
        if n == runs {
            println!("reusing {} ({n} runs)", path.display());
            return store;
        }
    }
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let store = Store::open(path).unwrap();
    let started = Instant::now();
    fill(&store, runs, Utc::now());
    store.with_conn(|c| c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")).unwrap();
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    println!("filled {runs} runs in {:.1?}: {} MB", started.elapsed(), size / 1_000_000);
    store
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let runs: u64 = if full { 100_000 } else { 2_000 };
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let dir = tempfile::tempdir().unwrap();
    let db = if full { target.join("status_page_bench.db") } else { dir.path().join("smoke.db") };
    let store = database(&db, runs);
    let routines = project(dir.path());

    let rt = tokio::runtime::Runtime::new().unwrap();
    // The page reads through a connection of its own, as the daemon will give it.
    let state = StatusState::new(Store::open(&db).unwrap(), routines, chrono_tz::Europe::Berlin, None, true).unwrap();
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    rt.spawn(async move { axum::serve(listener, router(state)).await.unwrap() });
    let client = reqwest::Client::builder().no_proxy().build().unwrap();

    let (mid, failed): (i64, i64) = store
        .with_conn(|c| {
            let mid = c.query_row("SELECT id FROM runs ORDER BY id LIMIT 1 OFFSET ?1", [runs / 2], |r| r.get(0))?;
            let failed = c.query_row("SELECT MAX(id) FROM runs WHERE status = 'failed'", [], |r| r.get(0))?;
            Ok((mid, failed))
        })
        .unwrap();
    let pages = [
        ("routines", "/".to_string()),
        ("runs", "/runs".to_string()),
        ("runs, deep page", format!("/runs?before={mid}")),
        ("runs of a routine", "/runs?routine=routine-17".to_string()),
        ("runs that failed", "/runs?status=failed".to_string()),
        ("runs of a routine that timed out", "/runs?routine=routine-17&status=timed_out".to_string()),
        ("interrupted, deep page", format!("/runs?status=interrupted&before={mid}")),
        ("one run", format!("/runs/{failed}")),
        ("charts", "/charts".to_string()),
    ];
    let fetch = |path: &str| {
        let url = format!("{base}{path}");
        let client = client.clone();
        async move {
            let r = client.get(url).send().await.unwrap();
            assert!(r.status().is_success(), "{}", r.status());
            r.bytes().await.unwrap().len()
        }
    };

    let samples = if full { 40 } else { 5 };
    println!("\n{runs} runs, {ROUTINES} routines, {SPAN_DAYS} days; each page {samples} times over HTTP:");
    println!("{:<34} {:>9} {:>9} {:>9} {:>8}", "page", "p50", "p95", "max", "bytes");
    let mut worst = Duration::ZERO;
    for (name, path) in &pages {
        rt.block_on(fetch(path));
        let mut times = Vec::with_capacity(samples);
        let mut bytes = 0;
        for _ in 0..samples {
            let t = Instant::now();
            bytes = rt.block_on(fetch(path));
            times.push(t.elapsed());
        }
        times.sort_unstable();
        let p95 = percentile(&times, 0.95);
        worst = worst.max(p95);
        println!(
            "{name:<34} {:>9.2?} {:>9.2?} {:>9.2?} {bytes:>8}",
            percentile(&times, 0.5),
            p95,
            percentile(&times, 1.0)
        );
    }
    println!("slowest p95: {worst:.2?} (target: 50 ms)\n");

    if full {
        let mut c = Criterion::default().configure_from_args().sample_size(30);
        let mut group = c.benchmark_group("status_page");
        for (name, path) in &pages {
            group.bench_function(*name, |b| b.to_async(&rt).iter(|| fetch(path)));
        }
        group.finish();
        c.final_summary();
    }
}
