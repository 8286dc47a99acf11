//! Grounding in routine runs through the binary: the first call requires a tool, a silent
//! reply that looked at nothing is not believed, an answer that never comes fails the run, and
//! the two routine fields are validated.

use serde_json::{Value, json};

use crate::common::Routines;
use crate::common::mock_llm::{MockLlm, text, tool_call};

const WATCH: &str = "prompt: Check notes.txt for anything urgent. If there is nothing, reply NO_REPLY.\n\
                     agent: { tools: [file_read, file_list] }\ndeliver:\n  - file: { path: out.md }\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_reply_that_looked_at_nothing_is_asked_to_check_first() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write("routines/watch.yaml", WATCH).write("notes.txt", "URGENT: renew the certificate today\n");
    mock.push_all([
        text("NO_REPLY"),
        tool_call("file_read", json!({"path": "notes.txt"})),
        text("Renew the certificate today."),
    ]);
    let o = p.run_async(["run", "watch"]).await;
    o.success().stdout_is("Renew the certificate today.\n");
    assert_eq!(p.read("out.md"), "Renew the certificate today.\n");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3);
    let choices: Vec<Value> = reqs.iter().map(|r| r.get("tool_choice").cloned().unwrap_or(Value::Null)).collect();
    assert_eq!(choices, [json!("required"), json!("required"), Value::Null], "each turn starts grounded");
    let nudge = crate::common::last_message(&reqs[1]);
    assert_eq!(
        nudge["content"],
        "You answered NO_REPLY without looking at anything. Use the tools now to check what the task is about, then answer as the task says."
    );
    mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_reply_after_a_check_is_believed_once_a_review_agrees() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write("routines/watch.yaml", WATCH).write("notes.txt", "nothing new\n");
    // The code check gets no function, so the review decides.
    mock.push_all([
        tool_call("file_read", json!({"path": "notes.txt"})),
        text("**NO_REPLY**"),
        text("I cannot write that."),
        text("NO_REPLY"),
    ]);
    let o = p.run_async(["run", "watch", "--json"]).await;
    o.success();
    assert_eq!(o.json()["status"], "silent");
    assert!(!p.path().join("out.md").exists());
    assert_eq!(mock.request_count(), 4);
    // The review sees the task and what the tool returned, and offers no tools.
    let review = &mock.requests()[3];
    let prompt = crate::common::content(review, 1);
    assert!(prompt.starts_with("Task:\n") && prompt.contains("nothing new"), "{prompt}");
    assert!(review.get("tools").is_none_or(|t| t.as_array().is_none_or(|a| a.is_empty())), "{review}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_reply_after_a_tool_showed_the_problem_is_reviewed_into_an_alert() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write("routines/watch.yaml", WATCH).write("notes.txt", "09:12 ERROR payment provider unreachable\n");
    mock.push_all([
        tool_call("file_read", json!({"path": "notes.txt"})),
        text("NO_REPLY"),
        text("I cannot write that."),
        text("09:12 ERROR payment provider unreachable"),
    ]);
    let o = p.run_async(["run", "watch", "--json"]).await;
    o.success();
    assert_eq!(o.json()["status"], "succeeded");
    assert_eq!(o.json()["output"], "09:12 ERROR payment provider unreachable");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_call_auto_leaves_the_choice_to_the_model() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write("routines/poem.yaml", "prompt: Write a haiku about Mondays.\nagent: { first_call: auto }\n");
    mock.push(text("Coffee steam rises"));
    p.run_async(["run", "poem"]).await.success().stdout_is("Coffee steam rises\n");
    assert!(mock.requests()[0].get("tool_choice").is_none());
    assert!(mock.requests()[0].get("tools").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_model_never_answers_fails_with_a_clear_error() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write("routines/watch.yaml", WATCH).write("notes.txt", "x\n");
    mock.push_all([tool_call("file_read", json!({"path": "notes.txt"})), text(""), text("<|im_end|>")]);
    let o = p.run_async(["run", "watch"]).await;
    o.code(1).stdout_is("").stderr_has(
        "error: run 1 failed: the model gave no usable final answer: its final reply was empty, also when asked once more\n",
    );
    assert!(!p.path().join("out.md").exists());
    let show = p.show(1).await;
    assert_eq!(show["status"], "failed");
    let notes: Vec<&Value> = show["events"].as_array().unwrap().iter().filter(|e| e["kind"] == "note").collect();
    let kinds: Vec<&str> = notes.iter().map(|n| n["status"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["named_all_used", "answer_from_evidence", "empty_reply", "answer_from_evidence", "empty_reply"],
        "the named file read, the answer asked from the evidence, empty, asked again, empty again: {notes:?}"
    );
}

#[tokio::test]
async fn the_routine_fields_are_validated_with_locations() {
    let p = Routines::offline();
    p.write("routines/a.yaml", "prompt: hi\nagent:\n  first_call: tools\n  tool_retries: 50\n");
    let o = p.run_async(["validate"]).await;
    o.code(2).stdout_has(
        "routines/a.yaml:3:15: unknown variant `tools`, expected `tool` or `auto` (at `agent.first_call`)\n  help: did you mean `tool`?\n",
    );
    p.write("routines/a.yaml", "prompt: hi\nagent:\n  first_call: auto\n  tool_retries: 50\n");
    let o = p.run_async(["validate"]).await;
    o.code(2).stdout_has("routines/a.yaml:4:17: tool_retries 50 is more than 10\n");
}
