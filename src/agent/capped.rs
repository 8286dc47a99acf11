//! A count over output that the model's own command capped: `git log -3` for "how many commits
//! are there" shows three, and the 1.5B model answered 3 of 5 (bench/README.md, stop 39). When
//! the task asks how many and the turn's `git log` with a limit (`-3`, `-n 3`, `--max-count=3`)
//! printed exactly that many commits, the answer goes back once with the same command without
//! the limit, as a call to make; the policy decides it like any other.

use super::events::{CallRecord, ToolStatus};
use super::git_call::{commit_headers, git_log};
use super::select::{Ask, ask_of};
use crate::config::Language;

/// The capped call: its command as written, the limit, and the command without it.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Capped {
    command: String,
    limit: usize,
    whole: String,
}

/// The first successful `git log` call of the turn whose limit its output reached, for a task
/// that asks how many; `None` otherwise.
pub(super) fn capped(task: &str, calls: &[CallRecord]) -> Option<Capped> {
    if !matches!(ask_of(task), Some(Ask::Count | Ask::Distinct)) {
        return None;
    }
    calls.iter().filter(|c| c.status == ToolStatus::Success).find_map(|call| {
        let log = git_log(call)?;
        let (limit, rest) = log.limit()?;
        (shown_commits(&call.result) == limit).then(|| Capped {
            command: log.command.clone(),
            limit,
            whole: shell_words::join(rest),
        })
    })
}

/// How many commits a `git log` output shows: its `commit <hash>` lines, or, in a one-line
/// format, its non-empty lines.
fn shown_commits(output: &str) -> usize {
    match commit_headers(output) {
        0 => output.lines().filter(|l| !l.trim().is_empty()).count(),
        headers => headers,
    }
}

/// The turn's calls without each `git log` whose limit a later successful call of the same
/// command without it superseded: shown both, the model added them up (3 and 5 made 6).
pub(super) fn without_superseded(calls: &[CallRecord]) -> std::borrow::Cow<'_, [CallRecord]> {
    let whole: Vec<Vec<String>> = calls
        .iter()
        .filter(|c| c.status == ToolStatus::Success)
        .filter_map(|c| git_log(c).map(|log| log.argv))
        .collect();
    let superseded =
        |c: &CallRecord| git_log(c).and_then(|log| log.limit()).is_some_and(|(_, rest)| whole.contains(&rest));
    if calls.iter().any(superseded) {
        std::borrow::Cow::Owned(calls.iter().filter(|c| !superseded(c)).cloned().collect())
    } else {
        std::borrow::Cow::Borrowed(calls)
    }
}

/// An author the task names, as the log writes the name, and the number of commits that are theirs.
type Author = (String, usize);

/// For a task that asks how many, when the turn's one successful `git log` shows commits in its
/// default format (`commit <hash>` lines): its command, how many commits it shows, and the
/// named author's name and count where the task names one of some of them.
fn counts(task: &str, calls: &[CallRecord]) -> Option<(String, usize, Option<Author>)> {
    if ask_of(task) != Some(Ask::Count) {
        return None;
    }
    let ok: Vec<&CallRecord> = calls.iter().filter(|c| c.status == ToolStatus::Success).collect();
    let [call] = ok[..] else { return None };
    let command = git_log(call)?.command;
    let n = commit_headers(&call.result);
    (n > 0).then(|| (command, n, by_named_author(task, &call.result)))
}

/// The engine's count of commits, as [`counts`] reads them: the named author's, or all. Asked
/// from the five commits of `git log --stat`, the 1.5B model answered 6, and its `keep` over the
/// lines named each commit by its message.
pub(super) fn commits_note(task: &str, calls: &[CallRecord], lang: Language) -> Option<String> {
    let (command, n, named) = counts(task, calls)?;
    Some(match (lang, named) {
        (Language::En, None) => format!("(`{command}` shows {n} commits.)"),
        (Language::Zh, None) => format!("（`{command}` 显示了 {n} 个提交。）"),
        (Language::En, Some((name, k))) => format!("(`{command}` shows {n} commits; {k} of them by {name}.)"),
        (Language::Zh, Some((name, k))) => format!("（`{command}` 显示了 {n} 个提交，其中 {k} 个由 {name} 提交。）"),
    })
}

/// For a count of commits the note would state (the named author's where there is one),
/// whether `answer`, given in the turn, lacks it: the 1.5B model answered "1" over Rosa Diaz's
/// three commits (bench/README.md, stop 41), and such an answer is asked from the evidence,
/// where one that says it needs nothing more. `None` when the turn counted no commits.
pub(super) fn miscounted(task: &str, calls: &[CallRecord], answer: &str) -> Option<bool> {
    let (_, n, named) = counts(task, &without_superseded(calls))?;
    let n = named.map_or(n, |(_, k)| k).to_string();
    Some(!answer.split(|c: char| !c.is_ascii_digit()).any(|run| run == n))
}

/// For a task that names an author of some of a default-format log's commits but not all (a
/// word of the name in the `Author:` line, three letters or more): the name as the log writes
/// it and how many of the commits are theirs. Asked how many commits Rosa Diaz made, the 1.5B
/// model answered 5, the note's number of all the commits (bench/README.md, stop 40).
fn by_named_author(task: &str, log: &str) -> Option<(String, usize)> {
    let task_words: Vec<String> = task
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_string)
        .collect();
    let authors: Vec<&str> = log
        .lines()
        .filter_map(|l| l.strip_prefix("Author:"))
        .map(|a| a.split('<').next().unwrap_or(a).trim())
        .collect();
    let named = |a: &str| {
        a.to_lowercase().split_whitespace().any(|w| w.chars().count() >= 3 && task_words.iter().any(|t| t == w))
    };
    let theirs: Vec<&str> = authors.iter().copied().filter(|a| named(a)).collect();
    let first = *theirs.first()?;
    (theirs.len() < authors.len() && authors.len() == commit_headers(log)).then(|| (first.to_string(), theirs.len()))
}

/// What sends the answer back with the command that shows them all.
pub(super) fn message(lang: Language, capped: &Capped) -> String {
    let Capped { command, limit, whole } = capped;
    let call = super::events::shell_call(whole);
    match lang {
        Language::En => format!(
            "`{command}` shows at most {limit} commits, and the task counts them all. Call this instead: {call}"
        ),
        Language::Zh => format!("`{command}` 最多只显示 {limit} 个提交，而任务要数全部。请改为调用：{call}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(command: &str, result: &str) -> CallRecord {
        CallRecord::shell(command, result)
    }

    const THREE: &str = "commit 1fa4d284c8cd\nAuthor: A <a@x>\n\n    Fifth\n\ncommit 69eeb79d9239\n\n    Fourth\n\ncommit 8bec50d28b58\n\n    Third\n";

    #[test]
    fn a_limit_the_output_reached_is_a_count_capped() {
        let task = "How many commits does this repo have?";
        let c = capped(task, &[shell("git log -3 --stat", THREE)]).unwrap();
        assert_eq!(c, Capped { command: "git log -3 --stat".into(), limit: 3, whole: "git log --stat".into() });
        assert_eq!(
            message(Language::En, &c),
            r#"`git log -3 --stat` shows at most 3 commits, and the task counts them all. Call this instead: shell {"command":"git log --stat"}"#
        );
        for (line, whole) in [
            ("git log -n 3", "git log"),
            ("git log -n3 --oneline", "git log --oneline"),
            ("git log --max-count=3 '--pretty=format:%h %s'", "git log '--pretty=format:%h %s'"),
            ("git --no-pager log --max-count 3", "git --no-pager log"),
        ] {
            let c = capped(task, &[shell(line, "a1 x\nb2 y\nc3 z\n")]).unwrap_or_else(|| panic!("{line}"));
            assert_eq!(c.whole, whole);
        }
    }

    #[test]
    fn the_commits_a_log_shows_are_counted_for_a_count() {
        let task = "How many commits does this repo have?";
        let note = commits_note(task, &[shell("git log --stat", THREE)], Language::En);
        assert_eq!(note.as_deref(), Some("(`git log --stat` shows 3 commits.)"));
        assert_eq!(commits_note("What changed?", &[shell("git log --stat", THREE)], Language::En), None);
        let two_authors = "commit 1fa4d284c8cd\nAuthor: Rosa Diaz <rosa@x>\n\n    Fifth\n\ncommit 69eeb79d9239\nAuthor: Ben Ode <ben@x>\n\n    Fourth\n\ncommit 8bec50d28b58\nAuthor: Rosa Diaz <rosa@x>\n\n    Third\n";
        let rosa = "How many commits did Rosa Diaz make in this repo?";
        assert_eq!(
            commits_note(rosa, &[shell("git log", two_authors)], Language::En).as_deref(),
            Some("(`git log` shows 3 commits; 2 of them by Rosa Diaz.)")
        );
        assert_eq!(
            commits_note(task, &[shell("git log", two_authors)], Language::En).as_deref(),
            Some("(`git log` shows 3 commits.)"),
            "no author named"
        );
        assert_eq!(commits_note(task, &[shell("git log --oneline", "a1 x\nb2 y\n")], Language::En), None);
        let two = [shell("git log --stat", THREE), shell("git status", "clean")];
        assert_eq!(commits_note(task, &two, Language::En), None, "two results: not only the log");
    }

    #[test]
    fn a_capped_log_is_left_out_once_the_whole_one_ran() {
        let calls = [shell("git log -3 --stat", THREE), shell("ls", "a\n"), shell("git log --stat", "all")];
        let seen = without_superseded(&calls);
        assert_eq!(seen.iter().map(|c| c.result.as_str()).collect::<Vec<_>>(), ["a\n", "all"]);
        assert!(matches!(without_superseded(&calls[..2]), std::borrow::Cow::Borrowed(_)), "nothing superseded");
    }

    #[test]
    fn a_limit_not_reached_or_a_task_that_counts_nothing_is_left_alone() {
        let task = "How many commits does this repo have?";
        assert_eq!(capped(task, &[shell("git log -5", THREE)]), None, "fewer than the limit: all of them");
        assert_eq!(capped(task, &[shell("git log", THREE)]), None);
        assert_eq!(capped("What did the last three commits change?", &[shell("git log -3", THREE)]), None);
        assert_eq!(capped(task, &[shell("git show -3", THREE)]), None);
        assert_eq!(capped(task, &[shell("git -C /x log -3", THREE)]), None, "an option with a value before log");
    }

    #[test]
    fn an_answer_without_the_logs_count_is_a_miscount() {
        let task = "How many commits did Rosa Diaz make in this repo?";
        let calls = [
            shell("git log -3 --stat '--author=Rosa Diaz'", THREE),
            shell("git log --stat '--author=Rosa Diaz'", THREE),
        ];
        assert_eq!(miscounted(task, &calls, "1"), Some(true), "the model's answer over three commits");
        assert_eq!(miscounted(task, &calls, "Rosa Diaz has made 3 commits."), Some(false));
        assert_eq!(miscounted(task, &calls, "13"), Some(true), "13 is not 3");
        assert_eq!(miscounted("Who authored the last commit?", &calls, "1"), None, "not a count");
    }
}
