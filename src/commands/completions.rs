//! `routines completions SHELL`: the shell's registration of clap_complete's dynamic
//! completion. The shell calls `routines` back with `ROUTINES_COMPLETE` set for every
//! completion, so routine and skill names come from the config in the current folder at the
//! moment of the tab, never from a list written at install time.

use std::io::Write;

use clap_complete::env::{Bash, EnvCompleter, Fish, Zsh};

use crate::app::Error;

/// The variable under which the shell calls `routines` back for candidates.
pub const COMPLETE_VAR: &str = "ROUTINES_COMPLETE";

/// `shell` is `bash`, `zsh` or `fish` (clap checked it); anything else writes bash's.
pub fn run(shell: &str) -> Result<(), Error> {
    let completer: &dyn EnvCompleter = match shell {
        "zsh" => &Zsh,
        "fish" => &Fish,
        _ => &Bash,
    };
    let mut out = std::io::stdout().lock();
    let written = completer
        .write_registration(COMPLETE_VAR, "routines", "routines", "routines", &mut out)
        .and_then(|()| out.flush());
    crate::app::out::settle(written)
}
