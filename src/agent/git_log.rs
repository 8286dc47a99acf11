//! The note that names the newest commit of a log, for a task that asks about the last
//! one: asked who made the latest edit to one file, over a log of two commits, the 1.5B
//! model named the author of the older one, listed last (bench/README.md, stop 41).

use super::events::{CallRecord, ToolStatus};
use super::git_call::{GitLog, commit_headers, git_log};
use crate::config::Language;

/// The newest commit a log shows, as it writes it.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Newest {
    command: String,
    hash: String,
    author: String,
    date: String,
    subject: String,
}

impl Newest {
    /// Whether `answer` names this commit: its author, its subject or its hash.
    pub(super) fn named_in(&self, answer: &str) -> bool {
        [&self.author, &self.subject, &self.hash].iter().any(|s| !s.is_empty() && answer.contains(s.as_str()))
    }

    /// What the answer request says about it.
    pub(super) fn note(&self, lang: Language) -> String {
        let Newest { command, hash, author, date, subject } = self;
        match lang {
            Language::En => {
                format!("(`{command}` lists the newest commit first: {hash} by {author}, {date}: {subject}.)")
            }
            Language::Zh => format!("（`{command}` 最先列出最新的提交：{hash}，作者 {author}，{date}：{subject}。）"),
        }
    }
}

/// For a task that asks about the last, latest or newest commit or change (not a time window,
/// not a count), when the turn's one successful call, or the one `git log` of a file the task
/// names among several, is a `git log` in its default format that shows two commits or more:
/// the newest of them, which the log lists first.
pub(super) fn newest(task: &str, calls: &[CallRecord]) -> Option<Newest> {
    let lower = task.to_lowercase();
    const NEWEST: [&str; 8] = ["last", "latest", "most recent", "newest", "recently", "最近一次", "最新", "最后一次"];
    let asks = NEWEST.iter().any(|w| {
        lower.match_indices(w).any(|(at, _)| {
            let before = lower[..at].chars().next_back().is_none_or(|c| !c.is_alphanumeric());
            let after = lower[at + w.len()..].chars().next().is_none_or(|c| !c.is_alphanumeric());
            !w.is_ascii() || (before && after)
        })
    });
    if !asks || super::window::window(task).is_some() || super::select::ask_of(task) == Some(super::select::Ask::Count)
    {
        return None;
    }
    let ok: Vec<&CallRecord> = calls.iter().filter(|c| c.status == ToolStatus::Success).collect();
    let call = match ok[..] {
        [call] => call,
        // Of several calls, the one `git log` of a file the task names: the 1.5B model ran
        // `git log -1 --oneline` (the repository's last commit) before `git log -- export.py`,
        // and named the older of export.py's two commits (bench/README.md, stop 47).
        _ => {
            let own = super::named::own_paths(task);
            let names_one = |log: &GitLog| log.argv[log.log + 1..].iter().any(|a| own.iter().any(|p| p == a));
            let of_file: Vec<&CallRecord> =
                ok.iter().copied().filter(|c| git_log(c).is_some_and(|l| names_one(&l))).collect();
            let [call] = of_file[..] else { return None };
            call
        }
    };
    let command = git_log(call)?.command;
    if commit_headers(&call.result) < 2 {
        return None;
    }
    let mut lines = call.result.lines().skip_while(|l| !l.starts_with("commit "));
    let hash: String = lines.next()?.strip_prefix("commit ")?.chars().take(7).collect();
    let block: Vec<&str> = lines.take_while(|l| !l.starts_with("commit ")).collect();
    let field = |name: &str| block.iter().find_map(|l| l.strip_prefix(name)).map(str::trim);
    let author = field("Author:")?.split('<').next().unwrap_or_default().trim().to_string();
    let date = field("Date:")?.to_string();
    let subject = block.iter().find(|l| l.starts_with("    ") && !l.trim().is_empty())?.trim().to_string();
    Some(Newest { command, hash, author, date, subject })
}

/// What names the call that shows a file's history, for a turn that ran `git log` without the
/// file the task names: the 1.5B model, asked who last changed `export.py`, ran `git log -1
/// --oneline --author` twice and, told to use the file, ran it a third time (bench/README.md,
/// stop 41). The default format shows each commit's author and date.
pub(super) fn history_call(lang: Language, file: &str) -> String {
    let call = super::events::shell_call(&format!("git log -- {}", shell_words::quote(file)));
    match lang {
        Language::En => format!("Its history in git: call this: {call}"),
        Language::Zh => format!("它在 git 中的历史：调用这个：{call}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(command: &str, result: &str) -> CallRecord {
        CallRecord::shell(command, result)
    }

    const TWO: &str = "commit 9189f45aae1a2cb1\nAuthor: Mina Okafor <mina@example.org>\nDate:   Fri Nov 27 09:51:32 2026 +0000\n\n    Handle empty rows\n\n export.py | 2 +-\n\ncommit f33c71b7f82d0aba\nAuthor: Jonas Berg <jonas@example.org>\nDate:   Tue Nov 24 09:51:32 2026 +0000\n\n    Add export module\n";

    #[test]
    fn of_several_calls_the_log_of_the_file_the_task_names_gives_the_newest() {
        let task = "Who did the latest edit to export.py?";
        let repo = shell("git log -1 --oneline", "f4433c0 Typo in docs\n");
        let file = shell("git log -- export.py", TWO);
        let newest = newest(task, &[repo.clone(), file.clone()]).unwrap();
        assert!(
            newest
                .note(Language::En)
                .starts_with("(`git log -- export.py` lists the newest commit first: 9189f45 by Mina Okafor")
        );
        // Two logs of the file, or none: no pick.
        assert_eq!(super::newest(task, &[file.clone(), shell("git log --stat export.py", TWO)]), None);
        assert_eq!(super::newest(task, &[repo, shell("git log -3", TWO)]), None);
    }

    #[test]
    fn the_newest_commit_of_a_log_is_named_for_a_task_about_the_last_change() {
        let calls = [shell("git log -3 --stat export.py", TWO)];
        assert_eq!(
            newest("Who did the latest edit to export.py?", &calls).unwrap().note(Language::En),
            "(`git log -3 --stat export.py` lists the newest commit first: 9189f45 by Mina Okafor, Fri Nov 27 09:51:32 2026 +0000: Handle empty rows.)"
        );
        assert!(newest("What was the newest commit about?", &calls).is_some());
        let zh = newest("export.py 最近一次是谁修改的？", &calls).unwrap();
        assert!(zh.note(Language::Zh).contains("作者 Mina Okafor"));
        assert!(zh.named_in("Mina Okafor 修改的") && !zh.named_in("Jonas Berg"));
    }

    #[test]
    fn a_window_a_count_another_question_or_one_commit_gets_no_note() {
        let calls = [shell("git log", TWO)];
        assert_eq!(newest("List every commit from the past 24 hours.", &calls), None);
        assert_eq!(newest("How many commits landed last week?", &calls), None);
        assert_eq!(newest("Who changed export.py?", &calls), None);
        assert_eq!(newest("What is the lastname field?", &calls), None, "a word of its own");
        let one = [shell("git log -1", "commit 9189f45aae1a2cb1\nAuthor: L <l@x>\nDate: d\n\n    Fix\n")];
        assert_eq!(newest("Who authored the last commit?", &one), None, "one commit needs no note");
    }
}
