//! Which lines of one list another lacks (`agent/difference.rs`): the engine compares the two
//! files the turn read and the answer request names the lines; through `routines run`.

use serde_json::json;

use crate::common::mock_llm::{MockLlm, text, tool_call};

const TASK: &str =
    "prompt: Which packages listed in requirements.txt are not in installed.txt?\nagent: { tools: [file_read] }\n";

/// Both files read: the answer request says which lines of the first the second lacks (the
/// 1.5B model, shown both lists alone, named one of the two).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_answer_request_names_the_lines_one_list_lacks() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write("routines/missing.yaml", TASK)
        .write("requirements.txt", "requests\nflask\nsqlalchemy\ncelery\nredis\n")
        .write("installed.txt", "flask\nrequests\nredis\n");
    mock.push_all([
        tool_call("file_read", json!({"path": "requirements.txt"})),
        tool_call("file_read", json!({"path": "installed.txt"})),
        text("ANSWER: sqlalchemy and celery"),
    ]);
    let o = p.run_async(["run", "missing", "--json"]).await;
    assert_eq!(o.json()["output"], "sqlalchemy and celery", "{}", o.stdout);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3, "both reads, then the answer from the evidence");
    let answer = crate::common::content(&reqs[2], 1);
    assert!(
        answer.contains(
            "(The lines of `requirements.txt` that `installed.txt` does not have: sqlalchemy, celery. 2 of 5.)"
        ),
        "{answer}"
    );
    mock.assert_clean();
}

/// An answer the turn gave itself to such a task (with `shell` offered too, reading both files
/// does not end the turn's looking) is asked again from the evidence, with the lines named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_in_the_turn_is_asked_from_the_evidence_with_the_lines_named() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write("routines/missing.yaml", &TASK.replace("[file_read] }", "[file_read, shell], allow_commands: [grep] }"))
        .write("requirements.txt", "requests\nflask\nsqlalchemy\ncelery\nredis\n")
        .write("installed.txt", "flask\nrequests\nredis\n");
    mock.push_all([
        tool_call("file_read", json!({"path": "requirements.txt"})),
        tool_call("file_read", json!({"path": "installed.txt"})),
        text("celery"),
        text("ANSWER: sqlalchemy and celery"),
    ]);
    let o = p.run_async(["run", "missing", "--json"]).await;
    assert_eq!(o.json()["output"], "sqlalchemy and celery", "{}", o.stdout);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 4, "{}", o.stdout);
    assert!(crate::common::content(&reqs[3], 1).contains("does not have: sqlalchemy, celery."));
    assert!(super::note_kinds(&p.show(1).await).iter().any(|k| k == "difference_reask"));
    mock.assert_clean();
}
