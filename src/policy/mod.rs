//! The security policy: which tools an agent sees, which calls run, which
//! need approval, and where in the file system tools may look.
//!
//! Decisions are ordered (`Allow < Prompt < Forbidden`); when several rules
//! apply, the strictest wins. A refusal is a tool result the model reads,
//! never a crash. The policy is checked before any confirmation: what it
//! forbids is never asked.
//!
//! Tools describe themselves and each call with [`Effect`] and [`CallInfo`]
//! (`call.rs`), the policy's own types: the policy knows nothing of tools.

pub mod beneath;
mod call;
pub mod command;
pub mod confinement;
pub mod injection;
pub mod net;
pub mod paths;
pub mod secrets;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::config::Autonomy;
use command::CommandRefusal;

pub use call::{CallInfo, Effect};
pub use confinement::{Confinement, OpenError, Opened, WriteTarget};
pub use paths::PathError;
pub use secrets::Redactor;

/// The outcome of checking one call.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Decision {
    Allow,
    /// Needs approval: a person's in chat; the routine's grants unattended.
    Prompt,
    Forbidden(String),
}

/// What an unattended routine has approved in advance.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants {
    /// The routine's `agent.tools` list.
    pub tools: Vec<String>,
    /// The routine's `agent.allow_commands`.
    pub commands: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Policy {
    pub autonomy: Autonomy,
    /// Canonical workspace root.
    workspace: PathBuf,
    /// Canonical forbidden paths (those that exist) and their literal forms.
    forbidden: Vec<PathBuf>,
    pub allowed_commands: Vec<String>,
    pub allowed_hosts: Vec<String>,
    /// The engine's own files and `security.protected_paths`, literal and canonical forms:
    /// readable, never written by a tool.
    protected: Vec<PathBuf>,
    /// Left out of listings (the engine's data folder): nothing there is the user's work.
    unlisted: Vec<PathBuf>,
    /// The workspace opened once: what tools read and write goes through it.
    fs: Confinement,
}

/// Each path as written and, where it exists, its canonical form (a path that appears later
/// is still matched as written).
use paths::with_canonical_forms;

impl Policy {
    /// `workspace` must exist; forbidden paths that do not exist are kept as
    /// written (they may appear later).
    pub fn new(autonomy: Autonomy, workspace: &Path, forbidden: &[PathBuf]) -> Result<Self, PathError> {
        let workspace = workspace
            .canonicalize()
            .map_err(|e| PathError::Workspace { path: workspace.to_path_buf(), reason: e.to_string() })?;
        let forbidden = with_canonical_forms(forbidden);
        let fs = Confinement::open(&workspace, forbidden.clone(), Vec::new())?;
        Ok(Policy {
            autonomy,
            workspace,
            forbidden,
            allowed_commands: Vec::new(),
            allowed_hosts: Vec::new(),
            protected: Vec::new(),
            unlisted: Vec::new(),
            fs,
        })
    }

    /// The same policy, refusing writes to `paths` and everything under them.
    pub fn with_protected(mut self, paths: &[PathBuf]) -> Self {
        self.protected = with_canonical_forms(paths);
        self.fs = self.fs.with_protected(self.protected.clone());
        self
    }

    /// The same policy, leaving `paths` and everything under them out of listings.
    pub fn with_unlisted(mut self, paths: &[PathBuf]) -> Self {
        self.unlisted = with_canonical_forms(paths);
        self
    }

    /// The workspace as tools open it: every read, listing and write goes through here.
    pub fn fs(&self) -> &Confinement {
        &self.fs
    }

    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// Whether the agent is shown a tool with this effect at all.
    pub fn exposes(&self, effect: Effect) -> bool {
        !(self.autonomy == Autonomy::ReadOnly && effect == Effect::Mutating)
    }

    /// Decides one call. `grants` is `Some` in routine mode (nobody to ask);
    /// `session` holds approval keys a person approved with `a`.
    pub fn decide(
        &self,
        tool: &str,
        effect: Effect,
        call: &CallInfo,
        grants: Option<&Grants>,
        session: &HashSet<String>,
    ) -> Decision {
        // The command rules apply at every level, `full` included.
        let keys = match self.approval_keys(call) {
            Ok(keys) => keys,
            Err(refusal) => {
                let line = call.command.as_deref().unwrap_or_default();
                return Decision::Forbidden(command::explain(line, &refusal));
            }
        };
        if !self.exposes(effect) {
            return Decision::Forbidden(format!(
                "{tool} changes things and the autonomy level is read_only; use a read-only tool or report what you would do"
            ));
        }
        if effect != Effect::Mutating || self.autonomy == Autonomy::Full {
            return Decision::Allow;
        }
        // Supervised and mutating.
        if let Some(g) = grants {
            let granted = if call.command.is_some() {
                keys.iter().all(|k| g.commands.contains(k))
            } else {
                g.tools.iter().any(|t| t == tool)
            };
            return if granted {
                Decision::Allow
            } else {
                let what = if call.command.is_some() { "agent.allow_commands" } else { "agent.tools" };
                Decision::Forbidden(format!(
                    "{tool} ({}) needs approval and nobody is present to give it; this routine has not pre-approved it ({what}). Do not retry: report that it is needed",
                    keys.join(", ")
                ))
            };
        }
        if keys.iter().all(|k| session.contains(k)) { Decision::Allow } else { Decision::Prompt }
    }

    /// The commands a routine with `grants` may run, by name, as `decide` would allow them:
    /// under `full` every allowlisted command; otherwise those the routine pre-approved that the
    /// allowlist holds (in the routine's order). What the `shell` tool tells the model.
    pub fn runnable_commands(&self, grants: &Grants) -> Vec<String> {
        let allowed: Vec<&str> = self.allowed_commands.iter().map(|c| command::file_name(c)).collect();
        match self.autonomy {
            Autonomy::Full => allowed.into_iter().map(String::from).collect(),
            _ => grants.commands.iter().filter(|c| allowed.contains(&c.as_str())).cloned().collect(),
        }
    }

    /// Whether a routine with `grants` could have any call to `tool` allowed, and so is offered
    /// it: not a tool its autonomy level hides, not a command runner (`by_command`) with no
    /// command it may run, and under `supervised` not a mutating tool it did not pre-approve
    /// (every call to one would be refused: nobody is present to approve it). Offering only what
    /// can run keeps the model's choices to real ones and its prompt short; a call to a tool not
    /// offered is still decided by [`Policy::decide`], and refused.
    pub fn offers(&self, tool: &str, effect: Effect, by_command: bool, grants: &Grants) -> bool {
        if !self.exposes(effect) {
            return false;
        }
        if by_command {
            return !self.runnable_commands(grants).is_empty();
        }
        effect != Effect::Mutating || self.autonomy == Autonomy::Full || grants.tools.iter().any(|t| t == tool)
    }

    /// What an approval of this call covers: every base command of a shell
    /// command line (checked against the command rules), else the tool name.
    pub fn approval_keys(&self, call: &CallInfo) -> Result<Vec<String>, CommandRefusal> {
        match &call.command {
            Some(line) => command::check(line, &self.allowed_commands).map(|p| p.bases()),
            None => Ok(vec![call.approval_key.clone()]),
        }
    }

    /// Resolves a path a tool was given (relative to the workspace), and
    /// refuses it if it leaves the workspace or touches a forbidden path. Where a path would
    /// lead, for looking only (which files a task names): what is read or written is opened
    /// through [`Policy::fs`].
    pub fn resolve_path(&self, input: &str) -> Result<PathBuf, PathError> {
        paths::confine(&self.workspace, &self.forbidden, input)
    }

    /// Where a write of `input` would go, for looking only (see [`Policy::resolve_path`]):
    /// [`Policy::resolve_path`]'s rules, and never one of the
    /// engine's own files, anything inside a `.git` folder (its config and hooks run programs),
    /// or an existing file with other hard links (writing it would change a file elsewhere).
    pub fn resolve_write_path(&self, input: &str) -> Result<PathBuf, PathError> {
        let path = self.resolve_path(input)?;
        if paths::engine_write(&self.workspace, &self.protected, &path) {
            return Err(PathError::Protected { input: input.into() });
        }
        paths::refuse_hard_link(&path, input)?;
        paths::refuse_special(&path, input)?;
        Ok(path)
    }

    /// Whether a path already resolved is forbidden (for listings).
    pub fn is_forbidden(&self, path: &Path) -> bool {
        paths::under_any(&self.forbidden, path)
    }

    /// Whether a path already resolved is left out of listings: forbidden, or unlisted.
    pub fn is_unlisted(&self, path: &Path) -> bool {
        self.is_forbidden(path) || paths::under_any(&self.unlisted, path)
    }

    /// The first of `args`, the arguments of a command run in `cwd`, that
    /// names a forbidden path (see [`paths::argument_path`]).
    pub fn forbidden_argument<'a>(&self, args: &'a [String], cwd: &Path) -> Option<&'a str> {
        args.iter()
            .map(String::as_str)
            .find(|arg| paths::argument_path(arg, cwd).is_some_and(|p| self.is_forbidden(&p)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(key: &str) -> CallInfo {
        CallInfo::new("", key)
    }

    fn policy(a: Autonomy) -> Policy {
        Policy::new(a, Path::new("."), &[]).unwrap()
    }

    #[test]
    fn runnable_commands_are_the_grants_the_allowlist_holds_or_under_full_the_allowlist() {
        let grants = Grants { tools: vec![], commands: vec!["grep".into(), "make".into(), "git".into()] };
        let mut p = policy(Autonomy::Supervised);
        p.allowed_commands = vec!["/usr/bin/git".into(), "grep".into(), "ls".into()];
        assert_eq!(p.runnable_commands(&grants), ["grep", "git"], "make is not allowlisted; routine order");
        p.autonomy = Autonomy::Full;
        assert_eq!(p.runnable_commands(&grants), ["git", "grep", "ls"]);
        // Each one `decide` allows, and nothing it refuses is listed.
        let none = HashSet::new();
        for c in p.runnable_commands(&grants) {
            let info = CallInfo { command: Some(c.clone()), ..CallInfo::new(c.clone(), "shell") };
            assert_eq!(p.decide("shell", Effect::Mutating, &info, Some(&grants), &none), Decision::Allow, "{c}");
        }
    }

    #[test]
    fn a_routine_is_offered_only_tools_a_call_to_which_could_be_allowed() {
        let none = HashSet::new();
        let granted = Grants { tools: vec!["file_write".into()], commands: vec!["grep".into(), "make".into()] };
        let bare = Grants { tools: vec![], commands: vec!["make".into()] };
        let mut p = policy(Autonomy::Supervised);
        p.allowed_commands = vec!["grep".into()];
        assert!(p.offers("file_read", Effect::ReadOnly, false, &bare));
        assert!(p.offers("memory_store", Effect::Memory, false, &bare));
        assert!(p.offers("file_write", Effect::Mutating, false, &granted));
        assert!(!p.offers("file_write", Effect::Mutating, false, &bare), "not pre-approved");
        assert!(p.offers("shell", Effect::Mutating, true, &granted));
        assert!(!p.offers("shell", Effect::Mutating, true, &bare), "make is not allowlisted: nothing can run");
        // What is not offered is refused when called anyway.
        let write = call("file_write");
        assert!(matches!(p.decide("file_write", Effect::Mutating, &write, Some(&bare), &none), Decision::Forbidden(_)));
        let make = CallInfo { command: Some("make".into()), ..CallInfo::new("make", "shell") };
        assert!(matches!(p.decide("shell", Effect::Mutating, &make, Some(&bare), &none), Decision::Forbidden(_)));
        p.autonomy = Autonomy::Full;
        assert!(p.offers("file_write", Effect::Mutating, false, &bare));
        assert!(p.offers("shell", Effect::Mutating, true, &bare), "under full, the allowlist runs");
        p.allowed_commands.clear();
        assert!(!p.offers("shell", Effect::Mutating, true, &granted), "an empty allowlist runs nothing");
        p.autonomy = Autonomy::ReadOnly;
        assert!(!p.offers("file_write", Effect::Mutating, false, &granted));
        assert!(p.offers("file_read", Effect::ReadOnly, false, &granted));
    }

    #[test]
    fn decisions_follow_the_autonomy_level() {
        let none = HashSet::new();
        let p = policy(Autonomy::ReadOnly);
        assert_eq!(p.decide("file_read", Effect::ReadOnly, &call("file_read"), None, &none), Decision::Allow);
        assert!(matches!(p.decide("x", Effect::Mutating, &call("x"), None, &none), Decision::Forbidden(_)));
        let p = policy(Autonomy::Supervised);
        assert_eq!(p.decide("memory_store", Effect::Memory, &call("memory_store"), None, &none), Decision::Allow);
        assert_eq!(p.decide("memory_forget", Effect::Mutating, &call("memory_forget"), None, &none), Decision::Prompt);
        let session: HashSet<String> = ["memory_forget".to_string()].into();
        assert_eq!(
            p.decide("memory_forget", Effect::Mutating, &call("memory_forget"), None, &session),
            Decision::Allow
        );
        let p = policy(Autonomy::Full);
        assert_eq!(p.decide("memory_forget", Effect::Mutating, &call("memory_forget"), None, &none), Decision::Allow);
    }

    #[test]
    fn unattended_routines_need_grants() {
        let none = HashSet::new();
        let mut p = policy(Autonomy::Supervised);
        p.allowed_commands = vec!["git".into(), "ls".into(), "sh".into()];
        let shell = |line: &str| CallInfo { command: Some(line.into()), ..CallInfo::new(line, "shell") };
        let grants = Grants { tools: vec!["memory_forget".into()], commands: vec!["git".into()] };
        assert_eq!(
            p.decide("memory_forget", Effect::Mutating, &call("memory_forget"), Some(&grants), &none),
            Decision::Allow
        );
        assert_eq!(p.decide("shell", Effect::Mutating, &shell("git status"), Some(&grants), &none), Decision::Allow);
        for line in ["ls", "sh -c 'git status'"] {
            match p.decide("shell", Effect::Mutating, &shell(line), Some(&grants), &none) {
                Decision::Forbidden(reason) => assert!(reason.contains("nobody is present"), "{reason}"),
                other => panic!("expected a refusal of {line}, got {other:?}"),
            }
        }
        // The command rules apply before anything else, at every level.
        let full = Policy { autonomy: Autonomy::Full, ..p.clone() };
        assert!(matches!(
            full.decide("shell", Effect::Mutating, &shell("git log; rm -rf ~"), None, &none),
            Decision::Forbidden(_)
        ));
        assert_eq!(p.approval_keys(&shell("sh -c 'git status'")), Ok(vec!["sh".to_string(), "git".to_string()]));
        assert!(Decision::Forbidden(String::new()) > Decision::Prompt && Decision::Prompt > Decision::Allow);
    }
}
