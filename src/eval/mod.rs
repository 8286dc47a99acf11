//! `routines eval` (SPEC §2, §8): a suite of routine tasks run against the configured model,
//! each checked, to measure how often routines end correct.
//!
//! A suite is a folder of tasks; a task is a folder with `task.yaml` (setup and checks,
//! [`task::TaskFile`]), `routines/` (the routine as a user writes it), and optionally
//! `workspace/` (files laid out for the run), `templates/` and a site folder. The format is
//! documented in evals/README.md. Loading checks every task first and reports every problem
//! with its location ([`load_suite`]); running gives each task a fresh workspace and state
//! ([`run_task`]).

mod body;
mod check;
mod runner;
mod setup;
pub mod task;

use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::diag::Diagnostics;
use crate::routine::{Routine, load_all};
use crate::tools::Registry;

pub use runner::{SuiteReport, TaskReport, run_task};
pub use task::TaskFile;

/// The file that makes a folder a task.
pub const TASK_FILE: &str = "task.yaml";

/// Why a task could not be set up or run (not why it failed its checks).
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("{0}")]
    Setup(String),
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Engine(#[from] crate::engine::EngineError),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

impl EvalError {
    fn io(path: &Path, source: std::io::Error) -> Self {
        EvalError::Io { path: path.to_path_buf(), source }
    }
}

/// Why a suite cannot run.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    #[error("the eval suite {} does not exist", .0.display())]
    NotFound(PathBuf),
    #[error("the eval suite {} has no tasks (folders with a {TASK_FILE})", .0.display())]
    Empty(PathBuf),
    #[error("the eval suite has {} problem{}", .0.len(), if .0.len() == 1 { "" } else { "s" })]
    Invalid(Diagnostics),
}

/// A suite, loaded and checked.
#[derive(Debug)]
pub struct Suite {
    pub dir: PathBuf,
    pub tasks: Vec<Task>,
}

/// One task, loaded and checked.
#[derive(Debug)]
pub struct Task {
    /// The folder name.
    pub name: String,
    pub dir: PathBuf,
    pub file: TaskFile,
    pub routines: Vec<Routine>,
}

/// Loads the suite at `dir`: every sub-folder with a `task.yaml`, by name, or `dir` itself when
/// it is a task. `config` is the engine's; paths in problems are shown relative to its
/// `base_dir`.
pub fn load_suite(dir: &Path, config: &Config) -> Result<Suite, SuiteError> {
    if !dir.is_dir() {
        return Err(SuiteError::NotFound(dir.to_path_buf()));
    }
    let folders: Vec<PathBuf> = if dir.join(TASK_FILE).is_file() {
        vec![dir.to_path_buf()]
    } else {
        let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|_| SuiteError::NotFound(dir.to_path_buf()))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.join(TASK_FILE).is_file())
            .collect();
        found.sort();
        found
    };
    if folders.is_empty() {
        return Err(SuiteError::Empty(dir.to_path_buf()));
    }
    let tool_names = Registry::builtin().names();
    let mut diags = Diagnostics::default();
    let mut tasks = Vec::new();
    for folder in folders {
        let name = folder.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let loaded = load_all(&task_config(config, &folder), None, &tool_names);
        let names: Vec<&str> = loaded.routines.iter().map(|r| r.name.as_str()).collect();
        let shown = shown(&folder.join(TASK_FILE), config);
        let known = loaded.diagnostics.is_empty().then_some(names.as_slice());
        let checked = task::load(&folder, &shown, known);
        diags.extend(loaded.diagnostics);
        match checked {
            Ok((file, _)) => tasks.push(Task { name, dir: folder, file, routines: loaded.routines }),
            Err(d) => diags.extend(d),
        }
    }
    if diags.is_empty() {
        Ok(Suite { dir: dir.to_path_buf(), tasks })
    } else {
        Err(SuiteError::Invalid(diags.sorted()))
    }
}

/// The engine config of a task: the routines and templates of its folder.
fn task_config(config: &Config, task_dir: &Path) -> Config {
    let mut c = config.clone();
    c.routines_dir = task_dir.join("routines");
    c.templates_dir = task_dir.join("templates");
    c.inline_routines.clear();
    c.source = None;
    c
}

/// A path as people see it: relative to the config's folder.
fn shown(path: &Path, config: &Config) -> PathBuf {
    path.strip_prefix(&config.base_dir).map_or_else(|_| path.to_path_buf(), Path::to_path_buf)
}

/// A scratch folder for one `routines eval`, under the system's temporary folder; removed when
/// dropped.
#[derive(Debug)]
pub struct Scratch(PathBuf);

impl Scratch {
    pub fn new() -> Result<Scratch, EvalError> {
        let dir =
            std::env::temp_dir().join(format!("routines-eval-{}-{:08x}", std::process::id(), rand::random::<u32>()));
        std::fs::create_dir_all(&dir).map_err(|e| EvalError::io(&dir, e))?;
        Ok(Scratch(dir))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
