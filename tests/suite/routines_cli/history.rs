//! `history` and `show`, the approach a run remembers, and sessions across runs.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{DAILY, mock, parse_local, system};
use crate::common::Routines;
use crate::common::mock_llm::{error, text, tool_call};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_lists_newest_first_and_filters() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write("routines/daily.yaml", DAILY).write("routines/watch.yaml", "prompt: Anything?\nretry: { attempts: 1 }\n");
    mock.push_all([
        text("one"),
        error(400, "nope"),
        tool_call("file_list", json!({})),
        text("NO_REPLY"),
        text(super::NOTHING_FOUND),
        text("two"),
    ]);
    for (name, code) in [("daily", 0), ("watch", 1), ("watch", 0), ("daily", 0)] {
        p.run_async(["run", name]).await.code(code);
    }
    let ids = |runs: &[Value]| runs.iter().map(|r| r["run_id"].as_i64().unwrap()).collect::<Vec<_>>();
    let all = p.history(&[]).await;
    assert_eq!(ids(&all), [4, 3, 2, 1]);
    let statuses: Vec<&str> = all.iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["succeeded", "silent", "failed", "succeeded"]);
    assert!(all[2]["error"].as_str().unwrap().contains("nope"));
    assert!(parse_local(&all[0]["started_at"]) >= parse_local(&all[3]["finished_at"]));
    assert_eq!(ids(&p.history(&["daily"]).await), [4, 1]);
    assert_eq!(ids(&p.history(&["watch", "--limit", "1"]).await), [3]);
    assert_eq!(ids(&p.history(&["--status", "silent"]).await), [3]);
    assert_eq!(ids(&p.history(&["--status", "failed", "daily"]).await), Vec::<i64>::new());

    let o = p.run_async(["history", "--limit", "2"]).await;
    let lines: Vec<Vec<&str>> = o.stdout.lines().map(|l| l.split_whitespace().take(4).collect()).collect();
    assert_eq!(
        lines,
        [
            vec!["RUN", "ROUTINE", "STATUS", "TRIGGER"],
            vec!["4", "daily", "succeeded", "manual"],
            vec!["3", "watch", "silent", "manual"]
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_lists_every_model_and_tool_call_in_order_and_the_approach_is_remembered() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write("notes.txt", "The code word is HERON.\n").write(
        "routines/notes.yaml",
        "prompt: What is the code word?\nagent: { tools: [file_read, file_list] }\ndeliver:\n  - file: { path: answer.md }\n",
    );
    mock.push_all([tool_call("file_read", json!({"path": "notes.txt"})), text("HERON")]);
    let o = p.run_async(["run", "notes"]).await;
    o.success().stdout_is("HERON\n").stderr_has("  ✓ file_read: The code word is HERON.\n");

    let show = p.show(1).await;
    let events: Vec<Value> =
        show["events"].as_array().unwrap().iter().map(|e| json!([e["kind"], e["tool"], e["status"]])).collect();
    assert_eq!(
        events,
        [
            json!(["model_call", null, "ok"]),
            json!(["tool_call", "file_read", "success"]),
            json!(["model_call", null, "ok"])
        ]
    );
    assert_eq!(show["events"][1]["arguments"], json!({"path": "notes.txt"}));
    parse_local(&show["events"][0]["at"]);
    assert_eq!(show["deliveries"][0]["target"], "answer.md");
    assert_eq!((&show["tokens"], &show["iterations"]), (&json!({"prompt": 20, "completion": 10}), &json!(2)));
    let o = p.run_async(["show", "1"]).await;
    assert!(o.stdout.starts_with("run 1  notes  succeeded\ntrigger:   fired by hand, attempt 1\n"), "{o}");
    o.stdout_has("\ndeliveries:\n  file answer.md  delivered\n");
    assert!(o.stdout.ends_with("\noutput:\n  HERON\n"), "{o}");

    // The next run is offered the approach that worked.
    assert!(!system(&mock.requests()[0]).contains("An approach that worked before"));
    mock.push(text("HERON again"));
    p.run_async(["run", "notes"]).await.success();
    let second = system(&mock.requests()[2]);
    assert!(
        second.contains("An approach that worked before (try it first): the last successful run called file_read.\n"),
        "{second}"
    );
    mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backoff_that_would_pass_the_timeout_is_not_waited_for() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write("routines/late.yaml", "prompt: Go.\ntimeout: 5s\nretry: { attempts: 3, backoff: 1m }\n");
    mock.push(error(502, "bad gateway"));
    let o = p.run_async(["run", "late"]).await;
    o.code(1);
    assert_eq!(mock.request_count(), 1);
    // Had it waited, the 5s timeout would have ended the run as timed_out.
    let runs = p.history(&[]).await;
    assert_eq!(runs[0]["status"], "failed");
    assert!(runs[0]["error"].as_str().unwrap().contains("bad gateway"), "{}", runs[0]["error"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persistent_session_carries_the_history_to_the_next_run() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write("routines/diary.yaml", "prompt: \"Entry {{ run.id }}.\"\nagent: { session: persistent }\n")
        .write("routines/fresh.yaml", "prompt: \"Entry {{ run.id }}.\"\n");
    mock.push_all([text("Noted one."), text("Noted two."), text("A."), text("B.")]);
    for name in ["diary", "diary", "fresh", "fresh"] {
        p.run_async(["run", name]).await.success();
    }
    let reqs = mock.requests();
    let turns = |r: &Value| -> Vec<Value> {
        r["messages"].as_array().unwrap()[1..].iter().map(|m| json!([m["role"], m["content"]])).collect()
    };
    assert_eq!(
        turns(&reqs[1]),
        [json!(["user", "Entry 1."]), json!(["assistant", "Noted one."]), json!(["user", "Entry 2."])]
    );
    assert_eq!(turns(&reqs[3]), [json!(["user", "Entry 4."])]);
    mock.assert_clean();
}

/// `routines show 1 | head -1` and `list --json | head -1`: a reader that went away ends the
/// command quietly with status 0, as Unix tools do, never a "Broken pipe" panic (exit 101).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_to_a_reader_that_went_away_ends_quietly() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write("routines/daily.yaml", DAILY).write("routines/report.yaml", "on: [{ cron: \"0 9 * * *\" }]\nprompt: hi\n");
    mock.push_all([text("one")]);
    p.run_async(["run", "daily"]).await.success();
    for args in [
        &["show", "1"][..],
        &["show", "1", "--json"],
        &["list"],
        &["list", "--json"],
        &["history"],
        &["history", "--json"],
        &["next", "report"],
        &["completions", "bash"],
    ] {
        let o = p.command(args).stdout_closed().run_async().await;
        assert!(!o.stderr.contains("panicked"), "{o}");
        o.success().stderr_is("");
    }
}
