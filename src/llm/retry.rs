use std::time::Duration;

use rand::Rng;

/// Exponential backoff with jitter for retryable model failures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// Delay before the first retry; doubled each time.
    pub base: Duration,
    /// Ceiling of one delay.
    pub max_delay: Duration,
    /// A `Retry-After` longer than this is not waited for; the error is returned.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            base: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(120),
        }
    }
}

impl RetryPolicy {
    /// Delay before retry number `retry` (0-based): `base * 2^retry`, capped,
    /// with "equal jitter" (between half and all of it) so that many clients
    /// failing together do not retry together.
    pub fn backoff(&self, retry: u32) -> Duration {
        let exp = self.base.saturating_mul(1u32.checked_shl(retry.min(20)).unwrap_or(u32::MAX));
        let capped = exp.min(self.max_delay);
        let half = capped / 2;
        let jitter_ms = u64::try_from(half.as_millis()).unwrap_or(u64::MAX);
        half + Duration::from_millis(if jitter_ms == 0 { 0 } else { rand::rng().random_range(0..=jitter_ms) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_within_bounds() {
        let p = RetryPolicy {
            max_retries: 5,
            base: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
            max_retry_after: Duration::from_secs(1),
        };
        for (retry, full) in [(0, 100), (1, 200), (2, 400), (3, 800), (4, 1000), (30, 1000)] {
            for _ in 0..50 {
                let d = p.backoff(retry).as_millis();
                assert!(d >= full / 2 && d <= full, "retry {retry}: {d} ms not in [{}, {full}]", full / 2);
            }
        }
    }
}
