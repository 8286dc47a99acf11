//! `routines validate [--json]`: every problem of the config, every routine and every skill,
//! and the secret variables they name that the environment lacks. Warnings (a skill naming a
//! tool its routine lacks, a variable only a later step needs) are printed too but leave the
//! exit code at 0.

use routines::config::{Config, ConfigError, ProcessEnv};
use routines::diag::{Diagnostic, Diagnostics};
use routines::routine::unset_secrets;
use serde_json::{Value, json};

use super::print_json;
use crate::app::{Error, routines};

/// The prefix of a warning's message.
const WARNING: &str = "warning: ";

/// `config` as loaded: an invalid config's problems are printed like the routines' (as JSON
/// too with `json`).
pub fn run(config: Result<Config, Error>, json: bool) -> Result<(), Error> {
    let config = match config {
        Ok(c) => c,
        Err(Error::Config(ConfigError::Invalid(diags))) if json => {
            print_json(&problems(&diags, &Diagnostics::default()))?;
            return Err(Error::Problems { count: diags.len(), warnings: 0 });
        }
        Err(e) => return Err(e),
    };
    let loaded = routines(&config);
    let (unset, unset_later) = unset_secrets(&config, &loaded.secrets, &ProcessEnv);
    let mut errors = loaded.diagnostics.clone();
    errors.extend(loaded.failing.clone());
    errors.extend(unset);
    let mut warnings = loaded.warnings.clone();
    warnings.extend(unset_later);
    if json {
        print_json(&problems(&errors, &warnings))?;
    } else {
        let mut all = errors.clone();
        all.extend(warnings.clone());
        for d in &all.sorted().0 {
            outln!("{d}")?;
        }
    }
    if errors.is_empty() {
        let n = loaded.routines.len();
        let warned = match warnings.len() {
            0 => String::new(),
            1 => " (1 warning)".into(),
            n => format!(" ({n} warnings)"),
        };
        eprintln!("ok: the config and {n} routine{} are valid{warned}", if n == 1 { "" } else { "s" });
        return Ok(());
    }
    Err(Error::Problems { count: errors.len(), warnings: warnings.len() })
}

/// Every problem as `{file, line, col, severity, message, hint}`, sorted by place.
fn problems(errors: &Diagnostics, warnings: &Diagnostics) -> Value {
    let mut all: Vec<(&Diagnostic, &str)> =
        errors.0.iter().map(|d| (d, "error")).chain(warnings.0.iter().map(|d| (d, "warning"))).collect();
    all.sort_by(|(a, _), (b, _)| (&a.file, a.line, a.col).cmp(&(&b.file, b.line, b.col)));
    let rows = all.into_iter().map(|(d, severity)| {
        json!({
            "file": d.file.display().to_string(),
            "line": d.line,
            "col": d.col,
            "severity": severity,
            "message": d.message.strip_prefix(WARNING).unwrap_or(&d.message),
            "hint": d.hint,
        })
    });
    Value::Array(rows.collect())
}
