//! The `shell` tool tells a routine's model which commands it may run, and its example is one
//! of those commands in the form that returns what tasks ask about (not `--oneline`).

use serde_json::{Value, json};

use crate::common::Routines;
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
    let p = Routines::project(&mock.base_url(), "");
    p.write("notes.txt", "ERROR disk full\n").write(
        "routines/logs.yaml",
        "prompt: Any errors in notes.txt?\nagent: { tools: [shell], allow_commands: [grep, git] }\n",
    );
    // `make` is not in the engine's allowlist (security.allowed_commands): granting it runs nothing.
    p.write("routines/build.yaml", "prompt: Build it.\nagent: { tools: [shell], allow_commands: [make] }\n");
    mock.push_all([tool_call("shell", json!({"command": "grep -n ERROR notes.txt"})), text("1:ERROR disk full")]);
    p.run_async(["run", "logs"]).await.success();
    let (description, command) = shell_spec(&mock.requests()[0]);
    assert!(description.ends_with("Commands this routine may run: grep, git."), "{description}");
    assert!(command.contains("e.g. `grep -n timeout logs/sync.log`"), "{command}");
    assert!(!command.contains("--oneline"), "{command}");

    mock.push_all([tool_call("shell", json!({"command": "make"})), text("make is not allowed")]);
    p.run_async(["run", "build"]).await.success();
    let (description, command) = shell_spec(&mock.requests()[2]);
    assert!(description.contains("This routine allows no command"), "{description}");
    assert!(!command.contains("e.g."), "{command}");
    mock.assert_clean();
}
