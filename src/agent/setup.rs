//! An agent assembled from the config: its options, its policy and its tools, with a routine's
//! overrides where there is one. The one place `routines chat` and routine runs build agents.
//!
//! The session tools are added here: `skill` when there are skills, `schedule` in chat and for
//! routines that list it (never by default: a routine must ask for it in `agent.tools`).

use std::sync::Arc;

use super::{Agent, AgentOptions, LoadedSkill, SkillsPrompt};
use crate::config::routine_file::FirstCall;
use crate::config::{Config, Env};
use crate::llm::Provider;
use crate::memory::Memory;
use crate::policy::{Grants, PathError, Policy, Redactor};
use crate::routine::Routine;
use crate::sandbox::{Sandbox, SandboxPolicy};
use crate::skills::{Catalog, SkillError};
use crate::tools::{
    Registry, Schedule, ScheduleScope, ShellSandbox, ShellSettings, SkillTool, Tool, own_recipients, safe_env,
    tool_names,
};

/// Why an agent could not be assembled.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The workspace cannot be used.
    #[error(transparent)]
    Workspace(#[from] PathError),
    /// A skill the routine loads into its prompt cannot be read.
    #[error(transparent)]
    Skill(#[from] SkillError),
}

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
    /// max_iterations, autonomy, tools, first_call, tool_retries, assist), its zone, routine mode with its silent token, and the
    /// grants of its `agent.tools` and `agent.allow_commands`. Fails when the workspace cannot
    /// be used, or a skill the routine names cannot be read.
    pub fn build(&self, routine: Option<&Routine>) -> Result<Agent, SetupError> {
        self.build_fired(routine, false)
    }

    /// [`AgentSetup::build`] for a run whose trigger came from outside (`outside`: a webhook
    /// request or a file event, whose data an outsider wrote): such a run gets the `schedule`
    /// tool only with the routine's `agent.schedule_from_triggers`, so untrusted input creates
    /// no routine that outlives the run.
    pub fn build_fired(&self, routine: Option<&Routine>, outside: bool) -> Result<Agent, SetupError> {
        let c = self.config;
        let o = routine.map(|r| &r.spec.agent);
        let model = o.and_then(|o| o.model.clone()).unwrap_or_else(|| self.model.to_string());
        let mut opts = AgentOptions::new(model);
        opts.temperature = Some(o.and_then(|o| o.temperature).unwrap_or(c.provider.temperature));
        opts.max_tokens = c.provider.max_tokens;
        opts.context_window = c.provider.context_window;
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
        opts.assists = super::assists::Assists::of(
            (c.agent.assist, &c.agent.assist_off),
            o.map(|o| (o.assist, o.assist_off.as_slice())),
        );
        let autonomy = o.and_then(|o| o.autonomy).unwrap_or(c.agent.autonomy);
        let mut policy = Policy::new(autonomy, &c.workspace, &c.forbidden_paths)?
            .with_protected(&c.engine_files())
            .with_unlisted(std::slice::from_ref(&c.data_dir));
        policy.allowed_commands = c.security.allowed_commands.clone();
        policy.allowed_hosts = c.security.allowed_hosts.clone();
        let catalog = Arc::new(Catalog::load(&c.skills_dir, &c.base_dir, &tool_names()));
        let listed = o.and_then(|o| o.tools.as_ref());
        let mut tools = Registry::builtin();
        if !catalog.is_empty() {
            tools.add(SkillTool::new(catalog.clone()));
        }
        let untrusted = outside && !o.is_some_and(|o| o.schedule_from_triggers);
        if !untrusted && (routine.is_none() || listed.is_some_and(|l| l.iter().any(|t| t == Schedule::NAME))) {
            let targets: Vec<_> =
                routine.iter().flat_map(|r| r.spec.deliver.iter().chain(&r.spec.on_failure.deliver)).collect();
            tools.add(Schedule::new(ScheduleScope {
                config: Arc::new(c.clone()),
                creator: routine.map_or_else(|| "routines chat".to_string(), |r| format!("routine `{}`", r.name)),
                commands: o.map(|o| o.allow_commands.clone()).unwrap_or_default(),
                recipients: own_recipients(&targets),
            }));
        }
        if let Some(list) = listed {
            tools.retain(list);
        }
        let workspace = policy.workspace().to_path_buf();
        let mut agent = Agent::new(self.provider.clone(), tools, Arc::new(policy), opts);
        agent.set_memory(Some(self.memory.clone()));
        agent.set_redactor(self.redactor.clone());
        if let Some(r) = routine {
            let o = &r.spec.agent;
            agent.set_routine_name(&r.name);
            agent.set_silent_token(Some(r.spec.silent_token.clone()));
            agent.set_grants(Grants { tools: o.tools.clone().unwrap_or_default(), commands: o.allow_commands.clone() });
        }
        // The catalogue is listed only to an agent that can load from it.
        let can_load = agent.tool_specs().iter().any(|t| t.name == SkillTool::NAME);
        let shown = |p: &std::path::Path| {
            p.strip_prefix(&workspace).map_or_else(|_| p.display().to_string(), |r| r.display().to_string())
        };
        let mut skills = SkillsPrompt::default();
        if can_load {
            skills.catalog = catalog.skills().iter().map(|s| (s.name.clone(), s.description.clone())).collect();
        }
        for name in routine.map(|r| r.spec.skills.as_slice()).unwrap_or_default() {
            let doc = catalog.document(name)?;
            skills.loaded.push(LoadedSkill {
                name: doc.name,
                body: doc.body,
                resources: doc.resources.iter().map(|p| shown(p)).collect(),
            });
        }
        agent.set_skills(skills);
        agent.set_read_roots(catalog.dirs());
        Ok(agent)
    }
}

/// The shell tool's settings of a config: its timeout, a clean environment plus the variables
/// `security.shell_env` passes through, and the sandbox of `security.sandbox` (probed when the
/// first command needs it, once per process): the engine's own files read-only, the data folder, home folders and forbidden
/// paths out of sight, the network only with `security.shell_network`.
pub fn shell_settings(c: &Config, env: &dyn Env) -> ShellSettings {
    let passed: Vec<(String, String)> =
        c.security.shell_env.iter().filter_map(|name| env.var(name).map(|v| (name.clone(), v))).collect();
    let mut hidden = SandboxPolicy::home_dirs();
    hidden.extend(c.forbidden_paths.iter().cloned());
    hidden.push(c.data_dir.clone());
    let sandbox = ShellSandbox::Ready {
        sandbox: Sandbox::when_needed(c.security.sandbox),
        read_only: c.engine_files(),
        hidden,
        network: c.security.shell_network,
    };
    ShellSettings {
        timeout: c.agent.shell_timeout.get(),
        env: safe_env(env.var("HOME").as_deref(), &passed),
        sandbox,
        max_processes: c.security.shell_max_processes.get(),
    }
}
