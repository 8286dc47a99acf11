//! Names and paths a routine file may not take: they belong to the built-in
//! runs and to the daemon's webhook listener. They live here, the lowest
//! layer that checks them; the heartbeat and the listener use them from here.

/// The name heartbeat runs are recorded under.
pub const HEARTBEAT: &str = "heartbeat";

/// The name greeting runs are recorded under.
pub const GREETING: &str = "greeting";

/// Names of built-in runs; no routine may be named so.
pub const RUN_NAMES: [&str; 2] = [HEARTBEAT, GREETING];

/// Paths the webhook listener answers itself (`GET /healthz`, `GET
/// /metrics`, and the status page's `/`, `/runs`, `/charts`); a webhook
/// trigger at one of them would never be reached.
pub const WEBHOOK_PATHS: [&str; 5] = ["/healthz", "/metrics", "/", "/runs", "/charts"];

/// Prefixes of the status page's paths (`/runs/{id}`, `/static/style.css`).
pub const WEBHOOK_PREFIXES: [&str; 2] = ["/runs/", "/static/"];

/// Whether a webhook at `path` would be shadowed by the listener's own paths.
pub fn is_reserved_path(path: &str) -> bool {
    WEBHOOK_PATHS.contains(&path) || WEBHOOK_PREFIXES.iter().any(|p| path.starts_with(p))
}
