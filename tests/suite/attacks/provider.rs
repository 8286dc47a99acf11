//! A hostile model server: replies too large to hold, error bodies that echo the key or run
//! on for megabytes. Checked in the database, the delivered files, the process's peak memory
//! and its stderr, and on the client the typed error.

use std::process::Stdio;
use std::time::Duration;

use routines::llm::{ChatRequest, LlmError, Message, OpenAiProvider, Provider};
use serde_json::Value;

use super::records::{assert_clean, assert_nothing_recorded, database_has};
use crate::common::mock_llm::{MockLlm, error, huge, text};
use crate::common::{Routines, provider_options};

const KEY: &str = "sk-live-0a1b2c3d4e5f6a7b8c9d";
const MIB: usize = 1024 * 1024;

fn project(mock: &MockLlm) -> Routines {
    let p = Routines::project(&mock.base_url(), "").env("TEST_KEY", KEY);
    p.write("routines/digest.yaml", "prompt: Summarize the day.\ndeliver: [{ file: { path: out/digest.md } }]\n");
    p
}

fn request() -> ChatRequest {
    ChatRequest {
        model: "mock-model".into(),
        messages: vec![Message::system("## Identity\nx"), Message::user("hi")],
        tools: Vec::new().into(),
        temperature: None,
        max_tokens: None,
        require_tool: false,
        stop: Vec::new(),
    }
}

fn client(mock: &MockLlm, retries: u32) -> OpenAiProvider {
    let mut o = provider_options(mock);
    o.retry.max_retries = retries;
    o.timeout = Duration::from_secs(20);
    OpenAiProvider::new(o).unwrap()
}

/// Forks and execs its arguments, waits for the child with `wait4` and writes the child's peak
/// RSS (KiB) to the file named first; exits with the child's code. A process started by this
/// test binary takes the binary's own high-water mark with it across `exec` (Linux keeps the
/// old address space's peak in `ru_maxrss`), and the test binary holds whatever the tests
/// running beside it hold: forked from a small Python process, the child's figure is its own.
const MEASURE: &str = r#"
import os, sys
out, argv = sys.argv[1], sys.argv[2:]
pid = os.fork()
if pid == 0:
    os.execv(argv[0], argv)
_, status, usage = os.wait4(pid, 0)
with open(out, "w") as f:
    f.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"#;

/// `routines ARGS` in `p`, as [`Routines::command`] runs it, with its exit code, stdout,
/// stderr and peak resident memory in KiB (its own, see [`MEASURE`]).
async fn run_measured(p: &Routines, mock: &MockLlm, args: &[&str]) -> (i32, String, String, i64) {
    let out = tempfile::tempdir().unwrap();
    let (stdout_path, stderr_path, rss_path) =
        (out.path().join("stdout"), out.path().join("stderr"), out.path().join("maxrss"));
    let mut child = std::process::Command::new("python3")
        .args(["-c", MEASURE])
        .arg(&rss_path)
        .arg(env!("CARGO_BIN_EXE_routines"))
        .args(args)
        .current_dir(p.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", p.path())
        .env("TEST_KEY", KEY)
        .env("ROUTINES_BASE_URL", mock.base_url())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap()).await.unwrap();
    let code = status.code().unwrap_or(-1);
    let maxrss = std::fs::read_to_string(&rss_path).unwrap().trim().parse().unwrap();
    (code, std::fs::read_to_string(stdout_path).unwrap(), std::fs::read_to_string(stderr_path).unwrap(), maxrss)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_of_100_mb_is_cut_at_8_mib_and_the_engine_stays_small() {
    let mock = MockLlm::start().await;
    let p = project(&mock);
    mock.push(huge(100 * MIB));
    let (code, stdout, stderr, maxrss_kib) = run_measured(&p, &mock, &["run", "digest", "--json"]).await;
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["status"], "failed");
    let error = report["error"].as_str().unwrap();
    assert!(error.contains("larger than 8388608 bytes"), "{error}");
    assert!(database_has(&p, "larger than 8388608 bytes"), "the database records why");
    assert!(!p.path().join("out/digest.md").exists(), "nothing was delivered");
    // The 100 MB reply took 513 MB before the cap; now the body stops at 8 MiB.
    eprintln!("peak RSS of `routines run` with a 100 MB reply: {maxrss_kib} KiB");
    assert!(maxrss_kib < 150 * 1024, "peak RSS {maxrss_kib} KiB");

    // Benign: a reply of 1 MiB is an answer like any other.
    mock.push(huge(MIB));
    let o = p.run_async(["run", "digest", "--json"]).await;
    o.success();
    assert_eq!(o.json()["status"], "succeeded");
    assert_eq!(p.read("out/digest.md").len(), MIB + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_reply_past_the_cap_fails_typed_and_is_not_retried() {
    let mock = MockLlm::start().await;
    mock.push(huge(10 * MIB));
    let sink = |_: routines::llm::StreamDelta| {};
    let err = client(&mock, 2).chat_stream(&request(), &sink).await.unwrap_err();
    assert!(matches!(err, LlmError::TooLarge { limit } if limit == 8 * MIB), "{err:?}");
    assert!(!err.is_retryable());
    assert_eq!(mock.request_count(), 1, "a reply too large is not asked for again");

    // Benign: a streamed reply under the cap.
    mock.push(huge(2 * MIB));
    let r = client(&mock, 2).chat_stream(&request(), &sink).await.unwrap();
    assert_eq!(r.content.map(|c| c.len()), Some(2 * MIB));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cap_is_the_provider_s_own_and_holds_for_every_reply() {
    let mock = MockLlm::start().await;
    let small = client(&mock, 0).with_max_reply(4096);
    mock.push(text(&"x".repeat(5000)));
    let err = small.chat(&request()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "the model API sent a reply larger than 4096 bytes; it was not read further (a broken or hostile server?)"
    );
    // Benign: under the cap.
    mock.push(text(&"x".repeat(3000)));
    assert_eq!(small.chat(&request()).await.unwrap().content.map(|c| c.len()), Some(3000));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_body_of_10_mb_is_read_only_in_part() {
    let mock = MockLlm::start().await;
    mock.push(error(500, &"overloaded ".repeat(MIB)));
    let err = client(&mock, 0).chat(&request()).await.unwrap_err();
    // The body is cut at 64 KiB, so its JSON does not parse and its start is shown.
    let message = err.to_string();
    assert!(message.starts_with("the model server failed (HTTP 500): {\"error\""), "{message}");
    assert!(message.contains("overloaded overloaded") && message.len() < 1000, "{} bytes", message.len());

    // Benign: a short error message is kept whole.
    mock.push(error(500, "the GPU fell over; try again"));
    let err = client(&mock, 0).chat(&request()).await.unwrap_err();
    assert_eq!(err.to_string(), "the model server failed (HTTP 500): the GPU fell over; try again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_body_echoing_the_key_does_not_carry_it_into_the_error() {
    let mock = MockLlm::start().await;
    let mut options = provider_options(&mock);
    options.api_key = Some(routines::config::Secret::new(KEY));
    options.retry.max_retries = 0;
    let provider = OpenAiProvider::new(options).unwrap();
    mock.push(error(401, &format!("Incorrect API key provided: {KEY}. You can find your key at ...")));
    let err = provider.chat(&request()).await.unwrap_err();
    assert!(matches!(err, LlmError::KeyRejected { .. }), "{err:?}");
    assert_clean("the error", &err.to_string(), KEY);
    assert!(err.to_string().contains("Incorrect API key provided: [redacted]."), "{err}");

    // Benign: a rejection that does not echo the key is shown as sent.
    mock.push(error(401, "Incorrect API key provided: sk-...9c9d."));
    let err = provider.chat(&request()).await.unwrap_err();
    assert!(err.to_string().contains("Incorrect API key provided: sk-...9c9d."), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_error_with_secrets_is_recorded_and_reported_redacted() {
    let mock = MockLlm::start().await;
    let p = project(&mock).env("ROUTINES_LOG", "debug");
    p.write(
        "routines/digest.yaml",
        "prompt: Summarize.\non_failure:\n  deliver: [{ file: { path: out/failed.md } }]\n",
    );
    mock.push(error(400, &format!("bad request; the key you sent, {KEY}, has no access to this model")));
    let o = p.run_async(["run", "digest", "--json"]).await;
    o.code(1);
    let report = o.json();
    let why = report["error"].as_str().unwrap();
    assert!(why.contains("the key you sent, [redacted], has no access"), "{why}");
    for (place, text) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
        assert_clean(place, text, KEY);
    }
    assert_clean("the on_failure file", &p.read("out/failed.md"), KEY);
    assert_nothing_recorded(&p, KEY, &[]);
    let shown = p.run_async(["show", &report["run_id"].to_string(), "--json"]).await;
    shown.success();
    assert_clean("show", &shown.stdout, KEY);

    // Benign: an error without a secret is recorded word for word.
    mock.push(error(400, "model `mock-model` is still loading"));
    let o = p.run_async(["run", "digest", "--json"]).await;
    o.code(1);
    assert!(o.json()["error"].as_str().unwrap().contains("model `mock-model` is still loading"), "{o}");
    assert!(p.read("out/failed.md").contains("model `mock-model` is still loading"));
}
