//! What the `schedule` tool may create beyond the creator's tools (SPEC §13): mail only to the
//! addresses of `mail.allowed_recipients` and to the creating routine's own recipients, and no
//! more routines made by the agent than `limits.max_agent_routines`. How often a created
//! routine fires is the loader's check (`routine/load/agent_made.rs`).

use std::path::Path;

use super::{ScheduleScope, created_by_agent};
use crate::config::Config;
use crate::config::recipients::{address_of, allowed};
use crate::tools::ToolError;

/// Refuses any of `addresses` that neither `mail.allowed_recipients` nor the creator's own
/// recipients hold, naming the ones that are allowed.
pub(super) fn check_recipients(scope: &ScheduleScope, addresses: &[String]) -> Result<(), ToolError> {
    let patterns = allowed_patterns(&scope.config);
    let own = |a: &str| address_of(a).is_some_and(|a| scope.recipients.contains(&a));
    let refused: Vec<&str> =
        addresses.iter().map(String::as_str).filter(|a| !allowed(patterns, a) && !own(a)).collect();
    if refused.is_empty() {
        return Ok(());
    }
    let mut may: Vec<String> = patterns.to_vec();
    may.extend(scope.recipients.iter().filter(|r| !allowed(patterns, r)).cloned());
    let may = if may.is_empty() {
        "none: a routine made by the agent mails only addresses listed in mail.allowed_recipients of routines.yaml, or the creating routine's own recipients".to_string()
    } else {
        format!("only {}", may.join(", "))
    };
    Err(ToolError::Refused(format!(
        "the routine cannot mail {}: of addresses, it may mail {may}; leave deliver_mail out or use one of those",
        refused.join(", ")
    )))
}

fn allowed_patterns(config: &Config) -> &[String] {
    config.mail.as_ref().map_or(&[], |m| m.allowed_recipients.as_slice())
}

/// The creator's own recipients: the plain addresses of its `deliver` and `on_failure.deliver`
/// mail (`to`, `cc`, `bcc`), lower case. An address written as a template is none.
pub fn own_recipients(targets: &[&crate::config::DeliveryTarget]) -> Vec<String> {
    let mut out: Vec<String> = targets
        .iter()
        .filter_map(|t| match t {
            crate::config::DeliveryTarget::Mail(m) => Some(m.to.iter().chain(&m.cc).chain(&m.bcc)),
            crate::config::DeliveryTarget::File(_) => None,
        })
        .flatten()
        .filter(|a| !a.contains("{{") && !a.contains("{%"))
        .filter_map(|a| address_of(a))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Refuses a new routine when `limits.max_agent_routines` routines made by the agent exist in
/// `routines_dir` already (`replacing`: the file an `add` replaces, which does not count).
pub(super) fn check_count(config: &Config, replacing: Option<&Path>) -> Result<(), ToolError> {
    let max = config.limits.max_agent_routines;
    let Ok(entries) = std::fs::read_dir(&config.routines_dir) else { return Ok(()) };
    let made = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
        .filter(|p| Some(p.as_path()) != replacing)
        .filter(|p| created_by_agent(p) == Some(true))
        .count();
    if u32::try_from(made).unwrap_or(u32::MAX) < max {
        return Ok(());
    }
    Err(ToolError::Refused(format!(
        "there are {made} routines made by the agent already, the most limits.max_agent_routines allows ({max}); remove one you no longer need first (action remove), or replace one by adding with its name"
    )))
}
