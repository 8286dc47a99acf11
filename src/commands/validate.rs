//! `routines validate`: every problem of the config, every routine and every skill. Warnings
//! (a skill naming a tool its routine lacks) are printed too but leave the exit code at 0.

use std::process::ExitCode;

use routines::config::Config;

pub fn run(config: &Config) -> anyhow::Result<ExitCode> {
    let loaded = crate::app::routines(config);
    let mut all = loaded.diagnostics.clone();
    all.extend(loaded.warnings.clone());
    for d in &all.sorted().0 {
        println!("{d}");
    }
    let warnings = match loaded.warnings.len() {
        0 => String::new(),
        1 => " (1 warning)".into(),
        n => format!(" ({n} warnings)"),
    };
    if loaded.diagnostics.is_empty() {
        let n = loaded.routines.len();
        eprintln!("ok: the config and {n} routine{} are valid{warnings}", if n == 1 { "" } else { "s" });
        return Ok(ExitCode::SUCCESS);
    }
    let n = loaded.diagnostics.len();
    eprintln!("error: {n} problem{} found{warnings}", if n == 1 { "" } else { "s" });
    Ok(ExitCode::from(2))
}
