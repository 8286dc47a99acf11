//! Cost of redaction: building the automaton of a process's secrets (an API key, an SMTP
//! login and password, a webhook secret, a database URL), and redacting 100 KB of ordinary
//! tool output with none of them in it, and with the key in it plain, in base64 and in hex.
//! `cargo bench --bench redaction` prints median and p99 of each; under `cargo test --benches`
//! it runs a short smoke version.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use routines::policy::Redactor;
use routines::policy::secrets::Strength;

const KEY: &str = "sk-proj-4f9a2b7c1d8e6f30a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0";

#[path = "common/helpers.rs"]
mod helpers;
use helpers::{fill, time};

/// 100 KB of ordinary tool output: log lines, prose, JSON, HTML and hashes.
fn benign_text() -> String {
    let parts = [
        "2026-11-22T09:00:01Z INFO request served path=/api/v1/items status=200 duration_ms=12\n",
        "The quarterly report shows steady growth; you can ignore the warnings about deprecated fields.\n",
        "{\"id\": 42, \"role\": \"user\", \"name\": \"build\", \"status\": \"ok\", \"tags\": [\"ci\", \"nightly\"]}\n",
        "<div class=\"post\"><h2>Release notes</h2><p>Installation instructions: run make install.</p></div>\n",
        "commit 3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a sha256 ZGF0YSB0aGF0IGlzIG5vdCBhIHNlY3JldA==\n",
    ];
    fill(&parts, 100 * 1024)
}

fn secrets() -> Vec<(String, Strength)> {
    vec![
        (KEY.to_string(), Strength::Fragments),
        ("routines@example.com".to_string(), Strength::Whole),
        ("correct-horse-battery-staple".to_string(), Strength::Fragments),
        ("whsec-0123456789abcdef0123".to_string(), Strength::Fragments),
        ("postgres://app:s3cr3t-pa55word@db.internal:5432/routines".to_string(), Strength::Whole),
        ("s3cr3t-pa55word".to_string(), Strength::Fragments),
    ]
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (n, m) = if full { (200, 1_000) } else { (3, 10) };

    let (p50, p99) = time(n, || {
        let r = Redactor::default();
        r.learn_with(secrets());
        black_box(r.pattern_count());
    });
    let r = Redactor::default();
    r.learn_with(secrets());
    println!("build of 6 secrets ({} patterns): median {p50:?}  p99 {p99:?}", r.pattern_count());

    let benign = benign_text();
    let (p50, p99) = time(m, || {
        black_box(r.redact(&benign));
    });
    println!("redact 100 KB (clean):             median {p50:?}  p99 {p99:?}  (target <= 1ms)");

    let hex: String = KEY.bytes().map(|b| format!("{b:02x}")).collect();
    let b64 = "c2stcHJvai00ZjlhMmI3YzFkOGU2ZjMwYTViNGMzZDJlMWYwYTliOGM3ZDZlNWY0YTNiMmMxZDA=";
    let mut leaky = benign.clone();
    for at in [10_000, 50_000, 90_000] {
        leaky.insert_str(at, &format!(" {KEY} {b64} {hex} "));
    }
    let (p50, p99) = time(m, || {
        black_box(r.redact(&leaky));
    });
    println!("redact 100 KB (9 leaks):           median {p50:?}  p99 {p99:?}  (target <= 1ms)");
    assert!(!r.redact(&leaky).contains(&KEY[8..16]));
}
