//! Runs one routine in-process, the way `routines run NAME` does, and prints
//! how it ended.
//!
//!     cargo run --example run_routine -- path/to/routines.yaml NAME [key=value]...
//!
//! The provider comes from the config (or `ROUTINES_BASE_URL`,
//! `ROUTINES_MODEL`, `ROUTINES_API_KEY`), exactly as for the binary. The run
//! is recorded in the config's database and its deliveries are made, so
//! `routines history` and `routines show RUN_ID` show it afterwards.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use routines::config::{self, ProcessEnv};
use routines::engine::{Engine, RunOptions};
use routines::llm::{OpenAiProvider, ProviderOptions};
use routines::routine::TriggerContext;
use routines::routine::load_all;
use routines::tools::Registry;

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

async fn run() -> Result<ExitCode, Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(config_path), Some(name)) = (args.next(), args.next()) else {
        return Err("usage: run_routine CONFIG NAME [key=value]...".into());
    };
    let vars: BTreeMap<String, String> = args
        .map(|kv| kv.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect::<Option<_>>()
        .ok_or("variables are written key=value")?;

    // 1. The engine config: strict keys, environment overrides, paths
    //    relative to the config file's folder.
    let cwd = std::env::current_dir()?;
    let config = config::load(Some(&PathBuf::from(config_path)), &cwd, &ProcessEnv)?;

    // 2. The routines: every file of routines_dir plus inline ones. Invalid
    //    routines do not hide the valid ones; their problems are listed.
    let tool_names = Registry::builtin().names();
    let inline = config.source.as_ref().map(|s| (config.inline_routines.as_slice(), s));
    let loaded = load_all(&config, inline, &tool_names);
    if !loaded.diagnostics.is_empty() {
        eprintln!("{}", loaded.diagnostics);
    }
    let routine = loaded.get(&name).ok_or_else(|| format!("no valid routine named `{name}`"))?.clone();

    // 3. The engine: provider, database, memory, templates.
    let model = config.provider.model.clone().ok_or("no model configured: set provider.model or ROUTINES_MODEL")?;
    let provider = Arc::new(OpenAiProvider::new(ProviderOptions::from_config(&config.provider)?)?);
    let engine = Engine::open(config, provider, model)?;

    // 4. One run: queued → running → agent → deliveries, all recorded.
    let opts = RunOptions { vars, ..RunOptions::default() };
    let report = engine.run(&routine, TriggerContext::Manual, &opts, None).await?;
    eprintln!("run {} of {}: {}", report.run_id, report.routine, report.status.as_str());
    for d in &report.deliveries {
        eprintln!("  delivery to {}: {}", d.target, d.status.as_str());
    }
    match (&report.output, &report.error) {
        (Some(output), _) => println!("{output}"),
        (None, Some(error)) => eprintln!("error: {error}"),
        (None, None) => {}
    }
    Ok(if report.error.is_some() { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}
