//! Checks of a routine's `skills:`: each names a skill that loaded (did-you-mean otherwise),
//! and a skill that uses a tool the routine lacks is a warning, since a skill never grants tools.

use super::Locator;
use crate::config::Config;
use crate::diag::{Diagnostics, did_you_mean};
use crate::routine::RoutineFile;
use crate::skills::Catalog;

/// The one tool a routine gets only by listing it.
const LISTED_ONLY: &str = "schedule";

pub(super) fn check_skills(
    spec: &RoutineFile,
    at: &Locator,
    config: &Config,
    catalog: &Catalog,
    tool_names: &[&str],
    diags: &mut Diagnostics,
    warnings: &mut Diagnostics,
) {
    let has = |tool: &str| match &spec.agent.tools {
        Some(list) => list.iter().any(|t| t == tool),
        None => tool != LISTED_ONLY && tool_names.contains(&tool),
    };
    let shown_dir =
        config.skills_dir.strip_prefix(&config.base_dir).unwrap_or(&config.skills_dir).display().to_string();
    for (i, name) in spec.skills.iter().enumerate() {
        let idx = i.to_string();
        let rel = ["skills", idx.as_str()];
        let Some(skill) = catalog.get(name) else {
            let d = if catalog.is_broken(name) {
                at.error(&rel, format!("skill `{name}` cannot be loaded: its SKILL.md has problems"))
                    .with_hint(format!("fix {shown_dir}/{name}/SKILL.md; `routines validate` shows where"))
            } else {
                let hint = match did_you_mean(name, catalog.names()) {
                    Some(best) => format!("did you mean `{best}`?"),
                    None if catalog.is_empty() => {
                        format!("there are no skills; a skill is a folder {shown_dir}/NAME with a SKILL.md")
                    }
                    None => format!("skills: {}", catalog.names().join(", ")),
                };
                at.error(&rel, format!("unknown skill `{name}`")).with_hint(hint)
            };
            diags.push(d);
            continue;
        };
        for tool in skill.tools.iter().filter(|t| !has(t)) {
            warnings.push(
                at.error(
                    &rel,
                    format!("warning: skill `{name}` uses the tool `{tool}`, which this routine does not have"),
                )
                .with_hint(format!(
                    "a skill never grants tools: add `{tool}` to agent.tools if the routine should use it"
                )),
            );
        }
    }
}
