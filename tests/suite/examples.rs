//! The example routines of the repository validate and run.

use std::path::Path;

use serde_json::json;

use crate::common::Routines;
use crate::common::mock_llm::{MockLlm, text, tool_call};

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// The repository's config, routines and templates, copied into a project folder so
/// nothing is written into the repository.
fn repository_project() -> Routines {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let p = Routines::new();
    std::fs::copy(repo.join("routines.example.yaml"), p.path().join("routines.yaml")).unwrap();
    copy_dir(&repo.join("routines"), &p.path().join("routines"));
    copy_dir(&repo.join("templates"), &p.path().join("templates"));
    p
}

#[test]
fn the_example_config_and_routines_validate() {
    let p = repository_project();
    p.run(["validate"]).success().stdout_is("").stderr_is("ok: the config and 4 routines are valid\n");
    let o = p.run(["list", "--json"]);
    o.success();
    let list = o.json();
    let names: Vec<&str> = list.as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["daily-git-report", "health-check", "inbox-summary", "page-watch"]);
}

#[test]
fn init_scaffolds_a_project_that_validates() {
    let p = Routines::new();
    p.run(["init"]).success();
    p.run(["validate"]).success().stderr_is("ok: the config and 1 routine are valid\n");
}

#[tokio::test]
async fn the_library_example_runs_a_routine_in_process() {
    let mock = MockLlm::start().await;
    mock.push_all([tool_call("file_list", json!({"path": "."})), text("Two files.")]);
    let p = Routines::new().config(&format!("provider: {{ base_url: \"{}\", model: m }}\n", mock.base_url()));
    p.write(
        "routines/count.yaml",
        "prompt: \"Count the files in {{ vars.dir }}.\"\nvars: { dir: here }\nagent: { tools: [file_list] }\n\
         deliver:\n  - file: { path: out/count.md }\n",
    );
    p.example("run_routine")
        .args(["routines.yaml", "count", "dir=there"])
        .run_async()
        .await
        .success()
        .stdout_is("Two files.\n")
        .stderr_has("run 1 of count: succeeded");
    assert_eq!(p.read("out/count.md"), "Two files.\n");
    // The --var-style override reached the prompt, and the routine section is in the system prompt.
    let first = &mock.requests()[0];
    assert!(crate::common::last_message(first)["content"].as_str().unwrap().contains("Count the files in there."));
    let o = p.run_async(["history", "--json"]).await;
    o.success();
    assert_eq!(o.json()[0]["status"], "succeeded");
    mock.assert_clean();
}

#[tokio::test]
async fn the_library_example_builds_an_agent_and_asks_it() {
    let mock = MockLlm::start().await;
    mock.push_all([tool_call("file_read", json!({"path": "notes.txt"})), text("The word is KITE.")]);
    let p = Routines::new().mock(&mock).env("ROUTINES_MODEL", "m");
    p.write("notes.txt", "code word: KITE\n");
    p.example("agent")
        .args(["What is the code word in notes.txt?"])
        .run_async()
        .await
        .success()
        .stdout_is("The word is KITE.\n");
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let tools: Vec<&str> =
        requests[0]["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(tools, ["file_list", "file_read"]);
    assert!(crate::common::last_message(&requests[1])["content"].as_str().unwrap().contains("KITE"));
    mock.assert_clean();
}
