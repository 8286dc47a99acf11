//! A report that quotes none of the lines it was asked from: the engine adds them.
//!
//! When the code check found something (`code_check.rs`), the report is asked from only the
//! lines found, with "Quote each of them." The 1.5B model still answered "Yes, there were
//! failed files in the backup log." beside `03:16:09 backup done: 64 files, 2 failed`
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

/// Whether `answer` holds each of `lines`: shares a word with it that `task` does not use, and,
/// where the line has names of its own (a word with a letter that no other line of `whole`,
/// the results the lines were found in, holds: `invoices` in `invoices  4310`), one of them.
/// "queues.txt has 4310 messages" shares `4310` with that line and leaves out which queue it is.
fn holds_each(answer: &str, task: &str, lines: &[&str], whole: &[&str]) -> bool {
    let task = words(task);
    let answer = words(answer);
    let others: Vec<Vec<String>> = whole.iter().flat_map(|r| r.lines()).map(words).collect();
    lines.iter().all(|line| {
        let own: Vec<String> = words(line).into_iter().filter(|w| !task.contains(w)).collect();
        let names: Vec<&String> = own
            .iter()
            .filter(|w| w.chars().any(char::is_alphabetic))
            .filter(|w| others.iter().filter(|o| o.contains(w)).count() <= 1)
            .collect();
        own.iter().any(|w| answer.contains(w)) && (names.is_empty() || names.iter().any(|n| answer.contains(n)))
    })
}

/// `answer`, with the lines of `calls` under it when it does not hold each of them
/// ([`holds_each`]; `whole` are the results the lines were cut from).
pub(super) fn with_lines(answer: &str, task: &str, calls: &[CallRecord], whole: &[&str], lang: Language) -> String {
    let lines: Vec<&str> = calls.iter().flat_map(|c| c.result.lines()).filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() || holds_each(answer, task, &lines, whole) {
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

    const TASK: &str = "Go over the file var/backup.log; did any backup have files that failed?";
    const LINE: &str = "2026-10-04 03:16:09 backup done: 64 files, 2 failed";
    const LOG: &str =
        "2026-10-03 03:15:22 backup done: 66 files, 0 failed\n2026-10-04 03:16:09 backup done: 64 files, 2 failed\n";

    #[test]
    fn an_answer_that_quotes_no_line_gets_them_under_it() {
        let answer = "Yes, there were failed files in the backup log.";
        assert_eq!(
            with_lines(answer, TASK, &[read(LINE)], &[LOG], Language::En),
            format!("{answer}\n\nThe lines this rests on:\n{LINE}")
        );
        let many: String = (0..12).map(|i| format!("line {i} failed\n")).collect();
        let out = with_lines(answer, TASK, &[read(&many)], &[&many], Language::Zh);
        assert!(out.ends_with("line 9 failed\n（另有 2 行）"), "{out}");
    }

    #[test]
    fn an_answer_that_holds_a_word_of_a_line_stays_as_it_is() {
        for answer in ["The backup at 03:16:09 had 2 failed files.", "64 files were backed up and 2 failed.", "2%"] {
            assert_eq!(with_lines(answer, TASK, &[read(LINE)], &[LOG], Language::En), answer);
        }
        assert_eq!(with_lines("Nothing.", TASK, &[read("\n")], &[], Language::En), "Nothing.");
    }

    #[test]
    fn an_answer_that_leaves_out_the_name_of_a_line_gets_them_under_it() {
        let task = "Read queues.txt and name any queue that holds over 1000 messages, with its count.";
        let whole = "queue        messages\nemails       120\ninvoices     4310\nwebhooks     870\n";
        let line = "invoices     4310";
        let answer = "queues.txt has 4310 messages, which is more than 1000.";
        assert_eq!(
            with_lines(answer, task, &[read(line)], &[whole], Language::En),
            format!("{answer}\n\nThe lines this rests on:\n{line}")
        );
        let named = "The invoices queue has 4310 messages.";
        assert_eq!(with_lines(named, task, &[read(line)], &[whole], Language::En), named);
        let df = "Filesystem Size Use% Mounted on\n/dev/vda1 50G 44% /\n/dev/vdc1 200G 94% /srv/mysql\n";
        let line = "/dev/vdc1 200G 94% /srv/mysql";
        let task = "Open disks.txt. Report every volume that is above 90% full.";
        assert_eq!(
            with_lines("/dev/vdc1", task, &[read(line)], &[df], Language::En),
            "/dev/vdc1",
            "a name of the line is one of its names"
        );
    }
}
