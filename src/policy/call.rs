//! What the policy is asked to decide on: the effect a tool has and the facts
//! of one call. Tools describe themselves with these types; the policy never
//! needs to know the tools.

/// What a tool may change, which decides where the policy lets it run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Effect {
    /// Reads only.
    ReadOnly,
    /// Writes the agent's own memory, nothing in the workspace.
    Memory,
    /// Changes the workspace or the world, or destroys stored knowledge.
    Mutating,
}

/// What the policy and the status lines need to know about one call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CallInfo {
    /// Short description for status lines, e.g. the path read.
    pub summary: String,
    /// What an approval covers: the tool name, or for the shell the base
    /// command (the policy fills that in from `command`).
    pub approval_key: String,
    /// A shell command line, checked by the command rules of the policy.
    pub command: Option<String>,
    /// The effect of this particular call when it differs from the tool's
    /// (an HTTP GET reads, a POST changes the world).
    pub effect: Option<Effect>,
}

impl CallInfo {
    pub fn new(summary: impl Into<String>, approval_key: impl Into<String>) -> Self {
        CallInfo { summary: summary.into(), approval_key: approval_key.into(), ..Default::default() }
    }
}
