//! `routines deliver --retry`: deliveries that failed or never happened,
//! attempted again from what was recorded, without running the agent; with
//! `--uncertain`, also those whose attempt was cut off or never answered and may have arrived.

use routines::config::Config;
use routines::store::DeliveryStatus;
use serde_json::json;

use super::print_json;
use crate::app::{Error, deliverer};

pub async fn retry(config: &Config, uncertain: bool, json_out: bool) -> Result<(), Error> {
    // Uncertain deliveries left alone, to say so rather than "nothing to deliver".
    let left = std::sync::atomic::AtomicUsize::new(0);
    let retried = deliverer(config)?
        .retry(&|d| {
            let take = uncertain || d.status != DeliveryStatus::Uncertain;
            if !take {
                left.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            take
        })
        .await?;
    let mut failed = 0;
    let mut results = Vec::new();
    for r in &retried {
        let d = &r.row;
        if r.status != DeliveryStatus::Delivered {
            failed += 1;
        }
        if !json_out {
            match (&r.status, &r.error) {
                (DeliveryStatus::Delivered, _) if r.in_outbox => {
                    eprintln!("queued     run {}  {} {} in the outbox (no SMTP configured)", d.run_id, d.kind, d.target)
                }
                (DeliveryStatus::Delivered, _) => eprintln!("delivered  run {}  {} {}", d.run_id, d.kind, d.target),
                (status, e) => eprintln!(
                    "{:<10} run {}  {} {}: {}",
                    status.as_str(),
                    d.run_id,
                    d.kind,
                    d.target,
                    e.as_deref().unwrap_or("")
                ),
            }
        }
        results.push(
            json!({"run_id": d.run_id, "target": d.target, "kind": d.kind, "status": r.status, "error": r.error, "in_outbox": r.in_outbox}),
        );
    }
    if json_out {
        print_json(&serde_json::Value::Array(results))?;
    } else if let n @ 1.. = left.load(std::sync::atomic::Ordering::Relaxed) {
        eprintln!(
            "{} uncertain deliver{} left alone: an attempt was cut off or never answered and may have \
             arrived; check, then run `routines deliver --retry --uncertain` to send again",
            n,
            if n == 1 { "y" } else { "ies" }
        );
    } else if retried.is_empty() {
        eprintln!("nothing to deliver: every delivery has arrived");
    }
    if failed == 0 { Ok(()) } else { Err(Error::Undelivered { failed, total: retried.len() }) }
}
