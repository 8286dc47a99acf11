//! What an attack left behind, read the way an auditor would: every text in the database,
//! the files in the project, the mail in the outbox, and checks that no run of 8
//! characters of a secret is in any of it.

use std::path::Path;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};

use crate::common::Routines;

/// Every value of every row of every table of the project's database, as text (blobs, such
/// as the full-text index of memories, lossily), one entry per cell, prefixed `table:`.
pub fn database(p: &Routines) -> Vec<String> {
    let path = p.path().join(".routines/routines.db");
    let conn = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut cells = Vec::new();
    for table in tables {
        let mut stmt = conn.prepare(&format!("SELECT * FROM \"{table}\"")).unwrap();
        let columns = stmt.column_count();
        let mut rows = stmt.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            for i in 0..columns {
                let text = match row.get_ref(i).unwrap() {
                    ValueRef::Text(t) | ValueRef::Blob(t) => String::from_utf8_lossy(t).into_owned(),
                    _ => continue,
                };
                cells.push(format!("{table}: {text}"));
            }
        }
    }
    cells
}

/// Every file under `dir` (recursively) with its text, lossily.
pub fn files(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return out };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push((path.display().to_string(), String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
    out
}

/// The windows of `FRAGMENT` characters of `secret` (the whole secret when shorter).
fn windows(secret: &str) -> Vec<String> {
    const FRAGMENT: usize = 8;
    let chars: Vec<char> = secret.chars().collect();
    if chars.len() <= FRAGMENT {
        return vec![secret.to_string()];
    }
    chars.windows(FRAGMENT).map(|w| w.iter().collect()).collect()
}

/// Panics naming `place` when `text` holds a run of 8 characters of `secret`.
#[track_caller]
pub fn assert_clean(place: &str, text: &str, secret: &str) {
    if let Some(w) = windows(secret).into_iter().find(|w| text.contains(w.as_str())) {
        panic!("{place} holds {w:?}, a piece of the secret {secret:?}:\n{text}");
    }
}

/// [`assert_clean`] over every cell of the database and every byte of every file of the
/// project (the workspace, deliveries, the outbox, and the database file and its WAL
/// themselves), except files the test wrote itself (`keep`).
#[track_caller]
pub fn assert_nothing_recorded(p: &Routines, secret: &str, keep: &[&str]) {
    for cell in database(p) {
        assert_clean("the database", &cell, secret);
    }
    for (path, text) in files(p.path()) {
        if keep.iter().any(|k| path.ends_with(k)) {
            continue;
        }
        assert_clean(&path, &text, secret);
    }
}

/// Whether any database cell contains `part`.
pub fn database_has(p: &Routines, part: &str) -> bool {
    database(p).iter().any(|c| c.contains(part))
}

/// The cells of one table of the project's database (see [`database`]).
pub fn table(p: &Routines, name: &str) -> Vec<String> {
    let prefix = format!("{name}: ");
    database(p).into_iter().filter_map(|c| c.strip_prefix(&prefix).map(str::to_string)).collect()
}
