//! Helpers shared by the hand-timed benchmarks (`#[path]`-included: each bench is its
//! own crate).

use std::time::{Duration, Instant};

/// The median and the 99th percentile of `samples`.
pub fn stats(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    let at = |p: f64| samples[((samples.len() as f64 - 1.0) * p).round() as usize];
    (at(0.5), at(0.99))
}

/// [`stats`] of `n` timed calls of `f`.
pub fn time<F: FnMut()>(n: usize, mut f: F) -> (Duration, Duration) {
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        f();
        samples.push(t.elapsed());
    }
    stats(samples)
}

/// `parts` repeated in turn until the text is at least `bytes` long.
pub fn fill(parts: &[&str], bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 256);
    let mut i = 0;
    while s.len() < bytes {
        s.push_str(parts[i % parts.len()]);
        i += 1;
    }
    s
}
