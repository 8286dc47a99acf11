//! A line that counts none of what the task looks for: `backup done: 731 files, 0 failed`
//! for "did a backup leave failed files", `sync finished, errors: 0` for "check the log
//! for errors". Such a line is what a clean run writes, not a finding.
//!
//! Why: the code check's function (`code_check.rs`) that the 1.5B model wrote for the backup
//! log was `'failed' in line`; it found the three `0 failed` lines of a clean log, and the
//! model's right `NO_REPLY` became "Yes, there were failed files" (bench/README.md, stop 40).
//! The engine drops a found line whose counts of the task's failure words are all zero; what
//! is left decides. A count of another word in the line (`731 files`) does not keep it, and a
//! line with any non-zero count of a failure word (`64 files, 2 failed`) stays a finding.

use std::sync::LazyLock;

use regex::Regex;

/// Stems of the words that name something going wrong, in the task and in a count.
const FAILURE: [&str; 16] = [
    "fail",
    "error",
    "err",
    "warn",
    "crit",
    "timeout",
    "exception",
    "panic",
    "reject",
    "denied",
    "drop",
    "lost",
    "problem",
    "unhealthy",
    "broken",
    "retr",
];
/// The same in Chinese (a count is written `失败: 0`, `失败 0 个`).
const FAILURE_ZH: [&str; 6] = ["失败", "错误", "异常", "警告", "超时", "告警"];

/// `N word` and `word: N` / `word=N`.
static BEFORE: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"\b(\d+)\s+([\p{L}_]+)").ok());
static AFTER: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"([\p{L}_]+)\s*[:=：]\s*(\d+)\b").ok());

/// The failure stems `task` names (its words that begin with one), lowercased.
fn failure_stems(task: &str) -> Vec<&'static str> {
    let lower = task.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let mut stems: Vec<&'static str> =
        FAILURE.iter().copied().filter(|s| words.iter().any(|w| w.starts_with(s))).collect();
    stems.extend(FAILURE_ZH.iter().copied().filter(|s| lower.contains(s)));
    stems
}

/// Whether `line` counts none of what `task` looks for: it holds a count of a failure word the
/// task names, and every such count is zero.
pub(super) fn says_none(task: &str, line: &str) -> bool {
    let stems = failure_stems(task);
    if stems.is_empty() {
        return false;
    }
    let (Some(before), Some(after)) = (BEFORE.as_ref(), AFTER.as_ref()) else { return false };
    let lower = line.to_lowercase();
    let counts = before
        .captures_iter(&lower)
        .map(|c| (c[1].to_string(), c[2].to_string()))
        .chain(after.captures_iter(&lower).map(|c| (c[2].to_string(), c[1].to_string())));
    let mut zeros = 0;
    for (n, word) in counts {
        if stems.iter().any(|s| word.starts_with(s)) {
            if n.parse::<u64>() != Ok(0) {
                return false;
            }
            zeros += 1;
        }
    }
    // Every failure word of the line must be one of its zero counts: `errors: 0; ERROR upload
    // failed` names a failure beside the count.
    let words = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| stems.iter().any(|s| w.starts_with(s) || (s.chars().count() == 2 && w.contains(s))))
        .count();
    zeros > 0 && words <= zeros
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zero_count_of_what_the_task_looks_for_is_not_a_finding() {
        let task = "Go over the file var/backup.log; did any backup have files that failed?";
        assert!(says_none(task, "2026-10-03 03:15:22 backup done: 731 files, 0 failed"));
        assert!(!says_none(task, "2026-10-04 03:16:09 backup done: 64 files, 2 failed"));
        assert!(!says_none(task, "2026-10-04 03:16:09 backup FAILED: disk full"), "no count: a finding");
        assert!(says_none("Check the sync log for errors.", "sync finished, errors: 0, warnings=2"));
        assert!(says_none("Check the sync log for errors.", "sync finished, error=0"));
        assert!(!says_none("Check the sync log for errors.", "sync finished, errors: 3"));
        assert!(!says_none("Check the sync log for errors.", "sync finished, 0 errors, 2 errors retried"));
        assert!(
            !says_none("Check the sync log for errors.", "sync done, errors: 0; ERROR upload failed"),
            "a failure in words"
        );
        assert!(!says_none(task, "backup done: 0 failed, then FAILED on /srv"), "a failure in words");
        assert!(says_none("检查日志里有没有失败的任务", "任务完成：失败: 0"));
        assert!(!says_none("检查日志里有没有失败的任务", "任务完成：失败: 2"));
    }

    #[test]
    fn the_patterns_compile() {
        assert!(BEFORE.is_some() && AFTER.is_some());
    }

    #[test]
    fn a_zero_count_of_another_thing_stays_a_finding() {
        // "0 free" is the alarm of a disk check; the task names no failure word.
        assert!(!says_none("Alert me when a disk has less than 10% free.", "/data: 0 free"));
        assert!(!says_none("Say whether a backup had files that failed.", "backup done: 0 files, exit=0"));
        assert!(!says_none("Which jobs ran?", "job a: 0 failed"), "the task names no failure");
    }
}
