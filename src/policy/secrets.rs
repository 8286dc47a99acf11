//! Redaction of secret values: the values of every `*_env` variable the
//! config names never reach tool output, run events, logs or memory.

use std::borrow::Cow;

/// What replaces a secret value.
pub const REDACTED: &str = "[redacted]";

/// Replaces known secret values in text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Redactor {
    /// Longest first, so a secret containing another is replaced whole.
    secrets: Vec<String>,
}

impl Redactor {
    /// Values shorter than 4 characters are ignored: replacing them would
    /// mangle ordinary text and they protect nothing.
    pub fn new(values: impl IntoIterator<Item = String>) -> Self {
        let mut secrets: Vec<String> = values.into_iter().filter(|v| v.chars().count() >= 4).collect();
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Redactor { secrets }
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out: Cow<'a, str> = Cow::Borrowed(text);
        for s in &self.secrets {
            if out.contains(s.as_str()) {
                out = Cow::Owned(out.replace(s.as_str(), REDACTED));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_every_known_value_and_nothing_else() {
        let r = Redactor::new(["sk-abc123".to_string(), "sk-abc123-long".to_string(), "ab".to_string()]);
        assert_eq!(r.redact("key=sk-abc123-long other=sk-abc123 ab"), "key=[redacted] other=[redacted] ab");
        assert!(matches!(r.redact("nothing here"), Cow::Borrowed(_)));
        assert!(Redactor::new(Vec::<String>::new()).is_empty());
    }
}
