//! Wiring: config → store → memory → provider → engine, for the commands.
//! Everything here is used by `commands` and `chat`; nothing here knows a
//! command.

pub mod complete;
mod error;
#[macro_use]
pub mod out;
pub mod spinner;
pub mod style;

use std::path::Path;
use std::sync::Arc;

use routines::agent::{Agent, AgentSetup, shell_settings};
use routines::config::{self, Config, ProcessEnv};
use routines::delivery::Deliverer;
use routines::engine::Engine;
use routines::llm::{OpenAiProvider, ProviderOptions};
use routines::memory::Memory;
use routines::policy::Redactor;
use routines::routine::template::Templates;
use routines::routine::{LoadedRoutines, load_all};
use routines::store::{Location, Store};

pub use error::{Error, KnownRoutines};

/// The config of `--config` (or the one found from `cwd`), with a warning
/// when there is none and the defaults are used.
pub fn load_config(explicit: Option<&Path>, cwd: &Path) -> Result<Config, Error> {
    let config = config::load(explicit, cwd, &ProcessEnv)?;
    if config.file.is_none() {
        tracing::warn!(
            "No config file found (looked for --config, $ROUTINES_CONFIG, ./routines.yaml, $XDG_CONFIG_HOME/routines/routines.yaml); using defaults in {}.",
            cwd.display()
        );
    }
    Ok(config)
}

/// Names of every tool, for validating `agent.tools`.
pub fn tool_names() -> Vec<&'static str> {
    routines::tools::tool_names()
}

/// Every routine of the config, valid ones and the problems of the others. The secrets of
/// their webhooks join the secrets the process redacts.
pub fn routines(config: &Config) -> LoadedRoutines {
    let names = tool_names();
    let inline = config.source.as_ref().map(|s| (config.inline_routines.as_slice(), s));
    let loaded = load_all(config, inline, &names);
    let webhooks = loaded.routines.iter().flat_map(|r| r.spec.triggers.iter().filter_map(|t| t.webhook.as_ref()));
    let vars = webhooks.flat_map(|w| [w.secret_env.as_deref(), w.token_env.as_deref()]).flatten();
    Redactor::process().learn_vars(vars, &ProcessEnv);
    loaded
}

/// Opens the database and marks runs whose process died as interrupted; what it writes is
/// redacted.
pub fn open_store(config: &Config) -> Result<Store, Error> {
    let redactor = Redactor::for_config(config, &ProcessEnv);
    let location = Location::resolve(&config.store.url_env, config.store_url(&ProcessEnv), config.database_path())?;
    let store = Store::open_recovering_at(&location)?.with_scrub(Arc::new(redactor));
    store.set_cluster(config.cluster.lease.get(), config.cluster.max_skew().get());
    Ok(store)
}

/// The delivery stage alone, for attempting recorded deliveries again: no
/// provider, no agent.
pub fn deliverer(config: &Config) -> Result<Deliverer, Error> {
    let templates = Arc::new(Templates::new(&config.templates_dir));
    Ok(Deliverer::open(config, &ProcessEnv, open_store(config)?, templates)?)
}

/// The provider of the config; `require_model` is false for dry runs and
/// quiet beats, which call no model.
pub fn provider(config: &Config, require_model: bool) -> Result<(Arc<OpenAiProvider>, String), Error> {
    let model = match (&config.provider.model, require_model) {
        (Some(m), _) => m.clone(),
        (None, false) => "(no model configured)".into(),
        (None, true) => return Err(Error::NoModel),
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
        Err(e) => return Err(e.into()),
    };
    Ok((Arc::new(OpenAiProvider::new(options)?), model))
}

/// The engine of routine runs.
pub fn engine(config: Config, require_model: bool) -> Result<Engine, Error> {
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
    pub fn build(config: Config) -> Result<Parts, Error> {
        let (provider, model) = provider(&config, true)?;
        let store = open_store(&config)?;
        let memory = Memory::new(store.clone());
        Ok(Parts { config, store, memory, provider, model })
    }

    /// The agent of `routines chat`: the config's settings, every built-in tool. A workspace
    /// that cannot be used is bad usage.
    pub fn agent(&self) -> Result<Agent, Error> {
        let setup = AgentSetup {
            config: &self.config,
            provider: self.provider.clone(),
            model: &self.model,
            memory: &self.memory,
            redactor: &Redactor::for_config(&self.config, &ProcessEnv),
            shell: &shell_settings(&self.config, &ProcessEnv),
        };
        setup.build(None).map_err(Error::Setup)
    }
}
