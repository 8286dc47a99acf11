use super::*;

#[test]
fn the_task_loses_the_sentences_that_name_the_token() {
    let task = SilenceTask::new(
        "Look at logs/api.log for failures. Quote any you find. If you find nothing, answer NO_REPLY.",
        "NO_REPLY",
    )
    .unwrap();
    assert_eq!(task.task, "Look at logs/api.log for failures. Quote any you find.");
    let zh = SilenceTask::new(
        "看看 logs/usage.log 的最后一行。磁盘占用一旦超过 90%，就告诉我现在的占用；否则只回复“正常”。",
        "正常",
    )
    .unwrap();
    assert_eq!(zh.task, "看看 logs/usage.log 的最后一行。 磁盘占用一旦超过 90%，就告诉我现在的占用；");
    // A decimal point or a version is not the end of a sentence.
    let v = SilenceTask::new("Alert when v2.4 is above 0.5 ms.\nOtherwise reply OK_TOKEN", "OK_TOKEN").unwrap();
    assert_eq!(v.task, "Alert when v2.4 is above 0.5 ms.");
    assert_eq!(SilenceTask::new("Reply NO_REPLY.", "NO_REPLY"), None, "nothing left to check");
    assert_eq!(SilenceTask::new("Check the log.", "  "), None, "no token");
}

#[test]
fn the_code_is_the_fenced_block_or_the_whole_reply_and_needs_the_function() {
    let fenced = "Here:\n```python\ndef findings(output):\n    return []\n```\nDone.";
    assert_eq!(python::code_of(fenced, "findings").as_deref(), Some("def findings(output):\n    return []\n"));
    assert_eq!(
        python::code_of("def findings(o):\n    return [1]", "findings").as_deref(),
        Some("def findings(o):\n    return [1]")
    );
    assert_eq!(python::code_of("```python\ndef check(o):\n    return []\n```", "findings"), None);
    assert_eq!(python::code_of("NO_REPLY", "findings"), None);
}

fn verdict(output: &str, code: Option<i32>) -> Verdict {
    verdict_of(output, code).0
}

#[test]
fn only_the_harness_line_after_a_clean_exit_is_a_verdict() {
    assert_eq!(
        verdict_of("{\"found\": false, \"strings\": [], \"skipped\": 2}", Some(0)),
        (Verdict::Nothing, 2),
        "the lines the second try left out"
    );
    assert_eq!(verdict("\n{\"found\": true, \"strings\": [\"x\"]}\n", Some(0)), Verdict::Found(vec!["x".into()]));
    assert_eq!(verdict("debug print\n{\"found\": false, \"strings\": []}\n", Some(0)), Verdict::Nothing);
    let failed = verdict("{\"found\": false, \"strings\": []}\nTraceback\nValueError: x", Some(1));
    assert!(matches!(failed, Verdict::Unknown(w) if w.contains("ValueError")));
    assert!(matches!(verdict("{\"found\": true, \"strings\": []}", Some(1)), Verdict::Unknown(_)));
    assert!(matches!(verdict("{\"found\": true}", Some(0)), Verdict::Unknown(_)));
    assert!(matches!(verdict("", None), Verdict::Unknown(w) if w.starts_with("it was killed")));
    assert_eq!(
        verdict("", Some(137)),
        Verdict::Unknown("it was killed by signal 9 (a limit of CPU time or memory)".into())
    );
}

#[test]
fn the_request_names_the_calls_and_shows_the_results_as_the_example() {
    let call = |tool: &str, args: &str, result: &str| CallRecord {
        tool: tool.into(),
        arguments: args.into(),
        status: ToolStatus::Success,
        result: result.into(),
    };
    let calls = [call("file_read", r#"{"path":"a.log"}"#, "ERROR x"), call("shell", r#"{"command":"df -h"}"#, "/ 93%")];
    let refs: Vec<&CallRecord> = calls.iter().collect();
    let task = SilenceTask { task: "Check the log.".into(), token: "NO_REPLY".into() };
    let messages = code_request(&task, &refs, "ERROR x\n/ 93%");
    let user = messages[1].text();
    assert!(user.starts_with("Task: Check the log.\n\nWrite a Python function `findings(output: str) -> list`"));
    assert!(
        user.contains(r#"the output of `file_read {"path":"a.log"}`, then the output of `shell {"command":"df -h"}`"#)
    );
    assert!(user.ends_with("Example output:\n```\nERROR x\n/ 93%\n```"));
    assert!(!user.contains("NO_REPLY"));
}

#[test]
fn the_report_reads_the_lines_the_function_found() {
    let call = |result: &str| CallRecord {
        tool: "file_read".into(),
        arguments: "{}".into(),
        status: ToolStatus::Success,
        result: result.into(),
    };
    let services = call("{\n  \"web\": \"up\",\n  \"payments\": \"down\", \"error\": \"502\"\n}");
    let other = call("nothing here");
    let calls = [&services, &other];
    let cut = found_lines(&calls, &["payments".into(), "down".into(), "up".into()]);
    assert_eq!(cut.len(), 1, "a result without a found line is left out");
    assert_eq!(cut[0].result, "  \"payments\": \"down\", \"error\": \"502\"", "two-letter strings match too much");
    let whole = found_lines(&calls, &["当前的使用率：93%".into()]);
    assert_eq!(whole.iter().map(|c| c.result.as_str()).collect::<Vec<_>>(), [services.result.as_str(), "nothing here"]);
}

#[test]
fn the_function_parses_what_the_file_holds() {
    let call = |tool: &str, result: &str| CallRecord {
        tool: tool.into(),
        arguments: "{}".into(),
        status: ToolStatus::Success,
        result: result.into(),
    };
    assert_eq!(content(&call("file_read", "07:00 71%\n09:00 93%\n(lines 1-2 of 3)")), "07:00 71%\n09:00 93%");
    assert_eq!(content(&call("file_read", "07:00 71%\n09:00 93%\n")), "07:00 71%\n09:00 93%");
    assert_eq!(content(&call("shell", "/ 93%\n\n")), "/ 93%");
    assert_eq!(content(&call("shell", "x\n(lines 1-2 of 3)")), "x\n(lines 1-2 of 3)", "only file_read adds the line");
}

#[test]
fn a_finding_must_name_something_the_results_hold() {
    let data = "2026-11-23 /dev/sda1 使用率 93%\n09:12 ERROR payment gateway timed out\n{\"name\": \"payments\", \"state\": \"down\"}";
    let found = |v: &[&str]| in_data(v.iter().map(|s| s.to_string()).collect(), data);
    let held = |v: &[&str]| matches!(found(v), Verdict::Found(_));
    // Verbatim, or sharing a number or a name with the data (the model formats its findings).
    assert!(held(&["ERROR payment"]));
    assert!(held(&["当前的使用率: 93%"]) && held(&["93.0"]) && held(&["Usage is 93.0 percent"]));
    assert!(held(&["Service payments is down"]));
    assert!(held(&["No findings", "payment gateway"]), "one string held is enough");
    assert!(held(&["4", "ok"]), "short strings say little either way");
    assert_eq!(found(&[]), Verdict::Found(Vec::new()));
    // Words of its own.
    assert_eq!(
        found(&["No findings"]),
        Verdict::Unknown("what it found is not in the results (\"No findings\")".into())
    );
    for own in ["Nothing found", "No errors were detected", "All good", "94.5", "disk is full", "Everything is fine"] {
        assert!(!held(&[own]), "{own}");
    }
}
