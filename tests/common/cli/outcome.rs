//! What one finished command did, with assertions that show the whole of it on failure.

use std::fmt;

use pretty_assertions::assert_eq;
use serde_json::Value;

/// The exit code and the whole output of a finished command.
#[derive(Debug)]
pub struct Outcome {
    /// The command line, for messages: `routines run daily`.
    pub command: String,
    /// The exit code; -1 when a signal ended the process.
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` exited with {}\n--- stdout\n{}--- stderr\n{}---",
            self.command, self.code, self.stdout, self.stderr
        )
    }
}

impl Outcome {
    /// Asserts exit code 0.
    #[track_caller]
    pub fn success(&self) -> &Outcome {
        self.code(0)
    }

    /// Asserts the exit code.
    #[track_caller]
    pub fn code(&self, code: i32) -> &Outcome {
        assert!(self.code == code, "expected exit code {code}:\n{self}");
        self
    }

    /// Asserts the whole of stdout.
    #[track_caller]
    pub fn stdout_is(&self, expected: &str) -> &Outcome {
        assert_eq!(
            self.stdout, expected,
            "stdout of `{}` (exit code {}); its stderr:\n{}",
            self.command, self.code, self.stderr
        );
        self
    }

    /// Asserts the whole of stderr.
    #[track_caller]
    pub fn stderr_is(&self, expected: &str) -> &Outcome {
        assert_eq!(
            self.stderr, expected,
            "stderr of `{}` (exit code {}); its stdout:\n{}",
            self.command, self.code, self.stdout
        );
        self
    }

    /// Asserts that stdout contains `part`.
    #[track_caller]
    pub fn stdout_has(&self, part: &str) -> &Outcome {
        assert!(self.stdout.contains(part), "stdout lacks {part:?}:\n{self}");
        self
    }

    /// Asserts that stderr contains `part`.
    #[track_caller]
    pub fn stderr_has(&self, part: &str) -> &Outcome {
        assert!(self.stderr.contains(part), "stderr lacks {part:?}:\n{self}");
        self
    }

    /// stdout parsed as JSON.
    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{self}"))
    }
}
