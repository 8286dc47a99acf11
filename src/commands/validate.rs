//! `routines validate`: every problem of the config, every routine and every skill. Warnings
//! (a skill naming a tool its routine lacks) are printed too but leave the exit code at 0.

use routines::config::Config;

use crate::app::{Error, routines};

pub fn run(config: &Config) -> Result<(), Error> {
    let loaded = routines(config);
    let mut all = loaded.diagnostics.clone();
    all.extend(loaded.warnings.clone());
    for d in &all.sorted().0 {
        outln!("{d}")?;
    }
    if loaded.diagnostics.is_empty() {
        let n = loaded.routines.len();
        let warnings = match loaded.warnings.len() {
            0 => String::new(),
            1 => " (1 warning)".into(),
            n => format!(" ({n} warnings)"),
        };
        eprintln!("ok: the config and {n} routine{} are valid{warnings}", if n == 1 { "" } else { "s" });
        return Ok(());
    }
    Err(Error::Problems { count: loaded.diagnostics.len(), warnings: loaded.warnings.len() })
}
