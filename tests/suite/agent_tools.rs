//! Tools through the whole loop: what the model reads back.

use routines::config::Autonomy;
use serde_json::json;

use crate::common::mock_llm::{text, tool_call};
use crate::common::{Harness, last_message};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_tools_stay_inside_the_workspace() {
    let h = Harness::new().await;
    std::fs::write(h.dir.path().join("outside.txt"), "secret").unwrap();
    h.write("docs/guide.md", "# Guide");
    h.mock.push_all([
        tool_call("file_read", json!({"path": "../outside.txt"})),
        tool_call("file_list", json!({"path": "docs"})),
        text("done"),
    ]);
    let mut agent = h.agent(Autonomy::Supervised, |_, _| {});
    agent.process_message("look around").await.unwrap();
    let reqs = h.mock.requests();
    let refused = last_message(&reqs[1])["content"].as_str().unwrap().to_string();
    assert!(refused.starts_with("[failed] `../outside.txt` is outside the workspace"), "{refused}");
    assert!(!refused.contains("secret"));
    assert_eq!(last_message(&reqs[2])["content"], "guide.md (7 B)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_results_are_truncated_with_a_marker() {
    let h = Harness::new().await;
    h.write("big.txt", &"0123456789".repeat(5_000));
    h.mock.push_all([tool_call("file_read", json!({"path": "big.txt"})), text("big")]);
    let mut agent = h.agent(Autonomy::Supervised, |o, _| o.max_result_chars = 1_000);
    agent.process_message("read big.txt").await.unwrap();
    let result = last_message(&h.mock.requests()[1])["content"].as_str().unwrap().to_string();
    assert!(result.contains("[... truncated: 49080 of 50000 characters cut ...]"), "{result}");
    assert!(result.chars().count() <= 1_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn self_info_describes_the_agent() {
    let h = Harness::new().await;
    h.mock.push_all([tool_call("self_info", json!({})), text("ok")]);
    let mut agent = h.agent(Autonomy::ReadOnly, |_, _| {});
    agent.process_message("who are you").await.unwrap();
    let info = last_message(&h.mock.requests()[1])["content"].as_str().unwrap().to_string();
    assert!(info.contains("model: mock-model\nautonomy: read_only\n"), "{info}");
    assert!(
        info.contains("tools: file_list, file_read, http_request, memory_recall, memory_store, self_info"),
        "{info}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zh_labels_tool_results_in_chinese() {
    let h = Harness::new().await;
    h.mock.push_all([tool_call("file_read", json!({"path": "nope.txt"})), text("没有")]);
    let mut agent = h.agent(Autonomy::Supervised, |o, _| o.language = routines::config::Language::Zh);
    agent.process_message("读一下").await.unwrap();
    let reqs = h.mock.requests();
    let result = last_message(&reqs[1])["content"].as_str().unwrap().to_string();
    assert!(result.starts_with("[失败] "), "{result}");
    assert!(crate::common::content(&reqs[0], 0).contains("Reply in Simplified Chinese"));
}

/// The engine's data folder (the database, the outbox) is not the user's work: a listing of the
/// workspace leaves it out, so a model describing the workspace sees the user's files first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_the_workspace_leaves_out_the_engines_data_folder() {
    let mock = crate::common::mock_llm::MockLlm::start().await;
    mock.push_all([tool_call("file_list", json!({})), text("One note.")]);
    let p = crate::common::Routines::project(&mock.base_url(), "");
    p.write("notes.md", "# Notes\n")
        .write("routines/hello.yaml", "prompt: Describe the workspace.\nagent: { tools: [file_list] }\n");
    p.run_async(["run", "hello"]).await.success().stdout_is("One note.\n");
    assert!(p.path().join(".routines/routines.db").exists());
    let listing = last_message(&mock.requests()[1])["content"].as_str().unwrap().to_string();
    assert!(listing.contains("notes.md (8 B)"), "{listing}");
    assert!(!listing.contains(".routines"), "{listing}");
    assert!(listing.contains("routines/"), "{listing}");
}
