//! Routines: the YAML a user writes (SPEC §4), loaded with every problem
//! reported at once, and the resolved form the engine runs.
//!
//! The serde types of a routine file live in `config::routine_file`, since
//! routines.yaml may hold routines inline; they are re-exported here.

mod by_hand;
pub mod context;
pub mod cron;
mod load;
pub mod overlap;
pub mod reserved;
pub mod schedule;
pub mod template;
mod trigger;

use std::path::PathBuf;

use chrono_tz::Tz;

pub use crate::config::routine_file::{
    AgentOverrides, CatchUp, CreatedBy, FileEvent, FileTrigger, OnFailure, Overlap, RetrySpec, RoutineFile, Session,
    TriggerSpec, WebhookAuth, WebhookTrigger,
};
pub use by_hand::{HandData, by_hand};
pub use load::{LoadedRoutines, NamedSecret, load_all, load_one, unset_secrets};
pub use trigger::{FileContext, StoredTriggerError, TriggerContext, WebhookRequest, fired_by};

/// A time trigger, parsed.
#[derive(Debug, Clone)]
pub enum TimeTrigger {
    /// Kept as text and parsed when its instants are needed (it was checked
    /// at load): a parsed `croner::Cron` holds about 5 KB, which matters to a
    /// daemon with thousands of routines.
    Cron {
        expr: String,
        zone: Tz,
    },
    Every(std::time::Duration),
    At(chrono::DateTime<chrono::FixedOffset>),
}

/// The kind of a time trigger, as recorded in `runs.trigger`. Ordered as
/// their names: of two triggers firing at the same instant, the daemon's
/// catch-up records the first in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeKind {
    At,
    Cron,
    Every,
}

impl TimeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TimeKind::At => "at",
            TimeKind::Cron => "cron",
            TimeKind::Every => "every",
        }
    }
}

impl std::fmt::Display for TimeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A routine ready to run.
#[derive(Debug, Clone)]
pub struct Routine {
    pub name: String,
    /// The file it came from (the config file for inline routines).
    pub file: PathBuf,
    pub zone: Tz,
    pub spec: RoutineFile,
    pub time_triggers: Vec<TimeTrigger>,
}

impl TimeTrigger {
    /// The parsed expression of a cron trigger.
    pub fn cron(&self) -> Option<croner::Cron> {
        match self {
            TimeTrigger::Cron { expr, .. } => cron::parse_cron(expr).ok(),
            _ => None,
        }
    }
}

impl Routine {
    /// Short names of its triggers, e.g. `cron, every, manual`.
    pub fn trigger_kinds(&self) -> Vec<&'static str> {
        let mut kinds: Vec<&'static str> = self
            .spec
            .triggers
            .iter()
            .filter_map(|t| {
                if t.cron.is_some() {
                    Some("cron")
                } else if t.every.is_some() {
                    Some("every")
                } else if t.at.is_some() {
                    Some("at")
                } else if t.file.is_some() {
                    Some("file")
                } else if t.webhook.is_some() {
                    Some("webhook")
                } else {
                    None
                }
            })
            .collect();
        kinds.push("manual");
        kinds
    }
}
