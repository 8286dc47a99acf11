//! `routines validate`: every problem of the config and every routine.

use routines::config::Config;

use crate::app::{Error, routines};

pub fn run(config: &Config) -> Result<(), Error> {
    let loaded = routines(config);
    if loaded.diagnostics.is_empty() {
        let n = loaded.routines.len();
        eprintln!("ok: the config and {n} routine{} are valid", if n == 1 { "" } else { "s" });
        return Ok(());
    }
    for d in &loaded.diagnostics.0 {
        println!("{d}");
    }
    Err(Error::Problems(loaded.diagnostics.len()))
}
