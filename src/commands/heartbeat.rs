//! `routines heartbeat [--force] [--greeting]`: one check-in, or one
//! greeting, now.

use std::process::ExitCode;

use chrono::Utc;
use routines::config::Config;
use routines::heartbeat;
use routines::store::RunStatus;
use serde_json::json;

use super::print_json;
use crate::app::engine;

pub async fn run(config: Config, force: bool, greeting: bool, json_out: bool) -> anyhow::Result<ExitCode> {
    let report = if greeting {
        let engine = engine(config, true)?;
        heartbeat::greeting::greet_now(&engine, Utc::now(), force).await?
    } else {
        let quiet = heartbeat::prepare(&config, Utc::now(), force).map_err(anyhow::Error::msg)?.is_err();
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
            RunStatus::Succeeded => println!("{}", report.output.as_deref().unwrap_or("")),
            RunStatus::Silent if greeting => eprintln!("the model sent no greeting (run {})", report.run_id),
            RunStatus::Silent => eprintln!("nothing needs attention (run {})", report.run_id),
            RunStatus::Skipped => eprintln!("skipped: {}", report.error.as_deref().unwrap_or("")),
            _ => eprintln!(
                "error: {}",
                report.error.as_deref().unwrap_or(if greeting {
                    "the greeting failed"
                } else {
                    "the heartbeat failed"
                })
            ),
        }
        for d in &report.deliveries {
            match &d.error {
                None => eprintln!("  delivered to {}", d.target),
                Some(e) => eprintln!("  delivery to {} failed: {e}", d.target),
            }
        }
    }
    Ok(match report.status {
        RunStatus::Failed | RunStatus::TimedOut => ExitCode::from(1),
        _ => ExitCode::SUCCESS,
    })
}
