//! Numbers compared: a comparison of two numbers an answer states falsely
//! (`agent/false_comparison.rs`) is asked once more with the comparison as it is; a value of the
//! quantity a task names that crosses its limit with a unit (`agent/unit_limit.rs`) turns a
//! silence into a report. Through `routines run` and a scripted model.

use serde_json::json;

use crate::common::Routines;
use crate::common::mock_llm::{MockLlm, text, tool_call};

/// A routine that asks whether a queue of 1250 is over 1000.
fn queue(mock: &MockLlm) -> Routines {
    let p = super::assisted(&mock.base_url(), "");
    p.write(
        "routines/queue.yaml",
        "prompt: Read queue.json and tell me whether the queue depth is over 1000.\nagent: { tools: [file_read] }\n",
    )
    .write("queue.json", "{\"queue\": \"emails\", \"depth\": 1250, \"consumers\": 3}\n");
    p
}

/// "The queue depth is 1250, which is not over 1000": the answer goes back with "1250 is more
/// than 1000", and the answer that states no false comparison is delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_compares_two_numbers_falsely_goes_back_once() {
    let mock = MockLlm::start().await;
    let p = queue(&mock);
    mock.push_all([
        tool_call("file_read", json!({"path": "queue.json"})),
        text("ANSWER: The queue depth is 1250, which is not over 1000."),
        text("ANSWER: Yes: the queue depth is 1250, which is over 1000."),
    ]);
    let o = p.run_async(["run", "queue", "--json"]).await;
    assert_eq!(o.json()["output"], "Yes: the queue depth is 1250, which is over 1000.", "{}", o.stdout);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(
        super::last_text(&reqs[2]),
        "Your answer says \"1250, which is not over 1000\", which is false: 1250 is more than 1000. Check the data \
         against the task again and answer it; if nothing in the data is what the task asks to report, answer as the \
         task says for that case."
    );
    let show = p.show(1).await;
    assert_eq!(
        super::note_details(&show, "false_comparison"),
        [
            "the answer said \"1250, which is not over 1000\", but 1250 is more than 1000; asked again, and the new answer is taken"
        ]
    );
    mock.assert_clean();
}

/// A second answer that still compares falsely is not taken: the first stands, noted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_false_comparison_leaves_the_first_answer() {
    let mock = MockLlm::start().await;
    let p = queue(&mock);
    mock.push_all([
        tool_call("file_read", json!({"path": "queue.json"})),
        text("ANSWER: The queue depth is 1250, which is not over 1000."),
        text("ANSWER: The depth, 1250, is below 1000."),
    ]);
    let o = p.run_async(["run", "queue", "--json"]).await;
    assert_eq!(o.json()["output"], "The queue depth is 1250, which is not over 1000.", "{}", o.stdout);
    let show = p.show(1).await;
    assert_eq!(
        super::note_details(&show, "false_comparison"),
        [
            "the answer said \"1250, which is not over 1000\", but 1250 is more than 1000; asked again, and the first answer stands"
        ]
    );
    mock.assert_clean();
}

/// "Yes, the queue depth is over 1000." beside `"depth": 1250`: the answer about a limit that
/// does not say the value goes back once with the value and its side of the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_about_a_limit_without_the_value_goes_back_for_it() {
    let mock = MockLlm::start().await;
    let p = queue(&mock);
    mock.push_all([
        tool_call("file_read", json!({"path": "queue.json"})),
        text("ANSWER: Yes, the queue depth is over 1000."),
        text("ANSWER: Yes: the queue depth is 1250, over 1000."),
    ]);
    let o = p.run_async(["run", "queue", "--json"]).await;
    assert_eq!(o.json()["output"], "Yes: the queue depth is 1250, over 1000.", "{}", o.stdout);
    let reqs = mock.requests();
    assert_eq!(
        super::last_text(&reqs[2]),
        "Your answer does not say the value. The data gives 1250, which is more than 1000. Answer the task again \
         with that value, after a line that says ANSWER:"
    );
    assert_eq!(
        super::note_details(&p.show(1).await, "value_not_said"),
        [
            "the answer did not say 1250, the value of \"queue depth is over 1000\" in the results; asked again, and the new answer says it"
        ]
    );
    mock.assert_clean();
}

/// The local model answered "Yes" twice: the answer is delivered with the line that holds the
/// value under it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_still_without_the_value_gets_the_line_that_holds_it() {
    let mock = MockLlm::start().await;
    let p = queue(&mock);
    mock.push_all([tool_call("file_read", json!({"path": "queue.json"})), text("ANSWER: Yes"), text("Yes")]);
    let o = p.run_async(["run", "queue", "--json"]).await;
    assert_eq!(
        o.json()["output"],
        "Yes\n\nThe lines this rests on:\n{\"queue\": \"emails\", \"depth\": 1250, \"consumers\": 3}",
        "{}",
        o.stdout
    );
    assert_eq!(
        super::note_details(&p.show(1).await, "value_not_said"),
        [
            "the answer did not say 1250, the value of \"queue depth is over 1000\" in the results; asked again, and the first answer stands with the lines that hold it"
        ]
    );
    mock.assert_clean();
}

/// "Is /var more than 80% full": the local model read `14G` off the line of `/var` and answered
/// No beside `86% /var`. The percentage of the one line that holds the name the task gives is
/// the value the answer must say; asked for it, the answer says it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_about_a_percentage_of_a_named_line_goes_back_for_that_percentage() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write(
        "routines/disk.yaml",
        "prompt: Is /var more than 80% full according to df.txt? Answer yes or no with the percentage.\n\
         agent: { tools: [file_read] }\n",
    )
    .write(
        "df.txt",
        "Filesystem      Size  Used Avail Use% Mounted on\n/dev/sda1        50G   21G   27G  44% /\n\
         /dev/sdb1       100G   86G   14G  86% /var\n",
    );
    mock.push_all([
        tool_call("file_read", json!({"path": "df.txt"})),
        text("ANSWER: No: /var is 14G and is not more than 80%."),
        text("ANSWER: Yes: /var is 86% full, more than 80%."),
    ]);
    let o = p.run_async(["run", "disk", "--json"]).await;
    assert_eq!(o.json()["output"], "Yes: /var is 86% full, more than 80%.", "{}", o.stdout);
    assert_eq!(
        super::last_text(&mock.requests()[2]),
        "Your answer does not say the value. The data gives 86%, which is more than 80%. Answer the task again \
         with that value, after a line that says ANSWER:"
    );
    mock.assert_clean();
}

/// A routine that runs `task` over `file` holding `body`, or replies NO_REPLY, into `out.md`.
fn alert(mock: &MockLlm, task: &str, file: &str, body: &str) -> Routines {
    let p = super::assisted(&mock.base_url(), "");
    p.write(
        "routines/alert.yaml",
        &format!(
            "prompt: {task} Otherwise reply NO_REPLY.\nagent: {{ tools: [file_read] }}\ndeliver:\n  - file: {{ path: out.md }}\n"
        ),
    )
    .write(file, body);
    p
}

/// "less than 2G available" over `df -h`: the local model answered NO_REPLY beside `/data ...
/// 1.2G`, and its check tested the header. The `Avail` column's 1.2G crosses the limit: the
/// silence is not believed, no code is asked for, and the report is asked from that line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silence_beside_a_named_value_past_a_limit_with_a_unit_is_reported() {
    let mock = MockLlm::start().await;
    let df = "Filesystem      Size  Used Avail Use% Mounted on\n/dev/sda1        50G   31G   17G  65% /\n\
              /dev/sdb1       200G  198G  1.2G  99% /data\n/dev/sdc1        20G   12G  7.5G  62% /var\n";
    let p = alert(&mock, "Look at df.txt and alert me if any filesystem has less than 2G available.", "df.txt", df);
    mock.push_all([
        tool_call("file_read", json!({"path": "df.txt"})),
        text("ANSWER: NO_REPLY"),
        text("ANSWER: /data has only 1.2G available."),
    ]);
    let o = p.run_async(["run", "alert", "--json"]).await;
    assert_eq!(o.json()["status"], "succeeded", "{}", o.stdout);
    assert_eq!(p.read("out.md"), "/data has only 1.2G available.\n");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3, "the read, the answer, the report: no code request");
    let report = crate::common::content(&reqs[2], 1);
    assert!(report.contains("/dev/sdb1       200G  198G  1.2G  99% /data") && !report.contains("/var"), "{report}");
    assert_eq!(
        super::note_details(&p.show(1).await, "threshold_check"),
        ["the results hold 1.2G where the task says \"filesystem has less than 2g\"; the silence is not believed"]
    );
    mock.assert_clean();
}

/// `p99=950ms` against "above 800 ms" is found by its key; `p99=420ms` crosses nothing, which
/// proves nothing: the model's own check runs and keeps the silence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_key_is_compared_in_its_unit_and_a_value_under_the_limit_goes_to_the_code_check() {
    let task = "Check latency.txt. If the p99 latency is above 800 ms, tell me the value.";
    let mock = MockLlm::start().await;
    let p = alert(&mock, task, "latency.txt", "endpoint=/api/orders p50=180ms p95=610ms p99=950ms\n");
    mock.push_all([
        tool_call("file_read", json!({"path": "latency.txt"})),
        text("ANSWER: NO_REPLY"),
        text("ANSWER: The p99 latency is 950ms."),
    ]);
    let o = p.run_async(["run", "alert", "--json"]).await;
    assert_eq!(o.json()["output"], "The p99 latency is 950ms.", "{}", o.stdout);
    assert_eq!(mock.request_count(), 3, "no code request");

    let mock = MockLlm::start().await;
    let p = alert(&mock, task, "latency.txt", "endpoint=/api/orders p50=120ms p95=310ms p99=420ms\n");
    let code = "```python\ndef findings(output: str) -> list:\n    return []\n```";
    mock.push_all([tool_call("file_read", json!({"path": "latency.txt"})), text("ANSWER: NO_REPLY"), text(code)]);
    let o = p.run_async(["run", "alert", "--json"]).await;
    assert_eq!(o.json()["status"], "silent", "{}", o.stdout);
    assert_eq!(mock.request_count(), 3, "the read, the answer, the code");
    mock.assert_clean();
}
