//! A state the task asks about, held as a value in what the tools returned: "warn me when a part
//! of the system is down" over `{"name": "cache", "state": "down"}`, "tell me about failed jobs"
//! over `job=nightly state=failed`. Such a result is a finding whatever the model says.
//!
//! Why: for the health endpoint above the 1.5B model answered `NO_REPLY`, then wrote a code
//! check that called `requests.get(output)` (it raised), and the review it fell back to said
//! `NO_REPLY` again: the run stayed silent while the queue was down (bench/README.md, stop 41).
//! A value that is exactly the state word the task names needs no model to see.
//!
//! Only values count: a JSON string value, the value of a `key: value` or `key=value` pair, or
//! a column of a table (set apart by a tab, two spaces or `|`). A word in a sentence (`the
//! link went down`, `0 failed`) is left to the code check, as is a task that negates the word
//! (`not down`).

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// Families of state words: a task word and a value of one family match (`failures` in the
/// task, `failed` in the data).
const STATES: [&[&str]; 13] = [
    &["down"],
    &["fail", "fails", "failed", "failing", "failure", "failures"],
    &["error", "errors", "errored", "erroring"],
    &["unhealthy"],
    &["degraded"],
    &["critical"],
    &["offline"],
    &["stopped"],
    &["dead"],
    &["unreachable"],
    &["expired"],
    &["crashed", "crashing", "crash", "crashes", "crashloopbackoff"],
    &["unavailable"],
];
/// The same in Chinese: the task and the value hold the same word.
const STATES_ZH: [&str; 7] = ["宕机", "失败", "故障", "离线", "异常", "不可用", "已过期"];

/// A `key: value` or `key=value` pair, the value alone up to the next separator.
static PAIR: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r#"[\p{L}\p{N}_.\-]+"?\s*[:=：]\s*"?([^\s,;|"'}\])]+)"#).ok());

/// The state words of `task` (in families) that it does not negate.
fn named(task: &str) -> Vec<&'static [&'static str]> {
    let lower = task.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let negated = |i: usize| i > 0 && ["not", "no", "non", "never", "isn"].contains(&words[i - 1]);
    STATES
        .iter()
        .copied()
        .filter(|family| words.iter().enumerate().any(|(i, w)| family.contains(w) && !negated(i)))
        .collect()
}

/// Whether `value` is a state of `families` or a Chinese state `task` names.
fn is_state(value: &str, families: &[&[&str]], task: &str) -> bool {
    let v = value.trim().to_lowercase();
    families.iter().any(|f| f.contains(&v.as_str())) || STATES_ZH.iter().any(|z| v == *z && task.contains(z))
}

/// What of `data` (the results the task was checked against) holds, as a value, a state the
/// task names: for JSON, the text values (three characters or more) of each object that holds
/// one, which pick its lines for the report; for text, each line with such a pair or column.
/// Empty when there is none.
pub(super) fn found(task: &str, data: &str) -> Vec<String> {
    if asks_nonzero(task) {
        let exits = nonzero_exits(data);
        if !exits.is_empty() {
            return exits;
        }
    }
    let families = named(task);
    if families.is_empty() && !STATES_ZH.iter().any(|z| task.contains(z)) {
        return Vec::new();
    }
    let mut out: Vec<String> = Vec::new();
    for part in data.split("\n\n") {
        match serde_json::from_str::<Value>(part.trim()) {
            Ok(value @ (Value::Object(_) | Value::Array(_))) => objects(&value, &families, task, &mut out, 0),
            _ => lines(part, &families, task, &mut out),
        }
    }
    out.dedup();
    out
}

/// An exit code written as a value: `exit=2`, `exit code 2`, `exited with code 1`, `rc: 1`,
/// `"exit_code": 137`; the code is the last group.
static EXIT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)\b(?:exit(?:ed)?(?:[ _-]?(?:code|status))?|rc|return[ _-]?code|returncode|exit_?code)"?\s*(?:[:=：]|with(?:\s+(?:code|status))?)?\s*"?(-?\d+)\b"#,
    )
    .ok()
});

/// Whether the task asks about a non-zero exit ("a job that ended with a non-zero status", "退出码非零").
fn asks_nonzero(task: &str) -> bool {
    let lower = task.to_lowercase();
    ["non-zero", "nonzero", "non zero", "not zero", "other than 0", "not 0"].iter().any(|p| lower.contains(p))
        || ["非零", "非 0", "不为 0", "不为0", "不是 0", "不是0"].iter().any(|p| task.contains(p))
}

/// The lines of `data` that hold an exit code other than 0 as a value (`job=sync exit=2`); the
/// 1.5B model answered `NO_REPLY` beside one, and its check matched the job with `\w+`, which
/// stops at the `-` of `sync-invoices` (bench/README.md, stop 42).
fn nonzero_exits(data: &str) -> Vec<String> {
    let Some(exit) = EXIT.as_ref() else { return Vec::new() };
    let mut out: Vec<String> = Vec::new();
    for line in data.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let nonzero = exit.captures_iter(line).any(|c| c[1].parse::<i64>().is_ok_and(|code| code != 0));
        if nonzero && !out.iter().any(|o| o == line) && out.len() < 50 {
            out.push(line.to_string());
        }
    }
    out
}

/// The text values of each object in `value` that holds a state as one of its own values.
fn objects(value: &Value, families: &[&[&str]], task: &str, out: &mut Vec<String>, depth: usize) {
    if depth > 20 || out.len() >= 50 {
        return;
    }
    match value {
        Value::Object(map) => {
            let holds = map.values().any(|v| v.as_str().is_some_and(|s| is_state(s, families, task)));
            if holds {
                for v in map.values() {
                    let text = match v {
                        Value::String(s) => s.clone(),
                        Value::Number(n) => n.to_string(),
                        _ => continue,
                    };
                    if text.chars().count() >= 3 && !out.contains(&text) {
                        out.push(text);
                    }
                }
            }
            map.values().for_each(|v| objects(v, families, task, out, depth + 1));
        }
        Value::Array(items) => items.iter().for_each(|v| objects(v, families, task, out, depth + 1)),
        _ => {}
    }
}

/// The lines of a text that hold a state as the value of a pair or as a column of their own.
fn lines(text: &str, families: &[&[&str]], task: &str, out: &mut Vec<String>) {
    let Some(pair) = PAIR.as_ref() else { return };
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if super::zero_count::says_none(task, line) {
            continue;
        }
        let paired = pair.captures_iter(line).any(|c| is_state(&c[1], families, task));
        let columns: Vec<&str> = if line.contains('|') {
            line.split('|').collect()
        } else {
            line.split('\t').flat_map(|p| p.split("  ")).collect()
        };
        let column = columns.len() >= 2 && columns.iter().any(|c| is_state(c, families, task));
        if (paired || column) && !out.iter().any(|o| o == line) {
            out.push(line.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEALTH: &str = r#"{"overall": "partial", "parts": [{"name": "cdn", "state": "up"}, {"cause": "no route to host", "name": "cache", "state": "down"}]}"#;

    #[test]
    fn a_json_value_that_is_the_state_the_task_names_is_found_with_its_object() {
        let task = "Fetch http://127.0.0.1/state.json and warn me if a component is down.";
        assert_eq!(found(task, HEALTH), vec!["no route to host", "cache", "down"], "in the order of the keys");
        let pretty = "{\n  \"jobs\": [\n    {\"id\": \"nightly\", \"state\": \"ok\"},\n    {\"id\": \"export\", \"state\": \"failed\"}\n  ]\n}";
        assert_eq!(found("Tell me about any job failures.", pretty), vec!["export", "failed"]);
    }

    #[test]
    fn pairs_and_columns_are_values_and_words_of_a_sentence_are_not() {
        let task = "Alert me if any service is down.";
        let text = "api: up\nqueue: down\nsearch=down\nthe link went down at 09:00\n";
        assert_eq!(found(task, text), vec!["queue: down", "search=down"]);
        let table = "SERVICE   STATE   SINCE\nweb-1     up      3d\nweb-2     down    2h\n";
        assert_eq!(found(task, table), vec!["web-2     down    2h"]);
        assert_eq!(found(task, "| api | up |\n| db | down |"), vec!["| db | down |"]);
    }

    #[test]
    fn a_task_that_names_no_state_or_negates_it_and_zero_counts_find_nothing() {
        assert!(found("Tell me the status of every component.", HEALTH).is_empty(), "no state named");
        assert!(found("Warn me if a component is not down.", HEALTH).is_empty(), "negated");
        assert!(found("Warn me if a component is down.", "{\"status\": \"up\"}").is_empty());
        let task = "Let me know if a backup failed.";
        assert!(found(task, "backup done: 731 files, 0 failed\nfailed: 0\n").is_empty());
        assert!(found(task, "HTTP 200 OK (application/json, 20 B)\n\n{\"failed\": 0}").is_empty(), "a key");
    }

    #[test]
    fn an_exit_code_other_than_zero_is_found_where_the_task_asks_about_one() {
        let task = "Read logs/jobs.log and report every job whose exit code was not zero, with that code.";
        let log = "00:30 job=prune-cache exit=0\n02:15 job=export-orders exit=3\n05:00 job=reindex exit=0\n";
        assert_eq!(found(task, log), vec!["02:15 job=export-orders exit=3"]);
        let text = "backup exited with code 1\nreport: exit code 0\n{\"job\": \"x\", \"exit_code\": 137}\nrc: 3";
        assert_eq!(
            found(task, text),
            vec!["backup exited with code 1", "{\"job\": \"x\", \"exit_code\": 137}", "rc: 3"]
        );
        assert!(found(task, "job=a exit=0\njob=b exit=0\n").is_empty(), "all zero");
        assert!(found("Tell me about every job.", log).is_empty(), "no non-zero exit asked");
        assert_eq!(found("如果有任务退出码非零，请告诉我。", "任务 a exit=0\n任务 b exit=1\n"), vec!["任务 b exit=1"]);
    }

    #[test]
    fn a_chinese_state_is_found_where_the_task_names_it() {
        assert_eq!(found("如果有服务宕机，请告诉我。", "api: 正常\ndb: 宕机\n"), vec!["db: 宕机"]);
        assert!(found("请检查服务。", "db: 宕机\n").is_empty());
    }
}
