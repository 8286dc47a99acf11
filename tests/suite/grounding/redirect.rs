//! A write elsewhere than the file the task names, made again word for word after it was held
//! (`Agent::redirected`, `agent/holds.rs`): once the task's files were read, the engine makes it
//! to the named file; before the reads it stays held, since its content can only be a guess.
//! Through `routines run`, a scripted model, and the files on disk.

use serde_json::json;

use crate::common::Routines;
use crate::common::mock_llm::{MockLlm, text, tool_call};

const TASK: &str = "Read reports/tests.txt and write a one-line summary into summary.txt.";
const TESTS: &str = "test_login PASSED\ntest_checkout FAILED\ntest_refund PASSED\ntest_invoice_pdf FAILED\n";

fn project(mock: &MockLlm) -> Routines {
    let p = super::assisted(&mock.base_url(), "");
    p.write("routines/task.yaml", &format!("prompt: {TASK}\nagent: {{ tools: [file_read, file_write] }}\n"))
        .write("reports/tests.txt", TESTS);
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_write_elsewhere_made_again_after_the_reads_goes_to_the_named_file() {
    let mock = MockLlm::start().await;
    let p = project(&mock);
    let wrong = json!({"path": "reports/summary.txt", "content": "2 of 4 tests failed.\n"});
    mock.push_all([
        tool_call("file_read", json!({"path": "reports/tests.txt"})),
        tool_call("file_write", wrong.clone()),
        tool_call("file_write", wrong),
        text("Wrote the summary: 2 of 4 tests failed."),
    ]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["status"], "succeeded", "{}", o.stdout);
    assert_eq!(p.read("summary.txt"), "2 of 4 tests failed.\n");
    assert!(!p.path().join("reports/summary.txt").exists(), "nothing was written where the task does not say");
    let reqs = mock.requests();
    let held = super::last_text(&reqs[2]);
    assert!(held.contains("Call this instead: file_write"), "{held}");
    let made = super::last_text(&reqs[3]);
    assert!(
        made.starts_with(
            "(Written to `summary.txt`, the file the task names, not `reports/summary.txt`.) Wrote 21 bytes"
        ),
        "{made}"
    );
    assert_eq!(
        super::note_details(&p.show(1).await, "write_redirected"),
        ["file_write: the write to `reports/summary.txt` made again; made to `summary.txt`, the file the task names"]
    );
    mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_write_elsewhere_made_again_before_any_read_stays_held() {
    let mock = MockLlm::start().await;
    let p = project(&mock);
    let guess = json!({"path": "reports/summary.txt", "content": "All tests passed.\n"});
    mock.push_all([
        tool_call("file_write", guess.clone()),
        tool_call("file_write", guess),
        tool_call("file_read", json!({"path": "reports/tests.txt"})),
        tool_call("file_write", json!({"path": "summary.txt", "content": "2 of 4 tests failed.\n"})),
        text("Wrote the summary."),
    ]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["status"], "succeeded", "{}", o.stdout);
    assert_eq!(p.read("summary.txt"), "2 of 4 tests failed.\n", "the guess never reached the disk");
    assert!(!p.path().join("reports/summary.txt").exists());
    assert!(super::note_details(&p.show(1).await, "write_redirected").is_empty());
    mock.assert_clean();
}
