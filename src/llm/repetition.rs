//! Detection of runaway repetition: small models sometimes loop, emitting
//! the same phrase until `max_tokens` runs out. Such a tail is cut to one
//! copy and reported.

/// What was cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repetition {
    /// Length of the repeated unit, in characters.
    pub period: usize,
    /// How many times it appeared in a row.
    pub copies: usize,
}

/// Longest unit considered, in characters.
const MAX_PERIOD: usize = 400;
/// A repeated run must be at least this long in total to count.
const MIN_RUN_CHARS: usize = 200;
/// ... and have at least this many copies.
const MIN_COPIES: usize = 4;

/// If `text` ends in a runaway repetition, returns the text with the run cut
/// to a single copy, and what was found.
pub fn cut(text: &str) -> Option<(String, Repetition)> {
    let chars: Vec<char> = text.chars().collect();
    let n = chars.len();
    if n < MIN_RUN_CHARS {
        return None;
    }
    for period in 1..=MAX_PERIOD.min(n / MIN_COPIES) {
        // Start of the longest suffix that repeats with this period.
        let mut start = n - period;
        while start > 0 && chars[start - 1] == chars[start - 1 + period] {
            start -= 1;
        }
        let run = n - start;
        let copies = run / period;
        let needed = MIN_COPIES.max(MIN_RUN_CHARS.div_ceil(period));
        if copies < needed {
            continue;
        }
        let unit = &chars[start..start + period];
        if unit.iter().all(|c| c.is_whitespace()) {
            continue;
        }
        let kept: String = chars[..start + period].iter().collect();
        return Some((kept, Repetition { period, copies }));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_a_looping_tail_to_one_copy() {
        let text = format!("Summary of the report.\n{}", "I will check the file again. ".repeat(30));
        let (kept, rep) = cut(&text).unwrap();
        assert_eq!(kept, "Summary of the report.\nI will check the file again. ");
        assert_eq!(rep.period, 29);
        assert!(rep.copies >= 29);
    }

    #[test]
    fn leaves_normal_text_alone() {
        let text = "A normal answer with a table:\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n".repeat(2);
        assert_eq!(cut(&text), None);
        assert_eq!(cut("haha, that is funny"), None);
        assert_eq!(cut(&format!("{}\n", "-".repeat(80))), None);
        assert_eq!(cut(&" ".repeat(1000)), None);
    }

    #[test]
    fn cuts_a_single_character_flood() {
        let text = format!("ok {}", "!".repeat(500));
        let (kept, rep) = cut(&text).unwrap();
        assert_eq!(kept, "ok !");
        assert_eq!(rep, Repetition { period: 1, copies: 500 });
    }
}
