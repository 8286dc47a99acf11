//! Command-line definitions (clap) and nothing else.

use std::path::PathBuf;

use clap::{ArgAction, Parser, Subcommand, ValueEnum};
use clap_complete::engine::ArgValueCandidates;

use crate::app::complete::{routine_names, skill_names};

#[derive(Debug, Parser)]
#[command(name = "routines", version, about = "Runs LLM agent routines unattended.", propagate_version = true)]
pub struct Cli {
    /// Engine config file [default: $ROUTINES_CONFIG, ./routines.yaml, $XDG_CONFIG_HOME/routines/routines.yaml]
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,

    /// More log output (-v info, -vv debug, -vvv trace).
    #[arg(short, long, global = true, action = ArgAction::Count)]
    pub verbose: u8,

    /// Only errors.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,

    /// Colour in the output (auto: on a terminal, unless NO_COLOR is set).
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create routines.yaml, routines/, templates/, skills/ and HEARTBEAT.md (never overwrites).
    Init {
        /// Folder to set up [default: the current folder].
        dir: Option<PathBuf>,
    },
    /// Check the config and every routine; print every problem as FILE:LINE:COL.
    Validate {
        /// Print the problems as a JSON list of {file, line, col, severity, message, hint}.
        #[arg(long)]
        json: bool,
    },
    /// One row per routine: name, enabled, triggers, next fire, last status, skipped and missed fires.
    List {
        #[arg(long)]
        json: bool,
    },
    /// The next fire times of a routine's time triggers.
    Next {
        #[arg(add = ArgValueCandidates::new(routine_names))]
        name: String,
        /// How many.
        #[arg(short = 'n', default_value_t = 5)]
        n: usize,
        #[arg(long)]
        json: bool,
    },
    /// Fire a routine now: the final output on stdout, progress on stderr.
    Run {
        #[arg(add = ArgValueCandidates::new(routine_names))]
        name: String,
        /// A template variable, added to the routine's `vars` (repeatable).
        #[arg(long = "var", value_name = "KEY=VALUE", value_parser = parse_var)]
        vars: Vec<(String, String)>,
        /// The trigger's body (`trigger.body`, and `trigger.json` when it is JSON) from FILE,
        /// or from stdin with `-`: what a webhook request or a file event would bring.
        #[arg(long, value_name = "FILE|-")]
        body: Option<PathBuf>,
        /// A request header for `trigger.headers` (repeatable), e.g. `--header 'X-Event: push'`.
        #[arg(long = "header", value_name = "NAME:VALUE", value_parser = parse_header)]
        headers: Vec<(String, String)>,
        /// Run, but deliver nothing.
        #[arg(long)]
        no_deliver: bool,
        /// Print the rendered prompt and system prompt; call no model.
        #[arg(long)]
        dry_run: bool,
        #[arg(long)]
        json: bool,
    },
    /// Stop firing a routine's triggers without editing its file (kept in the store;
    /// `run` by hand still works).
    Pause {
        #[arg(add = ArgValueCandidates::new(routine_names))]
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Fire a paused routine's triggers again. With --catch-up, run it now once when
    /// instants were skipped while it was paused.
    Resume {
        #[arg(add = ArgValueCandidates::new(routine_names))]
        name: String,
        #[arg(long)]
        catch_up: bool,
        #[arg(long)]
        json: bool,
    },
    /// Run every trigger of every routine until SIGINT/SIGTERM: schedules,
    /// file events and webhooks (with /healthz and /metrics); routine files
    /// are reloaded when they change.
    Daemon {
        /// `json`: one JSON object per log line on stderr, for log shippers.
        #[arg(long, value_enum, default_value_t = LogFormat::Text)]
        log_format: LogFormat,
    },
    /// Recent runs, newest first.
    History {
        /// Only this routine.
        #[arg(add = ArgValueCandidates::new(routine_names))]
        name: Option<String>,
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// Only runs with this status (succeeded, silent, failed, timed_out, skipped, interrupted).
        #[arg(long)]
        status: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// One run: trigger, prompt, every model and tool call, output, deliveries, tokens.
    Show {
        /// A run id, `last` (the newest run) or a routine name (its newest run).
        #[arg(value_name = "RUN_ID|last|NAME", add = ArgValueCandidates::new(routine_names))]
        run: String,
        #[arg(long)]
        json: bool,
    },
    /// Retry every delivery that failed or is still waiting, without running the agent again.
    Deliver {
        /// Retry failed and waiting deliveries (the only mode for now).
        #[arg(long, required = true)]
        retry: bool,
        /// Also send again the deliveries marked uncertain: their attempt was cut off by a
        /// process that died, and they may have arrived. Check first.
        #[arg(long)]
        uncertain: bool,
        #[arg(long)]
        json: bool,
    },
    /// One heartbeat check-in now: the agent goes through the checklist and
    /// reports only what needs attention. With --greeting, one greeting.
    Heartbeat {
        /// Beat even outside `heartbeat.active_hours`; with --greeting, also
        /// ignore `max_per_day` and `min_gap`.
        #[arg(long)]
        force: bool,
        /// Send one greeting now instead of beating (it counts toward the
        /// day's `max_per_day`).
        #[arg(long)]
        greeting: bool,
        #[arg(long)]
        json: bool,
    },
    /// Interactive session with the agent: streamed replies, tool status
    /// lines, [y/N/a] confirmations. Ctrl-C cancels the current answer;
    /// /image PATH attaches an image to the next message; /exit or Ctrl-D leaves.
    Chat,
    /// The nodes of a cluster sharing a PostgreSQL store: id, host, version, last heartbeat,
    /// runs in flight.
    Cluster {
        #[arg(long)]
        json: bool,
    },
    /// The skills in skills_dir: name, description, folder. With NAME, its SKILL.md.
    Skills {
        /// The skill whose SKILL.md to print.
        #[arg(add = ArgValueCandidates::new(skill_names))]
        name: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Run a suite of routine tasks with checkers against the configured
    /// model: pass or fail, model calls, tokens and seconds per task, and the
    /// pass rate. Exit code 1 when a task failed.
    Eval {
        /// The suite folder (or one task folder) [default: evals/ beside the config].
        suite: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// A shell completion script (bash, zsh or fish) that also completes routine and skill
    /// names. Load it with e.g. `source <(routines completions bash)`.
    Completions { shell: Shell },
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// When to colour the output (the help of `--color` says what each does: a value with help of
/// its own would turn `routines --help` into the long layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

/// The shells `completions` writes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

impl Shell {
    /// The name as written on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Shell::Bash => "bash",
            Shell::Zsh => "zsh",
            Shell::Fish => "fish",
        }
    }
}

/// A `--var` that is not `KEY=VALUE`; clap reports it as bad usage (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is not KEY=VALUE")]
pub struct VarError(String);

fn parse_var(s: &str) -> Result<(String, String), VarError> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(VarError(s.to_string())),
    }
}

/// A `--header` that is not `NAME:VALUE`; clap reports it as bad usage (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is not NAME:VALUE; write e.g. --header 'X-Event: push'")]
pub struct HeaderError(String);

fn parse_header(s: &str) -> Result<(String, String), HeaderError> {
    match s.split_once(':') {
        Some((k, v)) if is_header_name(k.trim()) => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(HeaderError(s.to_string())),
    }
}

/// A header name as HTTP allows it: letters, digits and `!#$%&'*+-.^_`|~`.
fn is_header_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c))
}
