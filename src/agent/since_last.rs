//! A count compared with the last check. A task that counts the log lines of one level and asks
//! whether the number went up or down since the last check: on its second run the 1.5B model counted 5
//! (the engine's count), had "ERROR count: 2" in its memory, and answered "There are 5 ERROR
//! lines" with no word of the comparison (bench/README.md, stop 43). When the task asks how a
//! count differs from the last time, the memory from before this run holds one number about
//! the task's subject, and the answer says the engine's count but not which way it went, the
//! answer is asked once more with both numbers and the direction named; the second answer is
//! taken only when it says the count and that direction. When it does not (the model answered
//! "1, 3"), the first answer is delivered with a line of the engine's under it: both numbers and
//! the direction, each from the engine's own records.
//!
//! The remembered number is first the one of the engine's own record of the routine's last
//! answer to this task (the turn summary `Asked: ... Answered: ...` it stores after each turn):
//! what the user was told last time. Without one, it is read from what was remembered before
//! this run (the Memory section's lines) and from the turn's `memory_recall` results made before
//! its first `memory_store`, so a count the run stored itself is never taken for the last one.

use super::Agent;
use super::counted::says_count;
use super::events::{CallRecord, RunEvent, ToolStatus, TurnStats};
use crate::config::Language;
use crate::llm::Message;

/// Which way a count went since the last check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Direction {
    More,
    Fewer,
    Same,
}

impl Direction {
    fn of(now: usize, before: usize) -> Direction {
        match now.cmp(&before) {
            std::cmp::Ordering::Greater => Direction::More,
            std::cmp::Ordering::Less => Direction::Fewer,
            std::cmp::Ordering::Equal => Direction::Same,
        }
    }

    /// Words that say this direction (lowercase English words, or Chinese text).
    fn words(self) -> (&'static [&'static str], &'static [&'static str]) {
        match self {
            Direction::More => (
                &["more", "increase", "increased", "increasing", "up", "rose", "risen", "higher", "grew", "greater"],
                &["多了", "增加", "上升", "增多", "更多", "多出"],
            ),
            Direction::Fewer => (
                &["fewer", "less", "decrease", "decreased", "decreasing", "down", "dropped", "fell", "lower"],
                &["少了", "减少", "下降", "更少", "少于"],
            ),
            Direction::Same => {
                (&["same", "unchanged", "equal", "steady", "constant"], &["一样", "相同", "没有变化", "不变", "持平"])
            }
        }
    }
}

/// Whether `task` asks how a count differs from the last check (last time, the previous run,
/// 上次).
pub(super) fn asks_since_last(task: &str) -> bool {
    let lower = task.to_lowercase();
    const LAST: [&str; 9] = [
        "last check",
        "last time",
        "last run",
        "previous check",
        "previous run",
        "previous count",
        "last count",
        "since you last",
        "than before",
    ];
    const COMPARE: [&str; 10] = [
        "more or fewer",
        "more or less",
        "fewer or more",
        "increase",
        "decrease",
        "changed",
        "compare",
        "more than",
        "fewer than",
        "went up",
    ];
    let zh = ["上次", "上一次", "之前", "以前"].iter().any(|w| task.contains(w))
        && ["多", "少", "变化", "比较", "相比"].iter().any(|w| task.contains(w));
    zh || (LAST.iter().any(|w| lower.contains(w)) && COMPARE.iter().any(|w| lower.contains(w)))
}

/// The text remembered before this turn's own stores: `remembered` (the Memory section's lines)
/// and the turn's successful `memory_recall` results before its first successful `memory_store`.
pub(super) fn memory_before_stores(remembered: &str, calls: &[CallRecord]) -> String {
    let mut text = remembered.to_string();
    for call in calls.iter().filter(|c| c.status == ToolStatus::Success) {
        match call.tool.as_str() {
            "memory_store" => break,
            "memory_recall" => {
                text.push('\n');
                text.push_str(&call.result);
            }
            _ => {}
        }
    }
    text
}

/// The note of an answer request to a task that weighs a count against the last check, when nothing was
/// remembered before this run (`remembered` and the recalls before the turn's first store hold
/// nothing, and `last_answered` is false: the routine never answered the task): this is the
/// first check. Without it the 1.5B model answered "No, the version did not change since the
/// last check" on a first run, without the version, and that it had "changed since I last
/// checked" on another (bench/README.md, stop 47): the store this run made looked like the
/// last check. With this note it gave the version in both. It holds for any value, not only a
/// count the engine made (`first_check`).
pub(super) fn first_check_note(
    lang: Language,
    task: &str,
    remembered: &str,
    calls: &[CallRecord],
    last_answered: bool,
) -> Option<&'static str> {
    if last_answered || !asks_since_last(task) {
        return None;
    }
    let before = memory_before_stores(remembered, calls);
    if before.lines().any(|l| !l.trim().is_empty() && !l.starts_with("No memory matches")) {
        return None;
    }
    Some(match lang {
        Language::En => {
            "(This is the first check: nothing was remembered before this run, so there is nothing to compare with \
             yet. Give what the data shows now and say that this is the first check.)"
        }
        Language::Zh => {
            "（这是第一次检查：本次运行之前没有记住任何内容，所以还没有可以比较的结果。请给出数据现在显示的内容，并说明这是第一次检查。）"
        }
    })
}

/// What the memory holds of the count of the last check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Remembered {
    /// No number about the task's subject: this is the first check.
    Nothing,
    One(usize),
    /// Several different numbers: which one was the count cannot be told.
    Several,
}

/// The last count: the one number of `last`, the routine's last answer to this task (or, of
/// several, the one next to a word of the task), else the number `memory` holds about the
/// task's subject: the whole numbers (no part of a date, a time, a decimal or a name) that stand
/// within two words of a word of the task's own (`2 ERROR lines`, `ERROR count: 2`, `errors=2`),
/// file names and the words of the question aside. The engine's record of the calls of the
/// last run (`routine:NAME:approach`, lines of `- tool {arguments}`) and the questions of
/// earlier turns are no memory of a count. `Nothing` only when no whole number is left at all.
pub(super) fn remembered_count(memory: &str, last: Option<&str>, task: &str) -> Remembered {
    const ASIDE: [&str; 24] = [
        "the", "and", "are", "there", "than", "more", "fewer", "less", "last", "check", "your", "tell", "whether",
        "how", "many", "count", "number", "time", "since", "previous", "run", "compare", "with", "what",
    ];
    let subject: Vec<String> = task
        .split_whitespace()
        .filter(|t| !t.trim_end_matches(['.', ',', '?', '!']).contains(['.', '/']))
        .flat_map(|t| words(t).collect::<Vec<_>>())
        .filter(|w| w.chars().count() >= 3 && !ASIDE.contains(&w.as_str()))
        .map(|w| stem(&w).to_string())
        .collect();
    let one = |found: &mut Vec<usize>| {
        found.sort_unstable();
        found.dedup();
        match found.as_slice() {
            [] => Remembered::Nothing,
            [one] => Remembered::One(*one),
            _ => Remembered::Several,
        }
    };
    if let Some(n) = last.and_then(engine_count) {
        return Remembered::One(n);
    }
    if let Some(last) = last {
        let mut all: Vec<usize> = last.lines().flat_map(whole_numbers).collect();
        match one(&mut all) {
            Remembered::Several => {
                let mut near: Vec<usize> = last.lines().flat_map(|l| numbers_near(l, &subject)).collect();
                return match one(&mut near) {
                    Remembered::One(n) => Remembered::One(n),
                    _ => Remembered::Several,
                };
            }
            Remembered::One(n) => return Remembered::One(n),
            Remembered::Nothing => {}
        }
    }
    let lines: Vec<&str> = memory.lines().filter(|l| !is_record_of_calls(l) && !l.contains("Asked:")).collect();
    if lines.iter().all(|l| whole_numbers(l).is_empty()) {
        return Remembered::Nothing;
    }
    let mut near: Vec<usize> = lines.iter().flat_map(|l| numbers_near(l, &subject)).collect();
    match one(&mut near) {
        Remembered::One(n) => Remembered::One(n),
        _ => Remembered::Several,
    }
}

/// The count of the engine's own line under an answer (`Last check: 3; now 1: 2 fewer.`, `First
/// check: now 2; ...`, `上次检查：3；现在：1，少了 2。`, `首次检查：现在：2；...`): what it
/// counted, which stands over any number the model's answer above it made up.
fn engine_count(answer: &str) -> Option<usize> {
    answer.lines().rev().find_map(|line| {
        let line = line.trim();
        let rest = if line.starts_with("Last check: ") || line.starts_with("First check: ") {
            line.split_once("now ")?.1
        } else if line.starts_with("上次检查：") || line.starts_with("首次检查：") {
            line.split_once("现在：")?.1
        } else {
            return None;
        };
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    })
}

/// Whether `line` is part of the engine's record of a run's calls: its title
/// (`routine:NAME:approach`) or one call (`- file_read {"path":"app.log"}`).
fn is_record_of_calls(line: &str) -> bool {
    let t = line.trim();
    t.contains(":approach")
        || t.strip_prefix("- ").is_some_and(|rest| {
            let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            !name.is_empty() && rest[name.len()..].trim_start().starts_with('{') && t.ends_with('}')
        })
}

/// `word` without a plural `s`.
fn stem(word: &str) -> &str {
    word.strip_suffix('s').filter(|w| w.len() >= 3).unwrap_or(word)
}

/// The whole numbers of `line` within two words of one of `subject`.
fn numbers_near(line: &str, subject: &[String]) -> Vec<usize> {
    // Chinese characters part words as spaces do (`共有2行WARN`).
    let tokens: Vec<&str> = line
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_' && !":-/.".contains(c))
        .filter(|t| !t.is_empty())
        .collect();
    let mut out = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        let [n] = whole_numbers(token)[..] else { continue };
        if token.trim_matches(|c: char| !c.is_ascii_digit()) != n.to_string()
            || token.chars().any(|c| c.is_ascii_alphabetic())
        {
            continue;
        }
        let near = tokens[i.saturating_sub(2)..tokens.len().min(i + 3)]
            .iter()
            .flat_map(|t| words(t).collect::<Vec<_>>())
            .any(|w| subject.iter().any(|s| *s == stem(&w)));
        if near {
            out.push(n);
        }
    }
    out
}

fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric() && c != '_').filter(|w| !w.is_empty()).map(str::to_lowercase)
}

/// The whole numbers of `line` that stand alone: a run of digits not joined to letters, and not
/// joined by `:` `-` `/` `.` to another digit (`10:00`, `2026-11-28`, `4.5`, `v2`).
fn whole_numbers(line: &str) -> Vec<usize> {
    let chars: Vec<char> = line.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && chars[i].is_ascii_digit() {
            i += 1;
        }
        let before = start.checked_sub(1).map(|b| chars[b]);
        let joined = |c: Option<char>, next: Option<char>| match c {
            Some(c) if c.is_ascii_alphabetic() || c == '_' => true,
            Some(':' | '-' | '/' | '.') => next.is_some_and(|n| n.is_ascii_digit()),
            _ => false,
        };
        let before_joined = joined(before, start.checked_sub(2).map(|b| chars[b]));
        let after_joined = joined(chars.get(i).copied(), chars.get(i + 1).copied());
        if !before_joined && !after_joined {
            let digits: String = chars[start..i].iter().collect();
            if let Ok(n) = digits.parse() {
                out.push(n);
            }
        }
    }
    out
}

/// Whether `answer` says `direction` (and none of the other two's words, unless it says it).
pub(super) fn says_direction(answer: &str, direction: Direction) -> bool {
    let lower = answer.to_lowercase();
    let own: Vec<String> = words(&lower).collect();
    let (en, zh) = direction.words();
    en.iter().any(|w| own.iter().any(|o| o == w)) || zh.iter().any(|w| answer.contains(w))
}

impl Agent {
    /// The answer of an evidence request (`messages`, whose reply was `reply`) to a task that
    /// compares the engine's count `n` with the last check's, when `memory` holds that one
    /// number: `answer` when it says the direction, or else the answer asked once more naming
    /// both numbers and the direction, when that one says `n` and the direction; noted.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn since_last_answer(
        &self,
        task: &str,
        n: usize,
        memory: &str,
        messages: &[Message],
        reply: &str,
        answer: String,
        stats: &mut TurnStats,
    ) -> String {
        if !self.opts.assists.allows("comparison_not_said") {
            return answer;
        }
        if answer.trim().is_empty() || !asks_since_last(task) {
            return answer;
        }
        let last = self.last_answer(task);
        let before = match remembered_count(memory, last.as_deref(), task) {
            Remembered::One(before) => before,
            Remembered::Nothing => return self.first_check(n, messages, reply, answer, stats).await,
            Remembered::Several => return answer,
        };
        let direction = Direction::of(n, before);
        if says_count(&answer, n) && says_direction(&answer, direction) {
            return answer;
        }
        let ask = match (self.opts.language, direction) {
            (Language::En, Direction::Same) => format!(
                "Your answer does not compare. The count now is {n}; the last check remembered {before}: the same as last time.\nAnswer the task again with both numbers and that it is the same, after a line that says ANSWER:"
            ),
            (Language::En, d) => format!(
                "Your answer does not compare. The count now is {n}; the last check remembered {before}: {} {} than last time.\nAnswer the task again with both numbers and whether it is more or fewer, after a line that says ANSWER:",
                n.abs_diff(before),
                if d == Direction::More { "more" } else { "fewer" }
            ),
            (Language::Zh, Direction::Same) => format!(
                "你的回答没有比较。现在的数目是 {n}；上次检查记住的是 {before}：和上次一样。\n请给出两个数目并说明一样，写在“答案：”那一行之后。"
            ),
            (Language::Zh, d) => format!(
                "你的回答没有比较。现在的数目是 {n}；上次检查记住的是 {before}：比上次{}了 {}。\n请给出两个数目并说明是多了还是少了，写在“答案：”那一行之后。",
                if d == Direction::More { "多" } else { "少" },
                n.abs_diff(before)
            ),
        };
        let again = self.asked_again("the comparison with the last check", messages, reply, ask, stats).await;
        let taken = says_count(&again, n) && says_direction(&again, direction);
        self.record(RunEvent::Note {
            kind: "comparison_not_said",
            detail: format!(
                "the answer said {n} but not how it compares with {before} remembered from the last check; asked again, {}",
                if taken {
                    "and the new answer says it"
                } else {
                    "and the first answer stands with the comparison under it"
                }
            ),
        });
        if taken {
            return again;
        }
        // Asked for it, the model answered "1, 3": the engine's count and the last one are both
        // its own records, and the comparison of two numbers is arithmetic.
        let delta = n.abs_diff(before);
        let line = match (self.opts.language, direction) {
            (Language::En, Direction::Same) => format!("Last check: {before}; now {n}, the same."),
            (Language::En, d) => format!(
                "Last check: {before}; now {n}: {delta} {}.",
                if d == Direction::More { "more" } else { "fewer" }
            ),
            (Language::Zh, Direction::Same) => format!("上次检查：{before}；现在：{n}，一样。"),
            (Language::Zh, d) => {
                format!("上次检查：{before}；现在：{n}，{}了 {delta}。", if d == Direction::More { "多" } else { "少" })
            }
        };
        format!("{}\n\n{line}", answer.trim_end())
    }
}

impl Agent {
    /// The routine's last answer to `task`, from the summary the engine stores after each turn
    /// (`turn:routine:NAME:TIME:...`, `Asked: TASK\nAnswered: ANSWER`): the newest whose question
    /// is this task. `None` outside a routine, without memory, or before the first answer.
    pub(super) fn last_answer(&self, task: &str) -> Option<String> {
        let memory = self.memory.as_ref()?;
        let prefix = format!("turn:routine:{}:", self.routine.as_ref()?.name);
        let asked: String = task.trim().chars().take(150).collect();
        let found = memory.recall_in(task, Some(crate::memory::CONVERSATION), 50).ok()?;
        found
            .into_iter()
            .filter(|e| e.key.starts_with(&prefix))
            .filter_map(|e| {
                let (question, answer) = e.content.split_once("\nAnswered: ")?;
                question.strip_prefix("Asked: ")?.starts_with(&asked).then(|| (e.key, answer.to_string()))
            })
            .max_by(|a, b| a.0.cmp(&b.0))
            .map(|(_, answer)| answer)
    }

    /// `answer` to a task that compares the count `n` with the last check when nothing of a
    /// last check is remembered: when it says a direction anyway (run 1 of a probe task said
    /// "3 orders are still pending" and "fewer than the 5 of last time", and the made-up 5
    /// went into the memory the second run compared with), it is asked once more to say the
    /// count alone; the second answer is taken when it says `n` and no direction; noted.
    async fn first_check(
        &self,
        n: usize,
        messages: &[Message],
        reply: &str,
        answer: String,
        stats: &mut TurnStats,
    ) -> String {
        let any = [Direction::More, Direction::Fewer, Direction::Same];
        if !any.iter().any(|d| says_direction(&answer, *d)) {
            return answer;
        }
        let ask = match self.opts.language {
            Language::En => format!(
                "Nothing from an earlier check is remembered, so there is nothing to compare {n} with yet. Answer the task again with the count alone and say that this is the first check, after a line that says ANSWER:"
            ),
            Language::Zh => format!(
                "没有记住之前任何一次检查的结果，所以 {n} 还没有可以比较的对象。请只给出数目，并说明这是第一次检查，写在“答案：”那一行之后。"
            ),
        };
        let again = self.asked_again("the first check, with nothing to compare", messages, reply, ask, stats).await;
        let taken = says_count(&again, n) && !any.iter().any(|d| says_direction(&again, *d));
        self.record(RunEvent::Note {
            kind: "comparison_without_memory",
            detail: format!(
                "the answer compared {n} with a last check that nothing remembered; asked again, {}",
                if taken {
                    "and the new answer says the count alone"
                } else {
                    "and the first answer stands with the count under it"
                }
            ),
        });
        if taken {
            return again;
        }
        // The model answered "少了1行" to every ask: the engine's count goes under it, and the
        // next run reads that line back as the last count (`engine_count`), not the made-up 1.
        let line = match self.opts.language {
            Language::En => format!("First check: now {n}; nothing earlier is remembered to compare with."),
            Language::Zh => format!("首次检查：现在：{n}；没有记住之前的结果可以比较。"),
        };
        format!("{}\n\n{line}", answer.trim_end())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tool: &str, result: &str) -> CallRecord {
        CallRecord { tool: tool.into(), arguments: "{}".into(), status: ToolStatus::Success, result: result.into() }
    }

    #[test]
    fn a_comparison_with_the_last_check_with_nothing_remembered_is_noted_as_the_first_check() {
        let task = "Open VERSION and say whether it has changed since the previous check.";
        let read = call("file_read", "2.4.1\n");
        let stored = call("memory_store", "Stored `version` (core).");
        let nothing = call("memory_recall", "No memory matches `version`.");
        let note = first_check_note(Language::En, task, "", &[read.clone(), stored.clone()], false);
        assert!(note.is_some_and(|n| n.contains("this is the first check")), "{note:?}");
        assert!(first_check_note(Language::En, task, "", &[nothing, read.clone(), stored.clone()], false).is_some());
        // Something remembered, a recall that found something, or an earlier answer: no note.
        assert_eq!(
            first_check_note(Language::En, task, "- version: 2.4.1\n", std::slice::from_ref(&read), false),
            None
        );
        let found = call("memory_recall", "- version [core]: 2.4.1");
        assert_eq!(first_check_note(Language::En, task, "", &[found, read.clone()], false), None);
        assert_eq!(first_check_note(Language::En, task, "", std::slice::from_ref(&read), true), None);
        // A recall after this run's own store finds that store: still the first check.
        let after = call("memory_recall", "- version [core]: 2.4.1");
        assert!(first_check_note(Language::En, task, "", &[read.clone(), stored, after], false).is_some());
        // A task with nothing earlier to compare with.
        assert_eq!(first_check_note(Language::En, "Open VERSION and say the version.", "", &[read], false), None);
    }

    #[test]
    fn a_task_that_compares_with_the_last_check_is_told_from_one_that_does_not() {
        assert!(asks_since_last("Count the FATAL lines in server.log: more or fewer since the last check?"));
        assert!(asks_since_last("How many orders came in? Did that increase since the last run?"));
        assert!(asks_since_last("数一下 server.log 里的 FATAL 行，和上次相比是多了还是少了？"));
        assert!(!asks_since_last("Count the FATAL lines in server.log."));
        assert!(!asks_since_last("Remember the count for next time."));
    }

    #[test]
    fn the_remembered_number_is_the_one_about_the_tasks_subject() {
        let task = "Count the FATAL lines in server.log: more or fewer since the last check?";
        assert_eq!(remembered_count("- error_count: FATAL lines: 2\n", None, task), Remembered::One(2));
        assert_eq!(
            remembered_count("- last: There are 2 FATAL lines at 10:00 on 2026-11-28.\n", None, task),
            Remembered::One(2)
        );
        assert_eq!(
            remembered_count("- disk: 81% used\n- errors: 2 FATAL lines\n", None, task),
            Remembered::One(2),
            "the line about errors"
        );
        assert_eq!(
            remembered_count("- a: 2 FATAL lines\n- b: 4 FATAL lines\n", None, task),
            Remembered::Several,
            "two values: unsure"
        );
        assert_eq!(remembered_count("- note: checked server.log v2\n", None, task), Remembered::Nothing);
        assert_eq!(remembered_count("", None, task), Remembered::Nothing);
        // What the local model had in memory on its second run (stop 44): its own key without
        // the number, the engine's record of the last turn and of its calls.
        let memory = "- server_log_errors [core]: FATAL lines in server.log\n\
            - turn:routine:errors:20261128T215220.722Z:f356 [conversation]: Asked: Count the FATAL lines.\n\
            Answered: There are 2 FATAL lines in server.log.\n\
            - routine:errors:approach [core]: Tool calls of the last successful run:\n\
            - file_read {\"limit\":0,\"path\":\"server.log\"}\n";
        assert_eq!(remembered_count(memory, None, task), Remembered::One(2));
        assert_eq!(remembered_count("- fatal=3\n", None, task), Remembered::One(3));
        // A number of the memory about something else is no count of this task's, but not
        // nothing either.
        assert_eq!(remembered_count("- disk: 81% used\n", None, task), Remembered::Several);
        // The record of the last run's calls holds numbers of arguments, no count.
        let calls = "- routine:errors:approach [core]: Tool calls of the last successful run:\n\
                     - memory_recall {\"limit\":10,\"query\":\"FATAL\"}\n- file_read {\"path\":\"server.log\"}\n";
        assert_eq!(remembered_count(calls, None, task), Remembered::Nothing);
        // The routine's last answer to the task comes first: what the user was told.
        assert_eq!(
            remembered_count("- errors: 4 FATAL lines\n", Some("There are 2 FATAL lines."), task),
            Remembered::One(2)
        );
        assert_eq!(
            remembered_count("", Some("3 FATAL lines, 1 more than the 2 before."), task),
            Remembered::Several,
            "three numbers, none alone next to the subject"
        );
        let zh = "统计 server.log 里 WARN 的行数，和上次检查相比变多了还是变少了？";
        assert_eq!(remembered_count("", Some("共有2行WARN。"), zh), Remembered::One(2));
        assert_eq!(remembered_count("- warn_count: WARN 行数：2\n", None, zh), Remembered::One(2));
        // The engine's line under the last answer stands over what the model's answer made up
        // (warn-zh-last: "少了1行" to every ask on a first check of 2).
        let first = "少了1行\n\n首次检查：现在：2；没有记住之前的结果可以比较。";
        assert_eq!(remembered_count("", Some(first), zh), Remembered::One(2));
        let last = "1, 3\n\nLast check: 3; now 1: 2 fewer.";
        assert_eq!(remembered_count("- errors: 9 FATAL lines\n", Some(last), task), Remembered::One(1));
        let first = "5 more than last time.\n\nFirst check: now 12; nothing earlier is remembered to compare with.";
        assert_eq!(remembered_count("", Some(first), task), Remembered::One(12));
        assert_eq!(engine_count("上次检查：3；现在：10，多了 7。"), Some(10));
        assert_eq!(engine_count("There are 4 now; last check was 2."), None, "the model's words are no engine line");
    }

    #[test]
    fn a_stored_count_of_this_run_is_not_the_last_one() {
        let call = |tool: &str, result: &str| CallRecord {
            tool: tool.into(),
            arguments: "{}".into(),
            status: ToolStatus::Success,
            result: result.into(),
        };
        let calls = [
            call("memory_recall", "- errors: 2 FATAL lines"),
            call("memory_store", "stored"),
            call("memory_recall", "- errors: 5 FATAL lines"),
        ];
        let memory = memory_before_stores("", &calls);
        assert!(memory.contains("2 FATAL") && !memory.contains("5 FATAL"), "{memory}");
    }

    #[test]
    fn a_direction_is_said_in_words_of_either_language() {
        assert!(says_direction("There are 5 FATAL lines, 3 more than last time.", Direction::More));
        assert!(says_direction("Errors increased from 2 to 5.", Direction::More));
        assert!(!says_direction("There are 5 FATAL lines in server.log.", Direction::More));
        assert!(says_direction("Fewer than before: 1 now, 4 then.", Direction::Fewer));
        assert!(says_direction("现在有5条，比上次多了3条。", Direction::More));
        assert!(says_direction("The count is the same: 2.", Direction::Same));
        assert_eq!(Direction::of(5, 2), Direction::More);
        assert_eq!(Direction::of(1, 2), Direction::Fewer);
    }
}
