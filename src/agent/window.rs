//! A time window the task names ("the last 24 hours", "the past week", "today", 最近 7 天)
//! that the turn's `git log` was not cut to: the 1.5B model ran `git log -3` for the
//! commit log of a recent day and listed a commit of three days before
//! (bench/README.md, stop 40). The answer goes back once with the same command cut to the
//! window (`--since`, and `--until` for "yesterday"), its limit left out, as a call to make; the
//! policy decides it like any other. Once it ran, the uncut log is left out of the evidence.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

use super::count_word::number;
use super::events::{CallRecord, ToolStatus};
use super::git_call::git_log;
use crate::config::Language;

/// A window as git reads dates: where it starts (and ends), and the task's words for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Window {
    since: String,
    until: Option<String>,
    words: String,
}

/// "last 24 hours", "past week", "previous 3 days", "last two months".
static LAST: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:last|past|previous)\s+(?:(\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|twelve|fourteen|thirty)\s+)?(hour|day|week|month)s?\b").ok()
});
/// "today", "since yesterday", "yesterday".
static DAY: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?i)\b(since\s+yesterday|yesterday|today|this\s+morning)\b").ok());
/// 最近 24 小时, 过去7天, 近两周, 今天, 昨天以来, 昨天.
static LAST_ZH: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?:最近|过去|近)\s*(\d{1,3}|一|两|二|三|四|五|六|七|八|九|十|十四|二十四|三十)?\s*个?\s*(小时|天|日|周|星期|月)").ok()
});

/// The window `task` names, if any.
pub(super) fn window(task: &str) -> Option<Window> {
    if let Some(c) = LAST.as_ref().and_then(|r| r.captures(task)) {
        let n = c.get(1).map_or(Some(1), |n| number(&n.as_str().to_lowercase()))?;
        let unit = c[2].to_lowercase();
        return Some(Window { since: ago(n, &unit), until: None, words: format!("the {}", &c[0]) });
    }
    if let Some(c) = LAST_ZH.as_ref().and_then(|r| r.captures(task)) {
        let n = c.get(1).map_or(Some(1), |n| number(n.as_str()))?;
        let unit = match &c[2] {
            "小时" => "hour",
            "天" | "日" => "day",
            "周" | "星期" => "week",
            _ => "month",
        };
        return Some(Window { since: ago(n, unit), until: None, words: c[0].to_string() });
    }
    let day = |since: &str, until: Option<&str>, words: &str| Window {
        since: since.into(),
        until: until.map(str::to_string),
        words: words.into(),
    };
    if let Some(c) = DAY.as_ref().and_then(|r| r.captures(task)) {
        let words = c[1].to_string();
        let lower = words.to_lowercase();
        return Some(match lower.as_str() {
            "yesterday" => day("yesterday.midnight", Some("midnight"), &words),
            l if l.starts_with("since") => day("yesterday.midnight", None, &words),
            _ => day("midnight", None, &words),
        });
    }
    if task.contains("昨天以来") || task.contains("自昨天") || task.contains("从昨天") {
        return Some(day("yesterday.midnight", None, "昨天以来"));
    }
    if task.contains("昨天") {
        return Some(day("yesterday.midnight", Some("midnight"), "昨天"));
    }
    task.contains("今天").then(|| day("midnight", None, "今天"))
}

/// `n units ago` as git reads it, with dots for spaces (`24.hours.ago`): a command that needs
/// no quotes is one the model copies whole (it dropped a quote of `'--since=yesterday.midnight'`).
fn ago(n: u32, unit: &str) -> String {
    format!("{n}.{unit}{}.ago", if n == 1 { "" } else { "s" })
}

/// The words of a command line, quoted only where the shell needs it.
fn join(argv: &[String]) -> String {
    let plain = |w: &String| !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:%,@+".contains(c));
    argv.iter()
        .map(|w| if plain(w) { w.clone() } else { shell_words::quote(w).into_owned() })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether a `git log`'s words cut it by date.
fn dated(argv: &[String]) -> bool {
    const OPTIONS: [&str; 5] = ["--since", "--after", "--since-as-filter", "--until", "--before"];
    argv.iter().any(|a| OPTIONS.iter().any(|o| a == o || a.starts_with(&format!("{o}="))))
}

/// The turn's `git log`, not cut by date, for a task that names a window, when no `git log`
/// of the turn is cut by date: the window, its command as written, and the command cut to the
/// window (the limit left out).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Uncut {
    window: Window,
    command: String,
    cut: String,
}

/// The first successful `git log` of the turn for a task that names a window, when none of the
/// turn's logs is cut by date.
pub(super) fn uncut(task: &str, calls: &[CallRecord]) -> Option<Uncut> {
    let window = window(task)?;
    let logs: Vec<_> = calls.iter().filter(|c| c.status == ToolStatus::Success).filter_map(git_log).collect();
    if logs.iter().any(|l| dated(&l.argv)) {
        return None;
    }
    let log = logs.into_iter().next()?;
    let mut argv = log.limit().map_or_else(|| log.argv.clone(), |(_, rest)| rest);
    // A filter whose value is the window's own word (`--author='Yesterday'`, the 1.5B model's
    // way to ask for yesterday's commits) is the time asked in the wrong place: left out.
    let window_words: Vec<String> = window
        .words
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3 && !["the", "last", "past", "since"].contains(w))
        .map(str::to_string)
        .collect();
    let filters = ["--author=", "--committer=", "--grep="];
    argv.retain(|a| {
        let value = filters.iter().find_map(|f| a.strip_prefix(f)).map(str::to_lowercase);
        value.is_none_or(|v| !window_words.iter().any(|w| v.contains(w.as_str())))
    });
    let mut options = vec![format!("--since={}", window.since)];
    options.extend(window.until.iter().map(|u| format!("--until={u}")));
    argv.splice(log.log + 1..log.log + 1, options);
    Some(Uncut { cut: join(&argv), command: log.command, window })
}

/// The turn's calls without the `git log`s not cut by date, once one that is cut ran, for a
/// task that names a window: shown both, the model lists the older commits too.
pub(super) fn without_uncut<'a>(task: &str, calls: Cow<'a, [CallRecord]>) -> Cow<'a, [CallRecord]> {
    if window(task).is_none() {
        return calls;
    }
    let ok = |c: &CallRecord| c.status == ToolStatus::Success;
    let cut = calls.iter().filter(|c| ok(c)).filter_map(git_log).any(|l| dated(&l.argv));
    let uncut = |c: &CallRecord| git_log(c).is_some_and(|l| !dated(&l.argv));
    if !cut || !calls.iter().any(uncut) {
        return calls;
    }
    Cow::Owned(calls.iter().filter(|c| !uncut(c)).cloned().collect())
}

/// What sends the answer back with the command cut to the window.
pub(super) fn message(lang: Language, uncut: &Uncut) -> String {
    let Uncut { window, command, cut } = uncut;
    let call = super::events::shell_call(cut);
    match lang {
        Language::En => format!(
            "The task asks about {}, and `{command}` is not cut to that time. Call this instead: {call}",
            window.words
        ),
        Language::Zh => format!("任务问的是{}，而 `{command}` 没有按这段时间筛选。请改为调用：{call}", window.words),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(command: &str) -> CallRecord {
        CallRecord::shell(
            command,
            "abc1234 Tidy the settings page
",
        )
    }

    #[test]
    fn the_windows_a_task_names_are_read_as_git_reads_dates() {
        let since = |t: &str| window(t).map(|w| (w.since, w.until));
        assert_eq!(since("Give me each commit's message from the past 24 hours."), Some(("24.hours.ago".into(), None)));
        assert_eq!(since("How many commits landed in the past week?"), Some(("1.week.ago".into(), None)));
        assert_eq!(since("What changed over the last two days?"), Some(("2.days.ago".into(), None)));
        assert_eq!(since("Commits from the last day"), Some(("1.day.ago".into(), None)));
        assert_eq!(since("What was committed today?"), Some(("midnight".into(), None)));
        assert_eq!(since("What was merged since yesterday?"), Some(("yesterday.midnight".into(), None)));
        assert_eq!(since("Who committed yesterday?"), Some(("yesterday.midnight".into(), Some("midnight".into()))));
        assert_eq!(since("列出最近24小时的提交"), Some(("24.hours.ago".into(), None)));
        assert_eq!(since("过去七天有多少个提交？"), Some(("7.days.ago".into(), None)));
        assert_eq!(since("今天有哪些提交？"), Some(("midnight".into(), None)));
        assert_eq!(since("Who authored the last commit?"), None, "the last commit is no window");
        assert_eq!(since("What changed with the last release?"), None);
    }

    #[test]
    fn an_uncut_log_goes_back_cut_to_the_window_without_its_limit() {
        let task = "Give me each commit's message from the past 24 hours.";
        let u = uncut(task, &[shell("git log -3 --oneline")]).unwrap();
        assert_eq!(u.cut, "git log --since=24.hours.ago --oneline");
        assert_eq!(
            message(Language::En, &u),
            r#"The task asks about the past 24 hours, and `git log -3 --oneline` is not cut to that time. Call this instead: shell {"command":"git log --since=24.hours.ago --oneline"}"#
        );
        let y = uncut("Which commits were made yesterday?", &[shell("git --no-pager log --format=%s")]).unwrap();
        assert_eq!(y.cut, "git --no-pager log --since=yesterday.midnight --until=midnight --format=%s");
        let author = uncut("Who made commits yesterday?", &[shell("git log -3 --stat --author='Yesterday'")]).unwrap();
        assert_eq!(
            author.cut, "git log --since=yesterday.midnight --until=midnight --stat",
            "the window's word as a filter"
        );
        let kept = uncut(task, &[shell("git log -5 '--author=Ana Lima' --format='%h %s'")]).unwrap();
        assert_eq!(kept.cut, "git log --since=24.hours.ago '--author=Ana Lima' '--format=%h %s'");
    }

    #[test]
    fn a_log_cut_by_date_or_a_task_without_a_window_is_left_alone() {
        let task = "Give me each commit's message from the past 24 hours.";
        assert_eq!(uncut(task, &[shell("git log --since='1 day ago' --oneline")]), None);
        assert_eq!(uncut(task, &[shell("git log --after 2026-11-27")]), None);
        assert_eq!(uncut("Who authored the last commit?", &[shell("git log -1")]), None);
        assert_eq!(uncut(task, &[shell("git status")]), None, "not a log");
        let mut failed = shell("git log -3");
        failed.status = ToolStatus::Failed;
        assert_eq!(uncut(task, &[failed]), None, "a failed call is the failure check's");
    }

    #[test]
    fn once_a_cut_log_ran_the_uncut_one_leaves_the_evidence() {
        let task = "Give me each commit's message from the past 24 hours.";
        let calls = [shell("git log -3 --oneline"), shell("git log --since='24 hours ago' --oneline")];
        let seen = without_uncut(task, Cow::Borrowed(&calls[..]));
        assert_eq!(seen.len(), 1);
        assert!(seen[0].arguments.contains("--since"));
        assert_eq!(without_uncut(task, Cow::Borrowed(&calls[..1])).len(), 1, "nothing cut: left as it came");
        assert_eq!(without_uncut("Who authored the last commit?", Cow::Borrowed(&calls[..])).len(), 2);
    }
}
