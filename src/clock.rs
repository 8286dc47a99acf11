//! The sense of time of everything that waits for an instant (the daemon's
//! timer loop, heartbeats, greetings, delivery retries). Instants come from
//! an injected [`Clock`]; waiting uses tokio's timer, never longer than
//! [`MAX_SLEEP`] at a time, so a wall clock that jumps (suspend, NTP step) is
//! noticed within a minute.

use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};

/// The longest the timer loop sleeps before looking at the clock again.
pub const MAX_SLEEP: Duration = Duration::from_secs(60);

/// Wall-clock time.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> DateTime<Utc>;
}

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A wall clock that starts at a chosen instant and advances with tokio's
/// timer, so tests with paused time control it; [`TokioClock::jump`] moves
/// it without any time passing for tokio, like a suspended machine waking.
#[derive(Debug)]
pub struct TokioClock {
    start: DateTime<Utc>,
    base: tokio::time::Instant,
    jumped: Mutex<chrono::Duration>,
}

impl TokioClock {
    pub fn starting_at(start: DateTime<Utc>) -> Self {
        TokioClock { start, base: tokio::time::Instant::now(), jumped: Mutex::new(chrono::Duration::zero()) }
    }

    /// Moves the wall clock by `by` at once.
    pub fn jump(&self, by: chrono::Duration) {
        if let Ok(mut j) = self.jumped.lock() {
            *j += by;
        }
    }
}

impl Clock for TokioClock {
    fn now(&self) -> DateTime<Utc> {
        let elapsed = chrono::Duration::from_std(self.base.elapsed()).unwrap_or(chrono::Duration::MAX);
        let jumped = self.jumped.lock().map(|j| *j).unwrap_or_default();
        self.start + elapsed + jumped
    }
}

/// How long to sleep to reach `target` from `now`, at most [`MAX_SLEEP`].
pub fn sleep_for(now: DateTime<Utc>, target: Option<DateTime<Utc>>) -> Duration {
    match target {
        Some(t) if t > now => (t - now).to_std().unwrap_or(MAX_SLEEP).min(MAX_SLEEP),
        Some(_) => Duration::ZERO,
        None => MAX_SLEEP,
    }
}
