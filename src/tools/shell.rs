//! `shell`: one command, run without a shell, in the workspace, inside the OS sandbox.
//!
//! The command line is split into argv (after the policy checked it with the
//! command rules) and executed directly: no shell, so nothing is chained, and the
//! only expansion is that of file globs, done by the engine inside the workspace
//! (`glob.rs`). It runs inside the sandbox of `security.sandbox` (SPEC §8): it
//! writes only the workspace, never the engine's own files, sees no home
//! folder, forbidden path or the engine's data, and has no network unless
//! `security.shell_network`. The child gets a clean environment (a safe PATH,
//! HOME, LANG and the variables `security.shell_env` names), its own process
//! group, and `agent.shell_timeout`; at the timeout, on cancellation, and after
//! it exits, everything it started is killed, so nothing outlives the call.
//! Where no sandbox works and `security.sandbox` is not `none`, every call is
//! refused with the fix.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt};

use super::{Tool, ToolContext, ToolError};
use crate::policy::{CallInfo, Effect, command};
use crate::sandbox::{Sandbox, SandboxPolicy};

/// Output kept from one command (stdout and stderr together).
const MAX_OUTPUT_BYTES: usize = 256 * 1024;
/// PATH of the child.
const SAFE_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

pub struct Shell;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellArgs {
    /// One command with its arguments, e.g. `ls -l docs`. No pipes, `;`, `&&`, `$(...)` or redirections.
    pub command: String,
}

#[async_trait]
impl Tool for Shell {
    const NAME: &'static str = "shell";
    type Args = ShellArgs;

    fn description(&self) -> &'static str {
        "Run one allowed command in the workspace and get its output and exit code."
    }

    fn effect(&self) -> Effect {
        Effect::Mutating
    }

    fn info(&self, args: &ShellArgs) -> CallInfo {
        CallInfo { command: Some(args.command.clone()), ..CallInfo::new(args.command.clone(), Self::NAME) }
    }

    async fn call(&self, args: ShellArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let parsed =
            command::parse(&args.command).map_err(|e| ToolError::Refused(command::explain(&args.command, &e)))?;
        let hidden: &[PathBuf] = match &ctx.shell.sandbox {
            ShellSandbox::Ready { hidden, .. } => hidden,
            ShellSandbox::Unavailable(_) => &[],
        };
        // As in the sandbox, a hidden folder that holds the workspace (a hidden home) does not
        // hide the workspace; one inside it (the engine's data folder) does.
        let root = ctx.workspace.canonicalize().unwrap_or_else(|_| ctx.workspace.clone());
        let hidden: Vec<PathBuf> = hidden
            .iter()
            .map(|h| h.canonicalize().unwrap_or_else(|_| h.clone()))
            .filter(|h| !root.starts_with(h))
            .collect();
        let out_of_sight = |p: &Path| ctx.policy.is_forbidden(p) || hidden.iter().any(|h| p.starts_with(h));
        let argv = super::glob::expand(&args.command, &parsed.argv, &ctx.workspace, &out_of_sight);
        if let Some(arg) = ctx.policy.forbidden_argument(argv.get(1..).unwrap_or_default(), &ctx.workspace) {
            return Err(ToolError::Refused(format!("`{arg}` is a forbidden path (security.forbidden_paths)")));
        }
        let out = run(&argv, &ctx.workspace, &ctx.shell, true).await?;
        let mut text = String::from_utf8_lossy(&out.bytes).into_owned();
        if out.truncated {
            text.push_str(&format!("\n[output cut at {} KB]", MAX_OUTPUT_BYTES / 1024));
        }
        if out.timed_out {
            return Err(ToolError::Failed {
                message: format!(
                    "timed out after {}s; the command and every process it started were killed",
                    ctx.shell.timeout.as_secs()
                ),
                partial: Some(text),
            });
        }
        match out.code {
            Some(0) => Ok(if text.trim().is_empty() { "(no output, exit code 0)".into() } else { text }),
            Some(code) => {
                let allowed = |p: &Path| !ctx.policy.is_forbidden(p);
                let mut message = format!("exit code {code}");
                for note in [
                    super::exit_status::meaning(&parsed.argv, code),
                    super::split_format::hint(&parsed.argv),
                    super::near::command_hint(&ctx.workspace, &text, &allowed),
                ]
                .into_iter()
                .flatten()
                {
                    message.push_str("; ");
                    message.push_str(&note);
                }
                Err(ToolError::Failed { message, partial: Some(text) })
            }
            None => Err(ToolError::Failed {
                message: format!("killed by signal {}", out.signal.unwrap_or(0)),
                partial: Some(text),
            }),
        }
    }
}

/// How the shell tool runs commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellSettings {
    pub timeout: Duration,
    /// The child's whole environment.
    pub env: Vec<(String, String)>,
    /// Where commands run.
    pub sandbox: ShellSandbox,
    /// How many processes and threads a command may have at a time (`security.shell_max_processes`).
    pub max_processes: u32,
}

/// The sandbox of shell commands, decided once per engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShellSandbox {
    /// Commands run with `sandbox` (which may be `none` by choice, and is probed when the first
    /// command needs it): the workspace writable except `read_only`, `hidden` out of sight, the
    /// network only with `network`.
    Ready { sandbox: Sandbox, read_only: Vec<PathBuf>, hidden: Vec<PathBuf>, network: bool },
    /// No sandbox works here and `security.sandbox` asks for one: every call is refused
    /// with this reason, which names the fix.
    Unavailable(String),
}

impl Default for ShellSettings {
    /// No sandbox (unit tests of the tool; engines build theirs from the config).
    fn default() -> Self {
        ShellSettings {
            timeout: Duration::from_secs(120),
            env: safe_env(None, &[]),
            sandbox: ShellSandbox::Ready {
                sandbox: Sandbox::none(),
                read_only: Vec::new(),
                hidden: Vec::new(),
                network: true,
            },
            max_processes: crate::config::DEFAULT_SHELL_MAX_PROCESSES.get(),
        }
    }
}

/// A safe PATH, HOME, LANG, plus `extra` (names and values).
pub fn safe_env(home: Option<&str>, extra: &[(String, String)]) -> Vec<(String, String)> {
    let mut env = vec![
        ("PATH".to_string(), SAFE_PATH.to_string()),
        ("HOME".to_string(), home.unwrap_or("/nonexistent").to_string()),
        ("LANG".to_string(), "C.UTF-8".to_string()),
    ];
    env.extend(extra.iter().cloned());
    env
}

struct Output {
    bytes: Vec<u8>,
    truncated: bool,
    code: Option<i32>,
    signal: Option<i32>,
    timed_out: bool,
}

/// Kills a process group when dropped (on timeout, cancellation or exit).
struct GroupGuard(i32);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.0);
    }
}

fn kill_group(pgid: i32) {
    if pgid > 0 {
        // SAFETY: killpg only sends a signal; the group id is the one we created for the child.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

/// Runs `argv` in `cwd` under the shell's sandbox; `processes`: whether it may start others.
async fn run(argv: &[String], cwd: &Path, settings: &ShellSettings, processes: bool) -> Result<Output, ToolError> {
    let Some(program) = argv.first() else {
        return Err(ToolError::InvalidArgs("the command is empty".into()));
    };
    let unavailable = |reason: &str| {
        ToolError::Refused(format!(
            "shell commands run only inside an OS sandbox and none works on this machine: {reason}"
        ))
    };
    let (sandbox, read_only, hidden, network) = match &settings.sandbox {
        ShellSandbox::Ready { sandbox, read_only, hidden, network } => (sandbox, read_only, hidden, *network),
        ShellSandbox::Unavailable(reason) => return Err(unavailable(reason)),
    };
    // The first command of the process probes the sandbox (`Sandbox::when_needed`).
    let sandbox = sandbox.ready().map_err(|e| unavailable(&e.to_string()))?;
    let policy = SandboxPolicy {
        workspace: cwd.to_path_buf(),
        writable: vec![cwd.to_path_buf()],
        read_only: read_only.clone(),
        hidden: hidden.clone(),
        network,
        processes,
        max_processes: Some(settings.max_processes),
        env: settings.env.clone(),
        cwd: cwd.to_path_buf(),
    };
    let mut prepared = sandbox
        .command(&policy, argv)
        .map_err(|e| ToolError::System(format!("cannot prepare the sandbox for `{program}`: {e}")))?;
    prepared
        .command_mut()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut sandboxed = prepared.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ToolError::failed(format!("command `{program}` was not found")),
        std::io::ErrorKind::PermissionDenied => ToolError::failed(format!("command `{program}` cannot be executed")),
        _ => ToolError::System(format!("cannot start `{program}`: {e}")),
    })?;
    let child = sandboxed.child_mut();
    let pgid = child.id().and_then(|id| i32::try_from(id).ok()).unwrap_or(0);
    let guard = GroupGuard(pgid);

    let buffer = Arc::new(Mutex::new((Vec::new(), false)));
    let readers = [
        child.stdout.take().map(|s| tokio::spawn(collect(s, buffer.clone()))),
        child.stderr.take().map(|s| tokio::spawn(collect(s, buffer.clone()))),
    ];
    let (status, timed_out) = match tokio::time::timeout(settings.timeout, sandboxed.wait()).await {
        Ok(status) => (status.ok(), false),
        Err(_) => {
            kill_group(pgid);
            (sandboxed.wait().await.ok(), true)
        }
    };
    // Anything the command left running goes with it; that also closes the pipes.
    drop(guard);
    for reader in readers.into_iter().flatten() {
        let _ = tokio::time::timeout(Duration::from_secs(2), reader).await;
    }
    let (bytes, truncated) = buffer.lock().map(|b| b.clone()).unwrap_or_default();
    use std::os::unix::process::ExitStatusExt;
    Ok(Output {
        bytes,
        truncated,
        code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        timed_out,
    })
}

/// What a contained run printed (stdout and stderr together, capped) and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contained {
    pub output: String,
    /// The exit code; `None` when a signal or the timeout ended it.
    pub code: Option<i32>,
    pub timed_out: bool,
}

/// Runs `argv` (an absolute program) for the engine itself, not for the model's `shell` tool:
/// inside the shell's sandbox, which must be a real one (bubblewrap or Landlock, never `none`),
/// writing only `dir` (also its working directory), with no network, no other process or
/// thread (`fork` and `clone` fail) and exactly `env`, killed at `timeout`. The code check of a silent reply runs the model's
/// code this way (`agent/code_check.rs`). `None` when no real sandbox is set up here.
pub(crate) async fn run_contained(
    argv: &[String],
    dir: &Path,
    env: Vec<(String, String)>,
    timeout: Duration,
    settings: &ShellSettings,
) -> Option<Result<Contained, ToolError>> {
    let ShellSandbox::Ready { sandbox, read_only, hidden, .. } = &settings.sandbox else { return None };
    if sandbox.kind() == crate::sandbox::SandboxKind::None {
        return None;
    }
    let contained = ShellSettings {
        timeout,
        env,
        sandbox: ShellSandbox::Ready {
            sandbox: sandbox.clone(),
            read_only: read_only.clone(),
            hidden: hidden.clone(),
            network: false,
        },
        max_processes: settings.max_processes,
    };
    Some(run(argv, dir, &contained, false).await.map(|o| Contained {
        output: String::from_utf8_lossy(&o.bytes).into_owned(),
        code: o.code,
        timed_out: o.timed_out,
    }))
}

async fn collect(mut pipe: impl AsyncRead + Unpin, buffer: Arc<Mutex<(Vec<u8>, bool)>>) {
    let mut chunk = [0u8; 8192];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let Ok(mut b) = buffer.lock() else { break };
                let room = MAX_OUTPUT_BYTES.saturating_sub(b.0.len());
                if n > room {
                    b.1 = true;
                }
                let take = n.min(room);
                b.0.extend_from_slice(&chunk[..take]);
                // Keep reading past the cap so the child never blocks on a full pipe.
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Autonomy;
    use crate::policy::Policy;

    #[tokio::test]
    async fn a_search_that_matched_nothing_says_so_and_how_to_ignore_case() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("app.log"), "06:17 ERROR mail relay refused connection\n").unwrap();
        let ctx = ToolContext::for_test(Policy::new(Autonomy::Full, dir.path(), &[]).unwrap());
        let args = ShellArgs { command: "grep -n error app.log".into() };
        let Err(ToolError::Failed { message, .. }) = Shell.call(args, &ctx).await else { panic!("grep matched") };
        assert_eq!(message, "exit code 1; no line matched (grep matches case-sensitively; -i ignores case)");
        let found = Shell.call(ShellArgs { command: "grep -in error app.log".into() }, &ctx).await.unwrap();
        assert_eq!(found, "1:06:17 ERROR mail relay refused connection\n");
        // A missing file is grep's error (2), not an empty search.
        let args = ShellArgs { command: "grep -n error none.log".into() };
        let Err(ToolError::Failed { message, .. }) = Shell.call(args, &ctx).await else { panic!("grep found a file") };
        assert!(message.starts_with("exit code 2") && !message.contains("no line matched"), "{message}");
    }

    #[tokio::test]
    async fn without_a_working_sandbox_every_call_is_refused_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let mut ctx = ToolContext::for_test(Policy::new(Autonomy::Full, dir.path(), &[]).unwrap());
        ctx.shell.sandbox = ShellSandbox::Unavailable("help: install bubblewrap: `apt-get install bubblewrap`".into());
        let args = ShellArgs { command: "touch made.txt".into() };
        let Err(ToolError::Refused(reason)) = Shell.call(args, &ctx).await else { panic!("the call was not refused") };
        assert!(reason.contains("apt-get install bubblewrap"), "{reason}");
        assert!(!dir.path().join("made.txt").exists(), "the command ran");
    }
}
