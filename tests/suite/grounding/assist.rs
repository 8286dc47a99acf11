//! The switch of the assists (SPEC §13): `agent.assist: off` runs the plain loop, where a
//! model's answer goes out as it gave it; `agent.assist_off` turns single assists off by name,
//! and the others still step in; a name that is no assist stops `validate` at its line.

use serde_json::json;

use super::note_kinds;
use crate::common::Routines;
use crate::common::mock_llm::{MockLlm, text, tool_call};

const WATCH: &str = "prompt: Check notes.txt for errors. If there are any, quote them. If there are none, reply NO_REPLY.\n\
                     agent: { tools: [file_read, file_list]ASSIST }\ndeliver:\n  - file: { path: out.md }\n";

const LOG: &str = "09:10 INFO started\n09:12 ERROR payment provider unreachable\n09:13 INFO ok\n";

fn project(mock: &MockLlm, engine: &str, routine: &str) -> Routines {
    let p = Routines::project(&mock.base_url(), engine);
    p.write("routines/watch.yaml", &WATCH.replace("ASSIST", routine)).write("notes.txt", LOG);
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_assist_off_the_answer_goes_out_as_the_model_gave_it() {
    // A model that answers at once, without looking: the full level requires a tool call
    // first and asks again; the plain loop sends one request, with no tool_choice.
    let mock = MockLlm::start().await;
    let p = project(&mock, "agent: { assist: off }\n", "");
    mock.push(text("All is well: no errors."));
    let o = p.run_async(["run", "watch", "--json"]).await;
    o.success();
    assert_eq!(
        (o.json()["status"].clone(), o.json()["output"].clone()),
        (json!("succeeded"), json!("All is well: no errors."))
    );
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 1);
    assert!(reqs[0].get("tool_choice").is_none(), "{}", reqs[0]["tool_choice"]);

    // A silence over the ERROR line it read (tests/suite/grounding/code_check.rs): the full level
    // checks it by code; the plain loop delivers the silence, and the routine's own level wins
    // over the engine's.
    let mock = MockLlm::start().await;
    let p = project(&mock, "", ", assist: off");
    mock.push_all([tool_call("file_read", json!({"path": "notes.txt"})), text("NO_REPLY")]);
    let o = p.run_async(["run", "watch", "--json"]).await;
    o.success();
    assert_eq!(o.json()["status"], "silent");
    assert_eq!(mock.request_count(), 2);
    assert!(note_kinds(&p.show(1).await).is_empty());
    mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_assist_turned_off_by_name_is_gone_and_the_others_stay() {
    // Without the code check the silence still gets its review, which quotes the ERROR line.
    let mock = MockLlm::start().await;
    let p = project(&mock, "agent: { assist: full, assist_off: [code_check] }\n", ", assist_off: [silence_nudge]");
    mock.push_all([
        tool_call("file_read", json!({"path": "notes.txt"})),
        text("NO_REPLY"),
        text("09:12 ERROR payment provider unreachable"),
    ]);
    let o = p.run_async(["run", "watch", "--json"]).await;
    o.success();
    assert_eq!(o.json()["status"], "succeeded");
    assert_eq!(p.read("out.md"), "09:12 ERROR payment provider unreachable\n");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3);
    let review = crate::common::content(&reqs[2], 1);
    assert!(review.contains("Quote every line of the results"), "{review}");
    assert!(!note_kinds(&p.show(1).await).iter().any(|k| k.starts_with("code_check")));
    mock.assert_clean();
}

#[test]
fn a_name_that_is_no_assist_is_an_error_at_its_line() {
    let p = Routines::offline();
    p.write("routines/watch.yaml", &WATCH.replace("ASSIST", ", assist_off: [code_chek]"));
    p.run(["validate"])
        .code(2)
        .stdout_is("routines/watch.yaml:2:54: unknown assist `code_chek`\n  help: did you mean `code_check`?\n");
    let p = Routines::project("http://127.0.0.1:9/v1", "agent:\n  assist_off: [first_call_reask, talk_more]\n");
    let o = p.run(["validate"]);
    o.code(2);
    assert!(o.stderr.contains("routines.yaml:") && o.stderr.contains("unknown assist `talk_more`"), "{o}");
    assert!(o.stderr.contains("assists: first_call_reask, failed_check_reask, "), "{o}");
    p.write("routines.yaml", "agent: { assist: some }\n");
    let o = p.run(["validate"]);
    o.code(2);
    assert!(o.stderr.contains("routines.yaml:1:") && o.stderr.contains("`some`"), "{o}");
}
