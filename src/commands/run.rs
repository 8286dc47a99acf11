//! `routines run NAME`: fire a routine by hand.

use std::collections::BTreeMap;
use std::io::IsTerminal;

use routines::agent::AgentEvent;
use routines::config::Config;
use routines::engine::{EngineError, RunOptions, ensure_enabled};
use routines::routine::TriggerContext;
use routines::store::{DeliveryStatus, RunStatus};
use serde_json::json;
use tokio::sync::mpsc;

use super::{find, print_json};
use crate::app::{Error, engine, routines};

pub async fn run(
    config: Config,
    name: &str,
    vars: Vec<(String, String)>,
    no_deliver: bool,
    dry_run: bool,
    json_out: bool,
) -> Result<(), Error> {
    let loaded = routines(&config);
    let routine = find(&loaded, name)?.clone();
    if !loaded.diagnostics.is_empty() {
        tracing::warn!("{} problem(s) in other routine files; see `routines validate`", loaded.diagnostics.len());
    }
    let vars: BTreeMap<String, String> = vars.into_iter().collect();
    if !dry_run {
        // Refused before a model is required: a disabled routine needs none.
        ensure_enabled(&routine)?;
    }
    let engine = engine(config, !dry_run)?;

    if dry_run {
        let ctx = engine.context(&routine, &TriggerContext::Manual, 0, 1, &vars);
        let prompt = engine.render_prompt(&routine, &ctx).map_err(EngineError::from)?;
        let agent = engine.agent_for(&routine)?;
        let system = agent.system_prompt(&prompt);
        if json_out {
            print_json(&json!({"routine": routine.name, "prompt": prompt, "system_prompt": system}))?;
        } else {
            outln!("# System prompt\n\n{system}\n# Prompt\n\n{prompt}")?;
        }
        return Ok(());
    }

    let (tx, rx) = mpsc::unbounded_channel();
    let printer = tokio::spawn(progress(rx, routine.name.clone()));
    let opts = RunOptions { vars, no_deliver, ..RunOptions::default() };
    let result = engine.run(&routine, TriggerContext::Manual, &opts, Some(tx)).await;
    let _ = printer.await;
    let report = result?;
    // The history stays within `history` after each run by hand, as in the daemon.
    if let Err(e) = engine.prune_history() {
        eprintln!("warning: could not prune the run history: {e}");
    }

    for d in &report.deliveries {
        match d.status {
            DeliveryStatus::Delivered => eprintln!("  delivered to {}", d.target),
            DeliveryStatus::Uncertain => {
                eprintln!(
                    "  delivery to {} uncertain: {}",
                    d.target,
                    d.error.as_deref().unwrap_or("it may have arrived")
                )
            }
            _ => eprintln!("  delivery to {} failed: {}", d.target, d.error.as_deref().unwrap_or("unknown error")),
        }
    }
    if json_out {
        print_json(&json!({
            "run_id": report.run_id,
            "routine": report.routine,
            "status": report.status.as_str(),
            "output": report.output,
            "error": report.error,
            "deliveries": report.deliveries,
        }))?;
    } else if let Some(out) = &report.output {
        if report.status == RunStatus::Succeeded {
            outln!("{}", out.trim_end())?;
        }
    }
    match report.status {
        RunStatus::Succeeded => {
            eprintln!("run {}: succeeded", report.run_id);
            Ok(())
        }
        RunStatus::Silent => {
            eprintln!("run {}: silent (nothing to report; nothing delivered)", report.run_id);
            Ok(())
        }
        RunStatus::Skipped => Err(Error::Skipped { why: report.error.unwrap_or_else(|| "the run was skipped".into()) }),
        status => Err(Error::RunFailed { run_id: report.run_id, status, error: report.error }),
    }
}

/// Status lines on stderr while the agent works.
async fn progress(mut rx: mpsc::UnboundedReceiver<AgentEvent>, name: String) {
    let tty = std::io::stderr().is_terminal();
    eprintln!("running {name}...");
    while let Some(event) = rx.recv().await {
        let line = match event {
            AgentEvent::Running { tool, summary } if summary.is_empty() => format!("  · {tool}"),
            AgentEvent::Running { tool, summary } => format!("  · {tool}: {summary}"),
            AgentEvent::Success { tool, first_line } => format!("  ✓ {tool}: {first_line}"),
            AgentEvent::Failed { tool, lines } => format!("  ✗ {tool}: {}", lines.lines().next().unwrap_or("")),
            AgentEvent::Notice(n) => format!("  ! {n}"),
            AgentEvent::TextDelta(_) => continue,
        };
        let line: String = if tty { line.chars().take(160).collect() } else { line };
        eprintln!("{line}");
    }
}
