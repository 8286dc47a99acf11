//! Diagnostics for people: a problem in a file, with its location and a hint.
//!
//! Loading never stops at the first problem: every loader collects all of
//! them and returns a [`Diagnostics`] list, printed one per problem as
//! `FILE:LINE:COL: message` with an optional `help:` line.

use std::fmt;
use std::path::{Path, PathBuf};

/// One problem found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub file: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    pub message: String,
    pub hint: Option<String>,
}

impl Diagnostic {
    pub fn new(file: &Path, line: usize, col: usize, message: impl Into<String>) -> Self {
        Diagnostic { file: file.to_path_buf(), line, col, message: message.into(), hint: None }
    }

    #[must_use]
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {}", self.file.display(), self.line, self.col, self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\n  help: {hint}")?;
        }
        Ok(())
    }
}

/// Every problem found while loading one or more files.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    /// Each problem's lines: its location and message, then its `help:` line.
    pub fn lines(&self) -> Vec<String> {
        self.0.iter().flat_map(|d| d.to_string().lines().map(str::to_string).collect::<Vec<_>>()).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn push(&mut self, d: Diagnostic) {
        self.0.push(d);
    }

    pub fn extend(&mut self, other: Diagnostics) {
        self.0.extend(other.0);
    }

    /// Sorted by file, line and column, so output is stable.
    pub fn sorted(mut self) -> Self {
        self.0.sort_by(|a, b| (&a.file, a.line, a.col).cmp(&(&b.file, b.line, b.col)));
        self
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

/// The closest candidate to `word` by Jaro-Winkler similarity, if it is close
/// enough to be a plausible typo.
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let word_lower = word.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(&word_lower, &c.to_ascii_lowercase()), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_the_nearest_key() {
        let keys = ["model", "base_url", "timeout", "temperature"];
        assert_eq!(did_you_mean("modle", keys), Some("model"));
        assert_eq!(did_you_mean("tmeperature", keys), Some("temperature"));
        assert_eq!(did_you_mean("colour", keys), None);
    }

    #[test]
    fn displays_location_message_and_hint() {
        let d = Diagnostic::new(Path::new("routines.yaml"), 3, 5, "unknown field `modle` in `provider`")
            .with_hint("did you mean `model`?");
        assert_eq!(
            d.to_string(),
            "routines.yaml:3:5: unknown field `modle` in `provider`\n  help: did you mean `model`?"
        );
    }
}
