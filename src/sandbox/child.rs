//! A prepared sandboxed command, and the running child that ends only when
//! everything it started has ended.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{ExitStatus, Output, Stdio};

use tokio::io::AsyncReadExt;
use tokio::io::unix::AsyncFd;

use super::cgroup::CallCgroup;
use super::registry::CallGuard;

/// A command prepared by [`Sandbox::command`](super::Sandbox::command). What
/// it holds on the host (placeholders, a scratch folder) is released when the
/// spawned child is dropped, or when this is dropped unspawned.
#[derive(Debug)]
pub struct SandboxedCommand {
    pub(super) command: tokio::process::Command,
    pub(super) guard: CallGuard,
    /// Read end of bubblewrap's `--info-fd`.
    pub(super) info: Option<OwnedFd>,
    /// The cgroup that caps the command's processes, if any.
    pub(super) cgroup: Option<CallCgroup>,
}

impl SandboxedCommand {
    /// The command, to set stdio, a process group, `kill_on_drop`.
    pub fn command_mut(&mut self) -> &mut tokio::process::Command {
        &mut self.command
    }

    /// The program and arguments as they will run (bubblewrap's, for `bwrap`).
    pub fn as_std(&self) -> &std::process::Command {
        self.command.as_std()
    }

    /// Starts the command.
    pub fn spawn(self) -> io::Result<SandboxedChild> {
        let SandboxedCommand { mut command, guard, info, cgroup } = self;
        let child = command.spawn()?;
        // Closes this process's copy of the info pipe's write end (held by the
        // pre-exec hook), so the read end sees EOF once bubblewrap is done with it.
        drop(command);
        Ok(SandboxedChild { child, info, init: None, _guard: guard, _cgroup: cgroup })
    }

    /// Runs the command with stdin closed and collects its output. (Under
    /// Landlock a daemon the command left behind keeps the pipes open, and
    /// this waiting, until it exits; the shell tool reads with its own limits.)
    pub async fn output(mut self) -> io::Result<Output> {
        self.command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = self.spawn()?;
        let mut stdout = child.child.stdout.take();
        let mut stderr = child.child.stderr.take();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let read_out = async {
            match stdout.as_mut() {
                Some(s) => s.read_to_end(&mut out).await.map(|_| ()),
                None => Ok(()),
            }
        };
        let read_err = async {
            match stderr.as_mut() {
                Some(s) => s.read_to_end(&mut err).await.map(|_| ()),
                None => Ok(()),
            }
        };
        let (status, r1, r2) = tokio::join!(child.wait(), read_out, read_err);
        r1?;
        r2?;
        Ok(Output { status: status?, stdout: out, stderr: err })
    }
}

/// A running sandboxed command. Keep it until the command has ended: dropping
/// it releases the call's placeholders.
#[derive(Debug)]
pub struct SandboxedChild {
    // Declared first so the child (and `kill_on_drop`) goes before the guard.
    child: tokio::process::Child,
    info: Option<OwnedFd>,
    /// A pidfd of the PID namespace's first process (bwrap only).
    init: Option<AsyncFd<OwnedFd>>,
    _guard: CallGuard,
    /// Removed after the child: by then the processes in it have ended or are ending.
    _cgroup: Option<CallCgroup>,
}

impl SandboxedChild {
    /// The child process (its pid is bubblewrap's for `bwrap`).
    pub fn child_mut(&mut self) -> &mut tokio::process::Child {
        &mut self.child
    }

    /// Waits for the command to end and, for `bwrap`, for every process it
    /// started to be gone. Call it again after a cancelled wait or after
    /// killing the process group (the shell tool's timeout).
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        if let Some(info) = self.info.take() {
            self.init = init_pidfd(info).await;
        }
        let status = self.child.wait().await?;
        if let Some(init) = &self.init {
            // A pidfd turns readable once its process has exited, which for the
            // first process of a PID namespace is after all others are gone.
            let _ = init.readable().await?;
            self.init = None;
        }
        Ok(status)
    }
}

#[derive(serde::Deserialize)]
struct Info {
    #[serde(rename = "child-pid")]
    child_pid: i32,
}

/// Reads bubblewrap's info (the namespace's first process) and opens a pidfd on it.
async fn init_pidfd(info: OwnedFd) -> Option<AsyncFd<OwnedFd>> {
    let reader = tokio::net::unix::pipe::Receiver::from_owned_fd(info).ok()?;
    let mut text = String::new();
    let mut reader = reader;
    reader.read_to_string(&mut text).await.ok()?;
    let pid = serde_json::from_str::<Info>(&text).ok()?.child_pid;
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let fd = i32::try_from(fd).ok().filter(|fd| *fd >= 0)?;
    // SAFETY: the descriptor was just returned by pidfd_open and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: an OwnedFd stays open and keeps its number until the AsyncFd drops it.
    unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }.ok()
}

/// A pipe for `--info-fd`: (read end, write end), both close-on-exec.
pub(super) fn info_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // bubblewrap writes to the write end blocking.
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        let flags = libc::fcntl(write.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(write.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
    }
    Ok((read, write))
}

/// The read end of a pipe that holds `bytes` and then ends (the write end is closed): how
/// bubblewrap reads its `--seccomp` filter. `bytes` must fit in the pipe's buffer (64 KiB).
pub(super) fn filled_pipe(bytes: &[u8]) -> io::Result<OwnedFd> {
    use std::io::Write;
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    std::fs::File::from(write).write_all(bytes)?;
    Ok(read)
}

/// Lets `write` (close-on-exec in this process) pass into the spawned program.
pub(super) fn inherit(cmd: &mut std::process::Command, write: OwnedFd) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the hook only calls fcntl on a descriptor the closure owns.
    unsafe {
        cmd.pre_exec(move || {
            if libc::fcntl(write.as_raw_fd(), libc::F_SETFD, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
