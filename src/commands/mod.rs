//! One module per command family of the binary.

pub mod cluster;
pub mod completions;
pub mod daemon;
pub mod deliver;
pub mod eval;
pub mod heartbeat;
pub mod init;
pub mod inspect;
pub mod pause;
pub mod progress;
pub mod run;
pub mod skills;
pub mod table;
pub mod validate;

use routines::diag::{Diagnostics, did_you_mean};
use routines::routine::reserved::RUN_NAMES;
use routines::routine::{LoadedRoutines, Routine};
use routines::store::{RunFilter, Store};

use crate::app::{Error, KnownRoutines};

pub use table::table;

/// The routine called `name`, or a usage error with a did-you-mean; a
/// routine that exists but is invalid reports its problems.
pub fn find<'a>(loaded: &'a LoadedRoutines, name: &str) -> Result<&'a Routine, Error> {
    if let Some(r) = loaded.get(name) {
        return Ok(r);
    }
    let problems: Vec<_> =
        loaded.diagnostics.0.iter().filter(|d| d.file.file_stem().is_some_and(|s| s == name)).cloned().collect();
    if !problems.is_empty() {
        return Err(Error::InvalidRoutine { name: name.into(), problems: Diagnostics(problems) });
    }
    Err(unknown(loaded, name))
}

/// Whether `name` names a routine to read the history of: one loaded, one whose file has
/// problems, a built-in run (`heartbeat`, `greeting`), or one whose file is gone but whose runs
/// are still recorded. Otherwise a usage error with a did-you-mean.
pub fn recorded(loaded: &LoadedRoutines, store: &Store, name: &str) -> Result<(), Error> {
    let has_file = loaded.get(name).is_some()
        || RUN_NAMES.contains(&name)
        || loaded.diagnostics.0.iter().any(|d| d.file.file_stem().is_some_and(|s| s == name));
    if has_file || !store.list_runs(&RunFilter { routine: Some(name), status: None, limit: 1 })?.is_empty() {
        return Ok(());
    }
    Err(unknown(loaded, name))
}

/// `no routine named …`, with the closest name, or every name when none is close.
fn unknown(loaded: &LoadedRoutines, name: &str) -> Error {
    let known = match did_you_mean(name, loaded.names()) {
        Some(best) => KnownRoutines::DidYouMean(best.into()),
        None if loaded.routines.is_empty() => KnownRoutines::None,
        None => KnownRoutines::All(loaded.names().iter().map(|n| n.to_string()).collect()),
    };
    Error::UnknownRoutine { name: name.into(), known }
}

/// Prints `value` as pretty JSON on stdout.
pub fn print_json(value: &serde_json::Value) -> Result<(), Error> {
    outln!("{}", serde_json::to_string_pretty(value)?)?;
    Ok(())
}
