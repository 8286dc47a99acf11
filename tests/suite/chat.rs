//! `routines chat`, driven as a user would: the real binary, stdin, signals.

use std::time::Duration;

use serde_json::json;

use crate::common::Routines;
use crate::common::mock_llm::{MockLlm, error, hang, text, tool_call};

/// A project whose provider is `mock`, its key in $TEST_KEY.
fn project(mock: &MockLlm) -> Routines {
    Routines::new()
        .env("TEST_KEY", "sk-chat-secret")
        .config(&format!("provider:\n  base_url: {}\n  model: mock-model\n  api_key_env: TEST_KEY\n", mock.base_url()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_the_reply_and_prints_tool_status_lines() {
    let mock = MockLlm::start().await;
    let p = project(&mock);
    p.write("notes.txt", "The code word is PELICAN.\nMore notes.");
    mock.push_all([tool_call("file_read", json!({"path": "notes.txt"})), text("The code word is PELICAN.")]);
    let o = p.command(["chat"]).stdin("What is the code word in notes.txt?\n").run_async().await;
    o.success()
        .stdout_is("The code word is PELICAN.\n")
        .stderr_has("  · Running file_read: notes.txt\n")
        .stderr_has("  ✓ Success file_read: The code word is PELICAN.\n");
    let headers = &mock.request_headers()[0];
    assert!(headers.iter().any(|(k, v)| k == "authorization" && v == "Bearer sk-chat-secret"));
    assert!(!o.stderr.contains("sk-chat-secret"));
    mock.assert_clean();

    // The session was recorded: a chat run with every model and tool call.
    let store = routines::store::Store::open(&p.path().join(".routines/routines.db")).unwrap();
    let run = store.get_run(1).unwrap().unwrap();
    assert_eq!(run.status.as_str(), "succeeded");
    let kinds: Vec<String> = store.run_events(1).unwrap().into_iter().map(|e| e.kind).collect();
    assert_eq!(kinds, vec!["model_call", "tool_call", "model_call"]);
    let db = std::fs::read(p.path().join(".routines/routines.db")).unwrap();
    assert!(!String::from_utf8_lossy(&db).contains("sk-chat-secret"), "the key reached the database");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asks_y_n_a_before_a_mutating_tool() {
    let mock = MockLlm::start().await;
    let p = project(&mock);
    mock.push_all([
        tool_call("memory_forget", json!({"key": "old"})),
        text("Declined, keeping it."),
        tool_call("memory_forget", json!({"key": "old"})),
        text("Done."),
    ]);
    let o = p.command(["chat"]).stdin("forget old\nn\nforget old now\na\n").run_async().await;
    o.success().stdout_has("Declined, keeping it.\n");
    assert_eq!(o.stderr.matches("? Allow memory_forget old? [y/N/a]").count(), 2, "{o}");
    let reqs = mock.requests();
    let declined = crate::common::last_message(&reqs[1])["content"].as_str().unwrap().to_string();
    assert!(declined.starts_with("[failed] the user declined"), "{declined}");
    let second = crate::common::last_message(&reqs[3])["content"].as_str().unwrap().to_string();
    assert_eq!(second, "[failed] no memory has the key `old`; use memory_recall to find keys");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_cancels_the_turn_not_the_session() {
    let mock = MockLlm::start().await;
    let p = project(&mock);
    mock.push_all([hang(), text("Second answer.")]);
    let mut chat = p.command(["chat"]).stdin("first question\n").spawn().await;
    mock.wait_for_requests(1).await;
    chat.signal(libc::SIGINT);
    chat.write_stdin("second question\n").await;
    let o = chat.finish(Duration::from_secs(60)).await;
    o.success().stderr_has("(cancelled)").stdout_is("Second answer.\n");
    // The cancelled turn left nothing behind: the second request has no trace of it.
    let second = &mock.requests()[1];
    let msgs = second["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 2, "{second}");
    assert_eq!(msgs[1]["content"], "second question");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_turn_is_reported_and_the_session_goes_on() {
    let mock = MockLlm::start().await;
    let p = project(&mock);
    mock.push_all([error(401, "bad key"), text("Works now.")]);
    let o = p.command(["chat"]).stdin("hello\nhello again\n").run_async().await;
    o.success()
        .stderr_has("error: the API key in $TEST_KEY was rejected (HTTP 401): bad key; set a valid key in $TEST_KEY")
        .stdout_is("Works now.\n");
}
