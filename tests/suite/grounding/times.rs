//! What the engine works out where a task bounds a time or counts per value (`agent/select/`):
//! lines after a time of day, records already expired against today, a total of a unit the lines
//! write, and the value with the most lines; and a count the answer must say (`agent/counted.rs`).
//! Through `routines run`, a scripted model and the real sandbox the model's functions run in.

use serde_json::json;

use crate::common::Routines;
use crate::common::mock_llm::{MockLlm, text, tool_call};

/// A project whose routine `task` runs `prompt` with `tools` over `file` holding `body`.
fn project(mock: &MockLlm, prompt: &str, tools: &str, file: &str, body: &str) -> Routines {
    let p = super::assisted(&mock.base_url(), "");
    p.write(
        "routines/task.yaml",
        &format!("prompt: {prompt}\nagent: {{ tools: [{tools}], allow_commands: [grep] }}\n"),
    )
    .write(file, body);
    p
}

const LOG: &str = "2026-11-28 09:12:01 ERROR cache unavailable\n2026-11-28 11:40:22 INFO request served\n\
2026-11-28 13:58:10 ERROR db timeout\n2026-11-28 14:05:44 ERROR db timeout\n2026-11-28 14:30:02 INFO request served\n\
2026-11-28 15:11:09 ERROR payment declined\n2026-11-28 16:45:51 WARN slow response\n";

/// "How many errors were logged after 14:00": the local model's `keep` tested for `ERROR` alone
/// and four were counted (bench/README.md, stop 43). The engine keeps the lines after 14:00 by
/// their time, and of those the ones holding the task's word (`error` of `ERROR`), without a
/// function.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lines_after_a_time_of_day_are_kept_by_the_engine() {
    let mock = MockLlm::start().await;
    let p = project(&mock, "How many errors were logged after 14:00 in app.log?", "file_read", "app.log", LOG);
    mock.push_all([
        tool_call("file_read", json!({"path": "app.log"})),
        text("ANSWER: 2 errors were logged after 14:00."),
    ]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["output"], "2 errors were logged after 14:00.", "{}", o.stdout);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2, "the read and the answer: no code request");
    let answer = crate::common::content(&reqs[1], 1);
    assert!(
        answer.contains(
            "(2 of the 7 lines of `app.log` have a time after 14:00 and hold \"error\"; the data above shows only those 2.)"
        ),
        "{answer}"
    );
    assert!(!answer.contains("09:12:01"), "the morning's lines are not shown: {answer}");
    mock.assert_clean();
}

const SERVER_LOG: &str = "2026-11-27 07:55:10 WARN disk 81% full\n2026-11-27 08:29:59 WARN slow query 2.1s\n\
2026-11-27 08:41:03 WARN cache miss ratio 0.5\n2026-11-27 09:02:17 INFO backup done\n\
2026-11-27 10:15:36 WARN disk 84% full\n2026-11-27 11:20:00 ERROR upstream reset\n2026-11-27 12:03:48 WARN slow query 3.4s\n";

/// "How many warnings since 08:30" over lines that say `WARN`: the engine keeps the lines in
/// the time that hold the level as the log writes it. It had counted every line after 08:30
/// and pressed the local model's right 3 into 5.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_level_the_task_names_in_full_is_found_as_the_log_abbreviates_it() {
    let mock = MockLlm::start().await;
    let p = project(&mock, "How many warnings has server.log had since 08:30?", "file_read", "server.log", SERVER_LOG);
    mock.push_all([tool_call("file_read", json!({"path": "server.log"})), text("ANSWER: 3")]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["output"], "3", "{}", o.stdout);
    let answer = crate::common::content(&mock.requests()[1], 1);
    assert!(
        answer.contains("have a time at or after 08:30 and hold \"warn\"; the data above shows only those 3.)"),
        "{answer}"
    );
    mock.assert_clean();
}

/// A count of a kind of line the lines do not name ("problems") is the model's to make from the
/// lines in the time: the engine shows them, and does not press its count of every line in the
/// time onto the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lines_in_a_time_are_no_count_of_a_kind_the_task_names() {
    let mock = MockLlm::start().await;
    let p = project(&mock, "How many problems has server.log had since 08:30?", "file_read", "server.log", SERVER_LOG);
    mock.push_all([tool_call("file_read", json!({"path": "server.log"})), text("ANSWER: 4")]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["output"], "4", "the model's count stands: {}", o.stdout);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2, "not asked again with the 5 lines in the time");
    let answer = crate::common::content(&reqs[1], 1);
    assert!(answer.contains("5 of the 7 lines of `server.log` have a time at or after 08:30"), "{answer}");
    mock.assert_clean();
}

/// "The average CPU between 10:00 and 11:00": the lines outside the time are left out before the
/// model's `value` runs, and the engine averages the three inside (the local model's first
/// read asked for offset 1001000000000000, stop 45's probe).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_average_over_a_time_the_task_names_takes_only_the_lines_inside_it() {
    let mock = MockLlm::start().await;
    let log = "09:40 cpu=91\n09:55 cpu=88\n10:05 cpu=40\n10:20 cpu=50\n10:45 cpu=60\n11:10 cpu=95\n";
    let p = project(
        &mock,
        "What was the average CPU usage in metrics.log between 10:00 and 11:00?",
        "file_read",
        "metrics.log",
        log,
    );
    mock.push_all([
        tool_call("file_read", json!({"path": "metrics.log"})),
        text("```python\ndef value(line: str) -> float:\n    return float(line.split('=')[1])\n```"),
        text("ANSWER: 50"),
    ]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["output"], "50", "{}", o.stdout);
    let reqs = mock.requests();
    let code = crate::common::content(&reqs[1], 1);
    assert!(code.contains("10:05 cpu=40") && !code.contains("09:40"), "only the lines inside the time: {code}");
    let answer = crate::common::content(&reqs[2], 1);
    assert!(!answer.contains("09:40 cpu=91"), "{answer}");
    assert!(answer.contains("3 of the 6 lines of `metrics.log` have a time"), "{answer}");
    assert!(answer.contains("comes to 50"), "{answer}");
    mock.assert_clean();
}

/// "Which endpoint has the most server errors (5xx)": the lines of another class are left out,
/// and where the model's `key` gives nothing the engine can count, the answer still sees only
/// the 5xx lines (the local model's key returned the words of the request's examples).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_most_per_value_within_a_status_class_sees_only_that_class() {
    let mock = MockLlm::start().await;
    let log = "GET /orders 200\nGET /orders 500\nPOST /pay 502\nPOST /pay 503\nGET /users 200\nPOST /pay 200\nGET /orders 200\nGET /users 504\n";
    let p = project(&mock, "Which endpoint in api.log has the most server errors (5xx)?", "file_read", "api.log", log);
    mock.push_all([
        tool_call("file_read", json!({"path": "api.log"})),
        text("```python\ndef key(line: str) -> str:\n    return 'user'\n```"),
        text("ANSWER: POST /pay"),
    ]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["output"], "POST /pay", "{}", o.stdout);
    let answer = crate::common::last_message(&mock.requests()[2])["content"].as_str().unwrap().to_string();
    assert!(answer.contains("POST /pay 503") && !answer.contains("GET /orders 200"), "{answer}");
    assert!(answer.contains("4 of the 8 lines of `api.log`"), "{answer}");
    mock.assert_clean();
}

/// A count made with `grep -c` cannot be cut to a time: the answer goes back with the search
/// printing its lines, and the engine then keeps those after the time (`agent/count_only.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_by_grep_for_a_time_window_goes_back_for_the_lines() {
    let mock = MockLlm::start().await;
    let p = project(&mock, "How many errors were logged after 14:00 in app.log?", "shell", "app.log", LOG);
    mock.push_all([
        tool_call("shell", json!({"command": "grep -c ERROR app.log"})),
        text("4 errors were logged after 14:00."),
        tool_call("shell", json!({"command": "grep ERROR app.log"})),
        text("4 errors were logged after 14:00."),
        text("ANSWER: 2 errors were logged after 14:00."),
    ]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["output"], "2 errors were logged after 14:00.", "{}", o.stdout);
    let reqs = mock.requests();
    assert_eq!(
        super::last_text(&reqs[2]),
        r#"`grep -c ERROR app.log` printed only how many lines match, and the task asks about their dates or times. Call this instead, which prints the lines: shell {"command":"grep ERROR app.log"}"#
    );
    let answer = crate::common::content(&reqs[4], 1);
    assert!(answer.contains("(2 of the 4 lines of `grep ERROR app.log` have a time after 14:00;"), "{answer}");
    assert!(!answer.contains("09:12:01"), "{answer}");
    assert!(!answer.contains("grep -c"), "the count of every line is left out: {answer}");
    mock.assert_clean();
}

/// "Which accounts have already expired?": the local model's `keep` compared with
/// `'2023-01-01'` and the two accounts still valid were named. The engine compares each date
/// with today (the run's clock).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_has_already_expired_is_dated_against_today() {
    let mock = MockLlm::start().await;
    let csv = "user,plan,expires\njsmith,pro,2025-03-01\nakumar,team,2031-06-30\nlnguyen,pro,2024-12-15\nmgarcia,free,2030-01-01\n";
    let p = project(&mock, "Which accounts in accounts.csv have already expired?", "file_read", "accounts.csv", csv);
    mock.push_all([tool_call("file_read", json!({"path": "accounts.csv"})), text("ANSWER: jsmith and lnguyen.")]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["output"], "jsmith and lnguyen.", "{}", o.stdout);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2, "the read and the answer: no code request");
    let today = chrono::Utc::now().with_timezone(&chrono_tz::Asia::Shanghai).date_naive().format("%Y-%m-%d");
    let answer = crate::common::content(&reqs[1], 1);
    assert!(
        answer.contains(&format!("(2 of the 4 rows of `accounts.csv` have a date before today ({today});")),
        "{answer}"
    );
    assert!(!answer.contains("akumar"), "{answer}");
    mock.assert_clean();
}

/// "How many seconds did all the builds take together": the local model added 184, 97, 203 and
/// 176 to 750. Seconds the lines write (`duration=184s`) are a total the engine adds up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unit_the_lines_write_is_added_up_by_the_engine() {
    let mock = MockLlm::start().await;
    let log = "build 412 main passed duration=184s\nbuild 413 main failed duration=97s\nbuild 414 feature/x passed duration=203s\nbuild 415 main passed duration=176s\n";
    let p = project(
        &mock,
        "How many seconds did all the builds in builds.log take together?",
        "file_read",
        "builds.log",
        log,
    );
    mock.push_all([
        tool_call("file_read", json!({"path": "builds.log"})),
        text("```python\ndef value(line: str) -> float:\n    return float(line.split('=')[1])\n```"),
        text("ANSWER: 660 seconds."),
    ]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["output"], "660 seconds.", "{}", o.stdout);
    let reqs = mock.requests();
    assert!(super::last_text(&reqs[1]).contains("returns the number of one line that the task adds up"));
    let answer = crate::common::content(&reqs[2], 1);
    assert!(answer.contains("660"), "{answer}");
    mock.assert_clean();
}

/// "Which user had the most failed logins": asked for `value(line)`, the local model gave every
/// line 1 and the first user was named. The engine counts the lines per the model's `key`, which
/// returned the user and the address as a pair.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_value_with_the_most_lines_is_counted_by_the_engine() {
    let mock = MockLlm::start().await;
    let log = "Nov 27 09:01:12 sshd: Failed password for root from 203.0.113.5\nNov 27 09:02:40 sshd: Failed password for bob from 203.0.113.9\n\
Nov 27 09:03:02 sshd: Failed password for root from 203.0.113.5\nNov 27 09:05:11 sshd: Failed password for bob from 203.0.113.9\n\
Nov 27 09:06:30 sshd: Failed password for bob from 203.0.113.9\nNov 27 09:07:45 sshd: Accepted password for bob from 198.51.100.8\n";
    let p = project(&mock, "Which user had the most failed logins in auth.log?", "file_read", "auth.log", log);
    mock.push_all([
        tool_call("file_read", json!({"path": "auth.log"})),
        // The local model's own function: a pair is keyed by its first part (`select/harness.rs`),
        // and a line its search fails on (`Accepted`) by none.
        text(
            "```python\nimport re\n\ndef key(line: str) -> str:\n    username = re.search(r'Failed password for (\\w+)', line).group(1)\n    ip_address = re.search(r'from (\\d+\\.\\d+\\.\\d+\\.\\d+)', line).group(1)\n    return (username, ip_address)\n```",
        ),
        text("ANSWER: bob, with 3 failed logins."),
    ]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["output"], "bob, with 3 failed logins.", "{}", o.stdout);
    let reqs = mock.requests();
    // The task's own word for what it counts per, not examples the model copies (stop 47).
    assert!(
        super::last_text(&reqs[1])
            .contains("the value it counts them per (here: the user; return the part of the line that names it)"),
        "{}",
        super::last_text(&reqs[1])
    );
    let answer = super::last_text(&reqs[2]);
    assert!(answer.contains("(Counted per value in `auth.log`: bob: 3, root: 2. The most: bob, with 3.)"), "{answer}");
    mock.assert_clean();
}

/// Shown the lines it counts and the engine's count, the local model repeated the number it
/// remembered from the run before. The answer goes back once naming the count; the one that
/// says it is delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_without_the_engines_count_is_asked_again() {
    let mock = MockLlm::start().await;
    let log = "11:00 ERROR a\n11:01 ERROR b\n11:02 INFO c\n11:03 ERROR d\n11:04 ERROR e\n11:05 ERROR f\n";
    let p = project(&mock, "Count the ERROR lines in app.log.", "file_read", "app.log", log);
    mock.push_all([
        tool_call("file_read", json!({"path": "app.log"})),
        text("```python\ndef keep(line: str) -> bool:\n    return 'ERROR' in line\n```"),
        text("ANSWER: There are 2 ERROR lines in app.log."),
        text("ANSWER: There are 5 ERROR lines in app.log."),
    ]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["output"], "There are 5 ERROR lines in app.log.", "{}", o.stdout);
    let reqs = mock.requests();
    assert!(
        super::last_text(&reqs[3])
            .starts_with("Your answer does not say 5, the number the engine counted in the data: (5 of the 6 lines"),
        "{}",
        super::last_text(&reqs[3])
    );
    let show = p.show(1).await;
    assert_eq!(
        super::note_details(&show, "count_not_said"),
        ["the answer did not say 5, the count of the selection; asked again, and the new answer says it"]
    );
    mock.assert_clean();
}

/// A project whose first run stored "app.log ERROR lines: N" in memory, its routine `task` now
/// counting the ERROR lines of a log of five and comparing with the last check.
async fn remembered(mock: &MockLlm, n: usize) -> Routines {
    let p = project(mock, &format!("Remember that app.log had {n} ERROR lines."), "memory_store", "notes.txt", "");
    mock.push_all([
        tool_call("memory_store", json!({"key": "errors", "content": format!("app.log ERROR lines: {n}")})),
        text("Stored."),
    ]);
    p.run_async(["run", "task"]).await.success();
    p.write(
        "routines/task.yaml",
        "prompt: Count the ERROR lines in app.log and tell me whether there are more or fewer than at your last check.\n\
         agent: { tools: [file_read, memory_recall, memory_store] }\n",
    )
    .write("app.log", "11:00 ERROR a\n11:01 ERROR b\n11:02 INFO c\n11:03 ERROR d\n11:04 ERROR e\n11:05 ERROR f\n");
    p
}

/// Asked whether there are more or fewer ERROR lines than at the last check, with 2 remembered
/// from it, the local model said the engine's count, 5, and nothing of the comparison. The
/// answer goes back once naming both numbers and the direction; the one that says them is
/// delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_the_task_compares_with_the_last_check_goes_back_without_the_comparison() {
    let mock = MockLlm::start().await;
    let p = remembered(&mock, 2).await;
    let before = mock.requests().len();
    mock.push_all([
        tool_call("file_read", json!({"path": "app.log"})),
        text("There are 5 ERROR lines in app.log."),
        text("```python\ndef keep(line: str) -> bool:\n    return 'ERROR' in line\n```"),
        text("ANSWER: There are 5 ERROR lines in app.log."),
        text("ANSWER: There are 5 ERROR lines now, 3 more than the 2 at the last check."),
    ]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["output"], "There are 5 ERROR lines now, 3 more than the 2 at the last check.", "{}", o.stdout);
    let reqs = mock.requests();
    let asks: Vec<String> = reqs[before..].iter().map(super::last_text).collect();
    let ask = asks.last().cloned().unwrap_or_default();
    assert!(
        ask.starts_with(
            "Your answer does not compare. The count now is 5; the last check remembered 2: 3 more than last time."
        ),
        "{asks:#?}"
    );
    let show = p.show(2).await;
    assert_eq!(
        super::note_details(&show, "comparison_not_said"),
        [
            "the answer said 5 but not how it compares with 2 remembered from the last check; asked again, and the new answer says it"
        ]
    );
    mock.assert_clean();
}

/// On a first check nothing is remembered, and the answer compared anyway ("3 more than last
/// time"): it goes back once to say the count alone, so no made-up number goes into the memory
/// the next run compares with.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comparison_with_a_last_check_nothing_remembered_goes_back_for_the_count_alone() {
    let mock = MockLlm::start().await;
    let log = "11:00 ERROR a\n11:01 ERROR b\n11:02 INFO c\n11:03 ERROR d\n11:04 ERROR e\n11:05 ERROR f\n";
    let p = project(
        &mock,
        "Count the ERROR lines in app.log and tell me whether there are more or fewer than at your last check.",
        "file_read, memory_recall, memory_store",
        "app.log",
        log,
    );
    mock.push_all([
        tool_call("file_read", json!({"path": "app.log"})),
        text("There are 5 ERROR lines in app.log."),
        text("```python\ndef keep(line: str) -> bool:\n    return 'ERROR' in line\n```"),
        text("ANSWER: There are 5 ERROR lines, 3 more than last time."),
        text("ANSWER: There are 5 ERROR lines in app.log; this is the first check."),
    ]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["output"], "There are 5 ERROR lines in app.log; this is the first check.", "{}", o.stdout);
    let reqs = mock.requests();
    assert!(
        super::last_text(&reqs[4])
            .starts_with("Nothing from an earlier check is remembered, so there is nothing to compare 5 with yet."),
        "{}",
        super::last_text(&reqs[4])
    );
    assert_eq!(
        super::note_details(&p.show(1).await, "comparison_without_memory"),
        [
            "the answer compared 5 with a last check that nothing remembered; asked again, and the new answer says the count alone"
        ]
    );
    mock.assert_clean();
}

/// The task of a routine compared with its last check, over a log of 2 ERROR lines at first.
const SINCE_LAST: &str =
    "Count the ERROR lines in app.log and tell me whether there are more or fewer than at your last check.";
const KEEP_ERRORS: &str = "```python\ndef keep(line: str) -> bool:\n    return 'ERROR' in line\n```";

/// A project whose routine `task` runs [`SINCE_LAST`] over 2 ERROR lines, run once with the
/// model's `replies` after its read and the engine's code request; its output.
async fn first_of_two_checks(mock: &MockLlm, answered: &str, replies: &[&str]) -> (Routines, String) {
    let p = project(
        mock,
        SINCE_LAST,
        "file_read, memory_recall, memory_store",
        "app.log",
        "10:00 ERROR a\n10:01 INFO b\n10:02 ERROR c\n",
    );
    mock.push_all([tool_call("file_read", json!({"path": "app.log"})), text(answered), text(KEEP_ERRORS)]);
    mock.push_all(replies.iter().map(|r| text(r)));
    let o = p.run_async(["run", "task", "--json"]).await;
    let output = o.json()["output"].as_str().unwrap_or_default().to_string();
    (p, output)
}

/// The second check over 5 ERROR lines: the answer that leaves out the comparison goes back
/// naming 2 as the last count.
async fn second_check_compares_with_two(p: &Routines, mock: &MockLlm) {
    let before = mock.requests().len();
    p.write("app.log", "11:00 ERROR a\n11:01 ERROR b\n11:02 INFO c\n11:03 ERROR d\n11:04 ERROR e\n11:05 ERROR f\n");
    mock.push_all([
        tool_call("file_read", json!({"path": "app.log"})),
        text("There are 5 ERROR lines."),
        text(KEEP_ERRORS),
        text("ANSWER: There are 5 ERROR lines."),
        text("ANSWER: There are 5 ERROR lines, 3 more than the 2 at the last check."),
    ]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["output"], "There are 5 ERROR lines, 3 more than the 2 at the last check.", "{}", o.stdout);
    let reqs = mock.requests();
    let ask = super::last_text(&reqs[reqs.len() - 1]);
    assert!(ask.starts_with("Your answer does not compare. The count now is 5; the last check remembered 2:"), "{ask}");
    assert_eq!(reqs.len() - before, 5);
}

/// On a first check the local model answered "少了1行" to every ask, and the next run compared
/// with that 1. The answer that still compares is delivered with the engine's count under it,
/// and the next run takes that count as the last one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_check_that_still_compares_is_delivered_with_the_count_the_next_run_reads() {
    let mock = MockLlm::start().await;
    let fewer = "ANSWER: 1 fewer than last time.";
    let (p, output) = first_of_two_checks(&mock, "1 fewer.", &[fewer, fewer, fewer]).await;
    assert_eq!(output, "1 fewer than last time.\n\nFirst check: now 2; nothing earlier is remembered to compare with.");
    assert_eq!(
        super::note_details(&p.show(1).await, "comparison_without_memory"),
        [
            "the answer compared 2 with a last check that nothing remembered; asked again, and the first answer stands with the count under it"
        ]
    );
    second_check_compares_with_two(&p, &mock).await;
    mock.assert_clean();
}

/// The last count is what the routine answered last time: the engine's record of its last
/// turn, though the model stored nothing (the local model stored "orders.csv" as a memory).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_count_is_the_routines_last_answer_to_the_task() {
    let mock = MockLlm::start().await;
    let first = "ANSWER: There are 2 ERROR lines; this is the first check.";
    let (p, output) = first_of_two_checks(&mock, "There are 2 ERROR lines.", &[first]).await;
    assert_eq!(output, "There are 2 ERROR lines; this is the first check.");
    second_check_compares_with_two(&p, &mock).await;
    mock.assert_clean();
}

/// Asked for the comparison, the local model answered "1, 3": the answer is delivered with the
/// engine's line of both numbers and the direction under it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comparison_still_not_said_is_written_under_the_answer() {
    let mock = MockLlm::start().await;
    let p = remembered(&mock, 7).await;
    mock.push_all([
        tool_call("file_read", json!({"path": "app.log"})),
        text("There are 5 ERROR lines in app.log."),
        text("```python\ndef keep(line: str) -> bool:\n    return 'ERROR' in line\n```"),
        text("ANSWER: There are 5 ERROR lines in app.log."),
        text("ANSWER: 5, 7"),
    ]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(
        o.json()["output"],
        "There are 5 ERROR lines in app.log.\n\nLast check: 7; now 5: 2 fewer.",
        "{}",
        o.stdout
    );
    assert_eq!(
        super::note_details(&p.show(2).await, "comparison_not_said"),
        [
            "the answer said 5 but not how it compares with 7 remembered from the last check; asked again, and the first answer stands with the comparison under it"
        ]
    );
    mock.assert_clean();
}
