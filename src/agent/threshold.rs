//! A percentage limit the task states, compared by the engine before a silent reply is
//! believed: "if a volume is over 85% used, say which one ... else NO_REPLY",
//! "如果磁盘使用率超过 90%". When the results of the turn's calls hold a percentage that crosses
//! the limit, the silence is not believed and the report is asked from the lines that hold it
//! (`code_check.rs`, [`super::Agent::report_found`]).
//!
//! Why: the 1.5B model answers the token next to `95% /backups`, and the check it writes as
//! code tested only the header line of the `df` table (bench/README.md, stops 36 and 37).
//! Comparing two numbers is the engine's job.
//!
//! Only in the direction of a report: a percentage that crosses the limit turns a silence into
//! a question to the model, with the lines; none crossing proves nothing (the quantity may be
//! written without `%`, or as its complement), so the model's own check still runs then. Only
//! percentages: units such as `G` or `ms` name several columns of one table (`Size`, `Used`,
//! `Avail`), a percentage in a status report mostly one. A task with two different limits (CPU
//! above 80%, memory above 90%) cannot tell which number is which, and is left to the model.

/// A limit of the task: a percentage and the side of it the task asks to report.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Limit {
    /// The report is for values above the limit (else below it).
    pub above: bool,
    /// The limit itself counts ("at least 90%", "90% or more").
    pub inclusive: bool,
    pub percent: f64,
    /// The words of the task that state it, for the run's notes ("more than 90%").
    pub words: String,
}

impl Limit {
    fn crossed_by(&self, value: f64) -> bool {
        match (self.above, self.inclusive) {
            (true, true) => value >= self.percent,
            (true, false) => value > self.percent,
            (false, true) => value <= self.percent,
            (false, false) => value < self.percent,
        }
    }
}

/// Words before a percentage that ask for the values above it, or at or above it.
pub(super) const ABOVE: [&str; 15] = [
    "more than",
    "greater than",
    "higher than",
    "larger than",
    "bigger than",
    "above",
    "over",
    "exceeds",
    "exceed",
    "exceeding",
    "in excess of",
    ">",
    "超过",
    "高于",
    "大于",
];
pub(super) const AT_LEAST: [&str; 6] = ["at least", "at or above", ">=", "≥", "达到", "不低于"];
pub(super) const BELOW: [&str; 12] = [
    "less than",
    "lower than",
    "fewer than",
    "smaller than",
    "below",
    "under",
    "<",
    "低于",
    "小于",
    "少于",
    "不足",
    "不到",
];
pub(super) const AT_MOST: [&str; 5] = ["at most", "at or below", "<=", "≤", "不超过"];
/// Words after a percentage that make it inclusive: "90% or more".
const AFTER_ABOVE: [&str; 5] = ["or more", "or higher", "or above", "and above", "以上"];
const AFTER_BELOW: [&str; 5] = ["or less", "or lower", "or below", "and below", "以下"];
/// Words of a sentence that describes the quiet side ("Disks below 90% are fine."): its limit
/// says what not to report.
const QUIET: [&str; 9] = ["fine", "ok", "okay", "normal", "healthy", "no problem", "正常", "没问题", "无需"];

/// The one limit the sentences of `task` state, or `None` when they state none, or several that
/// differ. `sentences` are the task's sentences without the ones that name the silent token.
pub(super) fn limit<'a>(sentences: impl Iterator<Item = &'a str>) -> Option<Limit> {
    let mut found: Vec<Limit> = Vec::new();
    for sentence in sentences {
        let lower = sentence.to_lowercase();
        let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).collect();
        if QUIET.iter().any(|q| if q.is_ascii() { words.contains(q) } else { lower.contains(q) }) {
            continue;
        }
        for (number, value, end) in percentages(&lower) {
            let before = lower[..number].trim_end();
            let after = lower[end..].trim_start();
            let ends = |w: &&str| before.ends_with(*w) && boundary_before(before, w);
            let (above, inclusive) = if AT_LEAST.iter().any(ends) {
                (true, true)
            } else if AT_MOST.iter().any(ends) {
                (false, true)
            } else if ABOVE.iter().any(ends) {
                (true, AFTER_ABOVE.iter().any(|w| after.starts_with(w)))
            } else if BELOW.iter().any(ends) {
                (false, AFTER_BELOW.iter().any(|w| after.starts_with(w)))
            } else if AFTER_ABOVE.iter().any(|w| after.starts_with(w)) {
                (true, true)
            } else if AFTER_BELOW.iter().any(|w| after.starts_with(w)) {
                (false, true)
            } else {
                continue;
            };
            let words = sentence_words(sentence, &lower, number, end);
            found.push(Limit { above, inclusive, percent: value, words });
        }
    }
    let first = found.first()?.clone();
    found
        .iter()
        .all(|l| l.above == first.above && l.inclusive == first.inclusive && l.percent == first.percent)
        .then_some(first)
}

/// Whether the comparison word `w` at the end of `before` starts a word of its own (`over`, not
/// the end of `turnover`); symbols and Chinese need no space.
fn boundary_before(before: &str, w: &str) -> bool {
    if !w.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return true;
    }
    before[..before.len() - w.len()].chars().next_back().is_none_or(|c| !c.is_alphanumeric())
}

/// The task's words around a limit, for a note: up to four words before the number, and the
/// number with its sign.
fn sentence_words(sentence: &str, lower: &str, number: usize, end: usize) -> String {
    // The positions are `lower`'s; a few letters change their length when lowercased, so the
    // task's own letters are shown only where the positions fall on its characters too
    // (`get`), else the lowercased words.
    let (head, limit) = match (sentence.get(..number), sentence.get(number..end)) {
        (Some(head), Some(limit)) if sentence.len() == lower.len() => (head, limit),
        _ => (&lower[..number], &lower[number..end]),
    };
    let head: Vec<&str> = head.split_whitespace().collect();
    let start = head.len().saturating_sub(4);
    format!("{} {}", head[start..].join(" "), limit.trim()).trim().to_string()
}

/// The percentages of `text`: where the number starts, its value, and where the `%` (or `％`)
/// ends. A number is digits with at most one `.`, not glued to a letter or digit before it
/// (`v2.5%` is no percentage); one space may stand before the sign.
pub(super) fn percentages(text: &str) -> Vec<(usize, f64, usize)> {
    let mut out = Vec::new();
    for (at, sign) in text.match_indices(['%', '％']) {
        let head = &text[..at];
        let digits_end = head.trim_end_matches(' ');
        if head.len() - digits_end.len() > 1 {
            continue;
        }
        let start = digits_end.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.').len();
        let number = &digits_end[start..];
        let glued = digits_end[..start].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '.');
        if glued || !number.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        if let Ok(value) = number.parse::<f64>() {
            out.push((start, value, at + sign.len()));
        }
    }
    out
}

/// The percentages in `results` (the text each looked call returned) that cross `limit`, as
/// they are written (`95%`), each once; with `last_only` (the task asks about the last line),
/// only those of the last line of each result that holds a percentage.
pub(super) fn crossing(limit: &Limit, results: &[&str], last_only: bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for result in results {
        let lines: Vec<&str> = result.lines().filter(|l| !percentages(l).is_empty()).collect();
        let lines = if last_only { &lines[lines.len().saturating_sub(1)..] } else { &lines[..] };
        for line in lines {
            for (start, value, end) in percentages(line) {
                let written = line[start..end].to_string();
                if limit.crossed_by(value) && !out.contains(&written) {
                    out.push(written);
                }
            }
        }
    }
    out
}

/// Whether `task` asks about the last line or entry only ("the last line of logs/disk.log",
/// "最后一行").
pub(super) fn last_only(task: &str) -> bool {
    let lower = task.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).collect();
    ["last", "latest"].iter().any(|w| words.contains(w))
        || lower.contains("most recent")
        || ["最后", "最新", "最近一"].iter().any(|w| lower.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit_of(task: &str) -> Option<Limit> {
        limit(std::iter::once(task))
    }

    #[test]
    fn the_task_states_a_limit_in_words_or_signs() {
        let l = limit_of("If a volume is more than 90% used, name it with its usage.").unwrap();
        assert_eq!((l.above, l.inclusive, l.percent), (true, false, 90.0));
        assert_eq!(l.words, "volume is more than 90%");
        let l = limit_of("磁盘占用一旦超过 90%，就告诉我现在的占用").unwrap();
        assert_eq!((l.above, l.inclusive, l.percent), (true, false, 90.0));
        let l = limit_of("Tell me when free memory is below 12.5 %.").unwrap();
        assert_eq!((l.above, l.inclusive, l.percent), (false, false, 12.5));
        let l = limit_of("Alert on any CPU at 95% or more").unwrap();
        assert_eq!((l.above, l.inclusive), (true, true));
        let l = limit_of("List the volumes with usage >= 80%").unwrap();
        assert_eq!((l.above, l.inclusive, l.percent), (true, true, 80.0));
        assert_eq!(limit_of("Say what the usage is (it was 40% yesterday)."), None, "no comparison");
        assert_eq!(limit_of("Report the turnover 15% figures."), None, "`over` inside a word");
        assert_eq!(limit_of("Disks below 90% are fine."), None, "the quiet side");
        assert_eq!(limit_of("Report CPU above 80% or memory above 90%."), None, "two limits");
        assert!(limit_of("Report CPU above 80% or memory above 80%.").is_some(), "one limit twice");
        assert_eq!(limit_of("Report version v2.5% above"), None, "a number glued to a word");
        // `ẞ` (3 bytes) lowercases to `ß` (2), `İ` (2) to `i̇` (3): the same length in bytes,
        // other positions between them. No position may fall inside a character.
        for task in ["ẞẞ CPU above 80% İİ", "ẞ CPU above 80%", "İİ CPU above 80% ẞẞ"] {
            assert_eq!(limit_of(task).map(|l| l.percent), Some(80.0), "{task}");
        }
    }

    #[test]
    fn the_percentages_that_cross_the_limit_are_found_as_written() {
        let df = "Filesystem Use% Mounted on\n/dev/vda1 58% /\nshm 1% /dev/shm\n/dev/vdb1 95% /archive\n";
        let more = limit_of("If a volume is more than 90% used, name it.").unwrap();
        assert_eq!(crossing(&more, &[df], false), ["95%"]);
        let quiet = df.replace("95%", "85%");
        assert!(crossing(&more, &[&quiet], false).is_empty());
        let exactly = df.replace("95%", "90%");
        assert!(crossing(&more, &[&exactly], false).is_empty(), "more than 90% is not 90%");
        let least = limit_of("at least 90%").unwrap();
        assert_eq!(crossing(&least, &[&exactly], false), ["90%"]);
        let below = limit_of("free space under 5%").unwrap();
        assert_eq!(crossing(&below, &[df], false), ["1%"]);

        let log = "2026-11-26 10:00 disk 93%\n2026-11-26 11:00 disk 95 %\n2026-11-26 12:00 disk 71%\n";
        assert_eq!(crossing(&more, &[log], false), ["93%", "95 %"]);
        assert!(crossing(&more, &[log], true).is_empty(), "the last line only: 71%");
        assert!(last_only("看看 logs/usage.log 的最后一行。"));
        assert!(last_only("Look at the last line of logs/disk.log."));
        assert!(!last_only("Read reports/volumes.txt."));
    }
}
