//! Where the state lives: an SQLite file inside the data folder (the default), or a PostgreSQL
//! database named by a `postgres://` URL in the variable `store.url_env` names (SPEC §3, §9).
//!
//! A URL may carry a password. [`DatabaseUrl`] keeps the text but never shows it: its
//! `Display` and `Debug` print the URL with the password replaced by `***`, and every error
//! that names the database names it through them.

use std::fmt;
use std::path::{Path, PathBuf};

use super::StoreError;

/// The database a store opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// The SQLite file at this path.
    Sqlite(PathBuf),
    /// A PostgreSQL database. `data_dir` is the local data folder, where this machine's
    /// process locks live (see `store/orphans.rs`).
    Postgres { url: DatabaseUrl, data_dir: PathBuf },
}

impl Location {
    /// The store of a config: PostgreSQL when `url` (the value of the variable `var`) is set
    /// and not empty, else the SQLite file `sqlite`. A URL of another scheme is an error
    /// naming the variable, never a silent fall back to SQLite.
    pub fn resolve(var: &str, url: Option<String>, sqlite: PathBuf) -> Result<Location, StoreError> {
        let Some(url) = url.filter(|u| !u.trim().is_empty()) else { return Ok(Location::Sqlite(sqlite)) };
        let url = DatabaseUrl::parse(var, url.trim())?;
        let data_dir = sqlite.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok(Location::Postgres { url, data_dir })
    }
}

/// A `postgres://` (or `postgresql://`) URL; shown only with its password redacted.
#[derive(Clone, PartialEq, Eq)]
pub struct DatabaseUrl {
    text: String,
}

impl DatabaseUrl {
    /// Checks the scheme; `var` names the variable it came from, for the error.
    pub fn parse(var: &str, text: &str) -> Result<DatabaseUrl, StoreError> {
        let lower = text.to_ascii_lowercase();
        if !(lower.starts_with("postgres://") || lower.starts_with("postgresql://")) {
            return Err(StoreError::BadUrl { var: var.to_string(), url: redact(text) });
        }
        Ok(DatabaseUrl { text: text.to_string() })
    }

    /// The URL itself, password included: only for the driver.
    pub(crate) fn expose(&self) -> &str {
        &self.text
    }

    /// The password the URL carries, if any (for redaction elsewhere).
    pub fn password(&self) -> Option<String> {
        password_span(&self.text).map(|(a, b)| self.text[a..b].to_string()).filter(|p| !p.is_empty())
    }

    /// Takes the password out of `text` wherever it appears (a driver's message may quote it).
    pub(crate) fn scrub(&self, text: &str) -> String {
        match self.password() {
            Some(p) => text.replace(&p, "***"),
            None => text.to_string(),
        }
    }
}

impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact(&self.text))
    }
}

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DatabaseUrl({self})")
    }
}

/// The byte range of the password in `scheme://user:PASSWORD@host` or of a
/// `password=VALUE` query parameter.
fn password_span(url: &str) -> Option<(usize, usize)> {
    let start = url.find("://")? + 3;
    let authority_end = url[start..].find(['/', '?']).map_or(url.len(), |i| start + i);
    if let Some(at) = url[start..authority_end].rfind('@') {
        let userinfo = &url[start..start + at];
        if let Some(colon) = userinfo.find(':') {
            return Some((start + colon + 1, start + at));
        }
    }
    let query = url.find('?')?;
    let mut offset = query + 1;
    for pair in url[query + 1..].split('&') {
        if let Some(value) = pair.strip_prefix("password=") {
            let from = offset + "password=".len();
            return Some((from, from + value.len()));
        }
        offset += pair.len() + 1;
    }
    None
}

/// `url` with its password (if any) replaced by `***`.
fn redact(url: &str) -> String {
    match password_span(url) {
        Some((a, b)) => format!("{}***{}", &url[..a], &url[b..]),
        None => url.to_string(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn the_password_never_shows() {
        for (text, shown) in [
            ("postgres://app:s3cret@db:5432/routines", "postgres://app:***@db:5432/routines"),
            ("postgresql://app:p%40ss@db/r?sslmode=disable", "postgresql://app:***@db/r?sslmode=disable"),
            ("postgres://db/r?user=app&password=s3cret", "postgres://db/r?user=app&password=***"),
            ("postgres://app@db/r", "postgres://app@db/r"),
        ] {
            let url = DatabaseUrl::parse("V", text).unwrap();
            assert_eq!(url.to_string(), shown);
            assert!(!format!("{url:?}").contains("s3cret"));
        }
        let url = DatabaseUrl::parse("V", "postgres://app:s3cret@db/r").unwrap();
        assert_eq!(url.password().as_deref(), Some("s3cret"));
        assert_eq!(url.scrub("auth failed for s3cret"), "auth failed for ***");
    }

    #[test]
    fn resolve_picks_sqlite_without_a_url_and_refuses_other_schemes() {
        let file = PathBuf::from("/data/routines.db");
        assert_eq!(Location::resolve("V", None, file.clone()).unwrap(), Location::Sqlite(file.clone()));
        assert_eq!(Location::resolve("V", Some(" ".into()), file.clone()).unwrap(), Location::Sqlite(file.clone()));
        match Location::resolve("V", Some("postgres://a:b@h/d".into()), file.clone()).unwrap() {
            Location::Postgres { url, data_dir } => {
                assert_eq!(url.expose(), "postgres://a:b@h/d");
                assert_eq!(data_dir, PathBuf::from("/data"));
            }
            other => panic!("{other:?}"),
        }
        let err = Location::resolve("V", Some("mysql://u:hunter2@h/d".into()), file).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("$V") && msg.contains("postgres://") && !msg.contains("hunter2"), "{msg}");
    }
}
