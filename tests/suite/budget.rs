//! The model's context as a budget (SPEC §13): no request exceeds `provider.context_window`
//! (else what the server reports, else 8192 tokens); a tool result too large for what is left
//! is cut with a note of what was left out and how to read it. Through `routines run` and the
//! mock server: the assertions are on the requests the server received.

use serde_json::{Value, json};

use crate::common::Routines;
use crate::common::mock_llm::{MockLlm, text, tool_call};

const TASK: &str = "Which request id failed in logs/app.log? Reply with the id only.";

/// A project whose routine `find` asks [`TASK`] with `file_read`, its provider block with
/// `provider_extra` (e.g. `context_window: 2048`), and a 600-line log with one ERROR line.
fn project(mock: &MockLlm, provider_extra: &str) -> Routines {
    let p = Routines::project(&mock.base_url(), "");
    p.write(
        "routines.yaml",
        &format!(
            "timezone: Asia/Shanghai\nprovider:\n  base_url: {}\n  model: mock-model\n  api_key_env: {}\n  max_retries: 0\n{provider_extra}",
            mock.base_url(),
            crate::common::cli::TEST_KEY.0
        ),
    );
    p.write(
        "routines/find.yaml",
        &format!("prompt: {TASK}\nagent: {{ tools: [file_read] }}\ndeliver:\n  - file: {{ path: out/find.md }}\n"),
    );
    p.write("logs/app.log", &log(600));
    p
}

/// `lines` lines of a service log; line 317 is the one ERROR, with request id `req-4711`.
fn log(lines: usize) -> String {
    (1..=lines)
        .map(|i| match i {
            317 => "2026-05-01 10:05:17 ERROR request req-4711 failed: upstream timeout after 30s\n".to_string(),
            _ => format!(
                "2026-05-01 10:{:02}:{:02} INFO request req-{:04} served in {}ms\n",
                i / 60,
                i % 60,
                i,
                20 + i % 7
            ),
        })
        .collect()
}

/// The engine's estimate of a request as the server received it: a token per three bytes of
/// each message's text and calls plus four, the tool schemas plus 64, and 8 for the request.
fn estimate(request: &Value) -> usize {
    let tokens = |s: &str| s.len().div_ceil(3);
    let messages: usize = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let calls: usize = m["tool_calls"].as_array().map_or(0, |calls| {
                calls
                    .iter()
                    .map(|c| {
                        tokens(c["function"]["name"].as_str().unwrap_or(""))
                            + tokens(c["function"]["arguments"].as_str().unwrap_or(""))
                            + 4
                    })
                    .sum()
            });
            4 + tokens(m["content"].as_str().unwrap_or("")) + calls
        })
        .sum();
    let tools = request["tools"]
        .as_array()
        .map_or(0, |tools| 64 + tools.iter().map(|t| tokens(&t["function"].to_string())).sum::<usize>());
    8 + messages + tools
}

/// Every request under the window, less the eighth kept for the reply, each with the task.
#[track_caller]
fn assert_within(requests: &[Value], window: usize) {
    for (i, r) in requests.iter().enumerate() {
        let est = estimate(r);
        assert!(est <= window - window / 8, "request #{i} is {est} tokens by the estimate, over {window}");
        assert!(r.to_string().contains(TASK), "request #{i} lost the task");
    }
}

/// The content of the tool message of a request.
fn tool_result(request: &Value) -> String {
    let messages = request["messages"].as_array().unwrap();
    let found = messages.iter().find(|m| m["role"] == "tool").and_then(|m| m["content"].as_str());
    found.unwrap_or_else(|| panic!("no tool result in {request:#}")).to_string()
}

/// The case: one id in a 600-line log, a server of 2048 tokens. The read is cut with a
/// note that names the lines left out and the call that reads them; the model reads the range
/// the note names and answers. The whole file is never sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_600_line_log_is_cut_to_the_window_with_a_note_that_names_the_rest() {
    let mock = MockLlm::start().await;
    let p = project(&mock, "  context_window: 2048\n");
    mock.push_all([
        tool_call("file_read", json!({"path": "logs/app.log"})),
        tool_call("file_read", json!({"path": "logs/app.log", "offset": 300, "limit": 30})),
        text("req-4711"),
    ]);
    let o = p.run_async(["run", "find", "--json"]).await;
    assert_eq!(o.json()["output"], "req-4711", "{}", o.stdout);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3);
    assert_within(&reqs, 2048);
    let first = tool_result(&reqs[1]);
    assert!(first.starts_with("2026-05-01 10:00:01 INFO request req-0001"), "the head stays: {first}");
    assert!(first.trim_end().ends_with("request req-0600 served in 25ms"), "the tail stays: {first}");
    assert!(!first.contains("req-0300"), "the middle of the file was not sent");
    // The tool's own cap of 16,000 characters cut the read first; the note names the line
    // where the gap starts.
    let note = first.lines().find(|l| l.starts_with("[... truncated: the file from line ")).unwrap();
    assert!(note.contains("left out here to fit the model's context window"), "{note}");
    assert!(note.contains("grep -n PATTERN logs/app.log") && note.contains("file_read {"), "{note}");
    // The read is then offered with its range.
    let read = reqs[1]["tools"].as_array().unwrap().iter().find(|t| t["function"]["name"] == "file_read").unwrap();
    assert!(read["function"]["parameters"]["properties"].get("offset").is_some(), "{read}");
    assert!(!mock.requests().iter().any(|r| r.to_string().contains(&log(600).replace('\n', "\\n"))));
    let show = p.show(1).await;
    let cut = show["events"].as_array().unwrap().iter().find(|e| e["status"] == "result_cut").unwrap();
    assert!(
        cut["detail"].as_str().unwrap().contains("context window of 2048 tokens (provider.context_window)"),
        "{cut}"
    );
    assert_eq!(p.read("out/find.md"), "req-4711\n");
    mock.assert_clean();
}

/// Unset, the window is what llama.cpp's `/props` reports, asked once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_window_the_server_reports_is_kept_when_the_config_sets_none() {
    let mock = MockLlm::start().await;
    mock.report_n_ctx(2048);
    let p = project(&mock, "");
    mock.push_all([tool_call("file_read", json!({"path": "logs/app.log"})), text("req-4711")]);
    let o = p.run_async(["run", "find", "--json"]).await;
    assert_eq!(o.json()["output"], "req-4711", "{}", o.stdout);
    let reqs = mock.requests();
    assert_within(&reqs, 2048);
    assert!(tool_result(&reqs[1]).contains("left out here to fit the model's context window"));
    assert_eq!(mock.context_questions(), 1, "one question to the server per process");
    let show = p.show(1).await;
    let cut = show["events"].as_array().unwrap().iter().find(|e| e["status"] == "result_cut").unwrap();
    assert!(cut["detail"].as_str().unwrap().contains("2048 tokens (reported by the server's /props)"), "{cut}");
    mock.assert_clean();
}

/// vLLM's `max_model_len` on the model's entry counts too, and a file that fits is sent whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_that_fits_the_window_is_sent_whole() {
    let mock = MockLlm::start().await;
    mock.report_max_model_len(32_768);
    // 4096 kept for the reply: the default window would leave about 2,500 tokens for the
    // 15 KB read (5,000 tokens); 32,768 leave room for it.
    let p = project(
        &mock,
        "  max_tokens: 4096
",
    );
    p.write("logs/app.log", &log(270));
    // A tool left unused keeps the answer in the turn, where the read is a tool message.
    p.write("routines/find.yaml", &format!("prompt: {TASK}\nagent: {{ tools: [file_read, memory_recall] }}\n"));
    mock.push_all([tool_call("file_read", json!({"path": "logs/app.log"})), text("req-0042")]);
    let o = p.run_async(["run", "find", "--json"]).await;
    assert_eq!(o.json()["output"], "req-0042", "{}", o.stdout);
    assert_eq!(tool_result(&mock.requests()[1]), log(270));
    assert_eq!(mock.context_questions(), 2, "/props said nothing, /v1/models did");
    mock.assert_clean();
}

/// A window the prompt and the task alone do not fit: the run fails naming the window and the
/// sizes, and no request is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_larger_than_the_window_fails_the_run_with_the_sizes() {
    let mock = MockLlm::start().await;
    let p = project(&mock, "  context_window: 300\n");
    let o = p.run_async(["run", "find"]).await;
    o.code(1).stderr_has("the request does not fit the model's context window of 300 tokens (provider.context_window): the system prompt takes about ");
    assert_eq!(mock.request_count(), 0);
    let show = p.show(1).await;
    assert_eq!(show["status"], "failed");
    assert!(!p.path().join("out").exists());
}
