//! When the calls of a routine turn have used every file and web address its task names, and
//! the routine only looks, the answer is asked from the evidence at once: the request a small
//! model would spend making the same call again is not made.

use std::net::SocketAddr;

use axum::Router;
use axum::routing::any;
use routines::config::Autonomy;
use serde_json::{Value, json};

use super::{notes, routine_agent, tool_names};
use crate::common::Harness;
use crate::common::mock_llm::{MockLlm, text, tool_call};

const PORT: &str = "prompt: Which port does the app listen on, according to config/app.toml?\n\
                    agent: { tools: [file_read, file_list] }\n";

/// Whether a request asks for the answer from the evidence: no tools, and the short system
/// prompt of that request.
fn from_evidence(req: &Value) -> bool {
    let system = req["messages"][0]["content"].as_str().unwrap_or_default();
    tool_names(req).is_empty()
        && system.starts_with("## Identity\nYou are Routines. Answer the task from the data below")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_the_file_the_task_names_is_followed_by_the_answer_request() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write("routines/port.yaml", PORT).write("config/app.toml", "[server]\nport = 8420\n");
    mock.push_all([tool_call("file_read", json!({"path": "config/app.toml"})), text("ANSWER: 8420")]);
    p.run_async(["run", "port"]).await.success().stdout_is("8420\n");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2, "the read, then the answer");
    assert!(from_evidence(&reqs[1]), "{}", reqs[1]);
    let data = reqs[1]["messages"][1]["content"].as_str().unwrap();
    assert!(data.contains("port = 8420") && data.contains("according to config/app.toml?"), "{data}");
    let show = p.show(1).await;
    assert_eq!(super::note_kinds(&show), ["named_all_used", "answer_from_evidence"]);
    mock.assert_clean();
}

/// Each of these leaves the model its next step: a named file not read yet, a file read in
/// part, a routine that may also write, a failed read, a routine with `shell`, a named folder
/// not listed yet, a tool offered and not used yet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_is_not_yet_the_whole_look_goes_back_to_the_model_with_the_tools() {
    let cases: [(&str, &str, Value); 7] = [
        (
            "prompt: Does the version in package.json match the newest one in CHANGELOG.md?\nagent: { tools: [file_read] }\n",
            "the changelog is not read yet",
            json!({"path": "package.json"}),
        ),
        (
            "prompt: What is the last line of logs/disk.log?\nagent: { tools: [file_read] }\n",
            "the first of three lines is read",
            json!({"path": "logs/disk.log", "limit": 1}),
        ),
        (
            "prompt: Copy the port in config/app.toml into port.txt.\nagent: { tools: [file_read, file_write] }\n",
            "the routine may write",
            json!({"path": "config/app.toml"}),
        ),
        (
            "prompt: What does logs/missing.log say? It is config/app.toml's sibling.\nagent: { tools: [file_read] }\n",
            "the read failed",
            json!({"path": "config/nope.toml"}),
        ),
        (
            "prompt: Does the version in package.json match the latest git tag?\n\
             agent: { autonomy: full, tools: [file_read, shell] }\n",
            "the routine has shell: a command may be the other source",
            json!({"path": "package.json"}),
        ),
        (
            "prompt: Is config/app.toml's port in any of the files in data/raw/?\nagent: { tools: [file_read, file_list] }\n",
            "the folder the task names is not listed yet",
            json!({"path": "config/app.toml"}),
        ),
        (
            "prompt: Does the version in package.json match the one on our website?\n\
             agent: { tools: [file_read, http_request] }\n",
            "a tool offered is not used yet: the website is named only in words",
            json!({"path": "package.json"}),
        ),
    ];
    for (routine, why, args) in cases {
        let mock = MockLlm::start().await;
        let p = super::assisted(&mock.base_url(), "");
        p.write("routines/r.yaml", routine)
            .write("config/app.toml", "port = 8420\n")
            .write("package.json", "{\"version\": \"2.3.0\"}\n")
            .write("CHANGELOG.md", "## 2.4.0\n")
            .write("logs/disk.log", "a 50%\nb 60%\nc 93%\n")
            .write("data/raw/a.csv", "port\n8420\n");
        mock.push_all([tool_call("file_read", args), text("done")]);
        let o = p.run_async(["run", "r"]).await;
        // "done" over a failed read and nothing else rests on nothing: that run fails.
        if why == "the read failed" {
            o.code(1).stderr_has("every tool call failed: file_read config/nope.toml: ");
        } else {
            o.success();
        }
        let reqs = mock.requests();
        assert!(reqs.len() >= 2, "{why}");
        assert!(!from_evidence(&reqs[1]) && !tool_names(&reqs[1]).is_empty(), "{why}: {}", reqs[1]);
    }
}

/// A page served on the loopback, listed in `allowed_hosts`.
async fn site() -> SocketAddr {
    let app = Router::new().route("/pricing.html", any(|| async { "<p>Pro: $42.50 per month</p>" }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetching_the_address_the_task_names_is_followed_by_the_answer_request_but_a_post_is_not() {
    let addr = site().await;
    let url = format!("http://{addr}/pricing.html");
    for (method, evidence) in [("GET", true), ("POST", false)] {
        let mock = MockLlm::start().await;
        let p = super::assisted(&mock.base_url(), "security:\n  allowed_hosts: [127.0.0.1]\n");
        p.write(
            "routines/price.yaml",
            &format!(
                "prompt: How much does the Pro plan cost per month? The prices are on {url}.\n\
                 agent: {{ autonomy: full, tools: [http_request] }}\n"
            ),
        );
        mock.push_all([tool_call("http_request", json!({"url": url, "method": method})), text("ANSWER: $42.50")]);
        p.run_async(["run", "price"]).await.success();
        let reqs = mock.requests();
        assert!(reqs[1].to_string().contains("42.50 per month"), "{method}: the page was read");
        assert_eq!(from_evidence(&reqs[1]), evidence, "{method}: {}", reqs[1]);
    }
}

/// A routine agent with every tool, some of which write: the rule does not apply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_may_also_act_is_left_its_next_step() {
    let h = Harness::new().await;
    h.write("config/app.toml", "port = 8420\n");
    h.mock.push_all([tool_call("file_read", json!({"path": "config/app.toml"})), text("8420")]);
    let mut agent = routine_agent(&h, Autonomy::Full);
    assert_eq!(agent.process_message("Which port is in config/app.toml?").await.unwrap(), "8420");
    assert!(!tool_names(&h.mock.requests()[1]).is_empty());
    assert!(notes(&h).is_empty(), "{:?}", notes(&h));
}
