//! Wiring: config → store → memory → provider → agent.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use routines::agent::{Agent, AgentOptions};
use routines::config::{self, Config, Env, ProcessEnv};
use routines::llm::{OpenAiProvider, ProviderOptions};
use routines::memory::Memory;
use routines::policy::{Policy, Redactor};
use routines::store::Store;
use routines::tools::{Registry, ShellSettings, safe_env};

use crate::cli::{Cli, Command};

/// Bad usage: exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let config = config::load(cli.config.as_deref(), &cwd, &ProcessEnv)?;
    if config.file.is_none() {
        tracing::warn!(
            "No config file found (looked for --config, $ROUTINES_CONFIG, ./routines.yaml, $XDG_CONFIG_HOME/routines/routines.yaml); using defaults in {}.",
            cwd.display()
        );
    }
    match cli.command {
        Command::Chat => crate::chat::run(config).await,
    }
}

/// The parts every agent of this process shares.
pub struct Parts {
    pub config: Config,
    pub store: Store,
    pub memory: Memory,
    pub provider: Arc<OpenAiProvider>,
    pub policy: Arc<Policy>,
    pub model: String,
}

impl Parts {
    pub fn build(config: Config) -> anyhow::Result<Parts> {
        let model = config.provider.model.clone().ok_or_else(|| {
            UsageError("no model configured: set provider.model in routines.yaml or export ROUTINES_MODEL".into())
        })?;
        let options = ProviderOptions::from_config(&config.provider).map_err(|e| UsageError(e.to_string()))?;
        let provider = Arc::new(OpenAiProvider::new(options)?);
        let store = Store::open(&config.database_path())?;
        let memory = Memory::new(store.clone());
        let mut policy = Policy::new(config.agent.autonomy, &config.workspace, &config.forbidden_paths)
            .map_err(|e| UsageError(e.to_string()))?;
        policy.allowed_commands = config.security.allowed_commands.clone();
        policy.allowed_hosts = config.security.allowed_hosts.clone();
        Ok(Parts { config, store, memory, provider, policy: Arc::new(policy), model })
    }

    pub fn agent(&self) -> Agent {
        let c = &self.config;
        let mut opts = AgentOptions::new(self.model.clone());
        opts.temperature = Some(c.provider.temperature);
        opts.max_tokens = c.provider.max_tokens;
        opts.max_iterations = c.agent.max_iterations;
        opts.history_limit = c.agent.history_limit;
        opts.tool_mode = c.provider.tool_calls;
        opts.language = c.language;
        opts.timezone = c.timezone;
        let env = ProcessEnv;
        let passed: Vec<(String, String)> =
            c.security.shell_env.iter().filter_map(|name| env.var(name).map(|v| (name.clone(), v))).collect();
        opts.shell =
            ShellSettings { timeout: c.agent.shell_timeout.get(), env: safe_env(env.var("HOME").as_deref(), &passed) };
        let mut agent = Agent::new(self.provider.clone(), Registry::builtin(), self.policy.clone(), opts);
        agent.set_memory(Some(self.memory.clone()));
        agent.set_redactor(Redactor::new(c.secret_values(&env)));
        agent
    }
}
