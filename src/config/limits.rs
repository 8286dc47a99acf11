//! `limits:` of the engine config: how much runs at once, how long a stopping daemon waits,
//! and how much the agent may schedule on its own (the `schedule` tool, SPEC §13).

use schemars::JsonSchema;
use serde::Deserialize;

use super::Duration;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitSettings {
    /// Runs executing at once across all routines; more fires wait in the
    /// durable queue.
    #[serde(default = "default_max_concurrent_runs")]
    pub max_concurrent_runs: u32,
    /// How long a stopping daemon lets running runs finish before it
    /// cancels them (they are recorded `interrupted` and retried at the next
    /// start per their `retry`).
    #[serde(default = "default_shutdown_grace")]
    pub shutdown_grace: Duration,
    /// Fires waiting in the durable queue at most; a webhook beyond it is answered 503 with
    /// `Retry-After` (time triggers and file events are never refused: their instants are
    /// recorded and caught up).
    #[serde(default = "default_max_queued")]
    pub max_queued: u32,
    /// Queued fires the daemon holds in memory at most, waiting for their routine's turn or a
    /// slot; the others wait only in the database and are read, oldest first, as places free
    /// up. Default: [`DEFAULT_QUEUE_WINDOW`], or 4 × `max_concurrent_runs` when that is more.
    #[serde(default)]
    pub queue_window: Option<u32>,
    /// The shortest time between two fires of a routine made by the agent (`created_by:
    /// agent`): a shorter `every`, a cron with seconds or a cron firing closer together is
    /// refused, by the `schedule` tool and when such a file is loaded.
    #[serde(default = "default_min_agent_interval")]
    pub min_agent_interval: Duration,
    /// Routines made by the agent that may exist at once in `routines_dir`; the `schedule`
    /// tool adds none beyond it.
    #[serde(default = "default_max_agent_routines")]
    pub max_agent_routines: u32,
}

/// The least number of queued fires the daemon holds in memory by default (see
/// docs/ARCHITECTURE.md, "The queue in memory").
pub const DEFAULT_QUEUE_WINDOW: u32 = 256;

impl LimitSettings {
    /// `queue_window`, or its default.
    pub fn queue_window(&self) -> usize {
        let window =
            self.queue_window.unwrap_or_else(|| DEFAULT_QUEUE_WINDOW.max(self.max_concurrent_runs.saturating_mul(4)));
        usize::try_from(window.max(1)).unwrap_or(usize::MAX)
    }
}

impl Default for LimitSettings {
    fn default() -> Self {
        LimitSettings {
            max_concurrent_runs: default_max_concurrent_runs(),
            shutdown_grace: default_shutdown_grace(),
            max_queued: default_max_queued(),
            queue_window: None,
            min_agent_interval: default_min_agent_interval(),
            max_agent_routines: default_max_agent_routines(),
        }
    }
}

fn default_max_queued() -> u32 {
    10_000
}

fn default_shutdown_grace() -> Duration {
    Duration::from_secs(30)
}

fn default_max_concurrent_runs() -> u32 {
    4
}

fn default_min_agent_interval() -> Duration {
    Duration::from_secs(15 * 60)
}

fn default_max_agent_routines() -> u32 {
    20
}
