//! Names the shell completes (`routines completions`): the routines and skills of the config
//! found from the current folder, as `routines` itself would find it. Quiet and infallible: a
//! broken config completes nothing.

use std::ffi::OsStr;

use clap_complete::engine::CompletionCandidate;
use routines::skills::Catalog;

use super::{load_config, routines, tool_names};

fn config() -> Option<routines::config::Config> {
    let cwd = std::env::current_dir().ok()?;
    // `--config` on the command line is not seen here; $ROUTINES_CONFIG and ./routines.yaml are.
    load_config(None, &cwd).ok()
}

/// Every valid routine's name, with its description.
pub fn routine_names() -> Vec<CompletionCandidate> {
    let Some(config) = config() else { return Vec::new() };
    routines(&config)
        .routines
        .iter()
        .map(|r| {
            let help = r.spec.description.clone().filter(|d| !d.is_empty()).map(Into::into);
            CompletionCandidate::new(OsStr::new(&r.name)).help(help)
        })
        .collect()
}

/// Every skill's name, with its description.
pub fn skill_names() -> Vec<CompletionCandidate> {
    let Some(config) = config() else { return Vec::new() };
    let catalog = Catalog::load(&config.skills_dir, &config.base_dir, &tool_names());
    catalog
        .skills()
        .iter()
        .map(|s| CompletionCandidate::new(OsStr::new(&s.name)).help(Some(s.description.clone().into())))
        .collect()
}
