//! The matcher: one automaton pass finds every anchor and need word, then
//! each rule whose needs are met runs its regex on a window around its anchor.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use regex::Regex;

use super::rules::{Need, SPECS, Spec, anchor_variants, expand, words};
use super::text::{
    Hidden, classify_hidden, clean, excerpt, hidden_anchors, is_word_byte, starts_line, starts_word, word_after,
    word_before,
};
use super::{Finding, Severity};

/// Anchor hits per rule before the rule runs once over the whole text instead.
pub(super) const MAX_WINDOWS: u32 = 512;
/// An anchor this close after the last one that ran the same rule is skipped.
const OVERLAP: usize = 16;
/// Shortest run of base64 characters reported.
const BASE64_MIN: usize = 200;

/// One rule as the matcher holds it.
pub(super) struct Rule {
    spec: &'static Spec,
    /// Compiled on the first anchor hit: most texts never wake most rules,
    /// and compiling them all up front costs tens of milliseconds per process.
    compiled: std::sync::OnceLock<Option<Compiled>>,
    /// Indices into `Engine::needs`.
    needs: Vec<usize>,
}

struct Compiled {
    re: Regex,
    /// Compiled `sandwich` parts.
    sandwich: Option<(Regex, Regex)>,
}

impl Rule {
    /// The rule's regexes; `None` only if they do not compile (a bug that a
    /// unit test rules out).
    fn compiled(&self) -> Option<&Compiled> {
        self.compiled.get_or_init(|| compile(self.spec).ok().map(|(re, sandwich)| Compiled { re, sandwich })).as_ref()
    }
}

/// What one automaton pattern means.
#[derive(Default)]
struct Pattern {
    /// An invisible or formatting character.
    hidden: bool,
    /// The pattern must begin a word (it starts with a letter or digit).
    word_start: bool,
    /// Rules it is an anchor of, most severe first, and whether the anchor
    /// must end a word there.
    rules: Vec<(usize, bool)>,
    /// Needs it is a word of, and whether the word must end a word there.
    needs: Vec<(usize, bool)>,
}

/// The anchor automata and what each of their patterns means; built once per process.
pub(super) struct Engine {
    pub(super) rules: Vec<Rule>,
    /// Anchors made of ASCII, run on every text; None only if the automaton
    /// could not be built (a unit test checks it is).
    pub(super) narrow: Option<AhoCorasick>,
    /// The others (Chinese words, hidden characters), run only on text that is
    /// not all ASCII. Kept apart so the ASCII automaton stays small and fast.
    pub(super) wide: Option<AhoCorasick>,
    /// What each pattern means: the narrow automaton's, then the wide one's.
    patterns: Vec<Pattern>,
    /// The wide automaton's first pattern in `patterns`.
    wide_base: usize,
    needs: Vec<&'static Need>,
}

pub(super) static ENGINE: LazyLock<Engine> = LazyLock::new(Engine::build);

pub(super) fn compile(spec: &Spec) -> Result<(Regex, Option<(Regex, Regex)>), regex::Error> {
    let re = Regex::new(&expand(spec.pattern))?;
    let sandwich = match spec.sandwich {
        Some((before, after)) => Some((Regex::new(&expand(before))?, Regex::new(&expand(after))?)),
        None => None,
    };
    Ok((re, sandwich))
}

impl Engine {
    fn build() -> Engine {
        let mut rules = Vec::new();
        let mut needs: Vec<&'static Need> = Vec::new();
        let mut by_word: BTreeMap<String, Pattern> = BTreeMap::new();
        for spec in SPECS {
            let id = rules.len();
            for anchor in words(spec.anchors) {
                let (anchor, end) = anchor.strip_suffix('$').map_or((anchor, false), |w| (w, true));
                for form in anchor_variants(anchor) {
                    by_word.entry(form).or_default().rules.push((id, end));
                }
            }
            let mut ids = Vec::new();
            for need in spec.needs {
                let n = needs.len();
                needs.push(need);
                ids.push(n);
                for word in words(need.words) {
                    let (word, end) = word.strip_suffix('$').map_or((word, false), |w| (w, true));
                    for form in anchor_variants(word) {
                        by_word.entry(form).or_default().needs.push((n, end));
                    }
                }
            }
            rules.push(Rule { spec, compiled: std::sync::OnceLock::new(), needs: ids });
        }
        let mut narrow: Vec<(Vec<u8>, Pattern)> = Vec::new();
        let mut wide: Vec<(Vec<u8>, Pattern)> = Vec::new();
        for (word, mut pattern) in by_word {
            pattern.rules.sort_by_key(|&(id, _)| std::cmp::Reverse(rules.get(id).map(|r: &Rule| r.spec.severity)));
            pattern.rules.dedup();
            pattern.needs.dedup();
            pattern.word_start = word.bytes().next().is_some_and(is_word_byte);
            let side = if word.is_ascii() { &mut narrow } else { &mut wide };
            side.push((word.into_bytes(), pattern));
        }
        for hidden in hidden_anchors() {
            wide.push((hidden, Pattern { hidden: true, ..Pattern::default() }));
        }
        let automaton = |words: &[(Vec<u8>, Pattern)]| {
            AhoCorasick::builder()
                .match_kind(MatchKind::Standard)
                .kind(Some(AhoCorasickKind::DFA))
                .build(words.iter().map(|(w, _)| w))
                .ok()
        };
        let (narrow_ac, wide_ac) = (automaton(&narrow), automaton(&wide));
        let wide_base = narrow.len();
        let patterns = narrow.into_iter().chain(wide).map(|(_, p)| p).collect();
        Engine { rules, narrow: narrow_ac, wide: wide_ac, patterns, wide_base, needs }
    }

    /// `deeper`: when hidden characters are found, scan again without them.
    pub(super) fn scan(&self, text: &str, deeper: bool) -> Option<Finding> {
        let mut lower = String::with_capacity(text.len() + 1);
        lower.push('\n');
        lower.push_str(text);
        lower.make_ascii_lowercase();
        let bytes = lower.as_bytes();

        // Pass 1: every anchor and need word, and hidden characters.
        let mut anchors: Vec<(usize, usize, usize)> = Vec::new();
        let mut near: Vec<Vec<usize>> = vec![Vec::new(); self.needs.len()];
        let mut hidden_at: Option<(usize, usize)> = None;
        let mut needs_cleaning = false;
        let narrow = self.narrow.as_ref().and_then(|ac| ac.try_find_overlapping_iter(lower.as_str()).ok());
        let wide = match &self.wide {
            Some(ac) if !text.is_ascii() => ac.try_find_overlapping_iter(lower.as_str()).ok(),
            _ => None,
        };
        let hits =
            narrow.into_iter().flatten().map(|m| (m, 0)).chain(wide.into_iter().flatten().map(|m| (m, self.wide_base)));
        for (m, base) in hits {
            let p = base + m.pattern().as_usize();
            let Some(pattern) = self.patterns.get(p) else { continue };
            if pattern.hidden {
                match classify_hidden(&lower, m.start()) {
                    Hidden::Flag(len) => {
                        needs_cleaning = true;
                        hidden_at.get_or_insert((m.start(), m.start() + len));
                    }
                    Hidden::Clean => needs_cleaning = true,
                    Hidden::Ignore => {}
                }
                continue;
            }
            if pattern.word_start && !starts_word(bytes, m.start()) {
                continue;
            }
            let ends_word = !bytes.get(m.end()).is_some_and(|&b| is_word_byte(b));
            for &(n, end) in &pattern.needs {
                if let Some(positions) = near.get_mut(n).filter(|_| ends_word || !end) {
                    positions.push(m.start());
                }
            }
            if !pattern.rules.is_empty() {
                anchors.push((m.start(), m.end(), p));
            }
        }
        for positions in &mut near {
            positions.sort_unstable();
        }
        // In text order (the two automata each report in order of match end).
        anchors.sort_unstable();

        // Pass 2: the rules of each anchor whose needs are met, on a window.
        let mut best: Option<Finding> = None;
        let mut windows = vec![0u32; self.rules.len()];
        // Where each rule last ran: an anchor just after it ("key" in "api key")
        // adds nothing to that window.
        let mut last_run = vec![usize::MAX; self.rules.len()];
        let mut whole_done = vec![false; self.rules.len()];
        for &(start, end, p) in &anchors {
            let Some(pattern) = self.patterns.get(p) else { continue };
            let ends_word = !bytes.get(end).is_some_and(|&b| is_word_byte(b));
            for &(id, must_end) in &pattern.rules {
                let Some(rule) = self.rules.get(id) else { continue };
                let spec = rule.spec;
                if (must_end && !ends_word)
                    || best.as_ref().is_some_and(|b| b.severity >= spec.severity)
                    || whole_done.get(id).copied().unwrap_or(true)
                    || (spec.line_start && !starts_line(bytes, start, spec.back))
                {
                    continue;
                }
                let (mut ws, mut we) = window(&lower, start, end, spec.back, spec.ahead);
                if let Some(close) = spec.until {
                    we = lower.get(end..we).and_then(|w| w.find(close)).map_or(we, |i| end + i + close.len());
                }
                let mut met = rule.needs.iter().map(|&n| self.need_met(&near, n, start, ws, we));
                let first = met.next();
                if first.is_some_and(|f| f.is_none()) || met.any(|m| m.is_none()) {
                    continue;
                }
                if spec.start_at_need {
                    ws = first.flatten().map_or(ws, |p| p.max(ws));
                }
                if let Some(last) = last_run.get_mut(id) {
                    if start >= *last && start < *last + OVERLAP {
                        continue;
                    }
                    *last = start;
                }
                let count = windows.get_mut(id).map_or(0, |c| {
                    *c += 1;
                    *c
                });
                let Some(compiled) = rule.compiled() else { continue };
                let found = if compiled.sandwich.is_none() && count > MAX_WINDOWS {
                    if let Some(done) = whole_done.get_mut(id) {
                        *done = true;
                    }
                    first_match(rule.spec, &compiled.re, &lower, 0, lower.len())
                } else {
                    match &compiled.sandwich {
                        Some((before, after)) => {
                            sandwich_match(rule.spec, &compiled.re, before, after, &lower, ws, start, we)
                        }
                        None => first_match(rule.spec, &compiled.re, &lower, ws, we),
                    }
                };
                if let Some((s, e)) = found {
                    let finding = Finding {
                        severity: spec.severity,
                        rule: spec.name,
                        excerpt: excerpt(text, s.saturating_sub(1), e.saturating_sub(1)),
                    };
                    if finding.severity == Severity::Block {
                        return Some(finding);
                    }
                    best = Some(finding);
                }
            }
        }

        if needs_cleaning && deeper {
            let cleaned = clean(text);
            let deeper = self.scan(&cleaned, false);
            if let Some(f) = deeper.filter(|f| best.as_ref().is_none_or(|b| f.severity > b.severity)) {
                if f.severity == Severity::Block {
                    return Some(f);
                }
                best = Some(f);
            }
        }
        if let Some((s, e)) = hidden_at.filter(|_| best.as_ref().is_none_or(|b| b.severity < Severity::Review)) {
            best = Some(Finding {
                severity: Severity::Review,
                rule: "invisible_characters",
                excerpt: excerpt(text, s.saturating_sub(1), e.saturating_sub(1)),
            });
        }
        let blob = if best.is_none() { base64_run(text.as_bytes()) } else { None };
        if let Some((s, e)) = blob {
            let head: String = text.get(s..e).unwrap_or_default().chars().take(60).collect();
            best = Some(Finding {
                severity: Severity::Warn,
                rule: "base64_blob",
                excerpt: format!("{head}… ({} base64 characters)", e - s),
            });
        }
        best
    }

    /// Whether need `n` has a word near an anchor at `start`, inside the
    /// window `ws..we`: the first position of one of its words, if any.
    fn need_met(&self, near: &[Vec<usize>], n: usize, start: usize, ws: usize, we: usize) -> Option<usize> {
        let (need, positions) = (self.needs.get(n)?, near.get(n)?);
        let lo = start.saturating_sub(need.before).max(ws);
        let hi = (start + need.after).min(we);
        let i = positions.partition_point(|&p| p < lo);
        positions.get(i).copied().filter(|&p| p <= hi)
    }
}

/// Whether a match at `s..e` of `rule` is dropped by its vetoes.
fn vetoed(spec: &Spec, lower: &str, s: usize, e: usize) -> bool {
    vetoed_before(spec, lower, s) || vetoed_after(spec, lower, e)
}

/// An ASCII veto is the whole word before; a Chinese one ends the text before.
fn vetoed_before(spec: &Spec, lower: &str, s: usize) -> bool {
    if spec.veto_before.is_empty() {
        return false;
    }
    let word = word_before(lower, s);
    let head = lower.get(..s).unwrap_or_default().trim_end();
    words(spec.veto_before).any(|v| if v.is_ascii() { v == word } else { head.ends_with(v) })
}

fn vetoed_after(spec: &Spec, lower: &str, e: usize) -> bool {
    if spec.veto_after.is_empty() {
        return false;
    }
    let word = word_after(lower, e);
    let tail = lower.get(e..).unwrap_or_default().trim_start();
    words(spec.veto_after).any(|v| if v.is_ascii() { v == word } else { tail.starts_with(v) })
}

/// The first match of `rule` in `lower[ws..we]` that no veto drops, in
/// absolute offsets.
fn first_match(spec: &Spec, re: &Regex, lower: &str, ws: usize, we: usize) -> Option<(usize, usize)> {
    let hay = lower.get(ws..we)?;
    let mut from = 0;
    while from <= hay.len() {
        let m = re.find_at(hay, from)?;
        let (s, e) = (ws + m.start(), ws + m.end());
        if !vetoed(spec, lower, s, e) {
            return Some((s, e));
        }
        from = m.start() + hay.get(m.start()..).and_then(|r| r.chars().next()).map_or(1, char::len_utf8);
    }
    None
}

/// A sandwich rule: the last unvetoed `before` match in `ws..start`, the rule's
/// pattern at `start`, then `after` within the window.
#[allow(clippy::too_many_arguments)]
fn sandwich_match(
    spec: &Spec,
    re: &Regex,
    before: &Regex,
    after: &Regex,
    lower: &str,
    ws: usize,
    start: usize,
    we: usize,
) -> Option<(usize, usize)> {
    // Cheapest and most selective first: the secret at the anchor, then where
    // it goes, then the verb before it.
    let middle = re.find(lower.get(start..we)?)?;
    let from = start + middle.end();
    if vetoed_after(spec, lower, from) {
        return None;
    }
    let tail = after.find(lower.get(from..we)?)?;
    let lead = before
        .find_iter(lower.get(ws..start)?)
        .map(|m| ws + m.start())
        .filter(|&s| !vetoed_before(spec, lower, s))
        .last()?;
    Some((lead, from + tail.end()))
}

/// The window around an anchor at `start..end`: `back` bytes before (moved
/// forward to a word start) and up to `ahead` bytes from its start.
fn window(lower: &str, start: usize, end: usize, back: usize, ahead: usize) -> (usize, usize) {
    let b = lower.as_bytes();
    let mut ws = start.saturating_sub(back);
    while ws < start && !lower.is_char_boundary(ws) {
        ws += 1;
    }
    while ws < start
        && ws > 0
        && b.get(ws - 1).is_some_and(|&c| is_word_byte(c))
        && b.get(ws).is_some_and(|&c| is_word_byte(c))
    {
        ws += 1;
    }
    let mut we = (start + ahead).min(lower.len()).max(end);
    while we > end && !lower.is_char_boundary(we) {
        we -= 1;
    }
    (ws, we)
}

const fn base64_table() -> [bool; 256] {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        t[i] = b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'=' || b == b'-' || b == b'_';
        i += 1;
    }
    t
}

static BASE64: [bool; 256] = base64_table();

/// The first run of at least [`BASE64_MIN`] base64 characters (standard or
/// URL-safe) that mixes upper case, lower case and digits. Skips ahead like
/// Boyer-Moore: only the last byte of a candidate window is looked at first.
pub(super) fn base64_run(b: &[u8]) -> Option<(usize, usize)> {
    let is = |i: usize| b.get(i).is_some_and(|&c| BASE64[c as usize]);
    let mut i = 0;
    while i + BASE64_MIN <= b.len() {
        let mut k = i + BASE64_MIN;
        while k > i && is(k - 1) {
            k -= 1;
        }
        if k > i {
            i = k;
            continue;
        }
        let mut e = i + BASE64_MIN;
        while is(e) {
            e += 1;
        }
        let run = b.get(i..e).unwrap_or_default();
        let mixed = run.iter().any(u8::is_ascii_uppercase)
            && run.iter().any(u8::is_ascii_lowercase)
            && run.iter().any(u8::is_ascii_digit);
        if mixed {
            return Some((i, e));
        }
        i = e + 1;
    }
    None
}
