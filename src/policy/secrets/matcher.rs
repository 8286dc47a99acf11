//! The automaton behind a [`super::Redactor`]: every form of every secret as
//! patterns ([`super::forms`]), one pass over a text finds every run of a
//! secret in it, plain or encoded.

use std::borrow::Cow;
use std::collections::BTreeSet;

use aho_corasick::{AhoCorasick, MatchKind};

use super::REDACTED;
use super::forms::{Form, forms};

/// How much of a value must appear for it to be redacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Strength {
    /// A credential (key, password, token): any run of [`FRAGMENT_CHARS`](super::FRAGMENT_CHARS)
    /// characters of it, or all of it when it is shorter.
    Fragments,
    /// An identifier that is private but ordinary-looking (an SMTP login such
    /// as `me@example.com`, a database URL): only the whole value, since its
    /// pieces ("@example", "postgres") are everyday words.
    Whole,
}

/// The secrets of a redactor and their automaton. Immutable: adding a secret
/// builds a new one.
#[derive(Default)]
pub(super) struct Matcher {
    /// Every value known, with its strength.
    pub(super) secrets: BTreeSet<(String, Strength)>,
    /// `None` when there is nothing to look for (or, never seen, when the
    /// automaton could not be built; then [`Matcher::redact`] falls back to
    /// plain substring search over the patterns).
    automaton: Option<AhoCorasick>,
    patterns: Vec<String>,
    /// Every whole form of every value, without pieces ([`Matcher::redact_whole`]).
    whole: Option<AhoCorasick>,
    whole_patterns: Vec<String>,
}

impl Matcher {
    /// A matcher of `secrets`: values shorter than [`MIN_SECRET_CHARS`](super::MIN_SECRET_CHARS) are
    /// dropped.
    pub(super) fn build(secrets: BTreeSet<(String, Strength)>) -> Matcher {
        let mut patterns: BTreeSet<String> = BTreeSet::new();
        let mut whole: BTreeSet<String> = BTreeSet::new();
        for (value, strength) in &secrets {
            for form in forms(value) {
                add_patterns(&form, *strength, &mut patterns);
                add_patterns(&form, Strength::Whole, &mut whole);
            }
        }
        let patterns: Vec<String> = patterns.into_iter().collect();
        let whole_patterns: Vec<String> = whole.into_iter().collect();
        Matcher {
            secrets,
            automaton: automaton(&patterns),
            patterns,
            whole: automaton(&whole_patterns),
            whole_patterns,
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Number of patterns in the automaton (for benchmarks and tests).
    pub(super) fn pattern_count(&self) -> usize {
        self.patterns.len()
    }

    /// `text` with every span covered by a pattern replaced by [`REDACTED`];
    /// overlapping and touching spans become one.
    pub(super) fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        replace_spans(text, self.automaton.as_ref(), &self.patterns)
    }

    /// `text` with every whole secret, in every form, replaced by [`REDACTED`], and runs of
    /// characters it shares with a credential left as they are: for data the engine acts on
    /// later (a queued fire's trigger context), where a folder named like the start of a key
    /// must stay the folder it is.
    pub(super) fn redact_whole<'a>(&self, text: &'a str) -> Cow<'a, str> {
        replace_spans(text, self.whole.as_ref(), &self.whole_patterns)
    }

    /// Whether `text` holds a whole credential ([`Strength::Fragments`]: not an identifier such
    /// as the SMTP login) in any form. A plain search over the forms: the texts asked about
    /// (a rendered path, an address) are short.
    pub(super) fn holds_credential(&self, text: &str) -> bool {
        self.secrets
            .iter()
            .filter(|(_, strength)| *strength == Strength::Fragments)
            .flat_map(|(value, _)| forms(value))
            .any(|form| form.text.chars().count() >= form.min && text.contains(form.text.as_str()))
    }
}

/// The automaton of `patterns`, `None` when there are none.
fn automaton(patterns: &[String]) -> Option<AhoCorasick> {
    if patterns.is_empty() {
        return None;
    }
    // Standard semantics: needed for overlapping search. The builder picks a DFA for small sets
    // and a contiguous NFA for large ones.
    AhoCorasick::builder().match_kind(MatchKind::Standard).build(patterns).ok()
}

/// `text` with every span covered by one of `patterns` (found with `automaton`, or by plain
/// substring search where it could not be built) replaced by [`REDACTED`].
fn replace_spans<'a>(text: &'a str, automaton: Option<&AhoCorasick>, patterns: &[String]) -> Cow<'a, str> {
    if patterns.is_empty() || text.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut spans: Vec<(usize, usize)> = match automaton {
        Some(ac) => ac.find_overlapping_iter(text).map(|m| (m.start(), m.end())).collect(),
        None => patterns.iter().flat_map(|p| text.match_indices(p.as_str()).map(|(i, m)| (i, i + m.len()))).collect(),
    };
    if spans.is_empty() {
        return Cow::Borrowed(text);
    }
    spans.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut current: Option<(usize, usize)> = None;
    for (s, e) in spans {
        match &mut current {
            Some((_, ce)) if s <= *ce => *ce = (*ce).max(e),
            _ => {
                if let Some((cs, ce)) = current.take() {
                    out.push_str(text.get(copied..cs).unwrap_or_default());
                    out.push_str(REDACTED);
                    copied = ce;
                }
                current = Some((s, e));
            }
        }
    }
    // Matches of UTF-8 patterns in UTF-8 text fall on character
    // boundaries, so these slices always exist.
    if let Some((cs, ce)) = current {
        out.push_str(text.get(copied..cs).unwrap_or_default());
        out.push_str(REDACTED);
        copied = ce;
    }
    out.push_str(text.get(copied..).unwrap_or_default());
    Cow::Owned(out)
}

/// The patterns of one form of a value: all its windows (of
/// [`Form::window`] characters, starting every [`Form::step`]), or the whole
/// of it when it is short or an identifier.
fn add_patterns(form: &Form, strength: Strength, out: &mut BTreeSet<String>) {
    let chars: Vec<(usize, char)> = form.text.char_indices().collect();
    if chars.len() < form.min {
        return;
    }
    if strength == Strength::Whole || chars.len() <= form.window {
        out.insert(form.text.clone());
        return;
    }
    for w in (0..=chars.len() - form.window).step_by(form.step.max(1)) {
        let start = chars.get(w).map_or(0, |(i, _)| *i);
        let end = chars.get(w + form.window).map_or(form.text.len(), |(i, _)| *i);
        if let Some(window) = form.text.get(start..end) {
            out.insert(window.to_string());
        }
    }
}
