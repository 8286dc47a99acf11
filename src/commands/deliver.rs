//! `routines deliver --retry`: deliveries that failed or never happened,
//! attempted again from what was recorded, without running the agent.

use std::process::ExitCode;

use routines::config::Config;
use routines::delivery::Payload;
use routines::store::DeliveryStatus;
use serde_json::json;

use super::print_json;
use crate::app::open_store;

pub fn retry(config: &Config, json_out: bool) -> anyhow::Result<ExitCode> {
    let store = open_store(config)?;
    let waiting = store.undelivered()?;
    let mut results = Vec::new();
    let mut failed = 0;
    for d in waiting {
        let outcome = match serde_json::from_str::<Payload>(&d.payload) {
            Ok(payload) => payload.deliver(),
            Err(_) => Err(format!(
                "{} delivery to {} was never rendered (its template failed); fix the routine and run it again",
                d.kind, d.target
            )),
        };
        let (status, error) = match outcome {
            Ok(_) => (DeliveryStatus::Delivered, None),
            Err(e) => {
                failed += 1;
                (DeliveryStatus::Failed, Some(e))
            }
        };
        store.set_delivery(d.id, status, error.as_deref())?;
        if !json_out {
            match &error {
                None => eprintln!("delivered  run {}  {} {}", d.run_id, d.kind, d.target),
                Some(e) => eprintln!("failed     run {}  {} {}: {e}", d.run_id, d.kind, d.target),
            }
        }
        results.push(json!({"run_id": d.run_id, "target": d.target, "kind": d.kind, "status": status, "error": error}));
    }
    if json_out {
        print_json(&serde_json::Value::Array(results))?;
    } else if failed == 0 && results.is_empty() {
        eprintln!("nothing to deliver: every delivery has arrived");
    }
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
