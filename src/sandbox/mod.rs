//! The OS sandbox of shell commands (SPEC §8 "Sandbox").
//!
//! A [`SandboxPolicy`] says what one command may do: write its writable roots
//! except the read-only carve-outs, not see the hidden paths, use the network
//! or not, with exactly the given environment. [`Sandbox::detect`] picks the
//! mechanism that works on this machine (`security.sandbox`, see
//! [`SandboxMode`]); [`Sandbox::command`] turns the policy into that
//! mechanism in one place and hands back a command ready to spawn.
//!
//! - `bwrap` (bubblewrap): mount, PID and network namespaces; `bwrap.rs`
//!   describes the view it builds. Every guarantee of SPEC §8 holds.
//! - `landlock`: the fallback where bubblewrap cannot run; Landlock rules and a
//!   seccomp filter applied to the command itself. Weaker: no PID namespace
//!   (processes that leave the process group survive the call, the engine's
//!   process is visible though its environment is not readable), no private
//!   `/tmp` (a scratch `TMPDIR` instead), and folders that hold a carve-out
//!   cannot get new entries. docs/ARCHITECTURE.md has the full list.
//! - `none`: the plain command with the clean environment.
//!
//! This module sits at the bottom of the crate: it imports nothing else from it.

mod bwrap;
mod cgroup;
mod child;
mod error;
mod landlock;
mod policy;
mod probe;
mod registry;
mod seccomp;
mod view;

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use child::{SandboxedChild, SandboxedCommand};
pub use error::{BWRAP_FIX, LANDLOCK_FIX, SandboxError};
pub use policy::SandboxPolicy;
use registry::{CallGuard, Registry};
use std::os::fd::{AsRawFd, OwnedFd};

/// The `security.sandbox` setting: which mechanism runs shell commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// The best mechanism that works here: bubblewrap, then Landlock.
    #[default]
    Auto,
    /// bubblewrap; an error if it does not work here.
    Bwrap,
    /// Landlock with a seccomp network filter; an error if it does not work here.
    Landlock,
    /// No sandbox (every run warns).
    None,
}

impl SandboxMode {
    /// Every value, as written in the config.
    pub const NAMES: [&'static str; 4] = ["auto", "bwrap", "landlock", "none"];
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SandboxMode::Auto => "auto",
            SandboxMode::Bwrap => "bwrap",
            SandboxMode::Landlock => "landlock",
            SandboxMode::None => "none",
        })
    }
}

/// An unknown `security.sandbox` value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown sandbox `{0}`; expected one of: auto, bwrap, landlock, none")]
pub struct UnknownSandboxMode(pub String);

impl FromStr for SandboxMode {
    type Err = UnknownSandboxMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(SandboxMode::Auto),
            "bwrap" => Ok(SandboxMode::Bwrap),
            "landlock" => Ok(SandboxMode::Landlock),
            "none" => Ok(SandboxMode::None),
            other => Err(UnknownSandboxMode(other.to_string())),
        }
    }
}

/// The mechanism a [`Sandbox`] uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum SandboxKind {
    Bwrap,
    Landlock,
    None,
}

impl fmt::Display for SandboxKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SandboxKind::Bwrap => "bwrap",
            SandboxKind::Landlock => "landlock",
            SandboxKind::None => "none",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Mechanism {
    Bwrap {
        program: PathBuf,
    },
    Landlock {
        abi: i32,
    },
    None,
    /// `security.sandbox` as set, not probed yet.
    Deferred(SandboxMode),
}

/// A working sandbox mechanism.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    mechanism: Mechanism,
}

impl Sandbox {
    /// The mechanism for `mode`. `auto` and explicit modes probe once per
    /// process; an explicit mode that does not work here, or `auto` when
    /// nothing does, is an error that names the fix.
    pub fn detect(mode: SandboxMode) -> Result<Sandbox, SandboxError> {
        let bwrap = || probe::bwrap().map(|program| Sandbox { mechanism: Mechanism::Bwrap { program } });
        let landlock = || probe::landlock().map(|abi| Sandbox { mechanism: Mechanism::Landlock { abi } });
        match mode {
            SandboxMode::None => Ok(Sandbox::none()),
            SandboxMode::Bwrap => {
                bwrap().map_err(|reason| SandboxError::Unavailable { kind: SandboxKind::Bwrap, reason, fix: BWRAP_FIX })
            }
            SandboxMode::Landlock => landlock().map_err(|reason| SandboxError::Unavailable {
                kind: SandboxKind::Landlock,
                reason,
                fix: LANDLOCK_FIX,
            }),
            SandboxMode::Auto => {
                bwrap().or_else(|bwrap| landlock().map_err(|landlock| SandboxError::NoneAvailable { bwrap, landlock }))
            }
        }
    }

    /// The mechanism for `mode`, probed the first time a command needs it (the
    /// answer is kept for the process), so a run that starts no command never
    /// runs the probe. Its commands fail as [`Sandbox::detect`] would where
    /// nothing works.
    pub fn when_needed(mode: SandboxMode) -> Sandbox {
        match mode {
            SandboxMode::None => Sandbox::none(),
            mode => Sandbox { mechanism: Mechanism::Deferred(mode) },
        }
    }

    /// This sandbox with its mechanism known: a deferred one is probed now.
    pub fn ready(&self) -> Result<Sandbox, SandboxError> {
        match self.mechanism {
            Mechanism::Deferred(mode) => Sandbox::detect(mode),
            _ => Ok(self.clone()),
        }
    }

    /// No sandbox: the plain command with the policy's environment and working directory.
    pub fn none() -> Sandbox {
        Sandbox { mechanism: Mechanism::None }
    }

    /// The mechanism in use. A deferred sandbox is probed first; one for which
    /// nothing works here is `None` (its commands fail with the reason).
    pub fn kind(&self) -> SandboxKind {
        match &self.mechanism {
            Mechanism::Bwrap { .. } => SandboxKind::Bwrap,
            Mechanism::Landlock { .. } => SandboxKind::Landlock,
            Mechanism::None => SandboxKind::None,
            Mechanism::Deferred(_) => self.ready().map_or(SandboxKind::None, |s| s.kind()),
        }
    }

    /// `argv` prepared to run under `policy`: the only place where a policy
    /// becomes OS mechanism.
    ///
    /// Refuses an empty command, relative or missing roots, and carve-outs
    /// reached through a symlink inside a writable root. The command gets
    /// exactly `policy.env` and starts in `policy.cwd`; set its stdio, process
    /// group and `kill_on_drop` with [`SandboxedCommand::command_mut`].
    pub fn command(&self, policy: &SandboxPolicy, argv: &[String]) -> Result<SandboxedCommand, SandboxError> {
        let Some((program, args)) = argv.split_first() else {
            return Err(SandboxError::EmptyCommand);
        };
        let mut guard = CallGuard::default();
        let mut info = None;
        let env = policy.env.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        let mut command = match &self.mechanism {
            Mechanism::Deferred(_) => return self.ready()?.command(policy, argv),
            Mechanism::None => {
                let resolved = policy::resolve(&SandboxPolicy { read_only: Vec::new(), ..policy.clone() })?;
                let mut cmd = std::process::Command::new(program);
                cmd.args(args).current_dir(&resolved.cwd).env_clear().envs(env);
                cmd
            }
            Mechanism::Bwrap { program: bwrap } => {
                let (mut cmd, read) = bwrap_command(bwrap, policy, argv, &mut guard)?;
                cmd.env_clear().envs(env);
                info = Some(read);
                cmd
            }
            Mechanism::Landlock { abi } => {
                let registry = Registry::open()?;
                registry.lock()?.sweep();
                let resolved = policy::resolve(policy)?;
                let scratch = registry.scratch(&mut guard)?;
                let restriction = landlock::prepare(&resolved, *abi, policy.network, policy.processes, Some(&scratch))?;
                let mut cmd = std::process::Command::new(program);
                cmd.args(args).current_dir(&resolved.cwd).env_clear().envs(env).env("TMPDIR", &scratch);
                landlock::install(&mut cmd, restriction);
                cmd
            }
        };
        let cgroup = match policy.max_processes {
            Some(max) => cgroup::limit(&mut command, max)
                .map_err(|e| SandboxError::io("cannot make the cgroup that caps the command's processes", e))?,
            None => None,
        };
        Ok(SandboxedCommand { command: tokio::process::Command::from(command), guard, info, cgroup })
    }
}

/// bubblewrap (`program`) around `argv` under `policy`, its placeholders made and held by
/// `guard`, and the read end of its `--info-fd`.
fn bwrap_command(
    program: &std::path::Path,
    policy: &SandboxPolicy,
    argv: &[String],
    guard: &mut CallGuard,
) -> Result<(std::process::Command, OwnedFd), SandboxError> {
    let registry = Registry::open()?;
    let mut resolved = {
        let lock = registry.lock()?;
        lock.sweep();
        let resolved = policy::resolve_with(policy, &|path| lock.is_placeholder(path))?;
        for step in &resolved.steps {
            match step {
                policy::Step::Missing(path) => lock.create(path, false, guard)?,
                policy::Step::MissingFolder(path) => lock.create(path, true, guard)?,
                policy::Step::Protect(path) if lock.is_placeholder(path) => lock.rely_on(path, guard)?,
                _ => {}
            }
        }
        resolved
    };
    // The registry must stay out of reach if a writable root holds it.
    if resolved.writable.iter().any(|root| registry.dir().starts_with(root)) {
        resolved.hidden.push(registry.dir().to_path_buf());
    }
    let (read, write) = child::info_pipe().map_err(|e| SandboxError::io("cannot make a pipe", e))?;
    let info_fd = write.as_raw_fd();
    // The network is the namespace's and the host's sockets are not in the view; the filter
    // is only for processes.
    let filter = match seccomp::filter(true, true, policy.processes)? {
        Some(program) => Some(
            child::filled_pipe(&seccomp::bytes(&program))
                .map_err(|e| SandboxError::io("cannot pass the seccomp filter", e))?,
        ),
        None => None,
    };
    let fds = bwrap::Fds { info: Some(info_fd), seccomp: filter.as_ref().map(|f| f.as_raw_fd()) };
    let (file, dir) = (registry.empty_file(), registry.empty_dir());
    let empty = bwrap::Empty { file: &file, dir: &dir };
    let mut cmd = std::process::Command::new(program);
    cmd.args(bwrap::args(&resolved, policy.network, empty, fds, argv)).current_dir("/");
    child::inherit(&mut cmd, write);
    if let Some(filter) = filter {
        child::inherit(&mut cmd, filter);
    }
    Ok((cmd, read))
}

#[cfg(test)]
mod tests;
