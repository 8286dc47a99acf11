//! `agent.schedule_from_triggers`: a routine whose runs fired by a webhook or a file event keep
//! the `schedule` tool. `validate` says what that allows: whoever can send the request or drop
//! the file can then ask for a routine that runs on its own, again and again.

use super::Locator;
use crate::diag::Diagnostics;
use crate::routine::RoutineFile;

/// A warning when `spec` grants `schedule` to runs of outside triggers, or sets the key where it
/// changes nothing.
pub(super) fn check_schedule_grant(spec: &RoutineFile, name: &str, at: &Locator, warnings: &mut Diagnostics) {
    if !spec.agent.schedule_from_triggers {
        return;
    }
    let key = ["agent", "schedule_from_triggers"];
    let outside: Vec<&str> = spec
        .triggers
        .iter()
        .filter_map(|t| if t.webhook.is_some() { Some("webhook") } else { t.file.as_ref().map(|_| "file event") })
        .collect();
    let has_tool = spec.agent.tools.as_ref().is_some_and(|t| t.iter().any(|t| t == "schedule"));
    let warning = if !has_tool || outside.is_empty() {
        at.error(&key, format!("warning: `schedule_from_triggers` changes nothing for routine `{name}`"))
            .with_hint("it matters only to a routine with `schedule` in agent.tools and a webhook or file trigger")
    } else {
        let mut kinds = outside;
        kinds.dedup();
        at.error(
            &key,
            format!(
                "warning: routine `{name}` keeps the schedule tool in runs fired by a {}: whoever sends that request or writes that file can have it create routines that run on their own",
                kinds.join(" or ")
            ),
        )
        .with_hint("leave schedule_from_triggers out unless every sender is trusted; created routines still get only this routine's tools and recipients")
    };
    warnings.push(warning);
}
