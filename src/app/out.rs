//! Standard output for the commands. A reader that went away (`routines show 1 | head -1`)
//! ends the command quietly with status 0, as `ls`, `git log` or `rg` do, never with a panic;
//! any other failure to write is the command's error (`Error::Print`).
//!
//! `println!` panics on a closed pipe because Rust ignores SIGPIPE; restoring the signal's
//! default would instead let a child's closed pipe kill the engine in the middle of a run.
//!
//! The text passes through an [`anstream`] stream, which removes colour where there should be
//! none ([`super::style`]).

use std::io::{self, Write};

use super::Error;

/// Writes `text` and a newline to stdout (see the module's note on closed pipes).
pub fn line(text: std::fmt::Arguments<'_>) -> Result<(), Error> {
    let mut out = anstream::stdout().lock();
    let written = out.write_fmt(text).and_then(|()| out.write_all(b"\n")).and_then(|()| out.flush());
    settle(written)
}

/// Writes `text` to stdout as it is, without a newline.
pub fn text(text: std::fmt::Arguments<'_>) -> Result<(), Error> {
    let mut out = anstream::stdout().lock();
    let written = out.write_fmt(text).and_then(|()| out.flush());
    settle(written)
}

/// What became of a write to stdout: a reader that went away ends the process quietly.
pub fn settle(written: io::Result<()>) -> Result<(), Error> {
    match written {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => std::process::exit(0),
        other => other.map_err(Error::Print),
    }
}

/// `println!` for the commands: `outln!("{x}")?`.
macro_rules! outln {
    () => {
        $crate::app::out::line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::app::out::line(format_args!($($arg)*))
    };
}

/// `print!` for the commands: `out!("{x}")?`.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::app::out::text(format_args!($($arg)*))
    };
}
