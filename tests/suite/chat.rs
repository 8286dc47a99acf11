//! `routines chat`, driven as a user would: the real binary, stdin, signals.

use std::path::Path;
use std::process::Stdio;

use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};

use crate::common::mock_llm::{MockLlm, hang, text, tool_call};
use crate::common::{bin, write_file};

fn config(dir: &Path, mock: &MockLlm) {
    write_file(
        dir,
        "routines.yaml",
        &format!("provider:\n  base_url: {}\n  model: mock-model\n  api_key_env: TEST_KEY\n", mock.base_url()),
    );
}

fn chat(dir: &Path) -> Child {
    Command::new(bin())
        .arg("chat")
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("TEST_KEY", "sk-chat-secret")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

async fn finish(mut child: Child) -> (i32, String, String) {
    drop(child.stdin.take());
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("chat did not exit after stdin closed")
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_the_reply_and_prints_tool_status_lines() {
    let mock = MockLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    config(dir.path(), &mock);
    write_file(dir.path(), "notes.txt", "The code word is PELICAN.\nMore notes.");
    mock.push_all([tool_call("file_read", json!({"path": "notes.txt"})), text("The code word is PELICAN.")]);
    let mut child = chat(dir.path());
    child.stdin.as_mut().unwrap().write_all(b"What is the code word in notes.txt?\n").await.unwrap();
    let (code, stdout, stderr) = finish(child).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "The code word is PELICAN.\n");
    assert!(stderr.contains("  · Running file_read: notes.txt\n"), "{stderr}");
    assert!(stderr.contains("  ✓ Success file_read: The code word is PELICAN.\n"), "{stderr}");
    let headers = &mock.request_headers()[0];
    assert!(headers.iter().any(|(k, v)| k == "authorization" && v == "Bearer sk-chat-secret"));
    assert!(!stderr.contains("sk-chat-secret"));
    mock.assert_clean();

    // The session was recorded: a chat run with every model and tool call.
    let store = routines::store::Store::open(&dir.path().join(".routines/routines.db")).unwrap();
    let run = store.get_run(1).unwrap().unwrap();
    assert_eq!(run.status.as_str(), "succeeded");
    let kinds: Vec<String> = store.run_events(1).unwrap().into_iter().map(|e| e.kind).collect();
    assert_eq!(kinds, vec!["model_call", "tool_call", "model_call"]);
    let db = std::fs::read(dir.path().join(".routines/routines.db")).unwrap();
    assert!(!String::from_utf8_lossy(&db).contains("sk-chat-secret"), "the key reached the database");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asks_y_n_a_before_a_mutating_tool() {
    let mock = MockLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    config(dir.path(), &mock);
    mock.push_all([
        tool_call("memory_forget", json!({"key": "old"})),
        text("Declined, keeping it."),
        tool_call("memory_forget", json!({"key": "old"})),
        text("Done."),
    ]);
    let mut child = chat(dir.path());
    let stdin = child.stdin.as_mut().unwrap();
    stdin.write_all(b"forget old\nn\nforget old now\na\n").await.unwrap();
    let (code, stdout, stderr) = finish(child).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stderr.matches("? Allow memory_forget old? [y/N/a]").count(), 2, "{stderr}");
    assert!(stdout.contains("Declined, keeping it.\n"));
    let reqs = mock.requests();
    let declined = crate::common::last_message(&reqs[1])["content"].as_str().unwrap().to_string();
    assert!(declined.starts_with("[failed] the user declined"), "{declined}");
    let second = crate::common::last_message(&reqs[3])["content"].as_str().unwrap().to_string();
    assert_eq!(second, "[failed] no memory has the key `old`; use memory_recall to find keys");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_cancels_the_turn_not_the_session() {
    let mock = MockLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    config(dir.path(), &mock);
    mock.push_all([hang(), text("Second answer.")]);
    let mut child = chat(dir.path());
    child.stdin.as_mut().unwrap().write_all(b"first question\n").await.unwrap();
    mock.wait_for_requests(1).await;
    let pid = i32::try_from(child.id().unwrap()).unwrap();
    // SAFETY: sending a signal to our own child process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    child.stdin.as_mut().unwrap().write_all(b"second question\n").await.unwrap();
    let (code, stdout, stderr) = finish(child).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("(cancelled)"), "{stderr}");
    assert_eq!(stdout, "Second answer.\n");
    // The cancelled turn left nothing behind: the second request has no trace of it.
    let second = &mock.requests()[1];
    let msgs = second["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 2, "{second}");
    assert_eq!(msgs[1]["content"], "second question");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_turn_is_reported_and_the_session_goes_on() {
    let mock = MockLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    config(dir.path(), &mock);
    mock.push_all([crate::common::mock_llm::error(401, "bad key"), text("Works now.")]);
    let mut child = chat(dir.path());
    child.stdin.as_mut().unwrap().write_all(b"hello\nhello again\n").await.unwrap();
    let (code, stdout, stderr) = finish(child).await;
    assert_eq!(code, 0);
    assert!(
        stderr
            .contains("error: the API key in $TEST_KEY was rejected (HTTP 401): bad key; set a valid key in $TEST_KEY"),
        "{stderr}"
    );
    assert_eq!(stdout, "Works now.\n");
}
