//! Why a beat or a greeting could not run or be recorded.

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
    /// `heartbeat.active_hours` cannot be read, or the checklist cannot (the message says which).
    #[error("{0}")]
    Settings(String),
    #[error("cannot read memory for the greeting: {0}")]
    Memory(#[from] MemoryError),
    /// A built-in routine's own spec does not load: a bug.
    #[error("built-in routine {name}: {source}; this is a bug in routines")]
    Builtin {
        name: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// A state the code rules out was reached: a bug.
    #[error("internal error: {0}; this is a bug in routines")]
    Bug(&'static str),
}

impl HeartbeatError {
    /// The exit code of a command stopped by it: 2 for settings that must change, the engine's
    /// for its errors, else 1.
    pub fn exit_code(&self) -> u8 {
        match self {
            HeartbeatError::Engine(e) => e.exit_code(),
            HeartbeatError::Settings(_) => 2,
            HeartbeatError::Store(_)
            | HeartbeatError::Memory(_)
            | HeartbeatError::Builtin { .. }
            | HeartbeatError::Bug(_) => 1,
        }
    }

    /// What to do about it, where the message does not say.
    pub fn hint(&self) -> Option<String> {
        match self {
            HeartbeatError::Engine(e) => e.hint(),
            _ => None,
        }
    }
}
