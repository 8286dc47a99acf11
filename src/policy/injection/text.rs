//! What the scan reads of the text: word and line boundaries, characters
//! that hide text (found, classified, cleaned away), and short excerpts.

/// Longest excerpt, in characters.
pub(super) const EXCERPT_CHARS: usize = 120;

/// Characters that hide text, as anchors (whole characters, or UTF-8 prefixes
/// of the tag and supplementary variation-selector blocks).
pub(super) fn hidden_anchors() -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    let singles = ['\u{00AD}', '\u{180E}', '\u{FEFF}']
        .into_iter()
        .chain('\u{200B}'..='\u{200F}')
        .chain('\u{202A}'..='\u{202E}')
        .chain('\u{2060}'..='\u{2064}')
        .chain('\u{2066}'..='\u{2069}')
        .chain('\u{FE00}'..='\u{FE0F}');
    for c in singles {
        out.push(c.to_string().into_bytes());
    }
    // U+E0000..U+E007F (tags) and U+E0100..U+E01EF (variation selectors 17-256).
    for third in [0x80u8, 0x81, 0x84, 0x85, 0x86, 0x87] {
        out.push(vec![0xF3, 0xA0, third]);
    }
    out
}

/// Whether the anchor at `pos` begins a line, after at most `max` bytes of
/// markup (`#`, `*`, `>`, `[`, spaces...).
pub(super) fn starts_line(b: &[u8], pos: usize, max: usize) -> bool {
    let mut i = pos;
    while i > 0 && pos - i <= max {
        match b.get(i - 1) {
            Some(b'\n') => return true,
            Some(b' ' | b'\t' | b'#' | b'*' | b'>' | b'[' | b'(' | b'<' | b'_' | b'-' | b'\r') => i -= 1,
            _ => return false,
        }
    }
    false
}

/// Whether `pos` starts a word: no letter or digit before it, and an `_`
/// before it only as markdown emphasis (`_ignore_`, not `no_ignore`).
pub(super) fn starts_word(b: &[u8], pos: usize) -> bool {
    match pos.checked_sub(1).and_then(|i| b.get(i)) {
        Some(b'_') => !pos.checked_sub(2).and_then(|i| b.get(i)).is_some_and(|&c| is_word_byte(c)),
        Some(&c) => !is_word_byte(c),
        None => true,
    }
}

pub(super) fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn is_gap_byte(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'*' | b'_' | b'`' | b'"' | b'>' | b'~')
}

/// The ASCII word just before `pos`, skipping spaces and markup.
pub(super) fn word_before(lower: &str, pos: usize) -> &str {
    let b = lower.as_bytes();
    let mut end = pos.min(b.len());
    while end > 0 && b.get(end - 1).is_some_and(|&c| is_gap_byte(c)) {
        end -= 1;
    }
    let mut start = end;
    while start > 0 && b.get(start - 1).is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'\'') {
        start -= 1;
    }
    lower.get(start..end).unwrap_or("")
}

/// The ASCII word just after `pos`, skipping spaces and markup.
pub(super) fn word_after(lower: &str, pos: usize) -> &str {
    let b = lower.as_bytes();
    let mut start = pos;
    while start < b.len() && b.get(start).is_some_and(|&c| is_gap_byte(c)) {
        start += 1;
    }
    let mut end = start;
    while end < b.len() && b.get(end).is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'\'') {
        end += 1;
    }
    lower.get(start..end).unwrap_or("")
}

/// What a hidden character at a position means.
pub(super) enum Hidden {
    /// Hides text: a finding, and the text is scanned again without it.
    Flag(usize),
    /// Harmless alone (soft hyphen, direction marks) but can split a word.
    Clean,
    /// Legitimate here: a leading BOM, emoji and flag sequences, joiners in
    /// Arabic or Indic script, one variation selector.
    Ignore,
}

fn is_emoji_like(c: char) -> bool {
    matches!(c, '\u{2600}'..='\u{27BF}' | '\u{2B00}'..='\u{2BFF}' | '\u{FE0F}' | '\u{1F000}'..='\u{10FFFF}')
}

fn is_joining_script(c: char) -> bool {
    matches!(c, '\u{0600}'..='\u{08FF}' | '\u{0900}'..='\u{0DFF}' | '\u{FB50}'..='\u{FDFF}' | '\u{FE70}'..='\u{FEFC}')
}

fn is_variation_selector(c: char) -> bool {
    matches!(c, '\u{FE00}'..='\u{FE0F}' | '\u{E0100}'..='\u{E01EF}')
}

fn is_tag(c: char) -> bool {
    matches!(c, '\u{E0000}'..='\u{E007F}')
}

pub(super) fn classify_hidden(lower: &str, pos: usize) -> Hidden {
    let Some(c) = lower.get(pos..).and_then(|r| r.chars().next()) else { return Hidden::Ignore };
    let prev = lower.get(..pos).and_then(|r| r.chars().next_back());
    let next = lower.get(pos + c.len_utf8()..).and_then(|r| r.chars().next());
    match c {
        // Position 1 is the start of the text (after the added '\n').
        '\u{FEFF}' if pos == 1 => Hidden::Ignore,
        '\u{00AD}' | '\u{200E}' | '\u{200F}' => Hidden::Clean,
        '\u{200C}' | '\u{200D}' => {
            let emoji = prev.is_some_and(is_emoji_like) || next.is_some_and(is_emoji_like);
            let script = prev.is_some_and(is_joining_script) && next.is_some_and(is_joining_script);
            if emoji || script { Hidden::Ignore } else { Hidden::Flag(c.len_utf8()) }
        }
        c if is_tag(c) => {
            // A flag such as England's is U+1F3F4 followed by tags.
            let run_start = lower.get(..pos).map_or("", |r| r.trim_end_matches(is_tag));
            if run_start.ends_with('\u{1F3F4}') { Hidden::Ignore } else { Hidden::Flag(c.len_utf8()) }
        }
        c if is_variation_selector(c) => {
            if next.is_some_and(is_variation_selector) {
                Hidden::Flag(c.len_utf8())
            } else {
                Hidden::Ignore
            }
        }
        c if is_hidden(c) => Hidden::Flag(c.len_utf8()),
        _ => Hidden::Ignore,
    }
}

fn is_hidden(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{FEFF}'
    ) || is_variation_selector(c)
        || is_tag(c)
}

/// `text` without hidden characters; tag characters become the ASCII they
/// encode, set off by spaces.
pub(super) fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_tags = false;
    for c in text.chars() {
        if is_tag(c) {
            if !in_tags {
                out.push(' ');
                in_tags = true;
            }
            if let Some(a) = char::from_u32(c as u32 - 0xE0000).filter(|a| (' '..='~').contains(a)) {
                out.push(a);
            }
            continue;
        }
        if in_tags {
            out.push(' ');
            in_tags = false;
        }
        if !is_hidden(c) {
            out.push(c);
        }
    }
    out
}

/// At most [`EXCERPT_CHARS`] characters on one line: a little before
/// `start`, the match, a little after `end`. Hidden characters show as `<U+200B>`.
pub(super) fn excerpt(text: &str, start: usize, end: usize) -> String {
    const BEFORE: usize = 24;
    const AFTER: usize = 16;
    let start = start.min(text.len());
    let from =
        text.get(..start).map_or(start, |head| head.char_indices().rev().take(BEFORE).last().map_or(start, |(i, _)| i));
    let mut out = String::new();
    let mut count = 0;
    let mut after = 0;
    let mut space = true;
    for (i, c) in text.get(from..).unwrap_or_default().char_indices() {
        if from + i >= end {
            after += 1;
            if after > AFTER {
                break;
            }
        }
        if is_hidden(c) {
            let shown = format!("<U+{:04X}>", c as u32);
            if count + shown.len() > EXCERPT_CHARS {
                break;
            }
            count += shown.len();
            out.push_str(&shown);
            space = false;
        } else if c.is_whitespace() || c.is_control() {
            if !space {
                if count + 1 > EXCERPT_CHARS {
                    break;
                }
                out.push(' ');
                count += 1;
                space = true;
            }
        } else {
            if count + 1 > EXCERPT_CHARS {
                break;
            }
            out.push(c);
            count += 1;
            space = false;
        }
    }
    out.trim_end().to_string()
}
