//! Writes a routine turn does not run (`agent/write_check.rs`): a `file_write` that copies the
//! file the turn read, where the task asks for only part of it, goes back with the lines the
//! task asks about (the engine's selection, `agent/select/`); a write of an earlier write's
//! receipt is never run, nor a guess held before the reads and made again after the file was
//! written from them. Checked on disk, through `routines run`, with a scripted model and the
//! real sandbox the selection runs in.

use serde_json::json;

use crate::common::Routines;
use crate::common::mock_llm::{MockLlm, text, tool_call};

const CHECKS: &str = "disk: ok\nmemory: ok\ndns: FAIL (timeout resolving api.example.com)\nntp: ok\ntls: FAIL (certificate expires in 3 days)\n";

fn project(mock: &MockLlm) -> Routines {
    let p = super::assisted(&mock.base_url(), "");
    p.write(
        "routines/failing.yaml",
        "prompt: Read checks.txt and write the checks that are failing to failing.txt.\nagent: { tools: [file_read, file_write] }\n",
    )
    .write("checks.txt", CHECKS);
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_that_copies_the_file_read_is_not_run_and_the_lines_asked_for_go_back() {
    let mock = MockLlm::start().await;
    let p = project(&mock);
    let failing = "dns: FAIL (timeout resolving api.example.com)\ntls: FAIL (certificate expires in 3 days)\n";
    // The local model's copy dropped the `n` of `ntp`: still a copy.
    let copy = CHECKS.replace("ntp", "tp");
    mock.push_all([
        tool_call("file_read", json!({"path": "checks.txt"})),
        tool_call("file_write", json!({"path": "failing.txt", "content": copy})),
        text("```python\ndef keep(line):\n    return 'FAIL' in line\n```"),
        tool_call("file_write", json!({"path": "failing.txt", "content": failing})),
        text("I wrote the two failing checks, dns and tls, to failing.txt."),
    ]);
    let o = p.run_async(["run", "failing", "--json"]).await;
    assert_eq!(o.json()["status"], "succeeded", "{}", o.stdout);
    assert_eq!(p.read("failing.txt"), failing, "the copy never reached the disk");
    let reqs = mock.requests();
    let held = crate::common::last_message(&reqs[3])["content"].as_str().unwrap().to_string();
    assert_eq!(
        held,
        format!(
            "[failed] not run: this content is `checks.txt` as it was read, every line of it, and the task does not ask for a copy. These are the lines of `checks.txt` that the task asks about:\n{}\nWrite them.",
            failing.trim_end()
        )
    );
    let show = p.show(1).await;
    assert_eq!(super::note_details(&show, "write_held"), ["file_write: its content is checks.txt as read; not run"]);
    mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_of_an_earlier_writes_receipt_is_never_run() {
    let mock = MockLlm::start().await;
    let p = project(&mock);
    let failing = "dns: FAIL (timeout resolving api.example.com)\ntls: FAIL (certificate expires in 3 days)\n";
    let receipt = format!("Wrote {} bytes to failing.txt.", failing.len());
    mock.push_all([
        tool_call("file_read", json!({"path": "checks.txt"})),
        tool_call("file_write", json!({"path": "failing.txt", "content": failing})),
        tool_call("file_write", json!({"path": "failing.txt", "content": receipt})),
        text("Done: dns and tls are failing."),
    ]);
    let o = p.run_async(["run", "failing", "--json"]).await;
    assert_eq!(o.json()["status"], "succeeded", "{}", o.stdout);
    assert_eq!(p.read("failing.txt"), failing, "the receipt did not overwrite the file");
    let reqs = mock.requests();
    let held = crate::common::last_message(&reqs[3])["content"].as_str().unwrap().to_string();
    assert_eq!(
        held,
        format!(
            "[failed] not run: this content is what your earlier write returned (`{receipt}`), not what the task asks to write. That write is done."
        )
    );
    mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_the_task_asks_for_is_written() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write(
        "routines/backup.yaml",
        "prompt: Make a backup copy of checks.txt as checks.bak.\nagent: { tools: [file_read, file_write] }\n",
    )
    .write("checks.txt", CHECKS);
    mock.push_all([
        tool_call("file_read", json!({"path": "checks.txt"})),
        tool_call("file_write", json!({"path": "checks.bak", "content": CHECKS})),
        text("Copied checks.txt to checks.bak."),
    ]);
    let o = p.run_async(["run", "backup", "--json"]).await;
    assert_eq!(o.json()["status"], "succeeded", "{}", o.stdout);
    assert_eq!(p.read("checks.bak"), CHECKS);
    assert!(super::note_details(&p.show(1).await, "write_held").is_empty());
    mock.assert_clean();
}

/// The local model wrote `1` before reading the log (held: the log was unread), read it, wrote
/// `3`, then made its first call again, and `1` was what the run left on disk (bench/README.md,
/// stop 41). The repeat of the held guess is not run: the file keeps the count from the read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guess_held_before_the_reads_is_not_written_over_the_write_made_from_them() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write(
        "routines/count.yaml",
        "prompt: Count the ERROR lines in logs/app.log and write just the number to out/errors.txt.\n\
         agent: { tools: [file_read, file_write] }\n",
    )
    .write("logs/app.log", "INFO start\nERROR db timeout\nINFO retry\nERROR db timeout\nWARN slow\nERROR queue full\n");
    let guess = || tool_call("file_write", json!({"content": "1", "path": "out/errors.txt"}));
    mock.push_all([
        guess(),
        tool_call("file_read", json!({"path": "logs/app.log"})),
        tool_call("file_write", json!({"content": "3", "path": "out/errors.txt"})),
        guess(),
        text("3"),
        // A count answered in the turn is asked from the evidence, its lines selected.
        text("```python\ndef keep(line):\n    return 'ERROR' in line\n```"),
        text("ANSWER: 3"),
    ]);
    let o = p.run_async(["run", "count", "--json"]).await;
    assert_eq!(o.json()["status"], "succeeded", "{}", o.stdout);
    assert_eq!(p.read("out/errors.txt"), "3", "the guess never overwrote the count");
    let reqs = mock.requests();
    let held = crate::common::last_message(&reqs[4])["content"].as_str().unwrap().to_string();
    assert_eq!(
        held,
        "[failed] not run: this is the write you made before the task's files were read, and `out/errors.txt` has since been written from what they say. That write is done: give your final answer."
    );
    let notes = super::note_details(&p.show(1).await, "write_held");
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert_eq!(
        notes[1],
        "file_write: it repeats a write made before the reads, over the write made from them; not run"
    );
    mock.assert_clean();
}

const TESTS: &str = "test_login ........ PASSED\ntest_logout ....... PASSED\ntest_checkout ..... FAILED\ntest_refund ....... PASSED\ntest_invoice_pdf .. FAILED\ntest_search ....... PASSED\n";

/// Asked for "the failing tests" in failing.txt, the local model wrote `reports/failing.txt`
/// (a folder the task names only as the source's), and then the name of every test
/// (bench/README.md, stop 42). Neither write runs: the first is told the file the task names,
/// the second goes back with the lines the task asks about; what reaches the disk is the two
/// failing tests, at the path the task names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_elsewhere_and_a_write_of_every_name_are_not_run() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write(
        "routines/failing.yaml",
        "prompt: Write the names of the failing tests from reports/tests.txt into failing.txt, one per line.\nagent: { tools: [file_read, file_write] }\n",
    )
    .write("reports/tests.txt", TESTS);
    let every = "test_login\ntest_logout\ntest_checkout\ntest_refund\ntest_invoice_pdf\ntest_search";
    mock.push_all([
        tool_call("file_read", json!({"path": "reports/tests.txt"})),
        tool_call("file_write", json!({"path": "reports/failing.txt", "content": "test_checkout\n"})),
        tool_call("file_write", json!({"path": "failing.txt", "content": every})),
        text("```python\ndef keep(line):\n    return 'FAILED' in line\n```"),
        tool_call("file_write", json!({"path": "failing.txt", "content": "test_checkout\ntest_invoice_pdf\n"})),
        text("I wrote test_checkout and test_invoice_pdf to failing.txt."),
    ]);
    let o = p.run_async(["run", "failing", "--json"]).await;
    assert_eq!(o.json()["status"], "succeeded", "{}", o.stdout);
    assert_eq!(p.read("failing.txt"), "test_checkout\ntest_invoice_pdf\n");
    assert!(!p.path().join("reports/failing.txt").exists(), "the write elsewhere never ran");
    let reqs = mock.requests();
    assert_eq!(
        super::last_text(&reqs[2]),
        r#"[failed] not run: the task names `failing.txt` as the file to write, and this call writes `reports/failing.txt`. Call this instead: file_write {"content":"test_checkout\n","path":"failing.txt"}"#
    );
    assert_eq!(
        super::last_text(&reqs[4]),
        "[failed] not run: this content names every line of `reports/tests.txt`, and the task asks about some of them. These are the lines of `reports/tests.txt` that the task asks about:\ntest_checkout ..... FAILED\ntest_invoice_pdf .. FAILED\nWrite what the task asks for about them."
    );
    let show = p.show(1).await;
    assert_eq!(
        super::note_details(&show, "write_held"),
        [
            "file_write: the task names failing.txt to write; not run",
            "file_write: its content names every line of reports/tests.txt; not run"
        ]
    );
    mock.assert_clean();
}
