//! `file_read` is offered for a path alone until a read of the turn did not carry the whole
//! file: then its range (`offset`, `limit`) is offered too. The tool takes a range either way.

use routines::config::Autonomy;
use serde_json::{Value, json};

use super::{ROUTINE_SECTIONS, routine_agent};
use crate::common::Harness;
use crate::common::mock_llm::{text, tool_call};

/// The argument names `file_read` is offered with in a request, sorted.
fn file_read_arguments(req: &Value) -> Vec<String> {
    let tools = req["tools"].as_array().expect("the request offers tools");
    let spec = tools.iter().find(|t| t["function"]["name"] == "file_read").expect("file_read is offered");
    let mut names: Vec<String> =
        spec["function"]["parameters"]["properties"].as_object().expect("an object schema").keys().cloned().collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_range_is_offered_once_a_read_was_cut() {
    let h = Harness::new().await;
    h.write("notes.txt", "one\ntwo\n");
    // About 40,000 characters: more than a tool result carries, so its middle is cut.
    let big: String = (1..=2000).map(|i| format!("line {i:04} of the build log\n")).collect();
    h.write("build.log", &big);
    h.mock.push_all([
        tool_call("file_read", json!({"path": "notes.txt"})),
        tool_call("file_read", json!({"path": "build.log"})),
        tool_call("file_read", json!({"path": "build.log", "offset": 1000, "limit": 2})),
        text("Line 1000 is `line 1000 of the build log`."),
    ]);
    let mut agent = h.agent(Autonomy::ReadOnly, |_, _| {});
    agent.process_message("What do notes.txt and line 1000 of build.log say?").await.unwrap();
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 4);
    // Two files read whole: the path alone.
    assert_eq!(file_read_arguments(&reqs[0]), ["path"]);
    assert_eq!(
        reqs[0]["tools"].as_array().unwrap().iter().find(|t| t["function"]["name"] == "file_read").unwrap()["function"]
            ["description"],
        "Read a text file in the workspace."
    );
    assert_eq!(file_read_arguments(&reqs[1]), ["path"]);
    // build.log came back cut: from then on the range is offered, and the range read works.
    assert!(crate::common::content(&reqs[2], reqs[2]["messages"].as_array().unwrap().len() - 1).contains("truncated"));
    assert_eq!(file_read_arguments(&reqs[2]), ["limit", "offset", "path"]);
    let ranged = crate::common::last_message(&reqs[3])["content"].as_str().unwrap().to_string();
    assert_eq!(ranged, "line 1000 of the build log\nline 1001 of the build log\n(lines 1000-1001 of 2000)");
    h.mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_routine_first_call_offers_the_path_alone_and_a_range_still_reads() {
    let h = Harness::new().await;
    h.mock.expect_sections(&ROUTINE_SECTIONS);
    h.write("todo.md", "- [x] ship\n- [ ] test\n- [ ] write\n");
    // The model sends a range it was not offered (as models trained on other tools do): read.
    h.mock.push_all([tool_call("file_read", json!({"path": "todo.md", "offset": 2, "limit": 1})), text("- [ ] test")]);
    let mut agent = routine_agent(&h, Autonomy::ReadOnly);
    let answer = agent.process_message("What is the first unchecked item in todo.md?").await.unwrap();
    let reqs = h.mock.requests();
    assert_eq!(reqs[0]["tool_choice"], "required");
    assert_eq!(file_read_arguments(&reqs[0]), ["path"]);
    assert!(
        crate::common::last_message(&reqs[1])["content"].as_str().unwrap().starts_with("- [ ] test\n(lines 2-2 of 3)")
    );
    assert!(answer.contains("test"), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_too_large_to_read_whole_gets_the_range_offered() {
    let h = Harness::new().await;
    // Past the 2 MiB a read takes whole.
    let huge: String = (0..70_000).map(|i| format!("{i:08} ........................\n")).collect();
    assert!(huge.len() > 2 * 1024 * 1024);
    h.write("huge.log", &huge);
    h.mock.push_all([
        tool_call("file_read", json!({"path": "huge.log"})),
        tool_call("file_read", json!({"path": "huge.log", "offset": 1, "limit": 1})),
        text("The first line is 00000000."),
    ]);
    let mut agent = h.agent(Autonomy::ReadOnly, |_, _| {});
    agent.process_message("What is the first line of huge.log?").await.unwrap();
    let reqs = h.mock.requests();
    assert_eq!(file_read_arguments(&reqs[0]), ["path"]);
    assert!(
        crate::common::last_message(&reqs[1])["content"]
            .as_str()
            .unwrap()
            .contains("read a range with offset and limit")
    );
    assert_eq!(file_read_arguments(&reqs[1]), ["limit", "offset", "path"]);
    h.mock.assert_clean();
}
