//! The task's own words as a test of lines, for a `keep` the model could not write: what asks
//! for it once more, and the run of the task's words the engine keeps lines by after two misses.

use super::super::python;
use super::noun;
use crate::agent::records::{Records, Shape};

/// What asks once more for a `keep` that kept nothing, naming the strings of its code that
/// occur in none of the records shown (the model tested for `timeout` where the lines say
/// `timed out`, and asked again without being told, wrote the same function).
pub(super) fn none_kept(shape: Shape, absent: &[String]) -> String {
    let noun = noun(shape);
    let why = match absent {
        [] => String::new(),
        some => format!(
            ": none of them contains {}",
            some.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(" or ")
        ),
    };
    format!(
        "Your function returned False for every one of the {noun}{why}. Write it again: test for words or values exactly \
         as the {noun} above write them."
    )
}

/// Words of a task that say nothing about which lines it means.
const STOP_WORDS: [&str; 40] = [
    "the",
    "and",
    "how",
    "many",
    "much",
    "what",
    "which",
    "are",
    "were",
    "was",
    "for",
    "with",
    "that",
    "this",
    "these",
    "those",
    "from",
    "according",
    "file",
    "files",
    "line",
    "lines",
    "log",
    "logs",
    "count",
    "number",
    "there",
    "have",
    "has",
    "had",
    "did",
    "does",
    "its",
    "their",
    "them",
    "they",
    "all",
    "any",
    "into",
    "you",
];

/// For a count over the lines of a text whose model-written `keep` kept nothing twice: the
/// longest run of the task's own words (one to three, English) that some lines but not all hold
/// as words of their own, ignoring case, and which lines hold it. A single word is also tried
/// without a plural `s` (`errors` finds `ERROR`). `None` when no run tells lines apart.
///
/// Why: asked how many requests "timed out", the model tests for `timeout` and, told that no
/// line holds it, writes the same test again (bench/README.md, stop 36); the task's words are
/// what the user saw in the file.
pub(super) fn task_phrase(task: &str, records: &Records<'_>) -> Option<(String, Vec<bool>)> {
    if records.shape != Shape::Lines {
        return None;
    }
    let lines: Vec<String> = (0..records.len()).map(|i| records.line(i).to_lowercase()).collect();
    let lower = task.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let content = |w: &str| w.len() >= 3 && w.chars().all(|c| c.is_ascii_alphabetic()) && !STOP_WORDS.contains(&w);
    let mut best: Option<(usize, String, Vec<bool>)> = None;
    // A level named in Chinese (警告) is the word the log writes (`WARN`).
    for form in ZH_LEVELS.iter().filter(|(zh, _)| task.contains(zh)).flat_map(|(_, forms)| forms.iter()) {
        let flags: Vec<bool> = lines.iter().map(|l| holds_words(l, form)).collect();
        let kept = flags.iter().filter(|f| **f).count();
        if kept > 0 && kept < flags.len() && best.is_none() {
            best = Some((1, form.to_string(), flags));
        }
    }
    for n in (1..=3).rev() {
        for run in words.windows(n) {
            if !content(run[0]) || !content(run[n - 1]) {
                continue;
            }
            let phrase = run.join(" ");
            let mut forms = vec![phrase.clone()];
            if let Some(singular) = phrase.strip_suffix('s').filter(|s| n == 1 && s.len() >= 3) {
                forms.push(singular.to_string());
            }
            if n == 1 {
                forms.extend(level_forms(&phrase));
            }
            for form in forms {
                let flags: Vec<bool> = lines.iter().map(|l| holds_words(l, &form)).collect();
                let kept = flags.iter().filter(|f| **f).count();
                let better = best.as_ref().is_none_or(|(words, _, _)| n > *words);
                if kept > 0 && kept < flags.len() && better {
                    best = Some((n, form, flags));
                }
            }
        }
    }
    best.map(|(_, phrase, flags)| (phrase, flags))
}

/// Log levels as the task's words name them and as logs abbreviate them: asked how many
/// warnings there were, the lines say `WARN` (the engine counted every line in the time asked
/// and pressed the model's right 3 into 5).
const LEVELS: [(&str, &[&str]); 4] =
    [("warning", &["warn"]), ("error", &["err"]), ("critical", &["crit"]), ("information", &["info"])];

/// Log levels named in Chinese, with the words a log writes for them.
const ZH_LEVELS: [(&str, &[&str]); 4] = [
    ("警告", &["warn", "warning"]),
    ("错误", &["error", "err"]),
    ("报错", &["error", "err"]),
    ("严重", &["critical", "crit"]),
];

/// The abbreviations a log writes for the level `word` names (`warnings`: `warn`).
fn level_forms(word: &str) -> Vec<String> {
    let singular = word.strip_suffix('s').unwrap_or(word);
    LEVELS
        .iter()
        .filter(|(name, _)| *name == singular)
        .flat_map(|(_, forms)| forms.iter().map(|f| f.to_string()))
        .collect()
}

/// Whether a count asks for lines as such ("how many lines since 08:30", "多少行"), not for a
/// kind of them ("how many warnings since 08:30"): the lines in a time the task names are its
/// count only then, unless the task's word also told them apart.
pub(super) fn counts_lines(task: &str) -> bool {
    const GENERIC: [&str; 12] = [
        "line", "lines", "entry", "entries", "row", "rows", "record", "records", "event", "events", "message",
        "messages",
    ];
    const ENDS: [&str; 14] =
        ["are", "were", "is", "was", "have", "has", "had", "did", "do", "does", "in", "since", "after", "before"];
    let lower = task.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let after = words
        .windows(2)
        .position(|w| (w[0] == "how" && w[1] == "many") || (w[0] == "number" && w[1] == "of"))
        .map(|i| &words[i + 2..]);
    if let Some(after) = after {
        let noun: Vec<&str> = after.iter().take_while(|w| !ENDS.contains(w)).take(3).copied().collect();
        return noun.is_empty() || noun.iter().any(|w| GENERIC.contains(w));
    }
    // Chinese: 多少行, 几行, 行数; 多少条 of log lines, records, messages or events, or alone.
    if ["多少行", "几行", "行数"].iter().any(|p| task.contains(p)) {
        return true;
    }
    ["多少条", "几条", "条数"].iter().any(|p| {
        task.split(p).skip(1).any(|rest| {
            let rest = rest.trim_start();
            ["日志", "记录", "消息", "事件"].iter().any(|n| rest.starts_with(n))
                || rest.chars().next().is_none_or(|c| !('\u{4e00}'..='\u{9fff}').contains(&c))
        })
    })
}

/// Whether `line` holds `phrase` with no letter or digit right before or after it.
pub(super) fn holds_words(line: &str, phrase: &str) -> bool {
    line.match_indices(phrase).any(|(at, _)| {
        let before = line[..at].chars().next_back().is_none_or(|c| !c.is_alphanumeric());
        let after = line[at + phrase.len()..].chars().next().is_none_or(|c| !c.is_alphanumeric());
        before && after
    })
}

/// The string literals of Python `code` (quoted with `'` or `"`, two characters or more, at most
/// five) that occur nowhere in `shown`.
pub(super) fn absent_literals(code: &str, shown: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for literal in python::literals(code) {
        if literal.chars().count() >= 2 && !shown.contains(&literal) && !out.contains(&literal) && out.len() < 5 {
            out.push(literal);
        }
    }
    out
}
/// Units of measure a task counts in, by the words that name them, with the ways a line writes
/// them after a number.
const UNITS: [(&[&str], &[&str]); 12] = [
    (&["seconds", "second", "secs"], &["s", "sec", "secs", "second", "seconds"]),
    (&["minutes", "minute", "mins"], &["m", "min", "mins", "minute", "minutes"]),
    (&["hours", "hour", "hrs"], &["h", "hr", "hrs", "hour", "hours"]),
    (&["milliseconds", "ms"], &["ms", "millisecond", "milliseconds"]),
    (&["bytes"], &["b", "byte", "bytes"]),
    (&["kilobytes", "kb"], &["kb", "kib", "k"]),
    (&["megabytes", "mb"], &["mb", "mib", "m"]),
    (&["gigabytes", "gb"], &["gb", "gib", "g"]),
    (&["dollars", "usd"], &["usd", "dollars", "$"]),
    (&["euros", "eur"], &["eur", "euros", "€"]),
    (&["kilometers", "kilometres", "km"], &["km", "kilometers", "kilometres"]),
    (&["points", "pts"], &["pts", "points", "pt"]),
];

/// Whether `word` names a unit of measure (`seconds`, `bytes`, `dollars`).
pub(super) fn is_unit(word: &str) -> bool {
    UNITS.iter().any(|(names, _)| names.contains(&word))
}

/// Whether `word`, the word after "how many", is a unit that more than half of `lines` (at
/// least two) write right after a number: "how many seconds in all the builds took" over lines
/// that say `duration=184s` asks for their total, which the 1.5B model added to 750 for 660
/// (bench/README.md, stop 43). A count of things ("how many errors") names no unit.
pub(super) fn measures(word: &str, lines: &[String]) -> bool {
    let Some((_, suffixes)) = UNITS.iter().find(|(names, _)| names.contains(&word)) else { return false };
    let measured = |line: &String| {
        let lower = line.to_lowercase();
        let chars: Vec<char> = lower.chars().collect();
        (0..chars.len()).any(|at| {
            // A number ends at `at`, and a unit follows it (after one space at most), alone.
            if !chars[at].is_ascii_digit() || chars.get(at + 1).is_some_and(|c| c.is_ascii_digit() || *c == '.') {
                return false;
            }
            let rest: String = chars[at + 1..].iter().collect();
            let rest = rest.strip_prefix(' ').unwrap_or(&rest);
            let before: String = chars[..at].iter().rev().take_while(|c| !c.is_whitespace()).collect();
            suffixes.iter().any(|u| {
                let after = rest.strip_prefix(u).map(|r| r.chars().next().is_none_or(|c| !c.is_alphanumeric()));
                after == Some(true) || (*u == "$" && before.ends_with('$'))
            })
        })
    };
    lines.len() >= 2 && lines.iter().filter(|l| measured(l)).count() * 2 > lines.len()
}

/// For "the slowest" or "the fastest" over records of durations (lines that write `ms`, `s` or
/// minutes after a number; fields named for a time: `latency`, `duration`, `elapsed`), the ask
/// for the most time (slowest) or the least (fastest); `None` otherwise. "Slowest" is a least
/// of a speed and a most of a time: over `GET /v2/carts 410ms` the slowest is the largest.
pub(super) fn by_duration(task: &str, records: &Records<'_>) -> Option<super::Ask> {
    let lower = task.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).collect();
    let slow = words.contains(&"slowest") || task.contains("最慢");
    let fast = words.contains(&"fastest") || task.contains("最快");
    if slow == fast {
        return None;
    }
    let timed = match records.values.first() {
        Some(serde_json::Value::Object(first)) => first.keys().any(|k| {
            let k = k.to_lowercase();
            let named =
                ["latency", "duration", "elapsed", "took", "_ms", "seconds", "secs"].iter().any(|t| k.contains(t));
            // `response_time`, `time_ms`; not `timestamp`, when a record happened.
            named || k == "time" || k.ends_with("_time") || k.starts_with("time_")
        }),
        _ => {
            let lines: Vec<String> = (0..records.len()).map(|i| records.line(i)).collect();
            ["ms", "seconds", "minutes"].iter().any(|u| measures(u, &lines))
        }
    };
    timed.then_some(if slow { super::Ask::Most } else { super::Ask::Least })
}
