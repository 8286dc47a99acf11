//! An answer whose number for what the task asks about is not the one this run read. Asked for
//! the count of one item in a stock file and for the change from the previous check:
//! on its second run the 1.5B model read `bolts: 35`, recalled its earlier answer, and
//! answered "We have 40 bolts. We have 5 bolts more than the last time we checked."
//! (bench/README.md, stop 47). When a word of the task is given one number by this run's reads
//! (`bolts: 35`, `bolts=35`; a file, a command or a page, not the memory), and the turn's
//! answer gives that word numbers (`40 bolts`, `bolts: 40`) none of which is it, the answer
//! is asked from the evidence instead, where the reads and what was remembered stand apart. A
//! `memory_store` of such a content is not run (`holds.rs`): the model had stored "We have 40
//! bolts." over its store of `bolts: 35`, and the next run would have compared with 40.

use super::events::{CallRecord, ToolStatus};

/// The tools whose results are this run's reads of the world (memory is what earlier runs said).
const READS: [&str; 3] = ["file_read", "shell", "http_request"];

/// Whether `answer` gives a word of `task` numbers, none of them the one number this run's
/// reads (`calls`) give that word.
pub(super) fn contradicted(task: &str, calls: &[CallRecord], answer: &str) -> bool {
    contradiction(task, calls, answer).is_some()
}

/// The word of `task` and the one number this run's reads give it, when `text` gives that word
/// only other numbers (see [`contradicted`]).
pub(super) fn contradiction(task: &str, calls: &[CallRecord], text: &str) -> Option<(String, String)> {
    let subjects: Vec<String> =
        words(task).filter(|w| w.chars().count() >= 3 && w.chars().all(char::is_alphabetic)).collect();
    let reads: Vec<&str> = calls
        .iter()
        .filter(|c| c.status == ToolStatus::Success && READS.contains(&c.tool.as_str()))
        .map(|c| c.result.as_str())
        .collect();
    subjects.iter().find_map(|subject| {
        let mut read: Vec<String> = reads.iter().flat_map(|r| labelled(r, subject)).collect();
        read.sort();
        read.dedup();
        let [value] = &read[..] else { return None };
        let said = stated(text, subject);
        (!said.is_empty() && !said.contains(value)).then(|| (subject.clone(), value.clone()))
    })
}

/// [`contradiction`] of the content of a `memory_store` call of `tool` with `arguments`.
pub(super) fn stored_contradiction(
    task: &str,
    tool: &str,
    arguments: &str,
    calls: &[CallRecord],
) -> Option<(String, String)> {
    if tool != "memory_store" {
        return None;
    }
    let args: serde_json::Value = serde_json::from_str(arguments).ok()?;
    contradiction(task, calls, args.get("content")?.as_str()?)
}

/// What a `memory_store` whose content is such a contradiction gets back instead of running.
pub(super) fn held_message(lang: crate::config::Language, word: &str, value: &str) -> String {
    match lang {
        crate::config::Language::En => format!(
            "not run: this run read {word}: {value}, and this content gives {word} another number (an earlier run's?). Store what this run read."
        ),
        crate::config::Language::Zh => {
            format!(
                "未执行：本次运行读到的 {word} 是 {value}，而这段内容给出了另一个数字（之前某次运行的？）。请存储本次运行读到的内容。"
            )
        }
    }
}

/// The lowercase words of `text`.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase)
}

/// The numbers `text` labels with `word` at the start of a line: `bolts: 35`, `bolts = 35`,
/// `bolts 35`.
fn labelled(text: &str, word: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim().to_lowercase();
            let rest = line.strip_prefix(word)?;
            let rest = rest.trim_start_matches([' ', ':', '=', '\t']);
            let number: String = rest.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
            let after = rest[number.len()..].chars().next();
            (!number.is_empty() && after.is_none_or(|c| !c.is_alphanumeric())).then(|| normal(&number))
        })
        .collect()
}

/// The numbers `answer` gives `word`: a number right before it (`40 bolts`) or right after it
/// and a colon or an equals sign (`bolts: 40`).
fn stated(answer: &str, word: &str) -> Vec<String> {
    let lower = answer.to_lowercase().replace(',', "");
    let tokens: Vec<&str> = lower.split_whitespace().collect();
    let mut out = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        let bare = token.trim_matches(|c: char| !c.is_alphanumeric());
        if bare != word {
            continue;
        }
        let number = |t: &str| {
            let t = t.trim_matches(|c: char| !(c.is_ascii_digit() || c == '.')).trim_end_matches('.');
            (!t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == '.')).then(|| normal(t))
        };
        if let Some(n) = i.checked_sub(1).and_then(|b| number(tokens[b])) {
            out.push(n);
        }
        if token.ends_with([':', '=']) {
            if let Some(n) = tokens.get(i + 1).and_then(|t| number(t)) {
                out.push(n);
            }
        }
    }
    out
}

/// A number as compared: without leading zeros or a trailing `.0`.
fn normal(number: &str) -> String {
    let n = number.trim_end_matches('.');
    let n = n.strip_suffix(".0").unwrap_or(n);
    let trimmed = n.trim_start_matches('0');
    if trimmed.is_empty() || trimmed.starts_with('.') { format!("0{trimmed}") } else { trimmed.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(tool: &str, result: &str) -> CallRecord {
        CallRecord { tool: tool.into(), arguments: "{}".into(), status: ToolStatus::Success, result: result.into() }
    }

    const TASK: &str =
        "Open inventory.txt: how many bolts are there, and did that go up or down since the previous check?";

    #[test]
    fn an_answer_that_gives_the_subject_another_number_than_the_read_is_contradicted() {
        let calls =
            [read("file_read", "bolts: 35\nnuts: 12\n"), read("memory_recall", "- stock [core]: bolts: 40 nuts: 12")];
        assert!(contradicted(TASK, &calls, "We have 40 bolts.\nWe have 5 bolts more than the last time we checked."));
        assert!(contradicted(TASK, &calls, "bolts: 40"));
        assert!(!contradicted(TASK, &calls, "We have 35 bolts, 5 fewer than the 40 last time."));
        assert!(!contradicted(TASK, &calls, "We have 35 bolts."));
        assert!(!contradicted(TASK, &calls, "The stock went down since the last check."), "no number for it");
        // Only this run's reads count: a number the memory holds is no read.
        let remembered = [read("memory_recall", "bolts: 40")];
        assert!(!contradicted(TASK, &remembered, "We have 35 bolts."));
        // Two numbers read for the word: no one value to hold the answer to.
        let two = [read("file_read", "bolts: 35\n"), read("shell", "bolts: 30\n")];
        assert!(!contradicted(TASK, &two, "We have 40 bolts."));
    }

    #[test]
    fn numbers_are_read_as_labels_and_compared_as_numbers() {
        assert_eq!(labelled("bolts: 35\nbolts_total: 9\nboltsx 3\n  bolts=007\n", "bolts"), ["35", "7"]);
        assert_eq!(stated("We have 1,200 bolts; bolts: 35.", "bolts"), ["1200", "35"]);
        assert_eq!(normal("35.0"), "35");
        assert_eq!(normal("0.5"), "0.5");
    }
}
