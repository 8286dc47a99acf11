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
/// /metrics`); a webhook trigger at one of them would never be reached.
pub const WEBHOOK_PATHS: [&str; 2] = ["/healthz", "/metrics"];
