//! An answer whose number for what the task asks about is not the one this run read
//! (`agent/read_value.rs`): it is asked from the evidence. Through `routines run` with a
//! scripted model.

use serde_json::json;

use crate::common::Routines;
use crate::common::mock_llm::{MockLlm, text, tool_call};

const TASK: &str =
    "Read stock.txt and tell me how many widgets we have and how that compares with the last time you checked.";

fn project(mock: &MockLlm) -> Routines {
    let p = super::assisted(&mock.base_url(), "");
    p.write(
        "routines/stock.yaml",
        &format!("prompt: {TASK}\nagent: {{ tools: [file_read, memory_recall, memory_store] }}\n"),
    )
    .write("stock.txt", "widgets: 35\ngadgets: 12\n");
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_with_the_remembered_number_instead_of_the_read_one_is_asked_from_the_evidence() {
    let mock = MockLlm::start().await;
    let p = project(&mock);
    mock.push_all([
        tool_call("file_read", json!({"path": "stock.txt"})),
        text("We have 40 widgets. We have 5 widgets more than the last time we checked."),
        text("ANSWER: We have 35 widgets; nothing earlier is remembered to compare with."),
    ]);
    let o = p.run_async(["run", "stock", "--json"]).await;
    assert_eq!(
        o.json()["output"],
        "We have 35 widgets; nothing earlier is remembered to compare with.",
        "{}",
        o.stdout
    );
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3, "{}", o.stdout);
    let evidence = super::last_text(&reqs[2]);
    assert!(evidence.contains("--- file_read {\"path\":\"stock.txt\"} ---\nwidgets: 35\n"), "{evidence}");
    assert_eq!(
        super::note_details(&p.show(1).await, "read_value_reask"),
        [
            "the turn's answer gives what the task asks about another number than this run read; asked for the answer from the evidence"
        ]
    );
    mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_with_the_read_number_stands() {
    let mock = MockLlm::start().await;
    let p = project(&mock);
    mock.push_all([
        tool_call("file_read", json!({"path": "stock.txt"})),
        text("We have 35 widgets; this is the first check."),
    ]);
    let o = p.run_async(["run", "stock", "--json"]).await;
    assert_eq!(o.json()["output"], "We have 35 widgets; this is the first check.", "{}", o.stdout);
    assert_eq!(mock.request_count(), 2);
    mock.assert_clean();
}
