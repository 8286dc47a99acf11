//! Where results go. Each delivery is recorded with its own status before it
//! is attempted, with everything needed to retry it without the agent.

pub mod file;

use serde::{Deserialize, Serialize};

/// A delivery rendered and ready to attempt (stored as the row's payload).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Payload {
    File(file::FilePayload),
}

impl Payload {
    pub fn kind(&self) -> &'static str {
        match self {
            Payload::File(_) => "file",
        }
    }

    /// What a person reads in history: the path, the addresses.
    pub fn target(&self) -> String {
        match self {
            Payload::File(f) => f.shown.clone(),
        }
    }

    pub fn deliver(&self) -> Result<String, String> {
        match self {
            Payload::File(f) => file::deliver(f),
        }
    }
}
