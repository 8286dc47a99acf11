//! The lines of one file that another lacks: a task that asks which items of one list another
//! lacks ("Which hosts of roster.md does seen.log never mention?"), over
//! two files the turn read whole, each a list of lines. The engine compares the lines (ignoring
//! case and the white space around them) and the answer request says which they are.
//!
//! Why: shown both lists, the 1.5B model named `celery` where `sqlalchemy` and `celery` are
//! missing (bench/README.md, stop 38). A set difference is a fact the engine can state; the
//! model words the answer.
//!
//! The same for two files of settings (`KEY=value` or `key: value` on every line) and a task that
//! asks what differs between them ("What is set differently in dev.env and live.env?"):
//! the engine names the keys whose values differ, with both values, and the keys only one file
//! sets. Shown both files, the 1.5B model named all four keys where two differ (stop 40).
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

/// Words that ask what differs between two things.
const DIFFER: [&str; 6] = ["differ", "different", "difference", "differences", "changed between", "compare"];
const ZH_DIFFER: [&str; 4] = ["不同", "区别", "差异", "不一样"];

/// The note for the answer request, when `task` asks which lines of one file the turn read are
/// not in the other, or which settings two files set differently, as the module says; `None`
/// otherwise.
pub(super) fn note(task: &str, calls: &[CallRecord], lang: Language) -> Option<String> {
    absent_note(task, calls, lang).or_else(|| settings_note(task, calls, lang))
}

/// The settings of a file: `(key, value)` for each line, trimmed, without empty ones and `#`
/// or `;` comments or `[section]` lines; `None` when a line is not `KEY=value` or `key: value`
/// with a key of one word, or there are fewer than two.
fn settings(text: &str) -> Option<Vec<(&str, &str)>> {
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with(['#', ';']) || (line.starts_with('[') && line.ends_with(']')) {
            continue;
        }
        let (key, value) = line.split_once('=').or_else(|| line.split_once(": "))?;
        let key = key.trim().trim_start_matches("export ").trim();
        if key.is_empty() || key.contains(char::is_whitespace) {
            return None;
        }
        out.push((key, value.trim().trim_matches(['"', '\''])));
    }
    (2..=MAX_LINES).contains(&out.len()).then_some(out)
}

/// The settings that the two files the turn read whole set differently, for a task that asks what
/// differs: the keys whose values differ (both values), and the keys only one file sets.
fn settings_note(task: &str, calls: &[CallRecord], lang: Language) -> Option<String> {
    let lower = task.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).collect();
    let asks = DIFFER.iter().any(|w| if w.contains(' ') { lower.contains(w) } else { words.contains(w) })
        || ZH_DIFFER.iter().any(|w| lower.contains(w));
    if !asks {
        return None;
    }
    let reads = whole_reads(calls);
    let [(a_path, a_text), (b_path, b_text)] = &reads[..] else { return None };
    let (a, b) = (settings(a_text)?, settings(b_text)?);
    let value = |list: &[(&str, &str)], key: &str| list.iter().find(|(k, _)| *k == key).map(|(_, v)| v.to_string());
    let mut differ = Vec::new();
    let mut only_a = Vec::new();
    for (key, v) in &a {
        match value(&b, key) {
            Some(w) if w != *v => differ.push(format!("{key} (`{v}` / `{w}`)")),
            Some(_) => {}
            None => only_a.push(key.to_string()),
        }
    }
    let only_b: Vec<String> = b.iter().filter(|(k, _)| value(&a, k).is_none()).map(|(k, _)| k.to_string()).collect();
    let list = |v: &[String]| v.iter().take(MAX_NAMED).cloned().collect::<Vec<_>>().join(", ");
    let (a, b) = (a_path.as_str(), b_path.as_str());
    let (same, differ_words, only, rest, sep, open, close) = match lang {
        Language::En => (
            format!("No setting that both `{a}` and `{b}` have differs"),
            format!("The settings whose values differ (`{a}` / `{b}`): "),
            ["only in `", "`: "],
            ". Every other setting is the same in both.",
            "; ",
            "(",
            ")",
        ),
        Language::Zh => (
            format!("`{a}` 和 `{b}` 共有的设置没有不同的"),
            format!("值不同的设置（`{a}` / `{b}`）："),
            ["只在 `", "` 中："],
            "。其他设置两边都一样。",
            "；",
            "（",
            "）",
        ),
    };
    let mut parts = vec![if differ.is_empty() { same } else { format!("{differ_words}{}", list(&differ)) }];
    for (path, keys) in [(a, &only_a), (b, &only_b)].into_iter().filter(|(_, k)| !k.is_empty()) {
        parts.push(format!("{}{path}{}{}", only[0], only[1], list(keys)));
    }
    Some(format!("{open}{}{rest}{close}", parts.join(sep)))
}

/// Which lines of one file the other lacks, for a task that asks so.
fn absent_note(task: &str, calls: &[CallRecord], lang: Language) -> Option<String> {
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
            read("wanted.txt", "requests\nflask\nsqlalchemy\ncelery\nredis\n"),
            read("present.txt", "Flask\nrequests\n\nredis\n"),
        ];
        let task = "Which tools listed in wanted.txt are not in present.txt?";
        assert_eq!(
            note(task, &calls, Language::En).as_deref(),
            Some("(The lines of `wanted.txt` that `present.txt` does not have: sqlalchemy, celery. 2 of 5.)")
        );
        // Read the other way round, named the other way round.
        let calls = [calls[1].clone(), calls[0].clone()];
        assert_eq!(
            note("Which tools in present.txt are not in wanted.txt?", &calls, Language::En).as_deref(),
            Some("(Every line of `present.txt` is also in `wanted.txt`.)")
        );
        assert!(note("wanted.txt 里哪些包不在 present.txt 中？", &calls, Language::Zh).unwrap().contains("sqlalchemy"));
    }

    #[test]
    fn the_settings_two_files_set_differently_are_named() {
        let calls = [
            read("env/dev.env", "DB_HOST=db-staging\nDB_POOL=10\nLOG_LEVEL=debug\nCACHE_TTL=60\n"),
            read("env/live.env", "# prod\nDB_HOST=db-prod\nDB_POOL=10\nLOG_LEVEL=info\nCACHE_TTL=60\nSENTRY=on\n"),
        ];
        let task = "What settings are different between env/dev.env and env/live.env?";
        assert_eq!(
            note(task, &calls, Language::En).as_deref(),
            Some(
                "(The settings whose values differ (`env/dev.env` / `env/live.env`): DB_HOST (`db-staging` / `db-prod`), LOG_LEVEL (`debug` / `info`); only in `env/live.env`: SENTRY. Every other setting is the same in both.)"
            )
        );
        assert!(note("env/dev.env 和 env/live.env 有哪些不同？", &calls, Language::Zh).unwrap().contains("LOG_LEVEL"));
        let yaml = [read("a.yaml", "port: 80\nhost: a\n"), read("b.yaml", "port: 80\nhost: a\n")];
        assert_eq!(
            note("What is different between a.yaml and b.yaml?", &yaml, Language::En).as_deref(),
            Some("(No setting that both `a.yaml` and `b.yaml` have differs. Every other setting is the same in both.)")
        );
        assert_eq!(
            note("Summarize env/dev.env and env/live.env.", &calls, Language::En),
            None,
            "no word of difference"
        );
        let prose = [read("a.md", "This is prose = not settings\nmore\n"), read("b.md", "x=1\ny=2\n")];
        assert_eq!(note("What differs between a.md and b.md?", &prose, Language::En), None);
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
