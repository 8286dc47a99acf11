//! A write that comes before the files the task names were read is not run, once per turn: the
//! model is told to read them first. Nothing it made up reaches memory or disk.

use routines::agent::ToolStatus;
use routines::config::Autonomy;
use serde_json::json;

use super::{notes, routine_agent, tool_events};
use crate::common::Harness;
use crate::common::mock_llm::{text, tool_call};

const STOCK: &str = "Read stock.txt and tell me how many widgets we have. Remember today's number for next time.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_stored_before_the_named_file_was_read_is_held_and_the_read_comes_first() {
    let h = Harness::new().await;
    h.write("stock.txt", "widgets: 40\n");
    h.mock.push_all([
        tool_call("memory_store", json!({"key": "stock", "content": "We have 100 widgets."})),
        tool_call("file_read", json!({"path": "stock.txt"})),
        tool_call("memory_store", json!({"key": "stock", "content": "We have 40 widgets."})),
        text("We have 40 widgets."),
    ]);
    let mut agent = routine_agent(&h, Autonomy::Supervised);
    assert_eq!(agent.process_message(STOCK).await.unwrap(), "We have 40 widgets.");

    let stored: Vec<String> = h.memory.recall("widgets", 5).unwrap().into_iter().map(|m| m.content).collect();
    assert!(stored.contains(&"We have 40 widgets.".to_string()), "{stored:?}");
    assert!(!stored.iter().any(|m| m.contains("100")), "the made-up number never reached memory: {stored:?}");
    let reqs = h.mock.requests();
    let held = &reqs[1]["messages"].as_array().unwrap().last().unwrap()["content"];
    assert_eq!(
        held,
        "[failed] not run yet: the task names `stock.txt`, which no tool call has read. Read it first, then write from what it says."
    );
    // Told to read first, the local model answered "I will read stock.txt ..." in words: the
    // request after a held write requires a tool call.
    assert_eq!(reqs[1]["tool_choice"], "required");
    assert_eq!(reqs[2].get("tool_choice"), None);
    let statuses: Vec<ToolStatus> = tool_events(&h).into_iter().map(|(_, s)| s).collect();
    assert_eq!(statuses, [ToolStatus::Refused, ToolStatus::Success, ToolStatus::Success]);
    assert_eq!(notes(&h), ["write_held"]);
}

/// "Check the version in the VERSION file ... Remember it for next time": the local model's
/// first call stored "The version in the VERSION file is 1.2.3" (bench/README.md, stop 42). A
/// file named without a dot counts beside the word "file", and a content that mentions it is
/// no use of it: the store is held until VERSION is read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_that_mentions_an_unread_file_named_without_a_dot_is_held() {
    let h = Harness::new().await;
    h.write("VERSION", "2.4.1\n");
    let guess = "The version in the VERSION file is 1.2.3.";
    h.mock.push_all([
        tool_call("memory_store", json!({"key": "version", "content": guess})),
        tool_call("file_read", json!({"path": "VERSION"})),
        tool_call("memory_store", json!({"key": "version", "content": "The version is 2.4.1."})),
        text("The version is 2.4.1."),
    ]);
    let mut agent = routine_agent(&h, Autonomy::Supervised);
    let task = "Check the version in the VERSION file and tell me if it changed since the last time you checked. Remember it for next time.";
    assert_eq!(agent.process_message(task).await.unwrap(), "The version is 2.4.1.");
    let stored: Vec<String> = h.memory.recall("version", 5).unwrap().into_iter().map(|m| m.content).collect();
    assert!(!stored.iter().any(|m| m.contains("1.2.3")), "the made-up version never reached memory: {stored:?}");
    let reqs = h.mock.requests();
    let held = &reqs[1]["messages"].as_array().unwrap().last().unwrap()["content"];
    assert_eq!(
        held,
        "[failed] not run yet: the task names `VERSION`, which no tool call has read. Read it first, then write from what it says."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_is_held_once_per_turn_and_a_write_of_the_named_file_itself_is_not_held() {
    // Made again, the write runs: the engine asks once, the policy decides.
    let h = Harness::new().await;
    h.write("stock.txt", "widgets: 40\n");
    let store = tool_call("memory_store", json!({"key": "stock", "content": "We have 100 widgets."}));
    h.mock.push_all([store.clone(), store, tool_call("file_read", json!({"path": "stock.txt"})), text("40")]);
    let mut agent = routine_agent(&h, Autonomy::Supervised);
    agent.process_message(STOCK).await.unwrap();
    let statuses: Vec<ToolStatus> = tool_events(&h).into_iter().map(|(_, s)| s).collect();
    assert_eq!(statuses, [ToolStatus::Refused, ToolStatus::Success, ToolStatus::Success]);
    let stored = h.memory.recall("100", 5).unwrap();
    assert!(stored.iter().any(|m| m.content == "We have 100 widgets."), "made again, it ran: {stored:?}");

    // Appending to the file the task names uses it: nothing to read first.
    let h = Harness::new().await;
    h.write("notes.md", "# Notes\n");
    h.mock.push_all([
        tool_call("file_write", json!({"path": "notes.md", "content": "# Notes\n- shipped\n"})),
        text("Added."),
    ]);
    let mut agent = routine_agent(&h, Autonomy::Full);
    agent.process_message("Add the line `- shipped` to notes.md.").await.unwrap();
    assert_eq!(std::fs::read_to_string(h.workspace().join("notes.md")).unwrap(), "# Notes\n- shipped\n");
    assert!(notes(&h).is_empty(), "{:?}", notes(&h));
}

/// A held call made again word for word: the local model wrote `reports/failing.txt` ten times
/// over where the task names `failing.txt`, each held, until the turn's last call (bench/README.md,
/// stop 46). The request after the second repeat leaves the writing tool out and requires a call:
/// the model reads, and then the tool is offered again and the right write runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_write_made_again_leaves_its_tool_out_until_another_call_runs() {
    let h = Harness::new().await;
    h.write("reports/tests.txt", "test_login ... PASSED\ntest_checkout ... FAILED\n");
    let wrong = tool_call("file_write", json!({"path": "reports/failing.txt", "content": "Test 1\n"}));
    h.mock.push_all([
        wrong.clone(),
        wrong.clone(),
        wrong,
        tool_call("file_read", json!({"path": "reports/tests.txt"})),
        tool_call("file_write", json!({"path": "failing.txt", "content": "test_checkout\n"})),
        text("Wrote test_checkout to failing.txt."),
    ]);
    let mut agent = routine_agent(&h, Autonomy::Full);
    agent
        .process_message("Write the names of the failing tests from reports/tests.txt into failing.txt.")
        .await
        .unwrap();
    assert!(!h.workspace().join("reports/failing.txt").exists(), "the held write never ran");
    assert_eq!(std::fs::read_to_string(h.workspace().join("failing.txt")).unwrap(), "test_checkout\n");
    let reqs = h.mock.requests();
    let offers_write = |i: usize| super::tool_names(&reqs[i]).contains(&"file_write".to_string());
    assert!(offers_write(0) && offers_write(1) && offers_write(2));
    assert!(!offers_write(3), "{:?}", super::tool_names(&reqs[3]));
    assert_eq!(reqs[3]["tool_choice"], "required");
    assert!(offers_write(4), "offered again once the read ran");
    let statuses: Vec<ToolStatus> = tool_events(&h).into_iter().map(|(_, s)| s).collect();
    let refused = [ToolStatus::Refused; 3];
    assert_eq!(statuses, [&refused[..], &[ToolStatus::Success, ToolStatus::Success]].concat());
    h.mock.assert_clean();
}

/// A store of what the last store returned: the local model stored "widgets: 40 gadgets: 12",
/// then "Stored `stock_info` (daily)" under the same key, and the next run had no number to
/// compare with (bench/README.md, stop 46). Such a store is never run, made again or not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_store_of_an_earlier_stores_receipt_is_never_run() {
    let h = Harness::new().await;
    h.write("stock.txt", "widgets: 40\n");
    let receipt = tool_call("memory_store", json!({"key": "stock_info", "content": "Stored `stock_info` (core)"}));
    h.mock.push_all([
        tool_call("file_read", json!({"path": "stock.txt"})),
        tool_call("memory_store", json!({"key": "stock_info", "content": "widgets: 40"})),
        receipt.clone(),
        receipt,
        text("We have 40 widgets."),
    ]);
    let mut agent = routine_agent(&h, Autonomy::Supervised);
    assert_eq!(agent.process_message(STOCK).await.unwrap(), "We have 40 widgets.");
    let stored: Vec<String> = h
        .memory
        .recall("stock_info", 5)
        .unwrap()
        .into_iter()
        .filter(|m| m.key == "stock_info")
        .map(|m| m.content)
        .collect();
    assert_eq!(stored, ["widgets: 40"], "the receipt never replaced the number");
    let reqs = h.mock.requests();
    let held = crate::common::last_message(&reqs[3])["content"].as_str().unwrap().to_string();
    assert!(held.starts_with("[failed] not run: this content is what your earlier write returned"), "{held}");
    assert_eq!(crate::common::last_message(&reqs[4])["content"].as_str().unwrap(), held, "held again, the same way");
    let statuses: Vec<ToolStatus> = tool_events(&h).into_iter().map(|(_, s)| s).collect();
    let ok = ToolStatus::Success;
    assert_eq!(statuses, [ok, ok, ToolStatus::Refused, ToolStatus::Refused]);
}

/// On its second run the local model recalled its earlier answer and stored "We have 40
/// widgets." over the 35 it had just read: the next run would have compared with 40. A memory
/// that gives what the task asks about another number than this run read is not stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_with_another_number_than_this_run_read_is_held() {
    let h = Harness::new().await;
    h.write("stock.txt", "widgets: 35\ngadgets: 12\n");
    h.mock.push_all([
        tool_call("file_read", json!({"path": "stock.txt"})),
        tool_call("memory_store", json!({"key": "stock", "content": "We have 40 widgets."})),
        tool_call("memory_store", json!({"key": "stock", "content": "widgets: 35"})),
        text("We have 35 widgets."),
    ]);
    let mut agent = routine_agent(&h, Autonomy::Supervised);
    assert_eq!(agent.process_message(STOCK).await.unwrap(), "We have 35 widgets.");
    let stored: Vec<String> = h.memory.recall("widgets", 5).unwrap().into_iter().map(|m| m.content).collect();
    assert!(stored.contains(&"widgets: 35".to_string()), "{stored:?}");
    assert!(!stored.iter().any(|m| m.contains("40")), "the earlier run's number was not stored: {stored:?}");
    let reqs = h.mock.requests();
    let held = &reqs[2]["messages"].as_array().unwrap().last().unwrap()["content"];
    assert_eq!(
        held,
        "[failed] not run: this run read widgets: 35, and this content gives widgets another number (an earlier run's?). Store what this run read."
    );
}
