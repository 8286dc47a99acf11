//! `first_call: tool`: `tool_choice: "required"` on the first call of a turn, an instruction
//! (and one more request) where the provider cannot take it.

use std::sync::Arc;

use routines::agent::{Agent, AgentOptions};
use routines::config::routine_file::FirstCall;
use routines::config::{Autonomy, ToolCallMode};
use routines::llm::OpenAiProvider;
use routines::policy::Policy;
use routines::tools::Registry;
use serde_json::{Value, json};

use super::{ROUTINE_SECTIONS, notes, routine_agent};
use crate::common::mock_llm::{MockLlm, text, tool_call};
use crate::common::{Harness, last_message, provider_options};

const INSTRUCTION: &str =
    "Start by calling a tool to get the facts this task needs; do not answer before you have a tool result.";

async fn harness() -> Harness {
    let h = Harness::new().await;
    h.mock.expect_sections(&ROUTINE_SECTIONS);
    h.write("a.txt", "one\ntwo\nthree\n");
    h
}

fn tool_choices(mock: &MockLlm) -> Vec<Value> {
    mock.requests().iter().map(|r| r.get("tool_choice").cloned().unwrap_or(Value::Null)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_call_of_a_routine_turn_requires_a_tool_and_later_ones_do_not() {
    let h = harness().await;
    h.mock.push_all([tool_call("file_read", json!({"path": "a.txt"})), text("3 lines")]);
    let mut agent = routine_agent(&h, Autonomy::ReadOnly);
    assert_eq!(agent.process_message("How many lines has a.txt?").await.unwrap(), "3 lines");
    assert_eq!(tool_choices(&h.mock), [json!("required"), Value::Null]);
    let first = &h.mock.requests()[0];
    assert_eq!(last_message(first)["content"], "How many lines has a.txt?", "no instruction is needed");
    h.mock.assert_clean();

    // Every turn starts grounded: the next message too.
    h.mock.push_all([tool_call("file_read", json!({"path": "a.txt", "limit": 1})), text("one")]);
    agent.process_message("And its first line?").await.unwrap();
    assert_eq!(tool_choices(&h.mock)[2], json!("required"));
    h.mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_and_first_call_auto_leave_the_choice_to_the_model() {
    let h = Harness::new().await;
    h.mock.push(text("Hello."));
    let mut chat = h.agent(Autonomy::Supervised, |_, _| {});
    chat.process_message("hi").await.unwrap();
    assert_eq!(tool_choices(&h.mock), [Value::Null]);
    h.mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_that_refuses_tool_choice_gets_the_request_again_with_an_instruction_and_is_remembered() {
    let h = harness().await;
    h.mock.refuse_tool_choice();
    h.mock.push_all([tool_call("file_read", json!({"path": "a.txt"})), text("3 lines")]);
    let mut agent = routine_agent(&h, Autonomy::ReadOnly);
    assert_eq!(agent.process_message("How many lines has a.txt?").await.unwrap(), "3 lines");
    let reqs = h.mock.requests();
    assert_eq!(tool_choices(&h.mock), [json!("required"), Value::Null, Value::Null]);
    assert_eq!(
        last_message(&reqs[1])["content"],
        format!("How many lines has a.txt?\n\n{INSTRUCTION}"),
        "the same request again, with the instruction"
    );
    assert_eq!(notes(&h), ["tool_choice_refused"]);

    // The provider is remembered: the next turn asks with the instruction at once.
    h.mock.push_all([tool_call("file_read", json!({"path": "a.txt", "limit": 1})), text("one")]);
    agent.process_message("And its first line?").await.unwrap();
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 5);
    assert!(reqs[3].get("tool_choice").is_none());
    assert_eq!(last_message(&reqs[3])["content"], format!("And its first line?\n\n{INSTRUCTION}"));
    h.mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_tool_choice_a_first_reply_that_calls_no_tool_is_asked_again_once() {
    let h = harness().await;
    h.mock.refuse_tool_choice();
    h.mock.push_all([text("4 lines"), tool_call("file_read", json!({"path": "a.txt"})), text("3 lines")]);
    let mut agent = routine_agent(&h, Autonomy::ReadOnly);
    assert_eq!(agent.process_message("How many lines has a.txt?").await.unwrap(), "3 lines");
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 4);
    let reask = last_message(&reqs[2]);
    assert_eq!(reask["role"], "user");
    assert!(
        reask["content"]
            .as_str()
            .unwrap()
            .ends_with("Do not answer from memory or by guessing. Call a tool now to get the facts."),
        "{reask}"
    );
    let messages = reqs[2]["messages"].as_array().unwrap();
    assert!(messages.iter().all(|m| m["content"] != "4 lines"), "the guess is not kept");
    assert_eq!(notes(&h), ["tool_choice_refused", "first_call_reask"]);

    // Once: a second guess stands.
    h.mock.push_all([text("maybe 4"), text("4, surely")]);
    assert_eq!(agent.process_message("Count again.").await.unwrap(), "4, surely");
    h.mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_mode_instructs_and_asks_again_for_a_call() {
    let h = harness().await;
    h.mock.push_all([
        text("There are 4 lines."),
        text(r#"{"name": "file_read", "arguments": {"path": "a.txt"}}"#),
        text("3 lines"),
    ]);
    let mut agent = h.agent(Autonomy::ReadOnly, |o, _| {
        o.tool_mode = ToolCallMode::Json;
        o.first_call = FirstCall::Tool;
    });
    agent.set_routine_name("count");
    assert_eq!(agent.process_message("How many lines has a.txt?").await.unwrap(), "3 lines");
    let reqs = h.mock.requests();
    assert!(reqs.iter().all(|r| r.get("tool_choice").is_none() && r.get("tools").is_none()));
    assert_eq!(last_message(&reqs[0])["content"], format!("How many lines has a.txt?\n\n{INSTRUCTION}"));
    assert!(
        last_message(&reqs[1])["content"]
            .as_str()
            .unwrap()
            .ends_with("Call a tool now: reply with only the JSON of the call."),
        "{}",
        last_message(&reqs[1])
    );
    assert_eq!(last_message(&reqs[2])["content"], "[result of file_read]\none\ntwo\nthree\n");
    h.mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_without_tools_is_never_asked_for_a_call() {
    let h = Harness::new().await;
    h.mock.expect_sections(&ROUTINE_SECTIONS);
    h.mock.push(text("Good morning!"));
    let provider = Arc::new(OpenAiProvider::new(provider_options(&h.mock)).unwrap());
    let policy = Arc::new(Policy::new(Autonomy::ReadOnly, &h.workspace(), &[]).unwrap());
    let mut opts = AgentOptions::new("mock-model");
    opts.first_call = FirstCall::Tool;
    let mut agent = Agent::new(provider, Registry::new(), policy, opts);
    agent.set_routine_name("greeting");
    assert_eq!(agent.process_message("Greet me.").await.unwrap(), "Good morning!");
    let req = &h.mock.requests()[0];
    assert!(req.get("tool_choice").is_none() && req.get("tools").is_none());
    assert_eq!(last_message(req)["content"], "Greet me.");
    h.mock.assert_clean();
}

#[tokio::test]
async fn the_mock_checks_the_wire_shape_of_tool_choice() {
    let mock = MockLlm::start().await;
    let tools = json!([{"type": "function", "function": {"name": "file_read", "description": "d", "parameters": {"type": "object"}}}]);
    let cases = [
        (json!("required"), Some(tools.clone()), None),
        (json!({"type": "function", "function": {"name": "file_read"}}), Some(tools.clone()), None),
        (json!("required"), None, Some("`tool_choice` is the string \"required\" but the request has no `tools`")),
        (json!("always"), Some(tools.clone()), Some("`tool_choice` must be \"none\", \"auto\", \"required\" or")),
        (
            json!({"type": "function", "function": {"name": "shell"}}),
            Some(tools.clone()),
            Some("`tool_choice.function.name` \"shell\" is not one of the tools [\"file_read\"]"),
        ),
        (
            json!({"function": {"name": "file_read"}}),
            Some(tools.clone()),
            Some("`tool_choice.type` must be \"function\""),
        ),
        (json!(true), Some(tools), Some("`tool_choice` must be")),
    ];
    let client = reqwest::Client::new();
    for (i, (choice, tools, expected)) in cases.into_iter().enumerate() {
        mock.push(text("ok"));
        let mut body = json!({"model": "m", "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}], "tool_choice": choice});
        if let Some(t) = tools {
            body["tools"] = t;
        }
        let url = format!("{}/chat/completions", mock.base_url());
        client.post(url).json(&body).send().await.unwrap().text().await.unwrap();
        let found: Vec<String> =
            mock.violations().into_iter().filter(|v| v.starts_with(&format!("request #{i}:"))).collect();
        match expected {
            None => assert!(found.is_empty(), "case {i}: {found:?}"),
            Some(needle) => assert!(found.iter().any(|v| v.contains(needle)), "case {i}: {found:?}"),
        }
    }
}

/// A webhook's data is already in the prompt: its run is not held to a first tool call unless
/// the routine asks for it; a run of the same routine without that data is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_run_with_its_data_in_the_prompt_leaves_the_first_call_to_the_model() {
    use std::time::Duration;

    let mock = MockLlm::start().await;
    let port = crate::common::os::free_port();
    let p = super::assisted(&mock.base_url(), &format!("server: {{ listen: 127.0.0.1:{port} }}\n"));
    let hook = |path: &str, extra: &str| {
        format!(
            "on: [{{ webhook: {{ path: {path}, auth: none }}}}]\nprompt: \"Summarize this deploy: {{{{ trigger.body | default('none') }}}}\"\nagent: {{ tools: [file_read]{extra} }}\n"
        )
    };
    p.write("routines/hook.yaml", &hook("/hooks/deploy", ""))
        .write("routines/strict.yaml", &hook("/hooks/strict", ", first_call: tool"))
        .write("README.md", "Deploys go through CI.\n");
    let daemon = p.command(["daemon"]).spawn().await;
    daemon.wait_for_http(&format!("http://127.0.0.1:{port}/healthz"), 200).await;
    let c = reqwest::Client::builder().no_proxy().build().unwrap();
    let fire = async |path: &str, name: &str| {
        let url = format!("http://127.0.0.1:{port}{path}");
        assert_eq!(c.post(&url).body("billing-api 3.8.1 failed").send().await.unwrap().status(), 202);
        crate::common::wait::poll(Duration::from_secs(20), Duration::from_millis(50), async || {
            (p.history(&[name]).await.iter().any(|r| r["status"] == "succeeded")).then_some(())
        })
        .await
        .expect("the run finished");
    };
    mock.push(text("billing-api 3.8.1 failed."));
    fire("/hooks/deploy", "hook").await;
    mock.push_all([tool_call("file_read", json!({"path": "README.md"})), text("billing-api 3.8.1 failed.")]);
    fire("/hooks/strict", "strict").await;
    drop(daemon);
    assert_eq!(tool_choices(&mock), [Value::Null, json!("required"), Value::Null]);
    mock.assert_clean();

    // Run by hand, the routine has no data in its prompt: the first call is held to a tool.
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write("routines/hook.yaml", &hook("/hooks/deploy", "")).write("README.md", "Deploys go through CI.\n");
    mock.push_all([tool_call("file_read", json!({"path": "README.md"})), text("Nothing was deployed.")]);
    p.run_async(["run", "hook"]).await.success();
    assert_eq!(tool_choices(&mock), [json!("required"), Value::Null]);
}
