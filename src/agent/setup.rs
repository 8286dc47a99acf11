//! An agent assembled from the config: its options, its policy and its tools, with a routine's
//! overrides where there is one. The one place `routines chat` and routine runs build agents.

use std::sync::Arc;

use super::{Agent, AgentOptions};
use crate::config::routine_file::FirstCall;
use crate::config::{Config, Env};
use crate::llm::Provider;
use crate::memory::Memory;
use crate::policy::{Grants, PathError, Policy, Redactor};
use crate::routine::Routine;
use crate::tools::{Registry, ShellSettings, safe_env};

/// What every agent of a config shares.
pub struct AgentSetup<'a> {
    pub config: &'a Config,
    pub provider: Arc<dyn Provider>,
    /// The model when the routine names none.
    pub model: &'a str,
    pub memory: &'a Memory,
    pub redactor: &'a Redactor,
    pub shell: &'a ShellSettings,
}

impl AgentSetup<'_> {
    /// The agent of the config's settings. With a routine: its overrides (model, temperature,
    /// max_iterations, autonomy, tools, first_call, tool_retries), its zone, routine mode with its silent token, and the
    /// grants of its `agent.tools` and `agent.allow_commands`. Fails when the workspace cannot
    /// be used.
    pub fn build(&self, routine: Option<&Routine>) -> Result<Agent, PathError> {
        let c = self.config;
        let o = routine.map(|r| &r.spec.agent);
        let model = o.and_then(|o| o.model.clone()).unwrap_or_else(|| self.model.to_string());
        let mut opts = AgentOptions::new(model);
        opts.temperature = Some(o.and_then(|o| o.temperature).unwrap_or(c.provider.temperature));
        opts.max_tokens = c.provider.max_tokens;
        opts.max_iterations = o.and_then(|o| o.max_iterations).unwrap_or(c.agent.max_iterations);
        opts.history_limit = c.agent.history_limit;
        opts.tool_mode = c.provider.tool_calls;
        opts.language = c.language;
        opts.timezone = routine.map_or(c.timezone, |r| r.zone);
        opts.shell = self.shell.clone();
        // Routine runs ground their answers in a tool result unless told not to (SPEC §4).
        opts.first_call = match routine {
            Some(_) => o.and_then(|o| o.first_call).unwrap_or(FirstCall::Tool),
            None => FirstCall::Auto,
        };
        opts.tool_retries = o.and_then(|o| o.tool_retries).unwrap_or(super::DEFAULT_TOOL_RETRIES);
        let autonomy = o.and_then(|o| o.autonomy).unwrap_or(c.agent.autonomy);
        let mut policy = Policy::new(autonomy, &c.workspace, &c.forbidden_paths)?;
        policy.allowed_commands = c.security.allowed_commands.clone();
        policy.allowed_hosts = c.security.allowed_hosts.clone();
        let mut tools = Registry::builtin();
        if let Some(list) = o.and_then(|o| o.tools.as_ref()) {
            tools.retain(list);
        }
        let mut agent = Agent::new(self.provider.clone(), tools, Arc::new(policy), opts);
        agent.set_memory(Some(self.memory.clone()));
        agent.set_redactor(self.redactor.clone());
        if let Some(r) = routine {
            let o = &r.spec.agent;
            agent.set_routine_name(&r.name);
            agent.set_silent_token(Some(r.spec.silent_token.clone()));
            agent.set_grants(Grants { tools: o.tools.clone().unwrap_or_default(), commands: o.allow_commands.clone() });
        }
        Ok(agent)
    }
}

/// The shell tool's settings of a config: its timeout, and a clean
/// environment plus the variables `security.shell_env` passes through.
pub fn shell_settings(c: &Config, env: &dyn Env) -> ShellSettings {
    let passed: Vec<(String, String)> =
        c.security.shell_env.iter().filter_map(|name| env.var(name).map(|v| (name.clone(), v))).collect();
    ShellSettings { timeout: c.agent.shell_timeout.get(), env: safe_env(env.var("HOME").as_deref(), &passed) }
}
