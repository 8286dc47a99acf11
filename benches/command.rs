//! Policy check of one `shell` command line: criterion, then median and p99 over 10,000 timed checks.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use routines::policy::command::check;

/// The default `security.allowed_commands` (12 entries).
const ALLOWED: &[&str] = &["ls", "cat", "git", "df", "du", "date", "wc", "grep", "head", "tail", "pwd", "echo"];

/// Typical lines, accepted and refused.
const LINES: &[&str] = &[
    "git status",
    "git log --oneline -5",
    "ls -la src",
    "grep -rn \"a;b\" src",
    "cat README.md",
    "du -sh .",
    "date +%Y-%m-%d",
    "wc -l src/main.rs",
    "git status; rm -rf ~",
    "sh -c \"ls | wc -l\"",
    "find . -name '*.rs' -exec grep -n TODO {} +",
];

fn allowed() -> Vec<String> {
    ALLOWED.iter().map(|s| s.to_string()).collect()
}

fn bench(c: &mut Criterion) {
    let allowed = allowed();
    c.bench_function("check mix of 11 lines", |b| {
        b.iter(|| {
            for line in LINES {
                let _ = black_box(check(black_box(line), &allowed));
            }
        })
    });
    c.bench_function("check git log --oneline -5", |b| b.iter(|| check(black_box("git log --oneline -5"), &allowed)));
}

criterion_group!(benches, bench);

fn percentiles() {
    let allowed = allowed();
    for line in LINES {
        let _ = black_box(check(line, &allowed));
    }
    let mut times: Vec<Duration> = (0..10_000)
        .map(|i| {
            let line = LINES[i % LINES.len()];
            let start = Instant::now();
            let _ = black_box(check(black_box(line), &allowed));
            start.elapsed()
        })
        .collect();
    times.sort();
    let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
    println!(
        "policy check over 10000 checks of {} lines: median {:?}, p99 {:?}, max {:?} (target <= 20us)",
        LINES.len(),
        at(0.5),
        at(0.99),
        times[times.len() - 1]
    );
}

fn main() {
    percentiles();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
