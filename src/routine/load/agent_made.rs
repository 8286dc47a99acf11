//! What a routine made by the agent (`created_by: agent`) may not do, however its file came to
//! be (the `schedule` tool, an edit by hand, a copy from elsewhere): fire by the second, or more
//! often than `limits.min_agent_interval` (SPEC §13). The `schedule` tool checks what it writes
//! with the same loader, so this is the one place the limit is kept.

use chrono::Utc;

use super::Locator;
use crate::config::Config;
use crate::diag::Diagnostics;
use crate::routine::{CreatedBy, RoutineFile, TimeTrigger, schedule};

/// Instants of each time trigger looked at for the shortest gap between fires: enough to meet
/// a burst that comes once a year, cheap enough for every load.
const FIRES_LOOKED_AT: usize = 512;

/// Checks the triggers of `spec` when the agent made it; `time_triggers` are its valid ones.
pub(super) fn check_agent_made(
    spec: &RoutineFile,
    time_triggers: &[TimeTrigger],
    at: &Locator,
    config: &Config,
    diags: &mut Diagnostics,
) {
    if spec.created_by != Some(CreatedBy::Agent) {
        return;
    }
    let least = config.limits.min_agent_interval;
    let hint = format!(
        "a routine made by the agent fires at most every {least} (limits.min_agent_interval); choose a longer interval"
    );
    let before = diags.len();
    for (i, t) in spec.triggers.iter().enumerate() {
        let idx = i.to_string();
        if let Some(expr) = &t.cron {
            if expr.split_whitespace().count() == 6 {
                diags.push(
                    at.error(&["on", &idx, "cron"], format!("`{expr}` has a seconds field"))
                        .with_hint(format!("{hint}; write 5 fields (minute hour day month weekday)")),
                );
            }
        }
        if let Some(every) = t.every.filter(|e| e.get() < least.get()) {
            diags.push(
                at.error(&["on", &idx, "every"], format!("`every: {every}` is shorter than {least}"))
                    .with_hint(hint.clone()),
            );
        }
    }
    if diags.len() > before {
        return;
    }
    let Some(gap) = schedule::shortest_gap(time_triggers, Utc::now(), FIRES_LOOKED_AT) else { return };
    let gap = gap.to_std().unwrap_or_default();
    if gap < least.get() {
        let apart = crate::config::Duration::from_secs(gap.as_secs());
        diags.push(
            at.error(&["on"], format!("its triggers fire as little as {apart} apart, less than {least}"))
                .with_hint(hint),
        );
    }
}
