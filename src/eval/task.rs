//! A task of an eval suite as written: `task.yaml` in the task's folder (format in
//! evals/README.md), with the checks serde cannot make (regexes, one trigger, the routine it
//! names) reported with their locations.

use std::collections::BTreeMap;
use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;

use super::body::Body;
use crate::config::routine_file::FileEvent;
use crate::config::{Duration, Language};
use crate::diag::{Diagnostics, did_you_mean};
use crate::yaml::{self, SourceMap};

/// `task.yaml` as written.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskFile {
    /// What the task checks, for people.
    pub description: Option<String>,
    /// The routine to run: the name of a routine in the task's `routines/` folder; default the
    /// only one there.
    pub routine: Option<String>,
    /// The engine's reply language for this task (`language` of routines.yaml).
    pub language: Option<Language>,
    /// Files written into the workspace (path → content) after the task's `workspace/` folder
    /// is copied there.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// A git repository the runner creates in the workspace, with its commits.
    pub git: Option<GitSetup>,
    /// A folder of the task served over HTTP on 127.0.0.1 while the task runs.
    pub site: Option<SiteSetup>,
    /// What fired the run; default a manual run.
    pub trigger: Option<TriggerSetup>,
    /// Template variables, as `routines run --var`.
    #[serde(default)]
    pub vars: BTreeMap<String, String>,
    /// The instant every run of the task takes as the current time (RFC 3339,
    /// `2027-03-01T08:30:00Z`): the prompt's current time, the dates the engine compares and the
    /// template's `now`, so that "in how many days" has one right answer on any day. Shell
    /// commands and `git` keep the machine's clock. Default the wall clock.
    pub now: Option<String>,
    /// The checks of the run (without `runs`).
    pub expect: Option<Expect>,
    /// Several runs in the same workspace and state (memory carries over), each with its own
    /// setup and checks; the task's `routine`, `vars` and `trigger` are their defaults.
    #[serde(default)]
    pub runs: Vec<RunSpec>,
}

/// A repository made by the runner (not by the agent).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GitSetup {
    /// Its folder, relative to the workspace; default the workspace itself.
    #[serde(default = "dot")]
    pub path: String,
    pub commits: Vec<CommitSpec>,
}

fn dot() -> String {
    ".".into()
}

/// One commit: files written (path → content), then committed.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommitSpec {
    pub message: String,
    /// `Name <email>`; default `Eval Runner <eval@example.com>`.
    pub author: Option<String>,
    /// How long before the run the commit was made; default now.
    pub ago: Option<Duration>,
    #[serde(default)]
    pub files: BTreeMap<String, String>,
}

/// A static site: the files of `dir` (in the task folder) at `http://127.0.0.1:PORT/`. The
/// runner adds the address to `security.allowed_hosts` and to the run's variables as
/// `vars.site_url`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SiteSetup {
    #[serde(default = "default_site_dir")]
    pub dir: String,
    /// A fixed port, for prompts that name the URL; default any free port.
    pub port: Option<u16>,
}

fn default_site_dir() -> String {
    "site".into()
}

/// Exactly one of `webhook` and `file`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TriggerSetup {
    pub webhook: Option<WebhookSetup>,
    pub file: Option<FileSetup>,
}

/// An accepted webhook request as the trigger context (`trigger.body`, `trigger.json`, ...).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookSetup {
    #[serde(default = "default_hook_path")]
    pub path: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub query: BTreeMap<String, String>,
    /// The body: a string as it is, anything else as its JSON text, keys in the order written.
    #[serde(default)]
    pub body: Body,
}

fn default_hook_path() -> String {
    "/hooks/eval".into()
}

/// A file event as the trigger context (`trigger.path`, `trigger.event`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileSetup {
    pub path: String,
    #[serde(default = "default_event")]
    pub event: FileEvent,
}

fn default_event() -> FileEvent {
    FileEvent::Create
}

/// One run of a task with several.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    pub routine: Option<String>,
    /// Files written into the workspace before this run.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    #[serde(default)]
    pub vars: BTreeMap<String, String>,
    pub trigger: Option<TriggerSetup>,
    pub expect: Option<Expect>,
}

/// The checks of one run.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The run's status; default `succeeded`.
    pub status: Option<ExpectedStatus>,
    /// Substrings the output must contain, ignoring case.
    #[serde(default)]
    pub contains: Vec<String>,
    /// Substrings the output must not contain, ignoring case.
    #[serde(default)]
    pub not_contains: Vec<String>,
    /// Regular expressions the output must match.
    #[serde(default)]
    pub matches: Vec<String>,
    /// Regular expressions the output must not match.
    #[serde(default)]
    pub not_matches: Vec<String>,
    /// Files of the workspace after the run (path → what they must hold).
    #[serde(default)]
    pub files: BTreeMap<String, FileExpect>,
}

/// What a file must hold after the run.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileExpect {
    /// Whether it exists; default true.
    #[serde(default = "yes")]
    pub exists: bool,
    /// Its whole content, ignoring whitespace at both ends.
    pub equals: Option<String>,
    /// Substrings the file must contain, ignoring case.
    #[serde(default)]
    pub contains: Vec<String>,
    /// Substrings the file must not contain, ignoring case.
    #[serde(default)]
    pub not_contains: Vec<String>,
    /// Regular expressions the file must match.
    #[serde(default)]
    pub matches: Vec<String>,
    /// Regular expressions the file must not match.
    #[serde(default)]
    pub not_matches: Vec<String>,
}

fn yes() -> bool {
    true
}

/// The status a run must end with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExpectedStatus {
    Succeeded,
    Silent,
    Failed,
    TimedOut,
}

impl TaskFile {
    /// The task's `now`, checked when the task was loaded.
    pub fn now(&self) -> Option<chrono::DateTime<chrono::Utc>> {
        self.now.as_deref().and_then(|n| chrono::DateTime::parse_from_rfc3339(n).ok()).map(|n| n.to_utc())
    }
}

impl ExpectedStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ExpectedStatus::Succeeded => "succeeded",
            ExpectedStatus::Silent => "silent",
            ExpectedStatus::Failed => "failed",
            ExpectedStatus::TimedOut => "timed_out",
        }
    }
}

/// Reads and checks `task.yaml` of `dir`; `routines` are the names of the routines loaded from
/// the task's `routines/` folder, `None` when some of them could not be loaded (their problems
/// are reported on their own). `shown` is the file as people see it.
pub(super) fn load(dir: &Path, shown: &Path, routines: Option<&[&str]>) -> Result<(TaskFile, SourceMap), Diagnostics> {
    let text = std::fs::read_to_string(dir.join("task.yaml")).map_err(|e| {
        Diagnostics(vec![crate::diag::Diagnostic::new(shown, 1, 1, format!("cannot read the task file: {e}"))])
    })?;
    let loaded = yaml::from_str::<TaskFile>(shown, &text)?;
    let (task, source) = (loaded.value, loaded.source);
    let mut diags = Diagnostics::default();
    check(&task, &source, dir, routines, &mut diags);
    if diags.is_empty() { Ok((task, source)) } else { Err(diags.sorted()) }
}

fn check(task: &TaskFile, source: &SourceMap, dir: &Path, routines: Option<&[&str]>, diags: &mut Diagnostics) {
    if let Some(routines) = routines {
        check_routines(task, source, routines, diags);
    }
    if let Some(site) = &task.site {
        if !dir.join(&site.dir).is_dir() {
            diags.push(
                source
                    .error_at(&["site", "dir"], format!("the site folder `{}` does not exist", site.dir))
                    .with_hint("put the pages to serve in a folder of the task"),
            );
        }
    }
    if !task.runs.is_empty() && task.expect.is_some() {
        diags.push(
            source
                .error_at(&["expect"], "`expect` and `runs` are both set")
                .with_hint("with several runs, give each run its own `expect`"),
        );
    }
    if let Some(now) = &task.now
        && chrono::DateTime::parse_from_rfc3339(now).is_err()
    {
        diags.push(
            source
                .error_at(&["now"], format!("`{now}` is not an instant (a date, a time and an offset)"))
                .with_hint("write it in RFC 3339, with its offset: 2027-03-01T08:30:00Z or 2027-03-01T16:30:00+08:00"),
        );
    }
    check_trigger(source, &["trigger"], task.trigger.as_ref(), diags);
    check_expect(source, &["expect"], task.expect.as_ref(), diags);
    for (i, run) in task.runs.iter().enumerate() {
        let idx = i.to_string();
        check_trigger(source, &["runs", &idx, "trigger"], run.trigger.as_ref(), diags);
        check_expect(source, &["runs", &idx, "expect"], run.expect.as_ref(), diags);
    }
}

/// The routine each run names exists; a task with several routines names one for each run.
fn check_routines(task: &TaskFile, source: &SourceMap, routines: &[&str], diags: &mut Diagnostics) {
    if routines.is_empty() {
        diags.push(
            source
                .error_at(&[], "the task has no routine")
                .with_hint("put the routine file, as a user writes it, in the task's routines/ folder"),
        );
        return;
    }
    let mut check_one = |at: &[&str], name: Option<&String>| match name {
        Some(n) if !routines.contains(&n.as_str()) => {
            let hint = match did_you_mean(n, routines.iter().copied()) {
                Some(best) => format!("did you mean `{best}`?"),
                None => format!("routines of the task: {}", routines.join(", ")),
            };
            diags.push(source.error_at(at, format!("no routine named `{n}` in the task")).with_hint(hint));
        }
        None if routines.len() > 1 => diags.push(
            source
                .error_at(at, "the task has several routines; say which one runs")
                .with_hint(format!("add `routine:` with one of: {}", routines.join(", "))),
        ),
        _ => {}
    };
    if task.runs.is_empty() || task.routine.is_some() {
        check_one(&["routine"], task.routine.as_ref());
    }
    for (i, run) in task.runs.iter().enumerate() {
        let idx = i.to_string();
        let at: &[&str] = if run.routine.is_some() { &["runs", &idx, "routine"] } else { &["runs", &idx] };
        check_one(at, run.routine.as_ref().or(task.routine.as_ref()));
    }
}

fn check_trigger(source: &SourceMap, at: &[&str], trigger: Option<&TriggerSetup>, diags: &mut Diagnostics) {
    let Some(t) = trigger else { return };
    if t.webhook.is_some() == t.file.is_some() {
        diags.push(source.error_at(at, "a trigger needs exactly one of `webhook` and `file`"));
    }
}

fn check_expect(source: &SourceMap, at: &[&str], expect: Option<&Expect>, diags: &mut Diagnostics) {
    let Some(e) = expect else { return };
    let mut check_regexes = |key: &[&str], list: &[String]| {
        for (i, pattern) in list.iter().enumerate() {
            if let Err(err) = regex::Regex::new(pattern) {
                let idx = i.to_string();
                let path: Vec<&str> = at.iter().chain(key).copied().chain([idx.as_str()]).collect();
                let first = err.to_string().lines().last().unwrap_or("").trim().to_string();
                diags.push(source.error_at(&path, format!("`{pattern}` is not a valid regular expression: {first}")));
            }
        }
    };
    check_regexes(&["matches"], &e.matches);
    check_regexes(&["not_matches"], &e.not_matches);
    for (file, f) in &e.files {
        check_regexes(&["files", file, "matches"], &f.matches);
        check_regexes(&["files", file, "not_matches"], &f.not_matches);
    }
}
