//! Final-answer hygiene: a final reply is an answer, never a tool call written as text, never
//! chat-template tokens, never nothing.

use routines::agent::{AgentError, BadReply, ToolStatus};
use routines::config::Autonomy;
use serde_json::json;

use super::{ROUTINE_SECTIONS, notes, routine_agent, tool_events};
use crate::common::mock_llm::{text, tool_call};
use crate::common::{Harness, last_message};

const READ_A: &str = r#"{"name": "file_read", "arguments": {"path": "a.txt"}}"#;

async fn harness() -> Harness {
    let h = Harness::new().await;
    h.mock.expect_sections(&ROUTINE_SECTIONS);
    h.write("a.txt", "one\ntwo\nthree\n");
    h
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_that_is_only_a_call_in_tool_call_tags_is_run_as_the_call() {
    let h = harness().await;
    h.mock.push_all([text(&format!("<tool_call>\n{READ_A}\n</tool_call>")), text("3 lines")]);
    let mut agent = routine_agent(&h, Autonomy::ReadOnly);
    assert_eq!(agent.process_message("How many lines has a.txt?").await.unwrap(), "3 lines");
    let reqs = h.mock.requests();
    let messages = reqs[1]["messages"].as_array().unwrap();
    assert_eq!(messages[2]["tool_calls"][0]["function"]["name"], "file_read");
    assert_eq!(messages[2]["content"], serde_json::Value::Null, "the call's text is not kept as prose");
    assert_eq!(messages[3]["content"], "one\ntwo\nthree\n");
    assert_eq!(tool_events(&h), [("file_read".to_string(), ToolStatus::Success)]);
    assert_eq!(notes(&h), ["tool_call_in_text"]);
    h.mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_quoted_in_prose_is_never_executed_nor_delivered() {
    let h = harness().await;
    let prose = r#"I will save it now: {"name": "file_write", "arguments": {"path": "x.txt", "content": "pwned"}}"#;
    h.mock.push_all([text(prose), text("I could not save anything.")]);
    let mut agent = routine_agent(&h, Autonomy::Full);
    let reply = agent.process_message("Save a note.").await.unwrap();
    assert_eq!(reply, "I could not save anything.");
    assert!(!h.workspace().join("x.txt").exists(), "a call quoted in prose must never run");
    assert!(tool_events(&h).is_empty());
    let reqs = h.mock.requests();
    let ask = last_message(&reqs[1]);
    assert_eq!(ask["role"], "user");
    assert_eq!(
        ask["content"],
        "Save a note.\n\nDo not write tool calls as text: they are not run. If you need a tool, call it through the tool-calling interface; otherwise reply with the final answer in plain words."
    );
    assert!(reqs[1].get("tools").is_some(), "it may still make the call properly");
    assert!(reqs[1]["messages"].as_array().unwrap().iter().all(|m| m["content"] != prose));
    assert_eq!(notes(&h), ["call_as_text"]);
    h.mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_repeated_as_text_is_answered_with_one_request_for_the_final_answer() {
    let h = harness().await;
    h.mock.push_all([tool_call("file_read", json!({"path": "a.txt"})), text(READ_A), text("3 lines")]);
    let mut agent = routine_agent(&h, Autonomy::ReadOnly);
    assert_eq!(agent.process_message("How many lines has a.txt?").await.unwrap(), "3 lines");
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 3);
    assert!(reqs[2].get("tools").is_none(), "only an answer will do now");
    // The answer is asked from the evidence: the task beside what the tool returned, in one
    // message under a short system prompt (every section, one line each).
    let messages = reqs[2]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert!(messages[0]["content"].as_str().unwrap().contains("Answer the task from the data below"));
    assert_eq!(
        last_message(&reqs[2])["content"],
        "Data:\n--- file_read {\"path\":\"a.txt\"} ---\none\ntwo\nthree\n---\n\nTask: How many lines has a.txt?\n\n\
         Give your answer after a line that says ANSWER:"
    );
    assert_eq!(tool_events(&h).len(), 1, "the repeated call is not run again");
    assert_eq!(notes(&h), ["repeated_call_as_text", "answer_from_evidence"]);
    h.mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_answer_from_the_evidence_is_what_follows_its_marker() {
    let h = harness().await;
    h.mock.push_all([
        tool_call("file_read", json!({"path": "a.txt"})),
        text(READ_A),
        text("one\ntwo\nthree\n\nANSWER:\na.txt has 3 lines."),
    ]);
    let mut agent = routine_agent(&h, Autonomy::ReadOnly);
    assert_eq!(agent.process_message("How many lines has a.txt?").await.unwrap(), "a.txt has 3 lines.");
    let reqs = h.mock.requests();
    assert!(
        last_message(&reqs[2])["content"]
            .as_str()
            .unwrap()
            .ends_with("Give your answer after a line that says ANSWER:")
    );
    assert_eq!(
        agent.history().last().unwrap().text(),
        "a.txt has 3 lines.",
        "the lines before the marker are not output"
    );
    assert_eq!(notes(&h), ["repeated_call_as_text", "answer_from_evidence"]);
    h.mock.assert_clean();
}

/// A comparison task's answer request carries two worked comparisons before the data, as
/// user and assistant turns, and the line of values the reply writes first is not delivered;
/// the same data asked as a count carries none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comparison_is_asked_after_two_worked_examples_and_its_values_are_not_output() {
    let h = harness().await;
    h.write("b.txt", "one\ntwo\n");
    h.mock.push_all([
        tool_call("file_read", json!({"path": "a.txt"})),
        tool_call("file_read", json!({"path": "b.txt"})),
        text(READ_A),
        text("Values: a.txt 3 lines, b.txt 2 lines. 3 is more than 2.\nANSWER:\na.txt: 3 lines against 2."),
    ]);
    let mut agent = routine_agent(&h, Autonomy::ReadOnly);
    let reply = agent.process_message("Which of a.txt and b.txt has the most lines?").await.unwrap();
    assert_eq!(reply, "a.txt: 3 lines against 2.");
    let reqs = h.mock.requests();
    let asked = reqs[3]["messages"].as_array().unwrap();
    let roles: Vec<&str> = asked.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "user", "assistant", "user"]);
    assert!(asked[2]["content"].as_str().unwrap().starts_with("Values: "), "{}", asked[2]["content"]);
    let data = asked[5]["content"].as_str().unwrap();
    assert!(data.starts_with("Data:\n--- file_read {\"path\":\"a.txt\"} ---\none\ntwo\nthree\n"), "{data}");
    assert!(data.contains("Task: Which of a.txt and b.txt has the most lines?"), "{data}");
    h.mock.assert_clean();

    h.mock.push_all([tool_call("file_read", json!({"path": "a.txt"})), text(READ_A), text("ANSWER: 3")]);
    let mut agent = routine_agent(&h, Autonomy::ReadOnly);
    assert_eq!(agent.process_message("How many lines has a.txt?").await.unwrap(), "3");
    let reqs = h.mock.requests();
    let roles: Vec<&str> =
        reqs[6]["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user"], "a count is asked without examples");
    h.mock.assert_clean();
}

/// Shown the worked examples, the local model answered with one of them ("Yes: the shop's
/// price is 12.00 and the web price is 12.50.") where the data held neither price. Such an
/// answer is never delivered: the request goes again without the examples.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_copied_from_a_worked_example_is_asked_again_without_the_examples() {
    let h = harness().await;
    h.write("b.txt", "one\ntwo\n");
    h.mock.push_all([
        tool_call("file_read", json!({"path": "a.txt"})),
        tool_call("file_read", json!({"path": "b.txt"})),
        text(READ_A),
        text("ANSWER:\nYes: the shop's price is 12.00 and the web price is 12.50."),
        text("ANSWER: a.txt has 3 lines, b.txt 2."),
    ]);
    let mut agent = routine_agent(&h, Autonomy::ReadOnly);
    let reply = agent.process_message("Which of a.txt and b.txt has the most lines?").await.unwrap();
    assert_eq!(reply, "a.txt has 3 lines, b.txt 2.");
    let reqs = h.mock.requests();
    let roles: Vec<&str> =
        reqs[4]["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user"], "asked again without the examples");
    assert!(super::last_text(&reqs[4]).contains("Task: Which of a.txt and b.txt has the most lines?"));
    h.mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_that_names_its_tools_is_never_delivered_and_the_answer_comes_from_the_evidence() {
    let h = harness().await;
    let plan = "To count them, I would follow these steps:\n1. Read a.txt using the `file_read` function.\n2. Count the lines.";
    h.mock.push_all([tool_call("file_read", json!({"path": "a.txt"})), text(plan), text("ANSWER: a.txt has 3 lines.")]);
    let mut agent = routine_agent(&h, Autonomy::ReadOnly);
    assert_eq!(agent.process_message("How many lines has a.txt?").await.unwrap(), "a.txt has 3 lines.");
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 3);
    assert!(reqs[2].get("tools").is_none(), "the model has looked: only an answer will do");
    let ask = last_message(&reqs[2])["content"].as_str().unwrap().to_string();
    assert!(ask.starts_with("Data:\n--- file_read {\"path\":\"a.txt\"} ---\none\ntwo\nthree\n"), "{ask}");
    assert!(reqs[2]["messages"].as_array().unwrap().iter().all(|m| m["content"] != plan));
    assert_eq!(notes(&h), ["plan_as_answer", "answer_from_evidence"]);
    h.mock.assert_clean();

    // Twice a plan: the run fails with what happened instead of delivering it.
    let h = harness().await;
    h.mock.push_all([tool_call("file_read", json!({"path": "a.txt"})), text(plan), text(plan)]);
    let mut agent = routine_agent(&h, Autonomy::ReadOnly);
    let err = agent.process_message("How many lines has a.txt?").await.unwrap_err();
    assert!(matches!(err, AgentError::NoAnswer(BadReply::Plan)), "{err:?}");
    assert!(err.to_string().contains("described how it would use its tools"), "{err}");
    h.mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn template_tokens_and_reasoning_are_never_delivered() {
    let h = harness().await;
    h.mock.push_all([
        tool_call("file_read", json!({"path": "a.txt"})),
        text("<think>Three newlines.</think>a.txt has 3 lines.<|im_end|>\n<|im_start|>user\nthanks<|im_end|>"),
    ]);
    let mut agent = routine_agent(&h, Autonomy::ReadOnly);
    assert_eq!(agent.process_message("How many lines has a.txt?").await.unwrap(), "a.txt has 3 lines.");
    assert_eq!(agent.history().last().unwrap().text(), "a.txt has 3 lines.", "the history holds the clean answer");
    assert_eq!(notes(&h), ["reply_cleaned"]);
    h.mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_reply_after_tool_calls_gets_one_more_request() {
    let h = harness().await;
    h.mock.push_all([tool_call("file_read", json!({"path": "a.txt"})), text(""), text("3 lines")]);
    let mut agent = routine_agent(&h, Autonomy::ReadOnly);
    assert_eq!(agent.process_message("How many lines has a.txt?").await.unwrap(), "3 lines");
    let reqs = h.mock.requests();
    assert!(reqs[2].get("tools").is_none());
    assert_eq!(notes(&h), ["empty_reply", "answer_from_evidence"]);
    h.mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_still_empty_when_asked_again_is_an_error_not_an_empty_answer() {
    let h = harness().await;
    h.mock.push_all([
        tool_call("file_read", json!({"path": "a.txt"})),
        text("<tool_response></tool_response>"),
        text("{}"),
    ]);
    let mut agent = routine_agent(&h, Autonomy::ReadOnly);
    let err = agent.process_message("How many lines has a.txt?").await.unwrap_err();
    assert!(matches!(err, AgentError::NoAnswer(BadReply::Empty)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "the model gave no usable final answer: its final reply was empty, also when asked once more"
    );
    assert!(agent.history().is_empty(), "a failed turn does not join the history");
    assert_eq!(notes(&h), ["empty_reply", "answer_from_evidence", "empty_reply"]);
    h.mock.assert_clean();
}

/// Each bad reply after new calls gets its own request: the request that an echoed result got
/// earlier in the turn does not use up the one an empty reply after a later write gets. (The
/// eval's write-actions run failed that way: the echo was asked about, the model wrote the
/// file, then replied with nothing, and the run failed without asking.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_reply_after_new_calls_gets_its_request_though_an_earlier_reply_had_one() {
    let h = harness().await;
    h.mock.push_all([
        tool_call("file_read", json!({"path": "a.txt"})),
        text("<tool_response>\none\ntwo\nthree\n</tool_response>"),
        tool_call("file_write", json!({"path": "b.txt", "content": "one\ntwo\nthree\n"})),
        text(""),
        text("Copied a.txt to b.txt."),
    ]);
    let mut agent = routine_agent(&h, Autonomy::Full);
    let reply = agent.process_message("Copy a.txt to b.txt.").await.unwrap();
    assert_eq!(reply, "Copied a.txt to b.txt.");
    assert_eq!(std::fs::read_to_string(h.workspace().join("b.txt")).unwrap(), "one\ntwo\nthree\n");
    assert_eq!(notes(&h), ["echoed_result", "empty_reply", "answer_from_evidence"]);
    h.mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_answer_from_the_evidence_keeps_what_was_remembered_before_the_run() {
    let h = Harness::new().await;
    h.write("stock.txt", "widgets: 35\n");
    h.memory.store("stock", "widgets: 40", "core").unwrap();
    h.mock.push_all([
        tool_call("file_read", json!({"path": "stock.txt"})),
        tool_call("memory_store", json!({"key": "stock", "content": "widgets: 35"})),
        text(""),
        text("35 widgets, 5 fewer than the 40 last time."),
    ]);
    let mut agent = routine_agent(&h, Autonomy::Full);
    let reply = agent.process_message("Read stock.txt, compare the widgets with last time, remember today's.").await;
    assert_eq!(reply.unwrap(), "35 widgets, 5 fewer than the 40 last time.");
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 4);
    // The turn stored over the memory; the answer still sees what it said before.
    assert_eq!(h.memory.recall("stock", 5).unwrap()[0].content, "widgets: 35");
    let data = last_message(&reqs[3])["content"].as_str().unwrap().to_string();
    assert!(
        data.starts_with("Data:\n--- remembered before this run ---\n- stock: widgets: 40\n--- file_read "),
        "{data}"
    );
    assert_eq!(notes(&h), ["empty_reply", "answer_from_evidence"]);
}
