//! A task that compares with the last check, on a run with nothing remembered before it: the
//! answer request says that this is the first check (`agent/since_last.rs`), whatever the value
//! (a version here, not a count). Through `routines run`, a scripted model and a real memory.

use serde_json::json;

use crate::common::Routines;
use crate::common::mock_llm::{MockLlm, text, tool_call};

const TASK: &str = "Read VERSION and tell me whether the version changed since your last check.";
const NOTE: &str =
    "(This is the first check: nothing was remembered before this run, so there is nothing to compare with yet.";

/// One run: the model reads VERSION, stores it twice (the repeat sends the turn to the answer
/// from the evidence), and answers `answer`; the answer request's last message.
async fn run(p: &Routines, mock: &MockLlm, version: &str, answer: &str) -> String {
    p.write("VERSION", &format!("{version}\n"));
    let before = mock.request_count();
    let store = json!({"key": "version", "content": version});
    mock.push_all([
        tool_call("file_read", json!({"path": "VERSION"})),
        tool_call("memory_store", store.clone()),
        tool_call("memory_store", store),
        text(&format!("ANSWER: {answer}")),
    ]);
    let o = p.run_async(["run", "version", "--json"]).await;
    assert_eq!(o.json()["output"], answer, "{}", o.stdout);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), before + 4, "{}", o.stdout);
    super::last_text(&reqs[reqs.len() - 1])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_check_of_a_value_is_told_so_and_a_second_is_not() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write(
        "routines/version.yaml",
        &format!("prompt: {TASK}\nagent: {{ tools: [file_read, memory_recall, memory_store] }}\n"),
    );
    let first = run(&p, &mock, "2.4.1", "The version is 2.4.1; this is the first check.").await;
    assert!(first.contains(&format!("Task: {TASK}\n\n{NOTE}")), "{first}");
    let second = run(&p, &mock, "2.5.0", "Yes: it changed from 2.4.1 to 2.5.0.").await;
    assert!(second.contains("--- remembered before this run ---\n- version: 2.4.1"), "{second}");
    assert!(!second.contains("first check"), "{second}");
    mock.assert_clean();
}
