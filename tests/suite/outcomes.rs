//! Runs that end without an answer to deliver say what failed (SPEC §13): every tool call
//! failed, the model was still calling tools at the limit, the model replied `TASK_FAILED:`.
//! Each ends `failed` with an error that names it and delivers nothing but its `on_failure`
//! report; the benign counterparts are delivered. Through `routines run` and the mock server.

use serde_json::{Value, json};

use crate::common::Routines;
use crate::common::mock_llm::{MockLlm, text, tool_call};

/// A project with the routine `task`: `spec` (YAML lines after the prompt), a file delivery to
/// `out/task.md` and an `on_failure` one to `alerts/task.txt` that carries the error.
fn project(mock: &MockLlm, prompt: &str, spec: &str) -> Routines {
    let p = Routines::project(&mock.base_url(), "");
    p.write("templates/failure.txt.j2", "{{ status }}: {{ error }}\n").write(
        "routines/task.yaml",
        &format!(
            "prompt: {prompt}\nretry: {{ attempts: 1 }}\n{spec}deliver:\n  - file: {{ path: out/task.md }}\non_failure:\n  deliver:\n    - file: {{ path: alerts/task.txt, template: failure.txt.j2 }}\n"
        ),
    );
    p
}

/// The run's status and error as `routines show --json` reads them from the database, after
/// checking that nothing was delivered to `out/`.
async fn failed_run(p: &Routines) -> (Value, String) {
    let show = p.show(1).await;
    assert!(!p.path().join("out").exists(), "nothing is delivered: {show}");
    (show["status"].clone(), show["error"].as_str().unwrap_or_default().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_tool_calls_all_failed_fails_naming_them() {
    let mock = MockLlm::start().await;
    let p = project(&mock, "Summarize notes.md.", "agent: { tools: [file_read] }\n");
    mock.push_all([
        tool_call("teleport", json!({"to": "notes.md"})),
        tool_call("file_read", json!({"path": "notes.md"})),
        text("The notes could not be read, so there is nothing to summarize."),
        text("The notes could not be read, so there is nothing to summarize."),
        text("The notes could not be read, so there is nothing to summarize."),
    ]);
    p.run_async(["run", "task"]).await.code(1);
    let (status, error) = failed_run(&p).await;
    assert_eq!(status, "failed");
    assert!(error.starts_with("every tool call failed: `teleport` is not a tool; file_read notes.md: "), "{error}");
    assert!(error.contains("notes.md"), "{error}");
    assert!(p.read("alerts/task.txt").starts_with("failed: every tool call failed: "));
}

/// A failed call, then a look that worked: the answer has something to rest on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_call_followed_by_one_that_worked_is_delivered() {
    let mock = MockLlm::start().await;
    let p = project(&mock, "Summarize notes.md.", "agent: { tools: [file_read] }\n");
    p.write("notes.md", "Ship the release on Friday.\n");
    mock.push_all([
        tool_call("teleport", json!({"to": "notes.md"})),
        tool_call("file_read", json!({"path": "notes.md"})),
        text("The release ships on Friday."),
    ]);
    p.run_async(["run", "task"]).await.success();
    assert_eq!(p.read("out/task.md"), "The release ships on Friday.\n");
    assert!(!p.path().join("alerts").exists());
}

/// A silence over a check that failed is a guess, not "all is well" (a heartbeat's ok token
/// after every check failed is the same).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_reply_over_failed_checks_fails_the_run() {
    let mock = MockLlm::start().await;
    let p =
        project(&mock, "Check status.json; reply NO_REPLY if every service is up.", "agent: { tools: [file_read] }\n");
    mock.push_all([tool_call("file_read", json!({"path": "status.json"})), text("NO_REPLY"), text("NO_REPLY")]);
    p.run_async(["run", "task"]).await.code(1);
    let (status, error) = failed_run(&p).await;
    assert_eq!(status, "failed");
    assert!(error.starts_with("every tool call failed: file_read status.json: "), "{error}");
}

/// A search that matched nothing answered the check: the silence stands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_reply_over_an_empty_search_is_silent() {
    let mock = MockLlm::start().await;
    let p = project(
        &mock,
        "Check logs/app.log for ERROR lines; reply NO_REPLY if there are none.",
        "agent: { tools: [shell], allow_commands: [grep] }\n",
    );
    p.write("logs/app.log", "10:00 INFO started\n10:05 INFO healthy\n");
    mock.push_all([
        tool_call("shell", json!({"command": "grep -n ERROR logs/app.log"})),
        text("NO_REPLY"),
        // The failed check goes back once, and the review of what the tools returned agrees.
        text("NO_REPLY"),
        text("NO_REPLY"),
    ]);
    let o = p.run_async(["run", "task"]).await;
    o.success();
    let show = p.show(1).await;
    assert_eq!(show["status"], "silent", "{show}");
    assert!(!p.path().join("out").exists() && !p.path().join("alerts").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_still_calling_tools_at_the_limit_fails_saying_so() {
    let mock = MockLlm::start().await;
    let p = project(&mock, "What is in the project?", "agent: { tools: [file_list], max_iterations: 3 }\n");
    for dir in ["a", "b", "c"] {
        p.write(&format!("{dir}/x.txt"), "x\n");
    }
    mock.push_all([
        tool_call("file_list", json!({"path": "a"})),
        tool_call("file_list", json!({"path": "b"})),
        tool_call("file_list", json!({"path": "c"})),
    ]);
    p.run_async(["run", "task"]).await.code(1);
    let (status, error) = failed_run(&p).await;
    assert_eq!(status, "failed");
    assert_eq!(error, "the model was still calling tools after 3 model calls: last call file_list `c`");
}

/// Asked for the answer with the tools withheld, the model went on calling them: the error says
/// so, never "the final reply was empty".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_calling_tools_where_none_are_offered_fails_saying_so() {
    let mock = MockLlm::start().await;
    let p = project(&mock, "What does notes.md say?", "agent: { tools: [file_read] }\n");
    p.write("notes.md", "Ship on Friday.\n");
    let read = || tool_call("file_read", json!({"path": "notes.md"}));
    mock.push_all([read(), read(), read(), read(), read(), read()]);
    p.run_async(["run", "task"]).await.code(1);
    let (status, error) = failed_run(&p).await;
    assert_eq!(status, "failed");
    assert!(error.starts_with("the model was still calling tools after "), "{error}");
    assert!(error.ends_with("model calls: last call file_read `notes.md`"), "{error}");
}

/// The protocol: one line `TASK_FAILED: <reason>` fails the run with the reason; it is never
/// delivered, and `on_failure` tells a person.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_failed_reply_fails_the_run_with_its_reason() {
    let mock = MockLlm::start().await;
    let p = project(&mock, "Report May's total from sales.csv.", "agent: { tools: [file_read] }\n");
    p.write("sales.csv", "month,total\n2026-04,1200\n");
    mock.push_all([
        tool_call("file_read", json!({"path": "sales.csv"})),
        text("TASK_FAILED: sales.csv has no row for May"),
    ]);
    p.run_async(["run", "task"]).await.code(1);
    let (status, error) = failed_run(&p).await;
    assert_eq!(status, "failed");
    assert_eq!(error, "the model reported that the task could not be done: sales.csv has no row for May");
    assert_eq!(p.read("alerts/task.txt"), format!("failed: {error}\n"));
    let sys = mock.requests()[0]["messages"][0]["content"].as_str().unwrap().to_string();
    assert!(sys.contains("reply with one line `TASK_FAILED: <what failed and why>`"), "{sys}");
}

/// The same routine, answered: delivered as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_is_delivered_as_before() {
    let mock = MockLlm::start().await;
    let p = project(&mock, "Report April's total from sales.csv.", "agent: { tools: [file_read] }\n");
    p.write("sales.csv", "month,total\n2026-04,1200\n");
    mock.push_all([tool_call("file_read", json!({"path": "sales.csv"})), text("April's total was 1200.")]);
    p.run_async(["run", "task"]).await.success();
    assert_eq!(p.read("out/task.md"), "April's total was 1200.\n");
    assert!(!p.path().join("alerts").exists());
}

/// What a run's end means does not depend on `agent.assist`: under `off` too, calls that all
/// failed, the model's `TASK_FAILED:` and the limit reached while calling tools fail the run
/// (the plain loop makes no request more for them; they are verdicts, not assists).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_assist_off_a_run_without_an_answer_fails_the_same_way() {
    let cases: [(&str, Vec<_>, &str); 3] = [
        (
            "agent: { tools: [file_read], assist: off }\n",
            vec![tool_call("file_read", json!({"path": "notes.md"})), text("Nothing to summarize.")],
            "every tool call failed: file_read notes.md: ",
        ),
        (
            "agent: { tools: [file_read], assist: off }\n",
            vec![text("TASK_FAILED: the notes are not in the workspace")],
            "the model reported that the task could not be done: the notes are not in the workspace",
        ),
        (
            "agent: { tools: [file_list], assist: off, max_iterations: 2 }\n",
            vec![tool_call("file_list", json!({})), tool_call("file_list", json!({"path": "."}))],
            "the model was still calling tools after 2 model calls",
        ),
    ];
    for (spec, replies, error) in cases {
        let mock = MockLlm::start().await;
        let p = project(&mock, "Summarize notes.md.", spec);
        mock.push_all(replies);
        p.run_async(["run", "task"]).await.code(1);
        let (status, got) = failed_run(&p).await;
        assert_eq!(status, "failed", "{spec}");
        assert!(got.starts_with(error), "{spec}: {got}");
    }
}
