//! `routines run NAME`: fire a routine by hand.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use routines::config::Config;
use routines::engine::{DeliveryReport, EngineError, RunOptions, RunReport, ensure_enabled};
use routines::routine::{HandData, Routine, TriggerContext, by_hand};
use routines::store::{DeliveryStatus, RunRow, RunStatus};
use serde_json::json;
use tokio::sync::mpsc;

use super::progress::{Progress, summary};
use super::{find, print_json};
use crate::app::{Error, engine, open_store, routines, style};

/// What the command line gave `run`.
pub struct Given {
    pub vars: Vec<(String, String)>,
    /// `--body FILE|-`.
    pub body: Option<PathBuf>,
    /// `--header NAME:VALUE`, in order.
    pub headers: Vec<(String, String)>,
    pub no_deliver: bool,
    pub dry_run: bool,
    pub json: bool,
}

pub async fn run(config: Config, name: &str, given: Given) -> Result<(), Error> {
    let loaded = routines(&config);
    let routine = find(&loaded, name)?.clone();
    if !loaded.diagnostics.is_empty() {
        tracing::warn!("{} problem(s) in other routine files; see `routines validate`", loaded.diagnostics.len());
    }
    let vars: BTreeMap<String, String> = given.vars.into_iter().collect();
    let data = hand_data(given.body.as_deref(), given.headers, &config.workspace)?;
    let trigger = by_hand(&routine, data);
    if given.dry_run {
        return dry_run(config, &routine, &trigger, &vars, given.json);
    }
    // Refused before a model is required: a disabled routine needs none.
    ensure_enabled(&routine)?;
    let store = open_store(&config)?;
    let engine = engine(config, true)?;

    let (tx, rx) = mpsc::unbounded_channel();
    let printer = tokio::spawn(Progress::start(routine.name.clone()).follow(rx));
    let opts = RunOptions { vars, no_deliver: given.no_deliver, ..RunOptions::default() };
    let result = engine.run(&routine, trigger, &opts, Some(tx)).await;
    let _ = printer.await;
    let report = result?;
    // The history stays within `history` after each run by hand, as in the daemon.
    if let Err(e) = engine.prune_history() {
        eprintln!("warning: could not prune the run history: {e}");
    }

    say_deliveries(&report.deliveries);
    if given.json {
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
    let row = store.get_run(report.run_id)?;
    last_line(report, row.as_ref())
}

/// The last line on stderr: how the run ended, how long it took and what it cost; and the
/// run's end as the command's.
fn last_line(report: RunReport, row: Option<&RunRow>) -> Result<(), Error> {
    let ended = |status: RunStatus, note: &str| {
        let stats = row.map(summary).unwrap_or_default();
        anstream::eprintln!("run {}: {}{stats}{note}", report.run_id, style::status(status.as_str(), status.as_str()));
    };
    match report.status {
        RunStatus::Succeeded => {
            ended(report.status, "");
            Ok(())
        }
        RunStatus::Silent => {
            ended(report.status, " (nothing to report; nothing delivered)");
            Ok(())
        }
        RunStatus::Skipped => Err(Error::Skipped { why: report.error.unwrap_or_else(|| "the run was skipped".into()) }),
        status => {
            ended(status, "");
            Err(Error::RunFailed { run_id: report.run_id, status, error: report.error })
        }
    }
}

/// A line on stderr per delivery: where it went, or why it did not.
fn say_deliveries(deliveries: &[DeliveryReport]) {
    for d in deliveries {
        match d.status {
            DeliveryStatus::Delivered if d.in_outbox => {
                anstream::eprintln!("  mail to {} queued in the outbox (no SMTP configured)", d.target)
            }
            DeliveryStatus::Delivered => anstream::eprintln!("  delivered to {}", d.target),
            DeliveryStatus::Uncertain => {
                anstream::eprintln!(
                    "  delivery to {} uncertain: {}",
                    d.target,
                    d.error.as_deref().unwrap_or("it may have arrived")
                )
            }
            _ => anstream::eprintln!(
                "  delivery to {} {}: {}",
                d.target,
                style::status("failed", "failed"),
                d.error.as_deref().unwrap_or("unknown error")
            ),
        }
    }
}

/// `--dry-run`: the rendered prompt and system prompt; no model is called.
fn dry_run(
    config: Config,
    routine: &Routine,
    trigger: &TriggerContext,
    vars: &BTreeMap<String, String>,
    json_out: bool,
) -> Result<(), Error> {
    let engine = engine(config, false)?;
    let ctx = engine.context(routine, trigger, 0, 1, vars);
    let prompt = engine.render_prompt(routine, &ctx).map_err(EngineError::from)?;
    let agent = engine.agent_fired(routine, trigger)?;
    let system = agent.system_prompt(&prompt);
    if json_out {
        print_json(&json!({"routine": routine.name, "prompt": prompt, "system_prompt": system}))
    } else {
        outln!("# System prompt\n\n{system}\n# Prompt\n\n{prompt}")
    }
}

/// The trigger data of `--body` and `--header`: the body read from the file or stdin (`-`),
/// and the file's path relative to the workspace when it lies inside it.
fn hand_data(body: Option<&Path>, headers: Vec<(String, String)>, workspace: &Path) -> Result<HandData, Error> {
    let Some(from) = body else {
        return Ok(HandData { headers, ..HandData::default() });
    };
    let read = |from: &Path| -> std::io::Result<Vec<u8>> {
        if from == Path::new("-") {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes)?;
            Ok(bytes)
        } else {
            std::fs::read(from)
        }
    };
    let bytes = read(from).map_err(|source| Error::Body { path: from.to_path_buf(), source })?;
    let file = (from != Path::new("-")).then(|| inside(from, workspace)).flatten();
    Ok(HandData { body: Some(String::from_utf8_lossy(&bytes).into_owned()), headers, file })
}

/// `path` relative to `workspace`, with `/` separators, when it lies inside it.
fn inside(path: &Path, workspace: &Path) -> Option<String> {
    let path = path.canonicalize().ok()?;
    let root = workspace.canonicalize().ok()?;
    let rel = path.strip_prefix(root).ok()?;
    Some(rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/"))
}
