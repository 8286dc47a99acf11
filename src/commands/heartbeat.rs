//! `routines heartbeat [--force] [--greeting]`: one check-in, or one
//! greeting, now.

use chrono::Utc;
use routines::config::Config;
use routines::heartbeat;
use routines::store::RunStatus;
use serde_json::json;

use super::print_json;
use crate::app::{Error, engine};

pub async fn run(config: Config, force: bool, greeting: bool, json_out: bool) -> Result<(), Error> {
    let report = if greeting {
        let engine = engine(config, true)?;
        heartbeat::greeting::greet_now(&engine, Utc::now(), force).await?
    } else {
        let quiet = heartbeat::prepare(&config, Utc::now(), force)?.is_err();
        // A quiet beat calls no model, so it needs none configured.
        let engine = engine(config, !quiet)?;
        heartbeat::beat(&engine, Utc::now(), force, "manual").await?
    };
    if json_out {
        print_json(&json!({
            "run_id": report.run_id,
            "routine": report.routine,
            "status": report.status,
            "output": report.output,
            "error": report.error,
        }))?;
    } else {
        match report.status {
            RunStatus::Succeeded => outln!("{}", report.output.as_deref().unwrap_or(""))?,
            RunStatus::Silent if greeting => eprintln!("the model sent no greeting (run {})", report.run_id),
            RunStatus::Silent => eprintln!("nothing needs attention (run {})", report.run_id),
            RunStatus::Skipped => eprintln!("skipped: {}", report.error.as_deref().unwrap_or("")),
            _ => {}
        }
        for d in &report.deliveries {
            match &d.error {
                None => eprintln!("  delivered to {}", d.target),
                Some(e) => eprintln!("  delivery to {} failed: {e}", d.target),
            }
        }
    }
    match report.status {
        status @ (RunStatus::Failed | RunStatus::TimedOut | RunStatus::Interrupted) => {
            Err(Error::RunFailed { run_id: report.run_id, status, error: report.error })
        }
        _ => Ok(()),
    }
}
