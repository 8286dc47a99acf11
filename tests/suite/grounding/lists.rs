//! What the engine works out over a list the task asks about (`agent/select/`): an average, the
//! ticked or open boxes of a task list, the first date to come and the days to it; and a silence
//! beside the records the selection kept (`agent/turn.rs`). Through `routines run`, a scripted
//! model and the real sandbox the model's functions run in (bubblewrap here and in CI).

use serde_json::json;

use crate::common::Routines;
use crate::common::mock_llm::{MockLlm, text, tool_call};

/// A project whose routine `task` runs `prompt` with `file_read` over `file` holding `body`.
fn project(mock: &MockLlm, prompt: &str, file: &str, body: &str) -> Routines {
    let p = super::assisted(&mock.base_url(), "");
    p.write("routines/task.yaml", &format!("prompt: {prompt}\nagent: {{ tools: [file_read] }}\n")).write(file, body);
    p
}

/// "The average response time": the local model answered 100 for 120, 80, 200 and 100
/// (bench/README.md, stop 42). Its `value` reads each line's number; the engine states the mean.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_average_is_worked_out_by_the_engine() {
    let mock = MockLlm::start().await;
    let log = "GET /api/users 120ms\nPOST /api/orders 200ms\nGET /api/orders 80ms\nGET /api/users 100ms\n";
    let p = project(&mock, "What is the average response time in latency.log?", "latency.log", log);
    mock.push_all([
        tool_call("file_read", json!({"path": "latency.log"})),
        // The local model's own function: `float` of `120ms` is 120 (`select/harness.rs`).
        text("```python\ndef value(line: str) -> float:\n    return float(line.split()[2])\n```"),
        text("ANSWER: The average response time is 125 ms."),
    ]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["output"], "The average response time is 125 ms.", "{}", o.stdout);
    let reqs = mock.requests();
    assert!(super::last_text(&reqs[1]).contains("returns the number of one line that the task averages"));
    let answer = crate::common::content(&reqs[2], 1);
    assert!(
        answer.contains("(Averaged over the 4 lines of `latency.log`, what the task averages comes to 125.)"),
        "{answer}"
    );
    mock.assert_clean();
}

/// "How many tasks are already done?" over a task list: the local model's `keep` tested for
/// the word `done` twice and it then counted every line. The engine reads the boxes itself:
/// no function is asked for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ticked_boxes_of_a_task_list_are_counted_without_a_function() {
    let mock = MockLlm::start().await;
    let todo = "# Sprint 14\n- [x] Migrate the billing tables\n- [ ] Write the release notes\n- [x] Fix the login redirect\n- [ ] Update the on-call rota\n- [x] Remove the old feature flags\n- [ ] Review the API rate limits\n";
    let p = project(&mock, "How many tasks in TODO.md are already done?", "TODO.md", todo);
    mock.push_all([tool_call("file_read", json!({"path": "TODO.md"})), text("ANSWER: 3 tasks are done.")]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["output"], "3 tasks are done.", "{}", o.stdout);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2, "the read and the answer: no code request");
    let answer = crate::common::content(&reqs[1], 1);
    assert!(
        answer.contains("(3 of the 7 lines of `TODO.md` are task-list items with a ticked `[x]` box; the data above shows only those 3.)"),
        "{answer}"
    );
    assert!(!answer.contains("Write the release notes"), "the open ones are not shown: {answer}");
    mock.assert_clean();
}

/// "How many open tasks are assigned to @maria?": the engine counted every open box (4) and asked
/// the model's right 3 again as 4 (bench/README.md, stop 44). The open items that also hold the
/// task's word are the ones counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_open_boxes_that_hold_the_tasks_word_are_counted() {
    let mock = MockLlm::start().await;
    let todo = "- [ ] Renew TLS certificate @maria\n- [x] Rotate API keys @tom\n- [ ] Update onboarding doc @maria\n\
                - [ ] Fix flaky test @tom\n- [ ] Review budget @maria\n- [x] Archive old tickets @maria\n";
    let p = project(&mock, "How many open tasks in notes/todo.md are assigned to @maria?", "notes/todo.md", todo);
    mock.push_all([tool_call("file_read", json!({"path": "notes/todo.md"})), text("ANSWER: 3")]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["output"], "3", "{}", o.stdout);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2, "the read and the answer: the count is said, no request again");
    let answer = crate::common::content(&reqs[1], 1);
    assert!(
        answer.contains("(3 of the 6 lines of `notes/todo.md` are task-list items with a open `[ ]` box that hold \"maria\"; the data above shows only those 3.)"),
        "{answer}"
    );
    assert!(!answer.contains("@tom"), "{answer}");
    mock.assert_clean();
}

/// "Which certificate expires first, and in how many days?": the local model's `value` returned
/// the days since each date, and the latest was named. Each line holds one date: the engine
/// picks the earliest without a function and states the days from today (the run's clock).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_date_to_come_and_the_days_to_it_are_stated() {
    let mock = MockLlm::start().await;
    // The project's zone (Asia/Shanghai): its date is a day ahead of UTC's from 16:00 UTC.
    let today = chrono::Utc::now().with_timezone(&chrono_tz::Asia::Shanghai).date_naive();
    let date = |days: i64| (today + chrono::Duration::days(days)).format("%Y-%m-%d").to_string();
    let certs = format!(
        "api.acme.test     expires {}\nwww.acme.test     expires {}\nmail.acme.test    expires {}\n",
        date(7),
        date(93),
        date(53)
    );
    let p = project(&mock, "Which certificate in certs.txt expires first, and in how many days?", "certs.txt", &certs);
    mock.push_all([
        tool_call("file_read", json!({"path": "certs.txt"})),
        text("ANSWER: api.acme.test expires first, in 7 days."),
    ]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["output"], "api.acme.test expires first, in 7 days.", "{}", o.stdout);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2, "the read and the answer: no code request");
    let answer = crate::common::content(&reqs[1], 1);
    let expected = format!(
        "the earliest by the date the task compares is: api.acme.test     expires {}) ({} is 7 days after today, {}.)",
        date(7),
        date(7),
        date(0)
    );
    assert!(answer.contains(&expected), "{answer}");
    mock.assert_clean();
}

/// A status page whose one row of four is not operational: the selection kept it, and the
/// local model answered `NO_REPLY` beside it (bench/README.md, stop 42). The silence is not
/// believed: the report is asked naming the row, and it is delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silence_beside_the_records_the_selection_kept_is_not_believed() {
    let mock = MockLlm::start().await;
    let status = "[\n  {\"service\": \"Website\", \"status\": \"Operational\"},\n  {\"service\": \"Checkout\", \"status\": \"Operational\"},\n  {\"service\": \"Search\", \"status\": \"Partial outage\"},\n  {\"service\": \"Email\", \"status\": \"Operational\"}\n]\n";
    let p = project(
        &mock,
        "Read status.json and tell me which services are not operational. If everything is operational, reply NO_REPLY.",
        "status.json",
        status,
    );
    mock.push_all([
        tool_call("file_read", json!({"path": "status.json"})),
        text("```python\ndef keep(item):\n    return item['status'] != 'Operational'\n```"),
        text("ANSWER: NO_REPLY"),
        text("ANSWER: Search is in a partial outage."),
    ]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["status"], "succeeded", "{}", o.stdout);
    assert_eq!(o.json()["output"], "Search is in a partial outage.");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 4, "the read, the code, the silent answer, the report");
    let asked = super::last_text(&reqs[3]);
    assert!(asked.starts_with("Your answer names none of the 1 items the task asks about:"), "{asked}");
    assert!(asked.contains("Partial outage"), "{asked}");
    let show = p.show(1).await;
    assert_eq!(
        super::note_details(&show, "silence_over_selection"),
        ["a silent answer beside 1 records the task asks about; asked to name them"]
    );
    mock.assert_clean();
}

/// "What percentage of the requests failed with a 5xx status?": the local model's `keep`
/// tested for the text `5xx` twice, and the answer counted 4 of 10 for 2 (bench/README.md,
/// stop 42). The engine reads each line's status: no function, and the share is its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_class_of_statuses_is_told_apart_by_the_engine() {
    let mock = MockLlm::start().await;
    let log = "GET /api/orders 200\nGET /api/orders 200\nPOST /api/pay 502\nGET /api/users 200\nGET /api/users 500\nGET /health 200\nGET /api/orders 200\nPOST /api/pay 200\nGET /api/users 404\nGET /health 200\n";
    let p =
        project(&mock, "What percentage of the requests in access.log failed with a 5xx status?", "access.log", log);
    mock.push_all([tool_call("file_read", json!({"path": "access.log"})), text("ANSWER: 20% of the requests failed.")]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["output"], "20% of the requests failed.", "{}", o.stdout);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2, "the read and the answer: no code request");
    let answer = crate::common::content(&reqs[1], 1);
    assert!(answer.contains("2 of the 10 lines") && answer.contains("20"), "{answer}");
    assert!(!answer.contains("GET /api/users 404"), "only the 5xx lines are shown: {answer}");
    mock.assert_clean();
}
