//! The `routines` binary, run the way a user runs it: [`Routines`] is a project folder in a
//! tempdir (routines.yaml, routines/, templates/, whatever a test writes), [`Cmd`] one
//! command in it, [`Outcome`] what a finished command did, [`Running`] one left running.
//!
//! A command's environment holds PATH, HOME (the project folder) and what the test sets,
//! nothing else: no key or setting of the machine running the tests leaks in.
//!
//! ```ignore
//! let p = Routines::offline();
//! p.write("routines/daily.yaml", "prompt: hi\n");
//! p.run(["validate"]).success().stderr_is("ok: the config and 1 routine are valid\n");
//! ```

mod capture;
mod outcome;
mod running;

use std::ffi::{OsStr, OsString};
use std::os::fd::FromRawFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncWriteExt;

use super::mock_llm::MockLlm;
use super::write_file;
use capture::Capture;
pub use outcome::Outcome;
pub use running::Running;

/// How long [`Cmd::run`] and [`Cmd::run_async`] let a command take before failing the test.
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// The variable [`Routines::project`] names as `provider.api_key_env`, and its value.
pub const TEST_KEY: (&str, &str) = ("TEST_KEY", "sk-routine-secret");

/// A project folder in a tempdir, removed when dropped, and the environment of every
/// command run in it.
pub struct Routines {
    dir: tempfile::TempDir,
    env: Vec<(String, String)>,
}

impl Routines {
    /// An empty project folder.
    pub fn new() -> Routines {
        Routines { dir: tempfile::tempdir().unwrap(), env: Vec::new() }
    }

    /// A project in zone Asia/Shanghai whose provider is `base_url` (model `mock-model`, the
    /// key in [`TEST_KEY`], no retries), with `extra` appended to routines.yaml (top-level
    /// keys other than `timezone` and `provider`), and empty routines/ and templates/.
    pub fn project(base_url: &str, extra: &str) -> Routines {
        let p = Routines::new().env(TEST_KEY.0, TEST_KEY.1).config(&format!(
            "timezone: Asia/Shanghai\nprovider:\n  base_url: {base_url}\n  model: mock-model\n  api_key_env: {}\n  max_retries: 0\n{extra}",
            TEST_KEY.0
        ));
        std::fs::create_dir_all(p.path().join("routines")).unwrap();
        std::fs::create_dir_all(p.path().join("templates")).unwrap();
        p
    }

    /// A [`Routines::project`] whose model is never called (nothing listens on its URL).
    pub fn offline() -> Routines {
        Routines::project("http://127.0.0.1:9/v1", "")
    }

    /// Writes routines.yaml.
    pub fn config(self, yaml: &str) -> Routines {
        self.write("routines.yaml", yaml);
        self
    }

    /// Sets a variable for every command of the project.
    pub fn env(mut self, name: &str, value: &str) -> Routines {
        self.env.push((name.to_string(), value.to_string()));
        self
    }

    /// Points every command at `mock` through `ROUTINES_BASE_URL`.
    pub fn mock(self, mock: &MockLlm) -> Routines {
        self.env("ROUTINES_BASE_URL", &mock.base_url())
    }

    /// The project folder.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `text` to the project file `rel`, creating its folders.
    pub fn write(&self, rel: &str, text: &str) -> &Routines {
        write_file(self.path(), rel, text);
        self
    }

    /// The project file `rel`.
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }

    /// `routines ARGS...` in the project, to be adjusted, then run or spawned.
    pub fn command<S: AsRef<OsStr>>(&self, args: impl IntoIterator<Item = S>) -> Cmd<'_> {
        Cmd::new(self, PathBuf::from(env!("CARGO_BIN_EXE_routines"))).args(args)
    }

    /// Another program (`unshare`, a shell) in the project, with the project's environment;
    /// [`Routines::binary`] names the routines binary for its arguments.
    pub fn program(&self, program: &str) -> Cmd<'_> {
        Cmd::new(self, PathBuf::from(program))
    }

    /// The path of the routines binary under test.
    pub fn binary() -> &'static str {
        env!("CARGO_BIN_EXE_routines")
    }

    /// The program `name` of examples/ (which `cargo test` builds) in the project.
    pub fn example(&self, name: &str) -> Cmd<'_> {
        let deps = std::env::current_exe().unwrap().parent().unwrap().to_path_buf();
        let path = deps.parent().unwrap().join("examples").join(name);
        assert!(path.exists(), "{} was not built; run the tests with `cargo test`", path.display());
        Cmd::new(self, path)
    }

    /// Runs `routines ARGS...` to its end, blocking the calling thread (see [`Cmd::run`]).
    pub fn run<S: AsRef<OsStr>>(&self, args: impl IntoIterator<Item = S>) -> Outcome {
        self.command(args).run()
    }

    /// Runs `routines ARGS...` to its end without blocking the test's runtime.
    pub async fn run_async<S: AsRef<OsStr>>(&self, args: impl IntoIterator<Item = S>) -> Outcome {
        self.command(args).run_async().await
    }

    /// `routines history --json ARGS...`, which must succeed, parsed.
    pub async fn history(&self, args: &[&str]) -> Vec<Value> {
        let o = self.command(["history", "--json"]).args(args).run_async().await;
        o.success();
        o.json().as_array().unwrap().clone()
    }

    /// `routines show RUN_ID --json`, which must succeed, parsed.
    pub async fn show(&self, run_id: i64) -> Value {
        let o = self.run_async(["show", &run_id.to_string(), "--json"]).await;
        o.success();
        o.json()
    }
}

/// One command in a project: a program, its arguments, environment and input.
pub struct Cmd<'a> {
    project: &'a Routines,
    program: PathBuf,
    args: Vec<OsString>,
    env: Vec<(String, String)>,
    stdin: Option<Vec<u8>>,
    /// Stdout is a pipe whose reader is gone before the command starts (`| head` that quit).
    stdout_closed: bool,
}

impl<'a> Cmd<'a> {
    fn new(project: &'a Routines, program: PathBuf) -> Cmd<'a> {
        Cmd { project, program, args: Vec::new(), env: Vec::new(), stdin: None, stdout_closed: false }
    }

    /// Adds arguments.
    pub fn args<S: AsRef<OsStr>>(mut self, args: impl IntoIterator<Item = S>) -> Cmd<'a> {
        self.args.extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    /// Sets a variable for this command (after the project's).
    pub fn env(mut self, name: &str, value: &str) -> Cmd<'a> {
        self.env.push((name.to_string(), value.to_string()));
        self
    }

    /// Gives the command `input` on stdin (else stdin is empty: /dev/null). [`Cmd::run`]
    /// closes it after the input; [`Cmd::spawn`] keeps it open for [`Running::write_stdin`].
    pub fn stdin(mut self, input: &str) -> Cmd<'a> {
        self.stdin = Some(input.as_bytes().to_vec());
        self
    }

    /// Gives the command a stdout pipe whose reader has already gone, as `| head -1` leaves it
    /// once `head` has its line: every write gets EPIPE. The outcome's stdout is empty.
    pub fn stdout_closed(mut self) -> Cmd<'a> {
        self.stdout_closed = true;
        self
    }

    /// The command line, for messages: `routines run daily`.
    fn describe(&self) -> String {
        let name = self.program.file_name().unwrap_or_default().to_string_lossy();
        std::iter::once(name).chain(self.args.iter().map(|a| a.to_string_lossy())).collect::<Vec<_>>().join(" ")
    }

    /// Runs the command to its end, for at most a minute, blocking the calling thread (the
    /// command is driven by a runtime of its own). A test whose mock server runs on the
    /// test's runtime uses [`Cmd::run_async`]: blocking that thread would stall the server.
    pub fn run(self) -> Outcome {
        std::thread::scope(|scope| {
            let runner = scope.spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                runtime.block_on(self.run_async())
            });
            runner.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }

    /// Runs the command to its end, for at most a minute.
    pub async fn run_async(self) -> Outcome {
        self.spawn().await.finish(RUN_TIMEOUT).await
    }

    /// Starts the command and leaves it running, its output read as it comes.
    pub async fn spawn(self) -> Running {
        let command = self.describe();
        let mut c = tokio::process::Command::new(&self.program);
        c.args(&self.args)
            .current_dir(self.project.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.project.path())
            .envs(self.project.env.iter().chain(&self.env).map(|(k, v)| (k, v)))
            .stdin(if self.stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if self.stdout_closed {
            let mut ends = [0; 2];
            // SAFETY: `ends` has room for the two descriptors pipe(2) writes.
            assert_eq!(unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
            // SAFETY: both descriptors were just made and are owned here alone.
            let (reader, writer) =
                unsafe { (std::os::fd::OwnedFd::from_raw_fd(ends[0]), std::os::fd::OwnedFd::from_raw_fd(ends[1])) };
            drop(reader);
            c.stdout(Stdio::from(writer));
        }
        let mut child = c.spawn().unwrap_or_else(|e| panic!("cannot start `{command}`: {e}"));
        let stdout = match child.stdout.take() {
            Some(out) => Capture::start(out),
            None => Capture::start(tokio::io::empty()),
        };
        let stderr = Capture::start(child.stderr.take().unwrap());
        let mut stdin = child.stdin.take();
        if let (Some(pipe), Some(input)) = (stdin.as_mut(), &self.stdin) {
            // A process that ends without reading its input is judged by its outcome.
            let _ = pipe.write_all(input).await;
        }
        Running { command, child, stdin, stdout, stderr }
    }
}
