//! The example routines of the repository validate and run.

use std::path::Path;
use std::process::Command;

use crate::common::bin;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// The repository's config, routines and templates, copied into a tempdir
/// so nothing is written into the repository.
fn project() -> tempfile::TempDir {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(repo.join("routines.example.yaml"), dir.path().join("routines.yaml")).unwrap();
    copy_dir(&repo.join("routines"), &dir.path().join("routines"));
    copy_dir(&repo.join("templates"), &dir.path().join("templates"));
    dir
}

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin())
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_example_config_and_routines_validate() {
    let dir = project();
    let (code, stdout, stderr) = run(dir.path(), &["validate"]);
    assert_eq!((code, stdout.as_str()), (0, ""), "{stderr}");
    assert_eq!(stderr, "ok: the config and 4 routines are valid\n");
    let (code, stdout, _) = run(dir.path(), &["list", "--json"]);
    assert_eq!(code, 0);
    let list: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let names: Vec<&str> = list.as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["daily-git-report", "health-check", "inbox-summary", "page-watch"]);
}

#[test]
fn init_scaffolds_a_project_that_validates() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, stderr) = run(dir.path(), &["init"]);
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) = run(dir.path(), &["validate"]);
    assert_eq!((code, stderr.as_str()), (0, "ok: the config and 1 routine are valid\n"));
}

/// A program of `examples/`, which `cargo test` builds next to the test binaries.
fn example(name: &str) -> std::path::PathBuf {
    let deps = std::env::current_exe().unwrap().parent().unwrap().to_path_buf();
    let path = deps.parent().unwrap().join("examples").join(name);
    assert!(path.exists(), "{} was not built; run the tests with `cargo test`", path.display());
    path
}

#[tokio::test]
async fn the_library_example_runs_a_routine_in_process() {
    use crate::common::mock_llm::{MockLlm, text, tool_call};
    let mock = MockLlm::start().await;
    mock.push_all([tool_call("file_list", serde_json::json!({"path": "."})), text("Two files.")]);
    let dir = tempfile::tempdir().unwrap();
    crate::common::write_file(
        dir.path(),
        "routines.yaml",
        &format!("provider: {{ base_url: \"{}\", model: m }}\n", mock.base_url()),
    );
    crate::common::write_file(
        dir.path(),
        "routines/count.yaml",
        "prompt: \"Count the files in {{ vars.dir }}.\"\nvars: { dir: here }\nagent: { tools: [file_list] }\n\
         deliver:\n  - file: { path: out/count.md }\n",
    );
    let out = tokio::process::Command::new(example("run_routine"))
        .args(["routines.yaml", "count", "dir=there"])
        .current_dir(dir.path())
        .env_remove("ROUTINES_BASE_URL")
        .env_remove("ROUTINES_MODEL")
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Two files.\n");
    assert!(stderr.contains("run 1 of count: succeeded"), "{stderr}");
    assert_eq!(std::fs::read_to_string(dir.path().join("out/count.md")).unwrap(), "Two files.\n");
    // The --var-style override reached the prompt, and the routine section is in the system prompt.
    let first = &mock.requests()[0];
    assert!(crate::common::last_message(first)["content"].as_str().unwrap().contains("Count the files in there."));
    let (code, stdout, _) = run(dir.path(), &["history", "--json"]);
    assert_eq!(code, 0);
    assert_eq!(serde_json::from_str::<serde_json::Value>(&stdout).unwrap()[0]["status"], "succeeded");
    mock.assert_clean();
}

#[tokio::test]
async fn the_library_example_builds_an_agent_and_asks_it() {
    use crate::common::mock_llm::{MockLlm, text, tool_call};
    let mock = MockLlm::start().await;
    mock.push_all([tool_call("file_read", serde_json::json!({"path": "notes.txt"})), text("The word is KITE.")]);
    let dir = tempfile::tempdir().unwrap();
    crate::common::write_file(dir.path(), "notes.txt", "code word: KITE\n");
    let out = tokio::process::Command::new(example("agent"))
        .arg("What is the code word in notes.txt?")
        .current_dir(dir.path())
        .env("ROUTINES_BASE_URL", mock.base_url())
        .env("ROUTINES_MODEL", "m")
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "The word is KITE.\n");
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let tools: Vec<&str> =
        requests[0]["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(tools, ["file_list", "file_read"]);
    assert!(crate::common::last_message(&requests[1])["content"].as_str().unwrap().contains("KITE"));
    mock.assert_clean();
}
