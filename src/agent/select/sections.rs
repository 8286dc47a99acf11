//! The newest section of a document, for a task that asks about the latest one: "what is new
//! in the latest version per HISTORY.md" over sections headed `## 2.7.0 -
//! 2027-02-14`, `## 2.6.5 - ...`. The 1.5B model listed the changes of every release, in one of
//! two runs of the same request (bench/README.md, stop 41). The engine reads the headings: when
//! two or more at one level carry a date (`YYYY-MM-DD`) or, failing that, a version (`3.4.0`),
//! the answer request shows only the section whose heading has the greatest, and says so. A
//! heading without one (`## Unreleased`) is no release and is passed over.

use std::sync::LazyLock;

use regex::Regex;

use super::super::events::{CallRecord, ToolStatus};

static DATE: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"\b(\d{4})-(\d{2})-(\d{2})\b").ok());
static VERSION: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"\bv?(\d+(?:\.\d+)+)\b").ok());

/// What orders the headings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum By {
    Date,
    Version,
}

/// The newest section of one document the turn read.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Newest {
    /// Which call's result it is from (an index of the turn's calls).
    pub call: usize,
    /// The section: its heading line and the lines under it.
    pub section: String,
    /// How many sections the headings were chosen from, and by what.
    pub of: usize,
    pub by: By,
}

/// Whether `task` asks about the newest of something (latest, newest, most recent, the last).
pub(super) fn asks_newest(task: &str) -> bool {
    let lower = task.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    words.iter().any(|w| ["latest", "newest", "last"].contains(w))
        || lower.contains("most recent")
        || ["最新", "最近一次", "最后一次"].iter().any(|w| lower.contains(w))
}

/// The newest section of the one document (a file read whole, a page) among the turn's
/// successful calls, as the module says; `None` when there is not exactly one such document or
/// its headings do not order.
pub(super) fn newest(calls: &[CallRecord]) -> Option<Newest> {
    let documents: Vec<(usize, &str)> = calls
        .iter()
        .enumerate()
        .filter(|(_, c)| c.status == ToolStatus::Success && ["file_read", "http_request"].contains(&c.tool.as_str()))
        .map(|(i, c)| {
            let text = match crate::tools::read_range(&c.result) {
                Some(_) => crate::tools::without_range(&c.result),
                None if c.tool == "http_request" => crate::tools::http_body(&c.result),
                None => c.result.as_str(),
            };
            (i, text)
        })
        .collect();
    let [(call, text)] = documents[..] else { return None };
    let lines: Vec<&str> = text.lines().collect();
    let level = |l: &str| {
        let hashes = l.chars().take_while(|c| *c == '#').count();
        (hashes > 0 && l[hashes..].starts_with(' ')).then_some(hashes)
    };
    // The level with the most keyed headings: by date where any level has two, else by version.
    let keyed = |by: By, at: usize| match by {
        By::Date => DATE.as_ref()?.captures(lines[at]).map(|c| Key::Date(c[0].to_string())),
        By::Version => VERSION.as_ref()?.captures(lines[at]).map(|c| Key::Version(version(&c[1]))),
    };
    // The level, the order, and the keyed headings (line and key) of the best so far.
    type Headings = (usize, By, Vec<(usize, Key)>);
    let mut best: Option<Headings> = None;
    for by in [By::Date, By::Version] {
        for depth in 1..=6 {
            let heads: Vec<(usize, Key)> = (0..lines.len())
                .filter(|&at| level(lines[at]) == Some(depth))
                .filter_map(|at| keyed(by, at).map(|k| (at, k)))
                .collect();
            if heads.len() >= 2 && best.as_ref().is_none_or(|(_, _, h)| heads.len() > h.len()) {
                best = Some((depth, by, heads));
            }
        }
        if best.is_some() {
            break;
        }
    }
    let (depth, by, heads) = best?;
    let (start, _) = heads.iter().max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))?;
    let end = (start + 1..lines.len()).find(|&at| level(lines[at]).is_some_and(|d| d <= depth)).unwrap_or(lines.len());
    let section = lines[*start..end].join("\n").trim_end().to_string();
    Some(Newest { call, section, of: heads.len(), by })
}

/// A heading's key: a date as written (ISO dates order as text), or a version's numbers.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Date(String),
    Version(Vec<u64>),
}

fn version(text: &str) -> Vec<u64> {
    text.split('.').map(|n| n.parse().unwrap_or(0)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &str, text: &str) -> CallRecord {
        CallRecord {
            tool: "file_read".into(),
            arguments: serde_json::json!({ "path": path }).to_string(),
            status: ToolStatus::Success,
            result: text.into(),
        }
    }

    const CHANGELOG: &str = "# Changelog\n## Unreleased\n- Work in progress\n## 2.6.5 - 2027-01-20\n- Fix session expiry\n## 2.7.0 - 2027-02-14\n- Add dark mode\n- Fix CSV export\n## 2.6.4 - 2027-01-03\n- Security fix\n";

    #[test]
    fn the_section_whose_heading_has_the_greatest_date_is_the_newest() {
        let n = newest(&[read("CHANGELOG.md", CHANGELOG)]).unwrap();
        assert_eq!(n.section, "## 2.7.0 - 2027-02-14\n- Add dark mode\n- Fix CSV export");
        assert_eq!((n.of, n.by), (3, By::Date), "Unreleased has no date");
        let versions = "# Notes\n## v1.9.0\n- a\n## v1.10.0\n- b\n### Details\n- c\n## v1.2.0\n- d\n";
        let n = newest(&[read("NOTES.md", versions)]).unwrap();
        assert_eq!(n.section, "## v1.10.0\n- b\n### Details\n- c", "1.10 is after 1.9; a deeper heading belongs to it");
        assert_eq!(n.by, By::Version);
    }

    #[test]
    fn a_document_without_ordered_headings_or_two_documents_have_no_newest() {
        assert_eq!(newest(&[read("a.md", "# A\n## Intro\ntext\n## Usage\ntext\n")]), None);
        assert_eq!(newest(&[read("a.md", "## 2026-11-01\nx\n")]), None, "one heading");
        assert_eq!(newest(&[read("a.md", CHANGELOG), read("b.md", CHANGELOG)]), None);
    }

    #[test]
    fn a_task_about_the_latest_is_told_from_one_about_all() {
        assert!(asks_newest("What is new in the latest version per HISTORY.md?"));
        assert!(asks_newest("What was in the most recent meeting?"));
        assert!(asks_newest("CHANGELOG.md 里最新版本改了什么？"));
        assert!(!asks_newest("What changed in release 2.6.5?"));
    }
}
