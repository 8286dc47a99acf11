//! Every way a command of the binary can end other than success, each with
//! its exit code (SPEC §2), the lines shown under it and its hint. The layers
//! below have one error enum each that knows its own code and hint; this one
//! wraps them, so `main` maps an error to its exit code without downcasting.

use std::fmt;
use std::path::PathBuf;

use routines::agent::SetupError;
use routines::config::ConfigError;
use routines::daemon::DaemonError;
use routines::delivery::DeliveryError;
use routines::diag::Diagnostics;
use routines::engine::EngineError;
use routines::eval::{EvalError, SuiteError};
use routines::heartbeat::HeartbeatError;
use routines::llm::LlmError;
use routines::policy::PathError;
use routines::skills::SkillError;
use routines::store::{RunStatus, StoreError};

/// Why a command ended without success.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Heartbeat(#[from] HeartbeatError),
    #[error(transparent)]
    Daemon(#[from] DaemonError),
    #[error(transparent)]
    Delivery(#[from] DeliveryError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The model provider cannot be set up.
    #[error(transparent)]
    Provider(#[from] LlmError),
    /// A command that calls the model, with no model configured.
    #[error("no model configured: set provider.model in routines.yaml or export ROUTINES_MODEL")]
    NoModel,
    /// `routines chat` with an agent that cannot be set up (the workspace, a skill).
    #[error(transparent)]
    Setup(SetupError),
    /// `routines skills NAME`: no such skill, or one that cannot be read.
    #[error(transparent)]
    Skill(#[from] SkillError),
    /// `routines skills NAME` of a skill whose folder has problems.
    #[error("skill `{0}` has problems; see `routines validate`")]
    BrokenSkill(String),
    /// `routines skills NAME` with a name no skill has; `hint` is what to suggest.
    #[error("no skill named `{name}`{hint}")]
    UnknownSkill { name: String, hint: String },
    /// A routine name that names no routine; `known` is what to suggest.
    #[error("no routine named `{name}`{known}")]
    UnknownRoutine { name: String, known: KnownRoutines },
    /// A routine whose file has problems; they are shown under the message.
    #[error("routine `{name}` is invalid:")]
    InvalidRoutine { name: String, problems: Diagnostics },
    /// `history --status` with a status that does not exist.
    #[error(
        "unknown status `{0}`; use one of: succeeded, silent, failed, timed_out, skipped, interrupted, running, queued"
    )]
    UnknownStatus(String),
    /// `cluster` with the state in SQLite: one daemon per data folder, no nodes to list.
    #[error(
        "`routines cluster` lists the daemons sharing a PostgreSQL database, and this config keeps its state in \
         SQLite ({0}); set ${1} to a postgres:// URL to run daemons on several machines (SPEC §12)"
    )]
    NoCluster(String, String),
    /// `show` with an id no run has.
    #[error("no run with id {0}; see `routines history`")]
    NoRun(i64),
    /// `show last` with no run at all, or `show NAME` of a routine that has none.
    #[error("{}", match routine {
        Some(name) => format!("routine `{name}` has no runs yet; run it with `routines run {name}`"),
        None => "no runs yet".to_string(),
    })]
    NoRuns { routine: Option<String> },
    /// `run --body FILE` with a file that cannot be read.
    #[error("cannot read the body {}: {source}", path.display())]
    Body {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `validate` found problems (printed on stdout, one per location).
    #[error(
        "{count} problem{plural} found{warned}",
        plural = if *.count == 1 { "" } else { "s" },
        warned = match *.warnings { 0 => String::new(), 1 => " (1 warning)".into(), n => format!(" ({n} warnings)") }
    )]
    Problems { count: usize, warnings: usize },
    /// A run (or beat, or greeting) ran and ended failed, timed out or interrupted.
    #[error("run {run_id} {}: {}", status.as_str(), error.as_deref().unwrap_or("no detail"))]
    RunFailed { run_id: i64, status: RunStatus, error: Option<String> },
    /// A run was recorded `skipped` (overlap: skip), `why` as recorded.
    #[error("{why}")]
    Skipped { why: String },
    /// `deliver --retry` left deliveries undelivered.
    #[error("{failed} of {total} deliveries could not be made")]
    Undelivered { failed: usize, total: usize },
    /// `init` could not create a folder or write a file.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the current directory: {0}")]
    CurrentDir(#[source] std::io::Error),
    #[error("cannot listen for signals: {0}")]
    Signals(#[source] std::io::Error),
    #[error("cannot print JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// Writing to stdout failed (a closed pipe).
    #[error("cannot write the output: {0}")]
    Print(#[source] std::io::Error),
    /// `routines eval` with a suite that cannot be loaded; its problems are shown under it.
    #[error(transparent)]
    Suite(#[from] SuiteError),
    /// `routines eval` could not set up its scratch space.
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// `routines eval` ran every task and some failed their checks (as a test runner fails).
    #[error("{failed} of {total} eval task{plural} failed", plural = if *.total == 1 { "" } else { "s" })]
    TasksFailed { failed: usize, total: usize },
}

/// What `no routine named …` suggests.
#[derive(Debug)]
pub enum KnownRoutines {
    /// The closest name.
    DidYouMean(String),
    /// There are none at all.
    None,
    /// Every name, when none is close.
    All(Vec<String>),
}

impl fmt::Display for KnownRoutines {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KnownRoutines::DidYouMean(best) => write!(f, "; did you mean `{best}`?"),
            KnownRoutines::None => write!(f, "; there are no routines (see `routines init`)"),
            KnownRoutines::All(names) => write!(f, "; routines: {}", names.join(", ")),
        }
    }
}

impl Error {
    /// The exit code (SPEC §2): 1 a run or an operation failed, 2 bad usage or invalid
    /// configuration, 3 a run refused (overlap, disabled routine). Errors of the layers below
    /// say their own.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Config(e) => e.exit_code(),
            Error::Engine(e) => e.exit_code(),
            Error::Heartbeat(e) => e.exit_code(),
            Error::Daemon(e) => e.exit_code(),
            Error::Delivery(e) => e.exit_code(),
            Error::Provider(e) => e.exit_code(),
            Error::Store(e) => e.exit_code(),
            Error::NoModel
            | Error::Setup(_)
            | Error::Skill(_)
            | Error::BrokenSkill(_)
            | Error::UnknownSkill { .. }
            | Error::UnknownRoutine { .. }
            | Error::InvalidRoutine { .. }
            | Error::UnknownStatus(_)
            | Error::NoRun(_)
            | Error::NoRuns { .. }
            | Error::Body { .. }
            | Error::NoCluster(..)
            | Error::Problems { .. }
            | Error::Suite(_) => 2,
            Error::Skipped { .. } => 3,
            Error::RunFailed { .. }
            | Error::Undelivered { .. }
            | Error::Write { .. }
            | Error::CurrentDir(_)
            | Error::Signals(_)
            | Error::Json(_)
            | Error::Print(_)
            | Error::Eval(_)
            | Error::TasksFailed { .. } => 1,
        }
    }

    /// What to do about it, shown as `help:`, where the message does not say.
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::Config(e) => e.hint(),
            Error::Engine(e) => e.hint(),
            Error::Heartbeat(e) => e.hint(),
            Error::Daemon(e) => e.hint(),
            Error::Delivery(e) => e.hint(),
            Error::Setup(SetupError::Workspace(PathError::Workspace { .. })) => {
                Some("set `workspace` in routines.yaml to a folder that exists".into())
            }
            Error::Body { .. } => Some("give a file that exists, or `-` to read the body from stdin".into()),
            _ => None,
        }
    }

    /// The lines shown under the message: a config's or a routine's problems, where to look
    /// at a failed run, and the causes that the message does not already include.
    pub fn detail(&self) -> Vec<String> {
        match self {
            Error::Config(e) => e.detail(),
            Error::InvalidRoutine { problems, .. } | Error::Suite(SuiteError::Invalid(problems)) => problems.lines(),
            Error::RunFailed { run_id, .. } => vec![format!("details: routines show {run_id}")],
            _ => {
                let shown = self.to_string();
                let mut causes = Vec::new();
                let mut source = std::error::Error::source(self);
                while let Some(cause) = source {
                    let text = cause.to_string();
                    if !shown.contains(&text) {
                        causes.push(format!("caused by: {text}"));
                    }
                    source = cause.source();
                }
                causes
            }
        }
    }

    /// The error as it is printed on stderr: `error: <message>`, then the detail and the hint
    /// indented under it.
    pub fn report(&self) -> String {
        let mut out = format!("error: {self}");
        for line in self.detail() {
            out.push_str("\n  ");
            out.push_str(&line);
        }
        if let Some(hint) = self.hint() {
            out.push_str("\n  help: ");
            out.push_str(&hint);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use routines::diag::Diagnostic;

    use super::*;

    #[test]
    fn each_kind_of_error_has_the_exit_code_of_spec_section_2() {
        let disabled = EngineError::Disabled { routine: "off".into(), file: "routines/off.yaml".into() };
        let cases: Vec<(Error, u8)> = vec![
            (Error::Engine(disabled), 3),
            (Error::Skipped { why: "run 1 of `slow` is still running (overlap: skip)".into() }, 3),
            (Error::NoModel, 2),
            (Error::UnknownStatus("done".into()), 2),
            (Error::Problems { count: 3, warnings: 0 }, 2),
            (Error::Config(ConfigError::Invalid(Diagnostics::default())), 2),
            (Error::RunFailed { run_id: 1, status: RunStatus::Failed, error: None }, 1),
            (Error::Undelivered { failed: 1, total: 2 }, 1),
            (Error::Provider(LlmError::NotConfigured("set provider.base_url".into())), 2),
        ];
        for (error, code) in cases {
            assert_eq!(error.exit_code(), code, "{error}");
        }
    }

    #[test]
    fn the_report_is_one_error_line_then_indented_detail_and_help() {
        let failed = Error::RunFailed { run_id: 7, status: RunStatus::TimedOut, error: Some("too slow".into()) };
        assert_eq!(failed.report(), "error: run 7 timed_out: too slow\n  details: routines show 7");

        let problem = Diagnostic::new(Path::new("routines/broken.yaml"), 2, 1, "unknown field `ovrelap`")
            .with_hint("did you mean `overlap`?");
        let invalid = Error::InvalidRoutine { name: "broken".into(), problems: Diagnostics(vec![problem]) };
        assert_eq!(
            invalid.report(),
            "error: routine `broken` is invalid:\n  routines/broken.yaml:2:1: unknown field `ovrelap`\n    help: did you mean `overlap`?"
        );

        let missing = Error::Config(ConfigError::NotFound {
            path: "/p/nope.yaml".into(),
            hint: "check the path given to --config".into(),
        });
        assert_eq!(
            missing.report(),
            "error: config file /p/nope.yaml does not exist\n  help: check the path given to --config"
        );

        let unknown = Error::UnknownRoutine { name: "dialy".into(), known: KnownRoutines::DidYouMean("daily".into()) };
        assert_eq!(unknown.report(), "error: no routine named `dialy`; did you mean `daily`?");
    }

    #[test]
    fn a_cause_the_message_already_includes_is_not_repeated() {
        let source = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "permission denied");
        let unreadable = Error::Heartbeat(HeartbeatError::Checklist { path: "HEARTBEAT.md".into(), source });
        assert_eq!(unreadable.detail(), Vec::<String>::new());
        assert_eq!(unreadable.exit_code(), 2);
        assert!(unreadable.report().starts_with(
            "error: cannot read the checklist HEARTBEAT.md: permission denied
  help: "
        ));
    }
}
