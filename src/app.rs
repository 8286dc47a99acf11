//! Wiring: config → store → memory → provider → engine, and the dispatch of
//! commands.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use routines::agent::{Agent, AgentSetup, shell_settings};
use routines::config::{self, Config, ProcessEnv};
use routines::engine::Engine;
use routines::llm::{OpenAiProvider, ProviderOptions};
use routines::memory::Memory;
use routines::policy::Redactor;
use routines::routine::{LoadedRoutines, load_all};
use routines::store::Store;
use routines::tools::Registry;

use crate::cli::{Cli, Command};
use crate::commands;

/// Bad usage: exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// A run refused (disabled routine, overlap): exit code 3.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    if let Command::Init { dir } = &cli.command {
        return commands::init::run(&cwd, dir.as_deref());
    }
    let config = config::load(cli.config.as_deref(), &cwd, &ProcessEnv)?;
    if config.file.is_none() {
        tracing::warn!(
            "No config file found (looked for --config, $ROUTINES_CONFIG, ./routines.yaml, $XDG_CONFIG_HOME/routines/routines.yaml); using defaults in {}.",
            cwd.display()
        );
    }
    match cli.command {
        Command::Init { .. } => Err(anyhow::anyhow!("internal error: init was not handled first (this is a bug)")),
        Command::Validate => commands::validate::run(&config),
        Command::List { json } => commands::inspect::list(&config, json),
        Command::Next { name, n, json } => commands::inspect::next(&config, &name, n, json),
        Command::History { name, limit, status, json } => {
            commands::inspect::history(&config, name.as_deref(), limit, status.as_deref(), json)
        }
        Command::Show { run_id, json } => commands::inspect::show(&config, run_id, json),
        Command::Run { name, vars, no_deliver, dry_run, json } => {
            commands::run::run(config, &name, vars, no_deliver, dry_run, json).await
        }
        Command::Deliver { retry: _, json } => commands::deliver::retry(config, json).await,
        Command::Chat => crate::chat::run(config).await,
        Command::Daemon => commands::daemon::run(config).await,
        Command::Heartbeat { force, greeting, json } => commands::heartbeat::run(config, force, greeting, json).await,
        Command::Eval { suite, json } => commands::eval::run(config, &cwd, suite.as_deref(), json).await,
    }
}

/// Names of the built-in tools, for validating `agent.tools`.
pub fn tool_names() -> Vec<&'static str> {
    Registry::builtin().names()
}

/// Every routine of the config, valid ones and the problems of the others.
pub fn routines(config: &Config) -> LoadedRoutines {
    let names = tool_names();
    let inline = config.source.as_ref().map(|s| (config.inline_routines.as_slice(), s));
    load_all(config, inline, &names)
}

/// Opens the database and marks runs whose process died as interrupted.
pub fn open_store(config: &Config) -> anyhow::Result<Store> {
    Ok(Store::open_recovering(&config.database_path())?)
}

/// The provider of the config; `require_model` is false for dry runs.
pub fn provider(config: &Config, require_model: bool) -> anyhow::Result<(Arc<OpenAiProvider>, String)> {
    let model = match (&config.provider.model, require_model) {
        (Some(m), _) => m.clone(),
        (None, false) => "(no model configured)".into(),
        (None, true) => {
            return Err(UsageError(
                "no model configured: set provider.model in routines.yaml or export ROUTINES_MODEL".into(),
            )
            .into());
        }
    };
    let options = match ProviderOptions::from_config(&config.provider) {
        Ok(o) => o,
        Err(_) if !require_model => ProviderOptions {
            base_url: "http://127.0.0.1:9/v1".into(),
            api_key: None,
            api_key_var: None,
            timeout: config.provider.timeout.get(),
            retry: Default::default(),
        },
        Err(e) => return Err(UsageError(e.to_string()).into()),
    };
    Ok((Arc::new(OpenAiProvider::new(options)?), model))
}

/// The engine of routine runs.
pub fn engine(config: Config, require_model: bool) -> anyhow::Result<Engine> {
    let (provider, model) = provider(&config, require_model)?;
    Ok(Engine::open(config, provider, model)?)
}

/// The parts an interactive agent needs.
pub struct Parts {
    pub config: Config,
    pub store: Store,
    pub memory: Memory,
    pub provider: Arc<OpenAiProvider>,
    pub model: String,
}

impl Parts {
    pub fn build(config: Config) -> anyhow::Result<Parts> {
        let (provider, model) = provider(&config, true)?;
        let store = open_store(&config)?;
        let memory = Memory::new(store.clone());
        Ok(Parts { config, store, memory, provider, model })
    }

    /// The agent of `routines chat`: the config's settings, every built-in tool. A workspace
    /// that cannot be used is bad usage.
    pub fn agent(&self) -> anyhow::Result<Agent> {
        let setup = AgentSetup {
            config: &self.config,
            provider: self.provider.clone(),
            model: &self.model,
            memory: &self.memory,
            redactor: &Redactor::new(self.config.secret_values(&ProcessEnv)),
            shell: &shell_settings(&self.config, &ProcessEnv),
        };
        Ok(setup.build(None).map_err(|e| UsageError(e.to_string()))?)
    }
}
