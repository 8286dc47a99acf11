//! What can go wrong when a sandbox is chosen or a command is prepared for it.
//!
//! Every message names what to do about it: an unavailable mechanism names the
//! package to install or the setting to change.

use std::io;
use std::path::PathBuf;

use super::SandboxKind;

/// How to get bubblewrap, or do without a sandbox.
pub const BWRAP_FIX: &str = "install bubblewrap: `apt-get install bubblewrap`; or set `security.sandbox: none`";

/// How to get Landlock, or do without a sandbox.
pub const LANDLOCK_FIX: &str = "use Linux 6.2 or later with Landlock enabled (`lsm=landlock,...`), \
     or install bubblewrap: `apt-get install bubblewrap`; or set `security.sandbox: none`";

/// An error of the sandbox layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The mechanism asked for by name does not work on this machine.
    #[error("the `{kind}` sandbox is not available: {reason}\n  help: {fix}")]
    Unavailable { kind: SandboxKind, reason: String, fix: &'static str },
    /// `auto` found no mechanism that works.
    #[error("no sandbox is available for shell commands (bwrap: {bwrap}; landlock: {landlock})\n  help: {BWRAP_FIX}")]
    NoneAvailable { bwrap: String, landlock: String },
    /// A path of the policy is not absolute.
    #[error("sandbox path `{}` is not absolute", path.display())]
    RelativePath { path: PathBuf },
    /// A writable root or the working directory does not exist.
    #[error("sandbox path `{}` does not exist", path.display())]
    MissingPath { path: PathBuf },
    /// A path that must stay read-only is reached through a symlink inside a
    /// writable root: the link could be replaced, so the path cannot be kept.
    #[error(
        "`{}` must stay read-only but `{}` is a symlink inside a writable folder, which a command could replace\n  \
         help: replace the symlink with the real file or folder, or move it out of the workspace",
        path.display(),
        link.display()
    )]
    SymlinkedCarveOut { path: PathBuf, link: PathBuf },
    /// The command line is empty.
    #[error("the command is empty")]
    EmptyCommand,
    /// A file-system step of preparing the sandbox failed.
    #[error("cannot prepare the sandbox: {what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    /// The Landlock ruleset could not be built.
    #[error("cannot build the Landlock ruleset: {0}")]
    Landlock(#[from] landlock::RulesetError),
    /// The seccomp filter could not be built.
    #[error("cannot build the seccomp filter: {0}")]
    Seccomp(#[from] seccompiler::BackendError),
}

impl SandboxError {
    /// Wraps an I/O error with what was being done.
    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> Self {
        SandboxError::Io { what: what.into(), source }
    }
}
