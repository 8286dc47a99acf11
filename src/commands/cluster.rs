//! `routines cluster`: the nodes sharing a PostgreSQL store (SPEC §12), alive first.

use chrono::Utc;
use routines::config::{Config, ProcessEnv};
use serde_json::{Value, json};

use super::{print_json, table};
use crate::app::{Error, open_store};

pub fn run(config: &Config, json_out: bool) -> Result<(), Error> {
    if config.store_url(&ProcessEnv).is_none() {
        return Err(Error::NoCluster(config.database_path().display().to_string(), config.store.url_env.clone()));
    }
    let store = open_store(config)?;
    let nodes = store.nodes()?;
    if json_out {
        let rows: Vec<Value> = nodes
            .iter()
            .map(|n| {
                json!({
                    "id": n.id,
                    "host": n.host,
                    "pid": n.pid,
                    "version": n.version,
                    "role": n.role,
                    "state": if n.alive { "alive" } else { "lost" },
                    "started_at": n.started_at.with_timezone(&config.timezone).to_rfc3339(),
                    "last_heartbeat": n.heartbeat.with_timezone(&config.timezone).to_rfc3339(),
                    "runs_in_flight": n.running,
                    "clock_skew_ms": n.skew_ms,
                })
            })
            .collect();
        return print_json(&Value::Array(rows));
    }
    if nodes.is_empty() {
        eprintln!("no nodes: no daemon runs on this database");
        return Ok(());
    }
    let now = Utc::now();
    let rows: Vec<Vec<String>> = nodes
        .iter()
        .map(|n| {
            let age = (now - n.heartbeat).num_milliseconds().max(0) as f64 / 1000.0;
            vec![
                n.id.to_string(),
                n.host.clone(),
                n.pid.to_string(),
                n.version.clone(),
                n.role.clone(),
                if n.alive { "alive".into() } else { "lost".into() },
                format!(
                    "{} ({age:.0}s ago)",
                    n.heartbeat.with_timezone(&config.timezone).format("%Y-%m-%d %H:%M:%S %Z")
                ),
                n.running.to_string(),
                format!("{:+.1}s", n.skew_ms as f64 / 1000.0),
            ]
        })
        .collect();
    outln!(
        "{}",
        table(&["NODE", "HOST", "PID", "VERSION", "ROLE", "STATE", "LAST HEARTBEAT", "RUNS", "CLOCK SKEW"], &rows)
    )?;
    Ok(())
}
