//! A request for one Python function ends where the function ends (`agent/side.rs`): it carries
//! `stop` strings for the script a small model writes after it, and a reply they cut before the
//! function is asked for again without them. Through `routines run`, a scripted model and a real
//! sandbox.

use serde_json::{Value, json};

use crate::common::Routines;
use crate::common::mock_llm::{MockLlm, text, tool_call};

const USERS: &str = "[\n  {\"name\": \"Priya\", \"role\": \"admin\"},\n  {\"name\": \"Mei\", \"role\": \"editor\"},\n  {\"name\": \"Tomas\", \"role\": \"admin\"}\n]\n";
const STOPS: [&str; 4] = ["\n\n#", "\n\nwith ", "\n\nprint(", "\n\nif __name__"];

fn admins(mock: &MockLlm) -> Routines {
    let p = super::assisted(&mock.base_url(), "");
    p.write(
        "routines/admins.yaml",
        "prompt: How many users in users.json are admins?\nagent: { tools: [file_read] }\n",
    )
    .write("users.json", USERS);
    p
}

/// The reply as a server gives it when a stop string ended it: the fence left open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_function_request_stops_after_the_function_and_a_cut_reply_is_used() {
    let mock = MockLlm::start().await;
    let p = admins(&mock);
    mock.push_all([
        tool_call("file_read", json!({"path": "users.json"})),
        text("```python\nimport json\n\ndef keep(item: dict) -> bool:\n    return item['role'] == 'admin'"),
        text("ANSWER: 2 admins."),
    ]);
    let o = p.run_async(["run", "admins", "--json"]).await;
    assert_eq!(o.json()["output"], "2 admins.", "{}", o.stdout);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[1]["stop"], json!(STOPS), "the function request");
    assert!(reqs[0].get("stop").is_none() && reqs[2].get("stop").is_none(), "only the function request stops early");
    let answer = crate::common::content(&reqs[2], 1);
    assert!(answer.contains("(2 of the 3 items of `users.json` are the ones the task asks about;"), "{answer}");
    mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_cut_before_its_function_is_asked_for_again_without_stop_strings() {
    let mock = MockLlm::start().await;
    let p = admins(&mock);
    mock.push_all([
        tool_call("file_read", json!({"path": "users.json"})),
        text("```python\nimport json"),
        text("```python\nimport json\n\n# The admins\ndef keep(item: dict) -> bool:\n    return item['role'] == 'admin'\n```"),
        text("ANSWER: 2 admins."),
    ]);
    let o = p.run_async(["run", "admins", "--json"]).await;
    assert_eq!(o.json()["output"], "2 admins.", "{}", o.stdout);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 4);
    assert_eq!(reqs[1]["stop"], json!(STOPS));
    assert!(reqs[2].get("stop").is_none(), "asked again without them");
    assert_eq!(reqs[1]["messages"], reqs[2]["messages"], "the same request otherwise");
    let show = p.show(1).await;
    let cut: Vec<&Value> = show["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "note" && e["status"] == "code_cut")
        .collect();
    assert_eq!(cut.len(), 1, "{show}");
    let answer = crate::common::content(&reqs[3], 1);
    assert!(answer.contains("(2 of the 3 items of `users.json` are the ones the task asks about;"), "{answer}");
    mock.assert_clean();
}
