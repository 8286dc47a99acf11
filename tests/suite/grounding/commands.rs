//! The `shell` tool tells a routine's model which commands it may run, and its example is one
//! of those commands in the form that returns what tasks ask about (not `--oneline`).

use serde_json::{Value, json};

use crate::common::mock_llm::{MockLlm, text, tool_call};

fn shell_spec(request: &Value) -> (String, String) {
    let tool = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "shell")
        .unwrap_or_else(|| panic!("no shell tool in {request}"));
    let f = &tool["function"];
    (
        f["description"].as_str().unwrap().into(),
        f["parameters"]["properties"]["command"]["description"].as_str().unwrap().into(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shell_tool_names_the_routines_commands_and_shows_one_of_them() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write("notes.txt", "ERROR disk full\n").write(
        "routines/logs.yaml",
        "prompt: Any errors in notes.txt?\nagent: { tools: [shell], allow_commands: [grep, git] }\n",
    );
    mock.push_all([tool_call("shell", json!({"command": "grep -n ERROR notes.txt"})), text("1:ERROR disk full")]);
    p.run_async(["run", "logs"]).await.success();
    let (description, command) = shell_spec(&mock.requests()[0]);
    assert!(description.ends_with("Commands this routine may run: grep, git."), "{description}");
    assert!(command.contains("e.g. `grep -n timeout logs/sync.log`"), "{command}");
    assert!(!command.contains("--oneline"), "{command}");
    mock.assert_clean();
}

fn offered(request: &Value) -> Vec<String> {
    let tools = request["tools"].as_array().map(Vec::as_slice).unwrap_or_default();
    tools.iter().map(|t| t["function"]["name"].as_str().unwrap().to_string()).collect()
}

/// Under `supervised`, a mutating tool the routine did not pre-approve, or `shell` with no
/// command it may run, would refuse every call: the model is not offered it, and a call to it
/// anyway is still refused (nothing reaches the disk).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_routine_is_offered_only_the_tools_it_may_use_and_the_others_stay_refused() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write("notes.txt", "ERROR disk full\n");
    // No `agent.tools`: every tool is listed, and none of the mutating ones is pre-approved.
    p.write("routines/watch.yaml", "prompt: Any errors in notes.txt?\n");
    // `touch` is not in the engine's allowlist (security.allowed_commands): granting it runs nothing.
    p.write(
        "routines/build.yaml",
        "prompt: Build it.\nagent: { tools: [shell, file_read], allow_commands: [touch] }\n",
    );
    p.write("routines/writer.yaml", "prompt: Copy notes.txt to copy.txt.\nagent: { tools: [file_read, file_write] }\n");

    mock.push_all([tool_call("file_write", json!({"path": "owned.txt", "content": "x"})), text("could not write")]);
    p.run_async(["run", "watch"]).await;
    let first = &mock.requests()[0];
    assert_eq!(
        offered(first),
        ["file_list", "file_read", "http_request", "memory_recall", "memory_store", "self_info"]
    );
    assert!(!content_of_system(first).contains("file_write"), "the Tools section lists what is offered");
    assert!(!p.path().join("owned.txt").exists(), "a tool not offered is still refused");

    mock.push_all([tool_call("shell", json!({"command": "touch made.txt"})), text("touch is not allowed")]);
    p.run_async(["run", "build"]).await;
    assert_eq!(offered(&mock.requests()[2]), ["file_read"]);
    assert!(!p.path().join("made.txt").exists());

    mock.push_all([
        tool_call("file_read", json!({"path": "notes.txt"})),
        tool_call("file_write", json!({"path": "copy.txt", "content": "ERROR disk full"})),
        text("copied"),
    ]);
    p.run_async(["run", "writer"]).await.success();
    assert_eq!(offered(&mock.requests()[4]), ["file_read", "file_write"], "a pre-approved write is offered");
    assert_eq!(p.read("copy.txt"), "ERROR disk full");
    mock.assert_clean();
}

fn content_of_system(request: &Value) -> String {
    request["messages"][0]["content"].as_str().unwrap_or_default().to_string()
}
