//! Why a run could not start or be recorded, with the exit code and hint of each case.

use std::path::PathBuf;

use crate::agent::SetupError;
use crate::delivery::DeliveryError;
use crate::policy::PathError;
use crate::routine::context::PromptError;
use crate::store::StoreError;

/// Why a run could not start, be set up or be recorded. A run that starts and fails is not an
/// error: it is recorded `failed` and reported.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The routine has `enabled: false`: the run is refused.
    #[error("routine `{routine}` is disabled; set `enabled: true` in {} to run it", file.display())]
    Disabled { routine: String, file: PathBuf },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Prompt(#[from] PromptError),
    /// The agent could not be set up: its workspace cannot be used, or a skill it loads cannot
    /// be read.
    #[error(transparent)]
    Agent(#[from] SetupError),
    /// The delivery stage could not be set up (the SMTP settings).
    #[error(transparent)]
    Delivery(#[from] DeliveryError),
}

impl EngineError {
    /// The exit code of a command stopped by it (SPEC §2): 3 for a refused run, 2 for a routine
    /// or config that must change, 1 for a failure.
    pub fn exit_code(&self) -> u8 {
        match self {
            EngineError::Disabled { .. } => 3,
            EngineError::Prompt(_) | EngineError::Agent(_) => 2,
            EngineError::Delivery(e) => e.exit_code(),
            EngineError::Store(_) => 1,
        }
    }

    /// What to do about it, where the message does not say.
    pub fn hint(&self) -> Option<String> {
        match self {
            EngineError::Prompt(PromptError::Missing(_)) => {
                Some("add `prompt: |` with the task, or `prompt_template: FILE` from the templates folder".into())
            }
            EngineError::Agent(SetupError::Workspace(PathError::Workspace { .. })) => {
                Some("set `workspace` in routines.yaml to a folder that exists".into())
            }
            EngineError::Agent(SetupError::Skill(_)) => {
                Some("fix the skill's folder or the routine's `skills:`; `routines validate` shows the problems".into())
            }
            EngineError::Delivery(e) => e.hint(),
            _ => None,
        }
    }
}
