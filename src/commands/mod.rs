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
pub mod run;
pub mod skills;
pub mod validate;

use routines::diag::{Diagnostics, did_you_mean};
use routines::routine::{LoadedRoutines, Routine};

use crate::app::{Error, KnownRoutines};

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
    let known = match did_you_mean(name, loaded.names()) {
        Some(best) => KnownRoutines::DidYouMean(best.into()),
        None if loaded.routines.is_empty() => KnownRoutines::None,
        None => KnownRoutines::All(loaded.names().iter().map(|n| n.to_string()).collect()),
    };
    Err(Error::UnknownRoutine { name: name.into(), known })
}

/// Prints `value` as pretty JSON on stdout.
pub fn print_json(value: &serde_json::Value) -> Result<(), Error> {
    outln!("{}", serde_json::to_string_pretty(value)?)?;
    Ok(())
}

/// Left-aligned columns, two spaces apart.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let line = |cells: Vec<String>| -> String {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<w$}  ", w = widths[i]));
            }
        }
        s.trim_end().to_string()
    };
    let mut out = line(header.iter().map(|h| (*h).to_string()).collect());
    for row in rows {
        out.push('\n');
        out.push_str(&line(row.clone()));
    }
    out
}
