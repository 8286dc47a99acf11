//! A count where the task needs the lines. Asked which account saw the most failed sign-ins, the
//! 1.5B model ran `grep -c 'Failed password' auth.log`, got `6`, and answered with a user name
//! no tool had printed; asked for the warnings "since 08:30", it counted every warning of the
//! day (bench/README.md, stop 43). A count cannot say which line, or when. When the task asks
//! which one (the most, the least, the last, which ones) or bounds a date or a time of day, and
//! the turn's answer rests on a `grep` that only counted, the answer goes back once with the same
//! search printing its lines, as a call to make; the policy decides it like any other.

use std::borrow::Cow;

use super::events::{CallRecord, ToolStatus};
use super::select::{Ask, ask_of, bounds_time};
use crate::config::Language;

/// The counting call: its command as written and the same search printing the lines.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct CountOnly {
    command: String,
    lines: String,
    /// The task bounds a time (rather than asking which one).
    timed: bool,
}

/// The last successful `grep` of the turn that only counted (`-c`, `--count`, `-ci`) for a task
/// that needs the lines, unless a later successful call printed them; `None` otherwise.
pub(super) fn count_only(task: &str, calls: &[CallRecord]) -> Option<CountOnly> {
    if !needs_lines(task) {
        return None;
    }
    let timed = bounds_time(task);
    let succeeded: Vec<&CallRecord> = calls.iter().filter(|c| c.status == ToolStatus::Success).collect();
    let (at, argv) = succeeded.iter().enumerate().rev().find_map(|(at, call)| Some((at, counting_grep(call)?)))?;
    // A later read of the lines (the file, or a search that prints them) answers it already.
    if succeeded[at + 1..].iter().any(|c| c.tool == "file_read" || (c.tool == "shell" && counting_grep(c).is_none())) {
        return None;
    }
    let lines: Vec<String> = argv.iter().filter_map(|a| uncounted(a)).collect();
    Some(CountOnly { command: shell_words::join(&argv), lines: shell_words::join(lines), timed })
}

/// Whether `task` needs the lines of a search, not their number: it asks which one, or bounds
/// a date or a time of day.
fn needs_lines(task: &str) -> bool {
    bounds_time(task) || matches!(ask_of(task), Some(Ask::Which | Ask::Most | Ask::Least | Ask::Last))
}

/// A fix the engine proposes for a failed call (`grounding.rs`: the one command that counts in
/// place of a refused pipe into `wc -l`), printing the lines when `task` needs them: the 1.5B
/// model, told the count was not enough, piped the lines into `wc`, was refused, and was given
/// the count again.
pub(super) fn fix_for(task: &str, fix: String) -> String {
    let Some(command) = fix.strip_prefix("shell ").and_then(|args| {
        let args: serde_json::Value = serde_json::from_str(args).ok()?;
        args.get("command")?.as_str().map(str::to_string)
    }) else {
        return fix;
    };
    let Ok(parsed) = crate::policy::command::parse(&command) else { return fix };
    let counts = parsed.argv.first().is_some_and(|g| g == "grep")
        && parsed.argv.iter().skip(1).any(|a| a == "--count" || (is_short_flags(a) && a.contains('c')));
    if !counts || !needs_lines(task) {
        return fix;
    }
    let lines: Vec<String> = parsed.argv.iter().filter_map(|a| uncounted(a)).collect();
    format!("shell {}", serde_json::json!({ "command": shell_words::join(lines) }))
}

/// The turn's calls without each counting `grep` whose search a later successful call ran
/// printing the lines: shown both, the model may take the count of every line for the answer.
pub(super) fn without_counted(calls: Cow<'_, [CallRecord]>) -> Cow<'_, [CallRecord]> {
    let ok = |c: &&CallRecord| c.status == ToolStatus::Success;
    let printed: Vec<Vec<String>> =
        calls.iter().filter(ok).filter(|c| counting_grep(c).is_none()).filter_map(argv).collect();
    let superseded = |c: &CallRecord| {
        counting_grep(c).is_some_and(|argv| printed.contains(&argv.iter().filter_map(|a| uncounted(a)).collect()))
    };
    if !calls.iter().any(superseded) {
        return calls;
    }
    Cow::Owned(calls.iter().filter(|c| !superseded(c)).cloned().collect())
}

/// The argv of a shell call.
fn argv(call: &CallRecord) -> Option<Vec<String>> {
    if call.tool != "shell" {
        return None;
    }
    let args: serde_json::Value = serde_json::from_str(&call.arguments).ok()?;
    crate::policy::command::parse(args.get("command")?.as_str()?).ok().map(|p| p.argv)
}

/// The argv of a `grep` call that counts, whose output is only numbers.
fn counting_grep(call: &CallRecord) -> Option<Vec<String>> {
    let argv = argv(call)?;
    let counts = argv.iter().skip(1).any(|a| a == "--count" || (is_short_flags(a) && a.contains('c')));
    let numbers = call.result.lines().filter(|l| !l.trim().is_empty()).all(|l| {
        let last = l.rsplit(':').next().unwrap_or(l).trim();
        !last.is_empty() && last.chars().all(|c| c.is_ascii_digit())
    });
    (argv.first().is_some_and(|g| g == "grep" || g == "egrep") && counts && numbers).then_some(argv)
}

/// `-c`, `-ci`, `-nc`: a word of short flags.
fn is_short_flags(arg: &str) -> bool {
    arg.len() >= 2
        && arg.starts_with('-')
        && !arg.starts_with("--")
        && arg[1..].chars().all(|c| c.is_ascii_alphabetic())
}

/// One argument of the search without its counting: `-c` and `--count` go, `-ci` becomes `-i`.
fn uncounted(arg: &str) -> Option<String> {
    if arg == "--count" || arg == "-c" {
        return None;
    }
    if is_short_flags(arg) && arg.contains('c') {
        return Some(arg.replace('c', ""));
    }
    Some(arg.to_string())
}

/// What goes back with the answer: why the count does not answer, and the call to make.
pub(super) fn message(lang: Language, counted: &CountOnly) -> String {
    let call = serde_json::json!({ "command": counted.lines }).to_string();
    let CountOnly { command, timed, .. } = counted;
    match (lang, timed) {
        (Language::En, true) => format!(
            "`{command}` printed only how many lines match, and the task asks about their dates or times. Call this instead, which prints the lines: shell {call}"
        ),
        (Language::En, false) => format!(
            "`{command}` printed only how many lines match, and the task asks which one. Call this instead, which prints the lines: shell {call}"
        ),
        (Language::Zh, true) => {
            format!(
                "`{command}` 只打印了匹配的行数，而任务问的是它们的日期或时间。改为这样调用，它会打印这些行：shell {call}"
            )
        }
        (Language::Zh, false) => {
            format!("`{command}` 只打印了匹配的行数，而任务问的是哪一个。改为这样调用，它会打印这些行：shell {call}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(command: &str, result: &str) -> CallRecord {
        CallRecord::shell(command, result)
    }

    #[test]
    fn a_count_for_a_task_that_asks_which_goes_back_as_the_search_printing_lines() {
        let calls = [shell("grep -c 'Failed password' auth.log", "6\n")];
        let task = "Which account saw the most failed attempts in auth.log?";
        let counted = count_only(task, &calls).unwrap();
        assert_eq!(
            message(Language::En, &counted),
            r#"`grep -c 'Failed password' auth.log` printed only how many lines match, and the task asks which one. Call this instead, which prints the lines: shell {"command":"grep 'Failed password' auth.log"}"#
        );
        let timed = [shell("grep -ci warn server.log", "5")];
        let counted = count_only("How many warnings did server.log record since 08:30?", &timed).unwrap();
        assert!(message(Language::En, &counted).ends_with(r#"shell {"command":"grep -i warn server.log"}"#));
    }

    #[test]
    fn a_count_the_task_asks_for_or_a_later_look_at_the_lines_stands() {
        let calls = [shell("grep -c ERROR app.log", "6")];
        assert_eq!(count_only("How many errors are in app.log?", &calls), None, "a plain count");
        let looked = [shell("grep -c 'Failed' auth.log", "6"), shell("grep 'Failed' auth.log", "a\nb")];
        assert_eq!(count_only("Which user failed most?", &looked), None, "the lines came later");
        let printed = [shell("grep ERROR app.log", "10:00 ERROR a")];
        assert_eq!(count_only("Which error came last?", &printed), None, "no count");
    }

    #[test]
    fn a_fix_that_counts_prints_the_lines_when_the_task_needs_them() {
        let fix = r#"shell {"command":"grep -c 'Failed password' auth.log"}"#.to_string();
        assert_eq!(
            fix_for("Which account saw the most failed attempts?", fix.clone()),
            r#"shell {"command":"grep 'Failed password' auth.log"}"#
        );
        assert_eq!(fix_for("How many failed logins?", fix.clone()), fix, "a count asked");
        let read = r#"file_read {"path":"auth.log"}"#.to_string();
        assert_eq!(fix_for("Which user failed most?", read.clone()), read);
    }

    #[test]
    fn a_count_is_left_out_once_its_search_printed_the_lines() {
        let both = [shell("grep -ci error app.log", "4"), shell("grep -i error app.log", "a\nb")];
        let kept = without_counted(Cow::Borrowed(&both[..]));
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].arguments, r#"{"command":"grep -i error app.log"}"#);
        let other = [shell("grep -c ERROR app.log", "4"), shell("grep WARN app.log", "a")];
        assert_eq!(without_counted(Cow::Borrowed(&other[..])).len(), 2, "another search");
    }
}
