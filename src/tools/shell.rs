//! `shell`: one command, run without a shell, in the workspace.
//!
//! The command line is split into argv (after the policy checked it with the
//! command rules) and executed directly: no shell, so nothing is expanded or
//! chained. The child gets a clean environment (a safe PATH, HOME, LANG and
//! the variables `security.shell_env` names), its own process group, and
//! `agent.shell_timeout`; at the timeout, on cancellation, and after it exits,
//! the whole group is killed, so no grandchild outlives the call.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt};

use super::{Tool, ToolContext, ToolError};
use crate::policy::{CallInfo, Effect, command};

/// Output kept from one command (stdout and stderr together).
const MAX_OUTPUT_BYTES: usize = 256 * 1024;
/// PATH of the child.
const SAFE_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

pub struct Shell;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellArgs {
    /// One command with its arguments, e.g. `git log --oneline -5`. No pipes, `;`, `&&`, `$(...)` or redirections.
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
        let parsed = command::parse(&args.command).map_err(|e| ToolError::Refused(e.to_string()))?;
        if let Some(arg) = ctx.policy.forbidden_argument(parsed.argv.get(1..).unwrap_or_default(), &ctx.workspace) {
            return Err(ToolError::Refused(format!("`{arg}` is a forbidden path (security.forbidden_paths)")));
        }
        let out = run(&parsed.argv, &ctx.workspace, &ctx.shell.env, ctx.shell.timeout).await?;
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
            Some(code) => Err(ToolError::Failed { message: format!("exit code {code}"), partial: Some(text) }),
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
}

impl Default for ShellSettings {
    fn default() -> Self {
        ShellSettings { timeout: Duration::from_secs(120), env: safe_env(None, &[]) }
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

async fn run(argv: &[String], cwd: &Path, env: &[(String, String)], timeout: Duration) -> Result<Output, ToolError> {
    let Some((program, rest)) = argv.split_first() else {
        return Err(ToolError::InvalidArgs("the command is empty".into()));
    };
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(rest)
        .current_dir(cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ToolError::failed(format!("command `{program}` was not found")),
        std::io::ErrorKind::PermissionDenied => ToolError::failed(format!("command `{program}` cannot be executed")),
        _ => ToolError::System(format!("cannot start `{program}`: {e}")),
    })?;
    let pgid = child.id().and_then(|id| i32::try_from(id).ok()).unwrap_or(0);
    let guard = GroupGuard(pgid);

    let buffer = Arc::new(Mutex::new((Vec::new(), false)));
    let readers = [
        child.stdout.take().map(|s| tokio::spawn(collect(s, buffer.clone()))),
        child.stderr.take().map(|s| tokio::spawn(collect(s, buffer.clone()))),
    ];
    let (status, timed_out) = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(status) => (status.ok(), false),
        Err(_) => {
            kill_group(pgid);
            (child.wait().await.ok(), true)
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
