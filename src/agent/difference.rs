//! The lines of one file that another lacks: a task that asks which entries of one list are
//! not in another ("Which packages listed in requirements.txt are not in installed.txt?"), over
//! two files the turn read whole, each a list of lines. The engine compares the lines (ignoring
//! case and the white space around them) and the answer request says which they are.
//!
//! Why: shown both lists, the 1.5B model named `celery` where `sqlalchemy` and `celery` are
//! missing (bench/README.md, stop 38). A set difference is a fact the engine can state; the
//! model words the answer.
//!
//! The lines come from the files (already in the prompt); the note only repeats some of them.

use super::events::{CallRecord, ToolStatus};
use crate::config::Language;

/// The most lines either list may have to be compared: past that, a file is not a list a task
/// names entries of.
const MAX_LINES: usize = 200;
/// How many of the lines the note names at most.
const MAX_NAMED: usize = 30;

/// Words that say the entries asked about are absent from the list that follows them.
const ABSENT: [&str; 12] = [
    "not in ",
    "not listed in ",
    "not found in ",
    "not present in ",
    "not included in ",
    "missing from ",
    "absent from ",
    "aren't in ",
    "isn't in ",
    "don't appear in ",
    "do not appear in ",
    "not yet in ",
];
const ZH_ABSENT: [&str; 4] = ["不在", "没有出现在", "未出现在", "缺少"];

/// The note for the answer request, when `task` asks which lines of one file the turn read are
/// not in the other, as the module says; `None` otherwise.
pub(super) fn note(task: &str, calls: &[CallRecord], lang: Language) -> Option<String> {
    let lower = task.to_lowercase();
    let absent_at = ABSENT.iter().chain(ZH_ABSENT.iter()).filter_map(|w| lower.find(w).map(|i| i + w.len())).min()?;
    let reads = whole_reads(calls);
    let [(a_path, a_text), (b_path, b_text)] = &reads[..] else { return None };
    let at = |path: &str| lower.find(&path.to_lowercase());
    let (a_at, b_at) = (at(a_path)?, at(b_path)?);
    // The list the entries are absent from is the one named after the words that say so.
    let ((from, from_text), (other, other_text)) = match (a_at >= absent_at, b_at >= absent_at) {
        (true, false) => ((b_path, b_text), (a_path, a_text)),
        (false, true) => ((a_path, a_text), (b_path, b_text)),
        _ => return None,
    };
    let (entries, against) = (lines(from_text)?, lines(other_text)?);
    let (from, other) = (from.as_str(), other.as_str());
    let keys: Vec<String> = against.iter().map(|l| l.to_lowercase()).collect();
    let missing: Vec<&str> = entries.iter().filter(|l| !keys.contains(&l.to_lowercase())).copied().collect();
    let named = missing.iter().take(MAX_NAMED).copied().collect::<Vec<_>>().join(", ");
    let more =
        if missing.len() > MAX_NAMED { format!(" and {} more", missing.len() - MAX_NAMED) } else { String::new() };
    Some(match (lang, missing.is_empty()) {
        (Language::En, true) => format!("(Every line of `{from}` is also in `{other}`.)"),
        (Language::En, false) => format!(
            "(The lines of `{from}` that `{other}` does not have: {named}{more}. {} of {}.)",
            missing.len(),
            entries.len()
        ),
        (Language::Zh, true) => format!("（`{from}` 的每一行也都在 `{other}` 中。）"),
        (Language::Zh, false) => {
            format!("（`{from}` 的 {} 行中有 {} 行不在 `{other}` 里：{named}{more}。）", entries.len(), missing.len())
        }
    })
}

/// The files the turn's successful `file_read` calls showed whole, each path once, in order.
fn whole_reads(calls: &[CallRecord]) -> Vec<(String, &str)> {
    let mut out: Vec<(String, &str)> = Vec::new();
    for call in calls.iter().filter(|c| c.tool == "file_read" && c.status == ToolStatus::Success) {
        if crate::tools::read_range(&call.result).is_some() {
            continue;
        }
        let path = serde_json::from_str::<serde_json::Value>(&call.arguments)
            .ok()
            .and_then(|a| a.get("path").and_then(|p| p.as_str()).map(str::to_string));
        if let Some(path) = path.filter(|p| !out.iter().any(|(seen, _)| seen == p)) {
            out.push((path, &call.result));
        }
    }
    out
}

/// The entries of a list file: its lines, trimmed, without empty ones and `#` comments;
/// `None` for a file of more than [`MAX_LINES`] lines, one of none, or one whose lines are not
/// single entries (a line of more than eight words is prose).
fn lines(text: &str) -> Option<Vec<&str>> {
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
    let list = !lines.is_empty() && lines.len() <= MAX_LINES && lines.iter().all(|l| l.split_whitespace().count() <= 8);
    list.then_some(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &str, result: &str) -> CallRecord {
        CallRecord {
            tool: "file_read".into(),
            arguments: serde_json::json!({ "path": path }).to_string(),
            status: ToolStatus::Success,
            result: result.into(),
        }
    }

    #[test]
    fn the_lines_of_one_list_the_other_lacks_are_named() {
        let calls = [
            read("requirements.txt", "requests\nflask\nsqlalchemy\ncelery\nredis\n"),
            read("installed.txt", "Flask\nrequests\n\nredis\n"),
        ];
        let task = "Which packages listed in requirements.txt are not in installed.txt?";
        assert_eq!(
            note(task, &calls, Language::En).as_deref(),
            Some("(The lines of `requirements.txt` that `installed.txt` does not have: sqlalchemy, celery. 2 of 5.)")
        );
        // Read the other way round, named the other way round.
        let calls = [calls[1].clone(), calls[0].clone()];
        assert_eq!(
            note("Which packages in installed.txt are not in requirements.txt?", &calls, Language::En).as_deref(),
            Some("(Every line of `installed.txt` is also in `requirements.txt`.)")
        );
        assert!(
            note("requirements.txt 里哪些包不在 installed.txt 中？", &calls, Language::Zh)
                .unwrap()
                .contains("sqlalchemy")
        );
    }

    #[test]
    fn other_tasks_and_other_results_get_no_note() {
        let calls = [read("a.txt", "x\ny\n"), read("b.txt", "x\n")];
        assert_eq!(note("Compare a.txt and b.txt.", &calls, Language::En), None, "no words of absence");
        assert_eq!(note("Which lines of a.txt are not in the archive?", &calls, Language::En), None, "b.txt unnamed");
        assert_eq!(note("Which lines are not in a.txt or b.txt?", &calls, Language::En), None, "both after the words");
        let task = "Which packages are missing from a.txt but listed in b.txt?";
        assert_eq!(note(task, &calls, Language::En), None, "which list is which is not told by the order");
        let one = [read("a.txt", "x\ny\n")];
        assert_eq!(note("Which lines of a.txt are not in b.txt?", &one, Language::En), None, "one file read");
        let part = [read("a.txt", "x\n(lines 1-1 of 2)"), read("b.txt", "x\n")];
        assert_eq!(note("Which lines of a.txt are not in b.txt?", &part, Language::En), None, "a part is no list");
        let prose =
            [read("a.txt", "This is a long sentence of prose that is not a list of entries.\n"), read("b.txt", "x\n")];
        assert_eq!(note("Which lines of a.txt are not in b.txt?", &prose, Language::En), None);
    }
}
