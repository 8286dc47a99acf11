//! Finding, parsing, checking and resolving the engine config.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use chrono_tz::Tz;

use super::check;
use super::{
    AgentSettings, ConfigFile, Duration, HeartbeatSettings, Language, LimitSettings, MailSettings, SecuritySettings,
    ServerSettings, ToolCallMode,
};
use crate::diag::Diagnostics;
use crate::yaml::{self, SourceMap};

/// Where environment variables come from. Tests pass a map instead of
/// mutating the process environment.
pub trait Env: Send + Sync {
    fn var(&self, name: &str) -> Option<String>;
}

/// The real process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }
}

impl Env for HashMap<String, String> {
    fn var(&self, name: &str) -> Option<String> {
        self.get(name).filter(|v| !v.is_empty()).cloned()
    }
}

/// A secret value. It cannot be printed by accident: Debug and Display
/// show `[redacted]`; [`Secret::expose`] is the one way to read it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// The model provider after environment overrides.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    pub base_url: Option<String>,
    /// Where `base_url` came from, for error messages.
    pub base_url_source: &'static str,
    pub api_key: Option<Secret>,
    /// The variable the key was read from, named in "key rejected" errors.
    pub api_key_var: Option<String>,
    pub model: Option<String>,
    pub temperature: f32,
    pub max_tokens: Option<u32>,
    /// `provider.context_window`: tokens the model's context holds.
    pub context_window: Option<u32>,
    pub timeout: Duration,
    pub tool_calls: ToolCallMode,
    pub max_retries: u32,
    /// The model accepts images.
    pub vision: bool,
}

/// The resolved engine configuration: absolute paths, parsed zone, secrets
/// read from the environment.
#[derive(Debug, Clone)]
pub struct Config {
    /// The file it came from; `None` when no file exists and defaults apply.
    pub file: Option<PathBuf>,
    /// Folder that relative paths resolve against.
    pub base_dir: PathBuf,
    pub timezone: Tz,
    pub language: Language,
    pub data_dir: PathBuf,
    pub routines_dir: PathBuf,
    pub templates_dir: PathBuf,
    pub workspace: PathBuf,
    /// Folder of skills (SPEC §10).
    pub skills_dir: PathBuf,
    pub provider: ProviderConfig,
    pub agent: AgentSettings,
    pub security: SecuritySettings,
    /// `forbidden_paths` with `~` expanded and made absolute.
    pub forbidden_paths: Vec<PathBuf>,
    /// `security.protected_paths` with `~` expanded and made absolute (relative ones from the
    /// config file's folder).
    pub protected_paths: Vec<PathBuf>,
    pub mail: Option<MailSettings>,
    pub server: ServerSettings,
    pub limits: LimitSettings,
    pub history: super::HistorySettings,
    pub store: super::StoreSettings,
    pub cluster: super::ClusterSettings,
    pub heartbeat: HeartbeatSettings,
    /// Names of every environment variable the config reads secrets from;
    /// their values are redacted wherever output is recorded.
    pub secret_vars: Vec<String>,
    /// Routines written under `routines:` in the config file.
    pub inline_routines: Vec<super::routine_file::RoutineFile>,
    /// Positions in the config file, for diagnostics of inline routines.
    pub source: Option<SourceMap>,
}

impl Config {
    /// Defaults for when no config file exists, rooted at `dir`.
    pub fn defaults(dir: &Path, env: &dyn Env) -> Result<Config, ConfigError> {
        resolve(None, dir, ConfigFile::default(), None, env)
    }

    /// The files and folders that govern the engine, which no tool and no shell command may
    /// write (SPEC §8): the config file, `routines_dir`, `templates_dir`, `skills_dir`,
    /// `data_dir`, the heartbeat checklist, the identity files and `.git/config` and
    /// `.git/hooks` of the workspace, and `security.protected_paths`. Paths that do not exist
    /// yet are listed too: they must not be created either.
    pub fn engine_files(&self) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = self.file.iter().cloned().collect();
        paths.extend([&self.routines_dir, &self.templates_dir, &self.skills_dir, &self.data_dir].map(PathBuf::clone));
        let checklist = &self.heartbeat.checklist;
        paths.push(match self.file.as_ref().and_then(|f| f.parent()) {
            Some(dir) if checklist.is_relative() => dir.join(checklist),
            _ => self.base_dir.join(checklist),
        });
        for name in ["HEARTBEAT.md", "USER.md", "SOUL.md", "AGENT.md", ".git/config", ".git/hooks"] {
            paths.push(self.workspace.join(name));
        }
        paths.extend(self.protected_paths.iter().cloned());
        paths.sort();
        paths.dedup();
        paths
    }

    /// Path of the SQLite database.
    pub fn database_path(&self) -> PathBuf {
        self.data_dir.join("routines.db")
    }

    /// The database URL in the variable `store.url_env` names, if it is set and not empty
    /// (it holds a password: never log it).
    pub fn store_url(&self, env: &dyn Env) -> Option<String> {
        env.var(&self.store.url_env).filter(|u| !u.trim().is_empty())
    }

    /// Values of every secret the config names, for redaction.
    /// The token of the status page and `/metrics` (`server.token_env`), `None` without one.
    /// A `token_env` whose variable is unset or empty is an error, never an open page.
    pub fn ui_token(&self, env: &dyn Env) -> Result<Option<Secret>, ConfigError> {
        let Some(var) = &self.server.token_env else { return Ok(None) };
        match env.var(var).filter(|v| !v.is_empty()) {
            Some(value) => Ok(Some(Secret::new(value))),
            None => Err(ConfigError::MissingToken(var.clone())),
        }
    }

    pub fn secret_values(&self, env: &dyn Env) -> Vec<String> {
        let mut values: Vec<String> = self.secret_vars.iter().filter_map(|v| env.var(v)).collect();
        if let Some(k) = &self.provider.api_key {
            values.push(k.expose().to_string());
        }
        values.retain(|v| v.len() >= 4);
        values.sort();
        values.dedup();
        values
    }
}

/// Why the config could not be loaded. Every case is bad usage or configuration: exit code 2.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config file {} does not exist", path.display())]
    NotFound { path: PathBuf, hint: String },
    #[error("cannot read config file {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("invalid configuration ({} problem{})", .0.len(), if .0.len() == 1 { "" } else { "s" })]
    Invalid(Diagnostics),
    /// `server.token_env` names a variable that is unset or empty: the daemon does not serve an
    /// open status page in its place.
    #[error("server.token_env names ${0}, which is not set")]
    MissingToken(String),
}

impl ConfigError {
    /// The exit code of a command stopped by it (SPEC §2): always 2.
    pub fn exit_code(&self) -> u8 {
        2
    }

    /// What to do about it, where the message does not say.
    pub fn hint(&self) -> Option<String> {
        match self {
            ConfigError::NotFound { hint, .. } => Some(hint.clone()),
            ConfigError::MissingToken(var) => Some(format!(
                "export {var} with a long random token (e.g. `openssl rand -hex 32`), or remove token_env"
            )),
            _ => None,
        }
    }

    /// The lines shown under the message: every problem of an invalid config, each with its
    /// location and hint.
    pub fn detail(&self) -> Vec<String> {
        match self {
            ConfigError::Invalid(diags) => diags.lines(),
            _ => Vec::new(),
        }
    }
}

/// Finds the config file: `explicit` (from `--config`), else
/// `$ROUTINES_CONFIG`, else `./routines.yaml`, else
/// `$XDG_CONFIG_HOME/routines/routines.yaml`. `Ok(None)` when none exists
/// and none was asked for by name.
pub fn discover(explicit: Option<&Path>, cwd: &Path, env: &dyn Env) -> Result<Option<PathBuf>, ConfigError> {
    if let Some(p) = explicit {
        let p = cwd.join(p);
        return if p.is_file() {
            Ok(Some(p))
        } else {
            Err(ConfigError::NotFound { path: p, hint: "check the path given to --config".into() })
        };
    }
    if let Some(p) = env.var("ROUTINES_CONFIG") {
        let p = cwd.join(p);
        return if p.is_file() {
            Ok(Some(p))
        } else {
            Err(ConfigError::NotFound {
                path: p,
                hint: "$ROUTINES_CONFIG names this file; fix or unset the variable".into(),
            })
        };
    }
    let local = cwd.join("routines.yaml");
    if local.is_file() {
        return Ok(Some(local));
    }
    let xdg = env
        .var("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| env.var("HOME").map(|h| Path::new(&h).join(".config")));
    if let Some(x) = xdg {
        let p = x.join("routines").join("routines.yaml");
        if p.is_file() {
            return Ok(Some(p));
        }
    }
    Ok(None)
}

/// Discovers and loads the config; defaults rooted at `cwd` when no file exists.
pub fn load(explicit: Option<&Path>, cwd: &Path, env: &dyn Env) -> Result<Config, ConfigError> {
    match discover(explicit, cwd, env)? {
        Some(path) => {
            let text =
                std::fs::read_to_string(&path).map_err(|source| ConfigError::Read { path: path.clone(), source })?;
            from_str(&path, &text, env)
        }
        None => Config::defaults(cwd, env),
    }
}

/// Parses and resolves config text read from `path`.
pub fn from_str(path: &Path, text: &str, env: &dyn Env) -> Result<Config, ConfigError> {
    let loaded = yaml::from_str::<ConfigFile>(path, text).map_err(ConfigError::Invalid)?;
    let base = path.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let base = std::path::absolute(&base).unwrap_or(base);
    resolve(Some(path), &base, loaded.value, Some(&loaded.source), env)
}

fn resolve(
    file: Option<&Path>,
    base: &Path,
    mut raw: ConfigFile,
    source: Option<&SourceMap>,
    env: &dyn Env,
) -> Result<Config, ConfigError> {
    // Defaults that depend on other settings follow what the user wrote (issue 50, item 6).
    if let Ok(window) = raw.heartbeat.greeting_window() {
        raw.heartbeat.greeting.fit(window.length());
    }
    let checked = check::settings(&raw, source).map_err(|diags| ConfigError::Invalid(diags.sorted()))?;

    let at = |p: Option<PathBuf>, default: &str| -> PathBuf {
        let p = p.unwrap_or_else(|| PathBuf::from(default));
        base.join(expand_tilde(&p, env))
    };
    let forbidden_paths = forbidden_paths(&raw.security, base, env);
    let protected_paths =
        raw.security.protected_paths.iter().map(|p| base.join(expand_tilde(Path::new(p), env))).collect();

    Ok(Config {
        file: file.map(Path::to_path_buf),
        base_dir: base.to_path_buf(),
        timezone: checked.timezone,
        language: raw.language,
        data_dir: at(raw.data_dir, ".routines"),
        routines_dir: at(raw.routines_dir, "routines"),
        templates_dir: at(raw.templates_dir, "templates"),
        workspace: at(raw.workspace, "."),
        skills_dir: at(raw.skills_dir, "skills"),
        provider: provider_config(&raw.provider, env),
        agent: raw.agent,
        security: raw.security,
        forbidden_paths,
        protected_paths,
        mail: raw.mail,
        server: raw.server,
        limits: raw.limits,
        history: raw.history,
        store: raw.store,
        cluster: raw.cluster,
        heartbeat: raw.heartbeat,
        secret_vars: checked.secret_vars,
        inline_routines: raw.routines,
        source: source.cloned(),
    })
}

/// Forbidden paths: `~` is the home folder, and a relative path is under it too
/// (under the config's folder when there is no home).
fn forbidden_paths(security: &SecuritySettings, base: &Path, env: &dyn Env) -> Vec<PathBuf> {
    let home = env.var("HOME").map(PathBuf::from);
    security
        .forbidden_paths
        .iter()
        .map(|p| {
            let p = expand_tilde(Path::new(p), env);
            if p.is_absolute() { p } else { home.clone().unwrap_or_else(|| base.to_path_buf()).join(p) }
        })
        .collect()
}

/// Environment overrides: `ROUTINES_*` win over the file; `OPENAI_*` fill
/// in what the file leaves unset.
fn provider_config(p: &super::ProviderSettings, env: &dyn Env) -> ProviderConfig {
    let (base_url, base_url_source) = if let Some(u) = env.var("ROUTINES_BASE_URL") {
        (Some(u), "$ROUTINES_BASE_URL")
    } else if let Some(u) = &p.base_url {
        (Some(u.clone()), "provider.base_url")
    } else if let Some(u) = env.var("OPENAI_BASE_URL") {
        (Some(u), "$OPENAI_BASE_URL")
    } else {
        (None, "nowhere")
    };
    let key_vars = ["ROUTINES_API_KEY", p.api_key_env.as_str(), "OPENAI_API_KEY"];
    let (api_key, api_key_var) = key_vars
        .iter()
        .find_map(|v| env.var(v).map(|k| (Some(Secret::new(k)), Some((*v).to_string()))))
        .unwrap_or((None, None));
    ProviderConfig {
        base_url,
        base_url_source,
        api_key,
        api_key_var,
        model: env.var("ROUTINES_MODEL").or_else(|| p.model.clone()),
        temperature: p.temperature,
        max_tokens: p.max_tokens,
        context_window: p.context_window,
        timeout: p.timeout,
        tool_calls: p.tool_calls,
        max_retries: p.max_retries,
        vision: p.vision,
    }
}

fn expand_tilde(p: &Path, env: &dyn Env) -> PathBuf {
    match (p.strip_prefix("~"), env.var("HOME")) {
        (Ok(rest), Some(home)) => Path::new(&home).join(rest),
        _ => p.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect()
    }

    fn errors(text: &str) -> Vec<String> {
        match from_str(Path::new("/cfg/routines.yaml"), text, &env(&[])) {
            Err(ConfigError::Invalid(d)) => d.0.iter().map(ToString::to_string).collect(),
            other => panic!("expected invalid config, got {other:?}"),
        }
    }

    #[test]
    fn resolves_paths_against_the_config_folder() {
        let c = from_str(
            Path::new("/cfg/routines.yaml"),
            "data_dir: state\nworkspace: ../work\n",
            &env(&[("HOME", "/home/u")]),
        )
        .unwrap();
        assert_eq!(c.data_dir, PathBuf::from("/cfg/state"));
        assert_eq!(c.workspace, PathBuf::from("/cfg/../work"));
        assert_eq!(c.routines_dir, PathBuf::from("/cfg/routines"));
        assert!(c.forbidden_paths.contains(&PathBuf::from("/home/u/.ssh")));
        assert_eq!(c.timezone, Tz::UTC);
    }

    #[test]
    fn reads_secrets_from_the_named_variable_and_applies_overrides() {
        let text = "provider:\n  base_url: http://file/v1\n  api_key_env: MY_KEY\n  model: file-model\n";
        let c =
            from_str(Path::new("/c.yaml"), text, &env(&[("MY_KEY", "k-123"), ("OPENAI_API_KEY", "other")])).unwrap();
        assert_eq!(c.provider.api_key.as_ref().map(Secret::expose), Some("k-123"));
        assert_eq!(c.provider.api_key_var.as_deref(), Some("MY_KEY"));
        assert_eq!(c.provider.base_url.as_deref(), Some("http://file/v1"));
        let c = from_str(
            Path::new("/c.yaml"),
            text,
            &env(&[
                ("ROUTINES_BASE_URL", "http://env/v1"),
                ("ROUTINES_MODEL", "env-model"),
                ("ROUTINES_API_KEY", "rk"),
            ]),
        )
        .unwrap();
        assert_eq!(c.provider.base_url.as_deref(), Some("http://env/v1"));
        assert_eq!(c.provider.model.as_deref(), Some("env-model"));
        assert_eq!(c.provider.api_key_var.as_deref(), Some("ROUTINES_API_KEY"));
        let c = from_str(Path::new("/c.yaml"), "", &env(&[("OPENAI_BASE_URL", "http://o/v1")])).unwrap();
        assert_eq!(c.provider.base_url.as_deref(), Some("http://o/v1"));
        assert_eq!(format!("{:?}", Secret::new("abc")), "[redacted]");
    }

    #[test]
    fn reports_every_problem_at_once() {
        let text = "timezone: Europe/Berln\nprovider:\n  base_url: ftp://x\n  modle: m\n  temperature: 5\nagent:\n  max_iterations: 0\n  shell_timeout: 30\nserver:\n  listen: localhost\n";
        assert_eq!(
            errors(text),
            vec![
                "/cfg/routines.yaml:4:3: unknown field `modle` in `provider`\n  help: did you mean `model`?",
                "/cfg/routines.yaml:8:18: invalid duration `30`: a unit is missing; write e.g. 30s or 30m (at `agent.shell_timeout`)",
            ]
        );
        let text = "timezone: Europe/Berln\nprovider:\n  base_url: ftp://x\n  temperature: 5\nagent:\n  max_iterations: 0\nserver:\n  listen: localhost\nheartbeat:\n  active_hours: { start: '8am', end: '22:00' }\n";
        assert_eq!(
            errors(text),
            vec![
                "/cfg/routines.yaml:1:11: unknown time zone `Europe/Berln`\n  help: did you mean `Europe/Berlin`?",
                "/cfg/routines.yaml:3:13: base_url has scheme `ftp`\n  help: use an http:// or https:// URL",
                "/cfg/routines.yaml:4:16: temperature 5 is out of range\n  help: use a value from 0 to 2",
                "/cfg/routines.yaml:6:19: max_iterations must be at least 1",
                "/cfg/routines.yaml:8:11: `localhost` is not an address with a port\n  help: write it as IP:PORT, e.g. 127.0.0.1:8787",
                "/cfg/routines.yaml:10:26: `8am` is not a time of day\n  help: write it as HH:MM, e.g. 08:00",
            ]
        );
    }

    #[test]
    fn greetings_must_fit_in_their_hours() {
        let valid = |text: &str| from_str(Path::new("/cfg/routines.yaml"), text, &env(&[])).is_ok();
        let text = "heartbeat:\n  active_hours: { start: '09:00', end: '17:00' }\n  greeting: { enabled: true, max_per_day: 3, min_gap: 4h }\n";
        assert_eq!(
            errors(text),
            vec![
                "/cfg/routines.yaml:3:43: 3 greetings at least 4h apart do not fit in the greeting hours 09:00–17:00\n  help: at most 2 fit; lower max_per_day or min_gap, or widen heartbeat.active_hours",
            ]
        );
        // Without active hours greetings fall in 08:00–22:00; a window may cross midnight.
        assert!(valid("heartbeat:\n  greeting: { enabled: true, max_per_day: 3, min_gap: 4h }\n"));
        let night = "heartbeat:\n  active_hours: { start: '22:00', end: '06:00' }\n  greeting: { enabled: true, max_per_day: 2, min_gap: 7h }\n";
        assert!(valid(night));
        let zero = "heartbeat:\n  greeting:\n    enabled: true\n    max_per_day: 0\n";
        assert_eq!(
            errors(zero),
            vec![
                "/cfg/routines.yaml:4:18: max_per_day must be at least 1\n  help: set `enabled: false` to send no greetings"
            ]
        );
        // A window that ends when it starts is the whole day.
        let all_day = "heartbeat:\n  active_hours: { start: '08:00', end: '08:00' }\n  greeting: { enabled: true, max_per_day: 6, min_gap: 4h }\n";
        assert!(valid(all_day));
        // Switched off, the numbers are not checked.
        assert!(valid("heartbeat:\n  greeting: { enabled: false, max_per_day: 0 }\n"));
    }

    #[test]
    fn the_context_window_is_a_positive_number_of_tokens() {
        assert_eq!(
            errors("provider:\n  context_window: 0\n"),
            vec![
                "/cfg/routines.yaml:2:19: context_window must be at least 1\n  help: the model's context in tokens, e.g. 8192; leave it out to use what the server reports"
            ]
        );
        let e = errors("provider:\n  context_window: 8k\n");
        assert!(e[0].starts_with("/cfg/routines.yaml:2:19: "), "{e:?}");
        let c = from_str(Path::new("/cfg/routines.yaml"), "provider:\n  context_window: 8192\n", &env(&[])).unwrap();
        assert_eq!(c.provider.context_window, Some(8192));
    }

    #[test]
    fn the_queue_window_is_at_least_one_and_grows_with_the_slots() {
        assert_eq!(
            errors("limits:\n  queue_window: 0\n"),
            vec!["/cfg/routines.yaml:2:17: queue_window must be at least 1"]
        );
        let window =
            |text: &str| from_str(Path::new("/cfg/routines.yaml"), text, &env(&[])).unwrap().limits.queue_window();
        assert_eq!(window(""), 256);
        assert_eq!(window("limits: { max_concurrent_runs: 100 }\n"), 400);
        assert_eq!(window("limits: { max_concurrent_runs: 100, queue_window: 3 }\n"), 3);
    }

    #[test]
    fn refuses_a_key_where_a_variable_name_belongs() {
        let errs = errors("provider:\n  api_key_env: sk-abcdef\n");
        assert_eq!(errs.len(), 1);
        assert!(errs[0].starts_with("/cfg/routines.yaml:2:16: this must be the name of an environment variable"));
        assert!(!errs[0].contains("abcdef"), "the secret must not be echoed: {errs:?}");
    }

    #[test]
    fn discovers_in_documented_order() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        assert!(discover(None, cwd, &env(&[])).unwrap().is_none());
        let xdg = cwd.join("xdg");
        std::fs::create_dir_all(xdg.join("routines")).unwrap();
        std::fs::write(xdg.join("routines/routines.yaml"), "").unwrap();
        let e = env(&[("XDG_CONFIG_HOME", xdg.to_str().unwrap())]);
        assert_eq!(discover(None, cwd, &e).unwrap(), Some(xdg.join("routines/routines.yaml")));
        std::fs::write(cwd.join("routines.yaml"), "").unwrap();
        assert_eq!(discover(None, cwd, &e).unwrap(), Some(cwd.join("routines.yaml")));
        std::fs::write(cwd.join("other.yaml"), "").unwrap();
        let e2 = env(&[("ROUTINES_CONFIG", "other.yaml")]);
        assert_eq!(discover(None, cwd, &e2).unwrap(), Some(cwd.join("other.yaml")));
        assert!(matches!(discover(Some(Path::new("missing.yaml")), cwd, &e2), Err(ConfigError::NotFound { .. })));
    }
}
