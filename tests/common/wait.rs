//! Waiting for an event: a condition polled until it holds or a deadline passes, never a
//! fixed pause standing in for the event.

use std::time::Duration;

/// How long a test waits for an event unless it says otherwise.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// Runs `check` now and then every `every` until it returns `Some`, for at most `within`;
/// `None` when the deadline passed first (the caller panics with what it knows).
pub async fn poll<T>(within: Duration, every: Duration, mut check: impl AsyncFnMut() -> Option<T>) -> Option<T> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if let Some(value) = check().await {
            return Some(value);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(every).await;
    }
}
