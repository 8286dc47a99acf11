//! Rate limiting: one token bucket per route path.

use tokio::time::Instant;

/// A token bucket: holds up to `burst` tokens and gains `rate` tokens per second.
#[derive(Debug, Clone, Copy)]
pub(super) struct Bucket {
    tokens: f64,
    updated: Instant,
}

impl Bucket {
    pub(super) fn full(burst: u32, now: Instant) -> Self {
        Bucket { tokens: f64::from(burst), updated: now }
    }

    /// Takes one token at `now`, or returns the whole seconds until one is available (at least 1).
    pub(super) fn take(&mut self, rate: f64, burst: u32, now: Instant) -> Result<(), u64> {
        let elapsed = now.saturating_duration_since(self.updated).as_secs_f64();
        self.tokens = (self.tokens + elapsed * rate).min(f64::from(burst));
        self.updated = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            // A float-to-integer cast saturates, so a tiny rate cannot overflow.
            Err(((1.0 - self.tokens) / rate).ceil().max(1.0) as u64)
        }
    }
}
