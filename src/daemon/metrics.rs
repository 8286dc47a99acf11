//! Figures for `GET /metrics` (Prometheus text format): runs by status,
//! fire lateness, queue depth and model tokens.

use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

use crate::store::{RunStatus, Store};

/// Upper bounds of the fire lateness histogram, in seconds.
const BUCKETS: [f64; 10] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 60.0];

/// Counters kept in memory by the daemon; the rest is read from the store.
#[derive(Debug, Default)]
pub struct Metrics {
    lateness: Mutex<Histogram>,
}

#[derive(Debug, Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    sum: f64,
    count: u64,
    /// Every observation, for percentiles in benchmarks (bounded).
    samples: Vec<f64>,
}

const MAX_SAMPLES: usize = 100_000;

impl Metrics {
    /// How late a fire started after its instant (plus jitter).
    pub fn observe_lateness(&self, late: Duration) {
        let secs = late.as_secs_f64();
        if let Ok(mut h) = self.lateness.lock() {
            for (i, bound) in BUCKETS.iter().enumerate() {
                if secs <= *bound {
                    h.counts[i] += 1;
                }
            }
            h.sum += secs;
            h.count += 1;
            if h.samples.len() < MAX_SAMPLES {
                h.samples.push(secs);
            }
        }
    }

    /// The `p`-th percentile (0-100) of observed fire lateness, in seconds.
    pub fn lateness_percentile(&self, p: f64) -> Option<f64> {
        let h = self.lateness.lock().ok()?;
        if h.samples.is_empty() {
            return None;
        }
        let mut s = h.samples.clone();
        s.sort_by(f64::total_cmp);
        let idx = ((p / 100.0) * (s.len() - 1) as f64).round() as usize;
        s.get(idx.min(s.len() - 1)).copied()
    }

    /// The exposition text.
    pub fn render(&self, store: &Store, queue_depth: usize, executing: usize) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# HELP routines_runs Runs recorded in the database, by status.");
        let _ = writeln!(out, "# TYPE routines_runs gauge");
        let (by_status, tokens) = store.totals().unwrap_or_default();
        for status in RunStatus::ALL {
            let n = by_status.iter().find(|(s, _)| s == status.as_str()).map_or(0, |(_, n)| *n);
            let _ = writeln!(out, "routines_runs{{status=\"{status}\"}} {n}");
        }
        let _ = writeln!(out, "# HELP routines_fire_lateness_seconds How late fires started after their instant.");
        let _ = writeln!(out, "# TYPE routines_fire_lateness_seconds histogram");
        if let Ok(h) = self.lateness.lock() {
            for (i, bound) in BUCKETS.iter().enumerate() {
                let _ = writeln!(out, "routines_fire_lateness_seconds_bucket{{le=\"{bound}\"}} {}", h.counts[i]);
            }
            let _ = writeln!(out, "routines_fire_lateness_seconds_bucket{{le=\"+Inf\"}} {}", h.count);
            let _ = writeln!(out, "routines_fire_lateness_seconds_sum {}", h.sum);
            let _ = writeln!(out, "routines_fire_lateness_seconds_count {}", h.count);
        }
        let _ = writeln!(out, "# HELP routines_queue_depth Fires accepted and waiting to start.");
        let _ = writeln!(out, "# TYPE routines_queue_depth gauge");
        let _ = writeln!(out, "routines_queue_depth {queue_depth}");
        let _ = writeln!(out, "# HELP routines_runs_executing Runs executing now.");
        let _ = writeln!(out, "# TYPE routines_runs_executing gauge");
        let _ = writeln!(out, "routines_runs_executing {executing}");
        let _ = writeln!(out, "# HELP routines_model_tokens Model tokens used by recorded runs.");
        let _ = writeln!(out, "# TYPE routines_model_tokens counter");
        let _ = writeln!(out, "routines_model_tokens{{kind=\"prompt\"}} {}", tokens.0);
        let _ = writeln!(out, "routines_model_tokens{{kind=\"completion\"}} {}", tokens.1);
        out
    }
}
