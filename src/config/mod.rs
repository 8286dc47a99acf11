//! Engine configuration (`routines.yaml`, SPEC §3).
//!
//! The serde structs here *are* the settings the rest of the engine reads:
//! strict (`deny_unknown_fields`), each default written next to its field.
//! [`load`] finds the file, parses it through [`crate::yaml`] (every problem
//! at once, with locations), checks values that serde cannot (time zones,
//! URLs, ranges), applies environment overrides and resolves relative paths
//! against the config file's folder.

pub mod assist;
mod check;
mod duration;
mod hours;
mod limits;
mod load;
pub mod recipients;
pub mod routine_file;

use std::num::NonZeroU32;
use std::path::PathBuf;

use crate::sandbox::SandboxMode;
use schemars::JsonSchema;
use serde::Deserialize;

pub use assist::AssistLevel;
pub use duration::{Duration, DurationError};
pub use hours::{HoursError, Window, parse_time};
pub use limits::{DEFAULT_QUEUE_WINDOW, LimitSettings};
pub use load::{Config, ConfigError, Env, ProcessEnv, ProviderConfig, Secret, discover, from_str, load};

/// The file in `data_dir` that a running daemon holds an exclusive `flock` on (one daemon per
/// data folder); whoever needs to know whether a daemon runs tries the same lock.
pub const DAEMON_LOCK_FILE: &str = "daemon.lock";

/// Reply language and tool-result labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Language {
    #[default]
    En,
    Zh,
}

/// How much the agent may do without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Autonomy {
    /// Only tools that change nothing.
    ReadOnly,
    /// Mutating tools need approval (a person in chat, the routine's lists unattended).
    #[default]
    Supervised,
    /// Everything within the allowlists runs.
    Full,
}

impl Autonomy {
    pub fn as_str(self) -> &'static str {
        match self {
            Autonomy::ReadOnly => "read_only",
            Autonomy::Supervised => "supervised",
            Autonomy::Full => "full",
        }
    }
}

/// How tool calls travel between the engine and the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallMode {
    /// The API's `tools` / `tool_calls` fields.
    #[default]
    Native,
    /// Tools described in the prompt; calls parsed from JSON in the reply text.
    Json,
}

/// The file as written. Paths are still relative here.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// IANA zone, the default of every routine. Default UTC.
    pub timezone: Option<String>,
    #[serde(default)]
    pub language: Language,
    pub data_dir: Option<PathBuf>,
    pub routines_dir: Option<PathBuf>,
    pub templates_dir: Option<PathBuf>,
    pub workspace: Option<PathBuf>,
    #[serde(default)]
    pub provider: ProviderSettings,
    #[serde(default)]
    pub agent: AgentSettings,
    #[serde(default)]
    pub security: SecuritySettings,
    pub mail: Option<MailSettings>,
    #[serde(default)]
    pub server: ServerSettings,
    #[serde(default)]
    pub limits: LimitSettings,
    #[serde(default)]
    pub history: HistorySettings,
    #[serde(default)]
    pub store: StoreSettings,
    #[serde(default)]
    pub cluster: ClusterSettings,
    #[serde(default)]
    pub heartbeat: HeartbeatSettings,
    /// Routines written inline, besides the files in `routines_dir`.
    #[serde(default)]
    pub routines: Vec<routine_file::RoutineFile>,
    /// Folder of skills (SPEC §10): one folder per skill with a `SKILL.md`. Default `skills`.
    pub skills_dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProviderSettings {
    /// Base URL of an OpenAI-compatible API, e.g. http://127.0.0.1:11434/v1.
    pub base_url: Option<String>,
    /// Name of the environment variable that holds the API key (never the key).
    #[serde(default = "default_api_key_env")]
    pub api_key_env: String,
    pub model: Option<String>,
    #[serde(default = "default_temperature")]
    pub temperature: f32,
    pub max_tokens: Option<u32>,
    /// Tokens the model's context holds; unset: what the server reports, else 8192. No request
    /// is sent larger (SPEC §13).
    pub context_window: Option<u32>,
    /// Per-request timeout.
    #[serde(default = "default_provider_timeout")]
    pub timeout: Duration,
    #[serde(default)]
    pub tool_calls: ToolCallMode,
    /// Retries of one model call on 429, 5xx, timeouts and dropped connections.
    #[serde(default = "default_max_retries")]
    pub max_retries: u32,
    /// The model accepts images (a routine's `attach`, `/image` in chat).
    #[serde(default)]
    pub vision: bool,
}

impl Default for ProviderSettings {
    fn default() -> Self {
        ProviderSettings {
            base_url: None,
            api_key_env: default_api_key_env(),
            model: None,
            temperature: default_temperature(),
            max_tokens: None,
            context_window: None,
            timeout: default_provider_timeout(),
            tool_calls: ToolCallMode::Native,
            max_retries: default_max_retries(),
            vision: false,
        }
    }
}

fn default_api_key_env() -> String {
    "OPENAI_API_KEY".into()
}
fn default_temperature() -> f32 {
    0.7
}
fn default_provider_timeout() -> Duration {
    Duration::from_secs(120)
}
fn default_max_retries() -> u32 {
    3
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentSettings {
    /// Most model calls for one message.
    #[serde(default = "default_max_iterations")]
    pub max_iterations: u32,
    /// Messages of conversation history kept.
    #[serde(default = "default_history_limit")]
    pub history_limit: usize,
    #[serde(default = "default_shell_timeout")]
    pub shell_timeout: Duration,
    #[serde(default)]
    pub autonomy: Autonomy,
    /// How far the engine assists the model (SPEC §13); a routine's `agent.assist` wins.
    #[serde(default)]
    pub assist: AssistLevel,
    /// Assists turned off by name, for every routine (merged with a routine's list).
    #[serde(default)]
    pub assist_off: Vec<String>,
}

impl Default for AgentSettings {
    fn default() -> Self {
        AgentSettings {
            max_iterations: default_max_iterations(),
            history_limit: default_history_limit(),
            shell_timeout: default_shell_timeout(),
            autonomy: Autonomy::Supervised,
            assist: AssistLevel::Evidence,
            assist_off: Vec::new(),
        }
    }
}

fn default_max_iterations() -> u32 {
    10
}
fn default_history_limit() -> usize {
    50
}
fn default_shell_timeout() -> Duration {
    Duration::from_secs(120)
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SecuritySettings {
    #[serde(default = "default_allowed_commands")]
    pub allowed_commands: Vec<String>,
    #[serde(default = "default_forbidden_paths")]
    pub forbidden_paths: Vec<String>,
    /// Hosts http_request may reach even in private ranges.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Names of environment variables passed to shell commands (their
    /// environment is otherwise only a safe PATH, HOME and LANG).
    #[serde(default)]
    pub shell_env: Vec<String>,
    /// Where shell commands run (SPEC §8): `auto`, `bwrap`, `landlock` or `none`.
    #[serde(default)]
    pub sandbox: SandboxMode,
    /// Paths no tool may write, beyond the engine's own files.
    #[serde(default)]
    pub protected_paths: Vec<String>,
    /// Whether shell commands may use the network (`http_request` is the checked way out).
    #[serde(default)]
    pub shell_network: bool,
    /// How many processes and threads one shell command may have at a time, everything it
    /// starts included; a fork past it fails. Kept by the kernel's `pids` cgroup where the
    /// engine can make one (docs/ARCHITECTURE.md).
    #[serde(default = "default_shell_max_processes")]
    pub shell_max_processes: NonZeroU32,
}

/// The default of `security.shell_max_processes`.
pub const DEFAULT_SHELL_MAX_PROCESSES: NonZeroU32 = NonZeroU32::new(512).expect("512 is not zero");

fn default_shell_max_processes() -> NonZeroU32 {
    DEFAULT_SHELL_MAX_PROCESSES
}

impl Default for SecuritySettings {
    fn default() -> Self {
        SecuritySettings {
            allowed_commands: default_allowed_commands(),
            forbidden_paths: default_forbidden_paths(),
            allowed_hosts: Vec::new(),
            shell_env: Vec::new(),
            sandbox: SandboxMode::default(),
            protected_paths: Vec::new(),
            shell_network: false,
            shell_max_processes: DEFAULT_SHELL_MAX_PROCESSES,
        }
    }
}

fn default_allowed_commands() -> Vec<String> {
    ["ls", "cat", "git", "df", "du", "date", "wc", "grep", "head", "tail", "pwd", "echo"].map(String::from).to_vec()
}

fn default_forbidden_paths() -> Vec<String> {
    ["~/.ssh", "~/.aws", "~/.gnupg", "~/.config/gcloud", "~/.kube", "/etc/shadow", "/etc/sudoers", "/root"]
        .map(String::from)
        .to_vec()
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MailSettings {
    /// Sender, e.g. "Routines <routines@example.com>".
    pub from: String,
    /// Default: smtp when `smtp` is set, else outbox.
    pub transport: Option<MailTransport>,
    pub smtp: Option<SmtpSettings>,
    /// Addresses a routine made by the agent (the `schedule` tool) may mail besides its
    /// creator's own recipients: `name@example.com`, or `*@example.com` for any address at
    /// that domain (not its subdomains).
    #[serde(default)]
    pub allowed_recipients: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MailTransport {
    Smtp,
    Outbox,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SmtpSettings {
    pub host: String,
    #[serde(default = "default_smtp_port")]
    pub port: u16,
    #[serde(default)]
    pub security: SmtpSecurity,
    pub username_env: Option<String>,
    pub password_env: Option<String>,
    #[serde(default = "default_smtp_timeout")]
    pub timeout: Duration,
    /// A PEM certificate to trust besides the system's roots (a private CA).
    pub ca_file: Option<PathBuf>,
}

fn default_smtp_port() -> u16 {
    587
}
fn default_smtp_timeout() -> Duration {
    Duration::from_secs(30)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SmtpSecurity {
    #[default]
    Starttls,
    Tls,
    None,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerSettings {
    #[serde(default = "default_listen")]
    pub listen: String,
    /// Requests per second each webhook path accepts on average...
    #[serde(default = "default_rate_limit")]
    pub rate_limit: f64,
    /// ...and in a burst; more are answered 429 with Retry-After.
    #[serde(default = "default_rate_burst")]
    pub rate_burst: u32,
    /// Name of the variable holding the token of the status page and `/metrics` (never the
    /// token). Required when `listen` is not a loopback address.
    #[serde(default)]
    pub token_env: Option<String>,
}

impl Default for ServerSettings {
    fn default() -> Self {
        ServerSettings {
            listen: default_listen(),
            rate_limit: default_rate_limit(),
            rate_burst: default_rate_burst(),
            token_env: None,
        }
    }
}

fn default_rate_limit() -> f64 {
    50.0
}
fn default_rate_burst() -> u32 {
    100
}

fn default_listen() -> String {
    "127.0.0.1:8787".into()
}

/// Where the state lives (SPEC §3, §9).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StoreSettings {
    /// Name of the variable holding a `postgres://` URL of the database (never the URL: it
    /// holds a password). Unset or empty: SQLite in `data_dir`.
    #[serde(default = "default_url_env")]
    pub url_env: String,
}

impl Default for StoreSettings {
    fn default() -> Self {
        StoreSettings { url_env: default_url_env() }
    }
}

fn default_url_env() -> String {
    "ROUTINES_DATABASE_URL".into()
}

/// Daemons sharing a PostgreSQL store (SPEC §12); ignored with SQLite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClusterSettings {
    /// How long a node counts as alive after its last heartbeat (it renews every quarter of
    /// this). Its queued and running fires are taken over by another node once it lapses.
    #[serde(default = "default_lease")]
    pub lease: Duration,
    /// The most the clocks of two nodes may differ; a node whose clock is further from the
    /// database's logs a warning at each heartbeat. Unset, it follows `lease` (see
    /// [`ClusterSettings::max_skew`]).
    #[serde(default)]
    pub max_skew: Option<Duration>,
}

impl Default for ClusterSettings {
    fn default() -> Self {
        ClusterSettings { lease: default_lease(), max_skew: None }
    }
}

impl ClusterSettings {
    /// `max_skew` as written, else 5s, or a sixth of `lease` when that is shorter: a default
    /// that depends on `lease` follows it, so `lease: 5s` alone is valid.
    pub fn max_skew(&self) -> Duration {
        self.max_skew.unwrap_or_else(|| Duration(self.lease.get() / 6).min(Duration::from_secs(5)))
    }
}

fn default_lease() -> Duration {
    Duration::from_secs(30)
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HistorySettings {
    #[serde(default = "default_max_age")]
    pub max_age: Duration,
    #[serde(default = "default_max_runs")]
    pub max_runs_per_routine: u32,
}

impl Default for HistorySettings {
    fn default() -> Self {
        HistorySettings { max_age: default_max_age(), max_runs_per_routine: default_max_runs() }
    }
}

fn default_max_age() -> Duration {
    Duration::from_secs(30 * 86_400)
}
fn default_max_runs() -> u32 {
    1000
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HeartbeatSettings {
    #[serde(default)]
    pub enabled: bool,
    #[serde(default = "default_beat_every")]
    pub every: Duration,
    pub active_hours: Option<ActiveHours>,
    #[serde(default = "default_checklist")]
    pub checklist: PathBuf,
    #[serde(default = "default_ok_token")]
    pub ok_token: String,
    #[serde(default)]
    pub greeting: GreetingSettings,
    #[serde(default)]
    pub deliver: Vec<DeliveryTarget>,
}

impl Default for HeartbeatSettings {
    fn default() -> Self {
        HeartbeatSettings {
            enabled: false,
            every: default_beat_every(),
            active_hours: None,
            checklist: default_checklist(),
            ok_token: default_ok_token(),
            greeting: GreetingSettings::default(),
            deliver: Vec::new(),
        }
    }
}

fn default_beat_every() -> Duration {
    Duration::from_secs(30 * 60)
}
fn default_checklist() -> PathBuf {
    PathBuf::from("HEARTBEAT.md")
}
fn default_ok_token() -> String {
    "HEARTBEAT_OK".into()
}

/// Local times `HH:MM` in the engine's zone.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ActiveHours {
    pub start: String,
    pub end: String,
}

/// The window greetings fall in when `heartbeat.active_hours` is not set:
/// beats may run all night, a greeting should not arrive at 3 a.m.
pub const DEFAULT_GREETING_HOURS: (&str, &str) = ("08:00", "22:00");

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GreetingSettings {
    #[serde(default)]
    pub enabled: bool,
    /// Unset: 2, or as many as fit the greeting hours with `min_gap` when fewer do.
    #[serde(default)]
    pub max_per_day: Option<u32>,
    /// Unset: 4h, or the greeting hours divided by `max_per_day` when that is shorter.
    #[serde(default)]
    pub min_gap: Option<Duration>,
}

impl GreetingSettings {
    pub fn max_per_day(&self) -> u32 {
        self.max_per_day.unwrap_or_else(default_greetings_per_day)
    }

    pub fn min_gap(&self) -> Duration {
        self.min_gap.unwrap_or_else(default_min_gap)
    }

    /// Fills the fields left unset so that the greetings fit greeting hours `length` long:
    /// defaults that depend on each other and on the hours follow what the user wrote. What
    /// was written is kept as written (and checked by `validate`).
    pub fn fit(&mut self, length: chrono::TimeDelta) {
        let Ok(length) = length.to_std() else { return };
        if length.is_zero() {
            return;
        }
        match (self.max_per_day, self.min_gap) {
            (_, None) => {
                let n = self.max_per_day().max(1);
                self.min_gap = Some(Duration(length / n).min(default_min_gap()));
            }
            (None, Some(gap)) => {
                let gap = gap.get().as_secs().max(1);
                let fit = (length.as_secs().saturating_sub(1)) / gap + 1;
                self.max_per_day = Some(default_greetings_per_day().min(u32::try_from(fit).unwrap_or(u32::MAX)));
            }
            (Some(_), Some(_)) => {}
        }
    }
}

fn default_greetings_per_day() -> u32 {
    2
}
fn default_min_gap() -> Duration {
    Duration::from_secs(4 * 3600)
}

/// Where a result goes (shared by routines and the heartbeat).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum DeliveryTarget {
    File(FileTarget),
    Mail(MailTarget),
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileTarget {
    pub path: String,
    pub template: Option<String>,
    #[serde(default)]
    pub mode: FileMode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FileMode {
    Create,
    #[default]
    Overwrite,
    Append,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MailTarget {
    pub to: Vec<String>,
    #[serde(default)]
    pub cc: Vec<String>,
    #[serde(default)]
    pub bcc: Vec<String>,
    pub subject: Option<String>,
    pub template: Option<String>,
    pub html_template: Option<String>,
    #[serde(default)]
    pub attach_output: bool,
}
