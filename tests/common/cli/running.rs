//! A command left running (a daemon, a chat session, a run to interrupt): its output is read
//! as it comes, it is driven through stdin and signals, and it is killed when dropped.

use std::process::ExitStatus;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin};

use super::Outcome;
use super::capture::Capture;
use crate::common::wait::{self, DEADLINE};

/// How long a process whose exit was awaited may take to close its output.
const OUTPUT_END: Duration = Duration::from_secs(5);

/// A process started by [`super::Cmd::spawn`]; dropping it kills it (SIGKILL).
pub struct Running {
    pub(super) command: String,
    pub(super) child: Child,
    pub(super) stdin: Option<ChildStdin>,
    pub(super) stdout: Capture,
    pub(super) stderr: Capture,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

impl Running {
    /// The process id.
    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id().expect("the process was already reaped")).unwrap()
    }

    /// Sends signal `sig` (e.g. `libc::SIGTERM`).
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on the pid of our own child, which is not reaped yet.
        let r = unsafe { libc::kill(self.pid(), sig) };
        assert_eq!(r, 0, "kill({}, {sig}) failed", self.pid());
    }

    /// Writes `input` to stdin, which stays open. Only for a command given [`super::Cmd::stdin`].
    pub async fn write_stdin(&mut self, input: &str) {
        let stdin = self.stdin.as_mut().unwrap_or_else(|| panic!("`{}` was started without stdin", self.command));
        stdin.write_all(input.as_bytes()).await.unwrap();
    }

    /// The whole stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.text()
    }

    /// Waits up to [`DEADLINE`] for a stderr line that satisfies `pred` (also one already
    /// printed) and returns it; `what` names it in the panic message.
    pub async fn wait_for_stderr(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        match tokio::time::timeout(DEADLINE, self.stderr.line(pred)).await {
            Ok(Some(line)) => line,
            Ok(None) => panic!("the stderr of `{}` ended before {what}:\n{}", self.command, self.stderr()),
            Err(_) => panic!("no {what} on the stderr of `{}` within {DEADLINE:?}:\n{}", self.command, self.stderr()),
        }
    }

    /// Waits up to [`DEADLINE`] until `GET url` answers `status`.
    pub async fn wait_for_http(&self, url: &str, status: u16) {
        let http = reqwest::Client::builder().timeout(Duration::from_secs(2)).build().unwrap();
        let answered = wait::poll(DEADLINE, Duration::from_millis(20), async || {
            let response = http.get(url).send().await.ok()?;
            (response.status().as_u16() == status).then_some(())
        })
        .await;
        if answered.is_none() {
            panic!(
                "GET {url} did not answer {status} within {DEADLINE:?}; stderr of `{}`:\n{}",
                self.command,
                self.stderr()
            );
        }
    }

    /// SIGKILL: the process dies at once, leaving whatever it was doing; returns how it ended.
    pub async fn kill(&mut self) -> ExitStatus {
        self.child.start_kill().unwrap();
        self.child.wait().await.unwrap()
    }

    /// Waits for the process to end, for at most `within`, and returns its exit code (-1
    /// when a signal ended it); the output it wrote last is read too.
    pub async fn exit_code(&mut self, within: Duration) -> i32 {
        let status = match tokio::time::timeout(within, self.child.wait()).await {
            Ok(status) => status.unwrap(),
            Err(_) => panic!("`{}` did not exit within {within:?}; stderr:\n{}", self.command, self.stderr()),
        };
        let _ =
            tokio::time::timeout(OUTPUT_END, async { tokio::join!(self.stdout.ended(), self.stderr.ended()) }).await;
        status.code().unwrap_or(-1)
    }

    /// Closes stdin, waits for the process to end (for at most `within`), and returns what it
    /// did, with all of its output.
    pub async fn finish(mut self, within: Duration) -> Outcome {
        drop(self.stdin.take());
        let code = self.exit_code(within).await;
        Outcome { command: self.command.clone(), code, stdout: self.stdout.text(), stderr: self.stderr.text() }
    }
}
