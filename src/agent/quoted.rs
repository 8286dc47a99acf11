//! A report that quotes none of the lines it was asked from: the engine adds them.
//!
//! When the code check found something (`code_check.rs`), the report is asked from only the
//! lines found, with "Quote each of them." The 1.5B model still answered "Yes, there were
//! failed files in the backup log." beside `02:07:13 backup done: 88 files, 4 failed`
//! (bench/README.md, stop 40): true, and useless to the person it alerts. An answer holds a
//! line when it shares a word with it that the task does not use (a number, a name, a time);
//! when it holds none of them, the lines go under it, as the tools returned them.

use super::events::CallRecord;
use crate::config::Language;

/// The most lines added, and characters of each.
const MAX_LINES: usize = 10;
const MAX_CHARS: usize = 300;

/// The words of `text` that tie an answer to a line: runs of letters, digits and `.:/-_%`,
/// trimmed of `.:%` at the ends (`93%` is `93`), lowercased; numbers of any length, other words of four
/// characters or more.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || ".:/-_%".contains(c)))
        .map(|w| w.trim_matches(|c| c == '.' || c == ':' || c == '%').to_lowercase())
        .filter(|w| w.chars().any(|c| c.is_ascii_digit()) || w.chars().count() >= 4)
        .collect()
}

/// Whether `answer` holds any of `lines`: shares a word with one that `task` does not use.
fn holds_any(answer: &str, task: &str, lines: &[&str]) -> bool {
    let task = words(task);
    let answer = words(answer);
    lines.iter().flat_map(|l| words(l)).any(|w| !task.contains(&w) && answer.contains(&w))
}

/// `answer`, with the lines of `calls` under it when it holds none of them.
pub(super) fn with_lines(answer: &str, task: &str, calls: &[CallRecord], lang: Language) -> String {
    let lines: Vec<&str> = calls.iter().flat_map(|c| c.result.lines()).filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() || holds_any(answer, task, &lines) {
        return answer.to_string();
    }
    let label = match lang {
        Language::En => "The lines this rests on:",
        Language::Zh => "依据的行：",
    };
    let shown: Vec<String> = lines
        .iter()
        .take(MAX_LINES)
        .map(|l| {
            let l = l.trim();
            if l.chars().count() > MAX_CHARS {
                format!("{}…", l.chars().take(MAX_CHARS).collect::<String>())
            } else {
                l.to_string()
            }
        })
        .collect();
    let more = match (lines.len().saturating_sub(MAX_LINES), lang) {
        (0, _) => String::new(),
        (n, Language::En) => format!("\n(and {n} more)"),
        (n, Language::Zh) => format!("\n（另有 {n} 行）"),
    };
    format!("{}\n\n{label}\n{}{more}", answer.trim_end(), shown.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::events::ToolStatus;

    fn read(result: &str) -> CallRecord {
        CallRecord {
            tool: "file_read".into(),
            arguments: r#"{"path":"var/backup.log"}"#.into(),
            status: ToolStatus::Success,
            result: result.into(),
        }
    }

    const TASK: &str = "Look through var/backup.log and tell me if any backup had failed files.";
    const LINE: &str = "2026-11-27 02:07:13 backup done: 88 files, 4 failed";

    #[test]
    fn an_answer_that_quotes_no_line_gets_them_under_it() {
        let answer = "Yes, there were failed files in the backup log.";
        assert_eq!(
            with_lines(answer, TASK, &[read(LINE)], Language::En),
            format!("{answer}\n\nThe lines this rests on:\n{LINE}")
        );
        let many: String = (0..12).map(|i| format!("line {i} failed\n")).collect();
        let out = with_lines(answer, TASK, &[read(&many)], Language::Zh);
        assert!(out.ends_with("line 9 failed\n（另有 2 行）"), "{out}");
    }

    #[test]
    fn an_answer_that_holds_a_word_of_a_line_stays_as_it_is() {
        for answer in ["The backup at 02:07:13 had 4 failed files.", "88 files were backed up and 4 failed.", "4%"] {
            assert_eq!(with_lines(answer, TASK, &[read(LINE)], Language::En), answer);
        }
        assert_eq!(with_lines("Nothing.", TASK, &[read("\n")], Language::En), "Nothing.");
    }
}
