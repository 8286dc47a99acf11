//! Why a beat or a greeting could not run or be recorded.

use std::path::PathBuf;

use crate::config::HoursError;
use crate::engine::EngineError;
use crate::memory::MemoryError;
use crate::store::StoreError;

/// Why a beat or a greeting could not run or be recorded. A beat that runs and fails is not an
/// error: it is recorded `failed` and reported.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HeartbeatError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// `heartbeat.active_hours` is not a pair of `HH:MM` times.
    #[error(transparent)]
    Hours(#[from] HoursError),
    /// The checklist exists but cannot be read.
    #[error("cannot read the checklist {}: {source}", path.display())]
    Checklist {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The checklist resolves outside its folder, is not a regular file, or is too large.
    #[error("the checklist is not read: {0}")]
    ChecklistRefused(#[source] crate::skills::read::ReadError),
    #[error("cannot read memory for the greeting: {0}")]
    Memory(#[from] MemoryError),
    /// A state the code rules out was reached: a bug.
    #[error("internal error: {0}; this is a bug in routines")]
    Bug(&'static str),
}

impl HeartbeatError {
    /// The exit code of a command stopped by it: 2 for settings that must change (the hours, an
    /// unreadable checklist), the engine's for its errors, else 1.
    pub fn exit_code(&self) -> u8 {
        match self {
            HeartbeatError::Engine(e) => e.exit_code(),
            HeartbeatError::Hours(_) | HeartbeatError::Checklist { .. } | HeartbeatError::ChecklistRefused(_) => 2,
            HeartbeatError::Store(_) | HeartbeatError::Memory(_) | HeartbeatError::Bug(_) => 1,
        }
    }

    /// What to do about it, where the message does not say.
    pub fn hint(&self) -> Option<String> {
        match self {
            HeartbeatError::Engine(e) => e.hint(),
            HeartbeatError::ChecklistRefused(_) => {
                Some("make the checklist a regular file inside the workspace (not a link to a file elsewhere)".into())
            }
            HeartbeatError::Checklist { .. } => {
                Some("heartbeat.checklist names it; a relative path is read from the config file's folder".into())
            }
            _ => None,
        }
    }
}
