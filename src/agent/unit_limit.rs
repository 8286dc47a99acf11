//! A limit with a unit the task states over a quantity it names, compared by the engine before
//! a silent reply is believed: "warn me when a volume has under 5G available", "if p95 latency goes
//! above 300 ms". The 1.5B model answered `NO_REPLY` beside `/data ... 1.2G` and
//! `p99=950ms`, and the checks it wrote tested a header (`if 'Size' in line`) or parsed the line
//! as JSON (bench/README.md, stop 44). When a value the results give the named quantity crosses
//! the limit, the silence is not believed and the report is asked from the lines that hold it.
//!
//! Which value is the named quantity, without guessing: a `key=value` or `key: value` whose key
//! is a word of the task's sentence (`p99`), or a cell of a table column whose header is one
//! (`Avail` of "available": a header of three letters or more that starts the task's word). Only
//! values written with a unit of the limit's kind (sizes `K`/`M`/`G`/`T`, `B` or `iB`, as `df -h`
//! writes them, in powers of 1024; times `ms`, `s`, `min`, `h`): a bare number (`free -m`'s
//! columns) could be in any unit and is left to the model's own check. Only in the direction of
//! a report, as `threshold.rs` does for percentages: nothing crossing proves nothing.

use std::sync::LazyLock;

use regex::Regex;

use super::threshold::{ABOVE, AT_LEAST, AT_MOST, BELOW};

/// A limit of the task with a unit: the value in the unit's base (bytes, milliseconds), the
/// side of it the task asks to report, and the words of its sentence.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct UnitLimit {
    pub above: bool,
    pub inclusive: bool,
    pub base: f64,
    pub kind: Kind,
    /// The sentence's words (lowercase) that may name the quantity.
    pub subject: Vec<String>,
    /// The task's words that state the limit, for the run's notes ("less than 2g").
    pub words: String,
    /// The limit as the task writes it (`2g`, `1000`).
    pub written: String,
}

/// What a unit measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Size,
    Time,
    /// A number written without a unit (`depth: 1250`), compared only with another.
    Plain,
}

/// A number and its unit: `2G`, `800 ms`, `1.2 GiB`, `950ms`.
static AMOUNT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)^(\d+(?:\.\d+)?)\s?(ms|msec|milliseconds?|s|secs?|seconds?|min|mins|minutes?|h|hrs?|hours?|b|bytes|[kmgt]i?b?)$").ok()
});

/// A number and its unit, or a number alone, within a sentence.
static IN_TEXT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)(\d[\d,]*(?:\.\d+)?)(?:\s?(ms|msec|milliseconds?|s|secs?|seconds?|min|mins|minutes?|h|hrs?|hours?|b|bytes|[kmgt]i?b?)\b)?").ok()
});

/// `key=value`, `key: value` or `"key": value`, the value a number with or without a unit.
static PAIR: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r#"(?i)\b([a-z][a-z0-9_]*)"?\s*[=:]\s*"?(\d+(?:\.\d+)?(?:\s?(?:ms|msec|milliseconds?|s|secs?|seconds?|min|mins|minutes?|h|hrs?|hours?|b|bytes|[kmgt]i?b?)\b)?)"#).ok()
});

/// The value of `amount` (`2G`, `800 ms`, `1250`) in its kind's base unit.
pub(super) fn amount(text: &str) -> Option<(f64, Kind)> {
    if let Ok(n) = text.trim().replace(',', "").parse::<f64>()
        && text.trim().starts_with(|c: char| c.is_ascii_digit())
    {
        return Some((n, Kind::Plain));
    }
    let c = AMOUNT.as_ref()?.captures(text.trim())?;
    let n: f64 = c.get(1)?.as_str().parse().ok()?;
    let unit = c.get(2)?.as_str().to_lowercase();
    let size = |p: i32| Some((n * 1024f64.powi(p), Kind::Size));
    match unit.as_str() {
        "ms" | "msec" | "millisecond" | "milliseconds" => Some((n, Kind::Time)),
        "s" | "sec" | "secs" | "second" | "seconds" => Some((n * 1e3, Kind::Time)),
        "min" | "mins" | "minute" | "minutes" => Some((n * 6e4, Kind::Time)),
        "h" | "hr" | "hrs" | "hour" | "hours" => Some((n * 3.6e6, Kind::Time)),
        "b" | "bytes" => size(0),
        u => match u.chars().next() {
            Some('k') => size(1),
            Some('m') => size(2),
            Some('g') => size(3),
            Some('t') => size(4),
            _ => None,
        },
    }
}

/// Words that name no quantity.
const NOT_SUBJECT: [&str; 22] = [
    "the", "any", "all", "and", "than", "less", "more", "over", "under", "above", "below", "alert", "tell", "warn",
    "check", "look", "reply", "value", "has", "have", "is", "if",
];

/// The one limit with a unit the sentences of the task state, or `None` when they state none,
/// or several that differ.
pub(super) fn limit<'a>(sentences: impl Iterator<Item = &'a str>) -> Option<UnitLimit> {
    let re = IN_TEXT.as_ref()?;
    let mut found: Vec<UnitLimit> = Vec::new();
    for sentence in sentences {
        let lower = sentence.to_lowercase();
        for c in re.captures_iter(&lower) {
            let Some(whole) = c.get(0) else { continue };
            // A number glued to a word is part of a name (`p99`, `v2`).
            if lower[..whole.start()].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '.') {
                continue;
            }
            // A percentage is `threshold.rs`'s; a clock time, a date or a version is no limit.
            let mut rest = lower[whole.end()..].chars();
            let (next, then) = (rest.next(), rest.next());
            let joined = matches!(next, Some(':' | '-' | '/' | '.')) && then.is_some_and(|c| c.is_ascii_digit());
            if matches!(next, Some('%' | '％')) || joined {
                continue;
            }
            let Some((base, kind)) = amount(whole.as_str()) else { continue };
            let before = lower[..whole.start()].trim_end();
            let after = lower[whole.end()..].trim_start();
            let ends = |w: &&str| {
                before.ends_with(*w)
                    && (!w.starts_with(|c: char| c.is_ascii_alphabetic())
                        || before[..before.len() - w.len()].chars().next_back().is_none_or(|c| !c.is_alphanumeric()))
            };
            let (above, inclusive) = if AT_LEAST.iter().any(ends) {
                (true, true)
            } else if AT_MOST.iter().any(ends) {
                (false, true)
            } else if ABOVE.iter().any(ends) {
                (true, after.starts_with("or more"))
            } else if BELOW.iter().any(ends) {
                (false, after.starts_with("or less"))
            } else {
                continue;
            };
            let subject = lower
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| w.len() >= 2 && !NOT_SUBJECT.contains(w) && amount(w).is_none())
                .map(str::to_string)
                .collect();
            let head: Vec<&str> = before.split_whitespace().collect();
            let words = format!("{} {}", head[head.len().saturating_sub(4)..].join(" "), whole.as_str());
            let written = whole.as_str().to_string();
            found.push(UnitLimit { above, inclusive, base, kind, subject, words, written });
        }
    }
    let first = found.first()?.clone();
    found
        .iter()
        .all(|l| {
            l.above == first.above && l.inclusive == first.inclusive && l.base == first.base && l.kind == first.kind
        })
        .then_some(first)
}

impl UnitLimit {
    fn crossed_by(&self, text: &str) -> bool {
        let Some((value, kind)) = amount(text) else { return false };
        kind == self.kind
            && match (self.above, self.inclusive) {
                (true, true) => value >= self.base,
                (true, false) => value > self.base,
                (false, true) => value <= self.base,
                (false, false) => value < self.base,
            }
    }

    /// Whether `name` (a key or a column header) is a word of the task's sentence, or starts
    /// one with three letters or more (`avail` of `available`).
    fn names(&self, name: &str) -> bool {
        let name: String = name.to_lowercase().chars().filter(|c| c.is_alphanumeric()).collect();
        name.len() >= 2
            && self
                .subject
                .iter()
                .any(|w| *w == name || (name.len() >= 3 && w.len() > name.len() && w.starts_with(&name)))
    }
}

/// The values of `results` that the task's named quantity takes and that cross `limit`, as they
/// are written (`1.2G`, `950ms`), each once.
pub(super) fn crossing(limit: &UnitLimit, results: &[&str]) -> Vec<String> {
    values(limit, results).into_iter().filter(|v| limit.crossed_by(v)).collect()
}

/// Whether `value` (as a result writes it) is above, below or at the limit: `Greater` above.
pub(super) fn against(limit: &UnitLimit, value: &str) -> Option<std::cmp::Ordering> {
    let (v, kind) = amount(value)?;
    (kind == limit.kind).then(|| v.total_cmp(&limit.base))
}

/// The values of `results` that the task's named quantity takes, in the limit's kind, as they
/// are written, each once.
pub(super) fn values(limit: &UnitLimit, results: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |written: &str| {
        let kind = amount(written).map(|(_, k)| k);
        if kind == Some(limit.kind) && !out.iter().any(|o| o == written) {
            out.push(written.to_string());
        }
    };
    for result in results {
        if let Some(pair) = PAIR.as_ref() {
            for c in pair.captures_iter(result) {
                if let (Some(key), Some(value)) = (c.get(1), c.get(2))
                    && limit.names(key.as_str())
                {
                    add(value.as_str());
                }
            }
        }
        for cell in table_cells(limit, result) {
            add(&cell);
        }
    }
    out
}

/// The cells of the columns of `result`'s tables whose header the task names: a header line of
/// words and no number, then the lines below it, their cells matched to the header's from the
/// left, or from the right when a line has more cells (a row label the header does not name).
fn table_cells(limit: &UnitLimit, result: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut header: Option<Vec<&str>> = None;
    for line in result.lines() {
        let cells: Vec<&str> = line.split_whitespace().collect();
        let is_header = cells.len() >= 3 && cells.iter().all(|c| !c.chars().any(|ch| ch.is_ascii_digit()));
        if is_header {
            header = Some(cells);
            continue;
        }
        let Some(names) = &header else { continue };
        let offset = cells.len().saturating_sub(names.len());
        for (i, name) in names.iter().enumerate() {
            if limit.names(name)
                && let Some(cell) = cells.get(i + offset)
            {
                out.push((*cell).to_string());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit_of(task: &str) -> Option<UnitLimit> {
        limit(std::iter::once(task))
    }

    const DF: &str = "Filesystem      Size  Avail Mounted on\n/dev/nvme0n1p2  100G   36G  /\n\
                      /dev/nvme1n1p1  500G  1.6G  /srv\n/dev/nvme2n1p1   40G   18G  /home\n";

    #[test]
    fn a_limit_with_a_unit_is_read_with_the_words_of_its_sentence() {
        let l = limit_of("Read disks.txt; warn me if a volume has less than 3G available.").unwrap();
        assert_eq!((l.above, l.inclusive, l.base, l.kind), (false, false, 3.0 * 1024f64.powi(3), Kind::Size));
        assert!(l.subject.contains(&"available".to_string()), "{:?}", l.subject);
        assert_eq!(l.words, "volume has less than 3g");
        let l = limit_of("If p99 latency rises above 700 ms, report it.").unwrap();
        assert_eq!((l.above, l.base, l.kind), (true, 700.0, Kind::Time));
        assert!(l.subject.contains(&"p99".to_string()));
        assert_eq!(limit_of("Say how long the build took (about 5 min)."), None, "no comparison");
        assert_eq!(limit_of("Report disks above 90%."), None, "a percentage is threshold.rs's");
        assert_eq!(limit_of("Warn if any job took more than 10 s or used more than 2G."), None, "two limits");
    }

    #[test]
    fn a_named_column_or_key_that_crosses_the_limit_is_found_as_written() {
        let l = limit_of("Warn me if a volume has less than 3G available.").unwrap();
        assert_eq!(crossing(&l, &[DF]), ["1.6G"]);
        assert!(crossing(&l, &[&DF.replace("1.6G", "3.4G")]).is_empty());
        let p99 = limit_of("If p99 latency rises above 700 ms, report it.").unwrap();
        assert_eq!(crossing(&p99, &["path=/v1/search p50=150ms p95=520ms p99=880ms"]), ["880ms"]);
        assert!(crossing(&p99, &["path=/v1/search p50=90ms p95=240ms p99=390ms"]).is_empty());
        assert_eq!(crossing(&p99, &["p99: 1.2s\n"]), ["1.2s"], "seconds against milliseconds");
        // A column in bare numbers (`free -m`) has no unit: left to the model's own check.
        let mem = limit_of("Warn me if the available memory is less than 600 MB.").unwrap();
        let free = "        total   used   available\nMem:    15906   9821   452\n";
        assert!(crossing(&mem, &[free]).is_empty());
        // A number without a unit against a limit without one: a JSON key, a `key=value`.
        let depth = limit_of("Look in backlog.json and say if the backlog depth is over 800.").unwrap();
        assert_eq!((depth.base, depth.kind), (800.0, Kind::Plain));
        assert_eq!(crossing(&depth, &["{\"queue\": \"emails\", \"depth\": 1250, \"consumers\": 3}"]), ["1250"]);
        let attempts = limit_of("Name every task that took more than 4 attempts.").unwrap();
        assert!(crossing(&attempts, &["task=export attempt=2 ok\ntask=index attempt=1 ok\n"]).is_empty());
        assert_eq!(crossing(&attempts, &["task=export attempt=6 failed\n"]), ["6"]);
        assert_eq!(limit_of("Tell me about the errors after 14:00."), None, "a clock time");
        // Another quantity of the same kind is not the named one.
        assert!(crossing(&l, &["Device Size Used\n/dev/vdb1 1.0G 0.9G\n"]).is_empty());
    }

    #[test]
    fn amounts_are_read_in_their_kinds_base() {
        assert_eq!(amount("2G"), Some((2.0 * 1024f64.powi(3), Kind::Size)));
        assert_eq!(amount("1.5 GiB"), Some((1.5 * 1024f64.powi(3), Kind::Size)));
        assert_eq!(amount("512MB"), Some((512.0 * 1024f64.powi(2), Kind::Size)));
        assert_eq!(amount("950ms"), Some((950.0, Kind::Time)));
        assert_eq!(amount("2 min"), Some((120_000.0, Kind::Time)));
        assert_eq!(amount("99%"), None);
        assert_eq!(amount("/data"), None);
    }
}
