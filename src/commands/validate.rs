//! `routines validate`: every problem of the config and every routine.

use std::process::ExitCode;

use routines::config::Config;

pub fn run(config: &Config) -> anyhow::Result<ExitCode> {
    let loaded = crate::app::routines(config);
    if loaded.diagnostics.is_empty() {
        let n = loaded.routines.len();
        eprintln!("ok: the config and {n} routine{} are valid", if n == 1 { "" } else { "s" });
        return Ok(ExitCode::SUCCESS);
    }
    for d in &loaded.diagnostics.0 {
        println!("{d}");
    }
    let n = loaded.diagnostics.len();
    eprintln!("error: {n} problem{} found", if n == 1 { "" } else { "s" });
    Ok(ExitCode::from(2))
}
