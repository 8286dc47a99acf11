//! Stderr shared by the log lines and the spinner of `routines run`: while a spinner is shown,
//! a log line is written with the spinner taken away and drawn again under it, so that neither
//! garbles the other.

use std::io::{self, Write};
use std::sync::{Mutex, PoisonError};

use indicatif::ProgressBar;

/// The spinner on stderr now, if any.
static SHOWN: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// Log lines from now on make way for `spinner`.
pub fn show(spinner: &ProgressBar) {
    *SHOWN.lock().unwrap_or_else(PoisonError::into_inner) = Some(spinner.clone());
}

/// The spinner is gone: log lines go straight to stderr again.
pub fn hide() {
    *SHOWN.lock().unwrap_or_else(PoisonError::into_inner) = None;
}

/// Stderr for the log, making way for a spinner that is shown.
pub fn stderr() -> Stderr {
    Stderr
}

/// See [`stderr`].
pub struct Stderr;

impl Write for Stderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let shown = SHOWN.lock().unwrap_or_else(PoisonError::into_inner).clone();
        match shown {
            Some(spinner) => spinner.suspend(|| io::stderr().write(buf)),
            None => io::stderr().write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}
