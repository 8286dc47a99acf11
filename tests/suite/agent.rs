//! The agent loop against a real HTTP mock of the OpenAI API.

use std::sync::{Arc, Mutex};

use futures::FutureExt;
use routines::agent::{AgentEvent, Confirmation, RunEvent, ToolStatus};
use routines::config::{Autonomy, ToolCallMode};
use routines::policy::Grants;
use serde_json::json;

use crate::common::mock_llm::{raw_tool_call_args, text, tool_call, tool_calls};
use crate::common::{CHAT_SECTIONS, Harness, last_message};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_several_tool_calls_of_one_reply_in_order() {
    let h = Harness::new().await;
    h.write("a.txt", "alpha");
    h.write("b.txt", "beta");
    h.mock.push_all([
        tool_calls(vec![("file_read", json!({"path": "a.txt"})), ("file_read", json!({"path": "b.txt"}))]),
        text("alpha and beta"),
    ]);
    let mut agent = h.agent(Autonomy::Supervised, |_, _| {});
    let reply = agent.process_message("read both").await.unwrap();
    assert_eq!(reply, "alpha and beta");
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 2);
    let msgs = reqs[1]["messages"].as_array().unwrap();
    // system, user, assistant (2 calls), tool, tool
    assert_eq!(msgs.len(), 5);
    assert_eq!(msgs[3]["content"], "alpha");
    assert_eq!(msgs[4]["content"], "beta");
    assert_eq!(msgs[3]["tool_call_id"], msgs[2]["tool_calls"][0]["id"]);
    assert_eq!(msgs[4]["tool_call_id"], msgs[2]["tool_calls"][1]["id"]);
    h.mock.assert_clean();
    let stats = agent.last_turn();
    assert_eq!((stats.iterations, stats.tool_calls), (2, 2));
    assert_eq!(agent.history().len(), 5, "user, assistant call, 2 results, answer");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_text_and_tool_status_events() {
    let h = Harness::new().await;
    h.write("notes.md", "first line\nsecond line");
    h.mock.push_all([tool_call("file_read", json!({"path": "notes.md"})), text("The notes start with first line.")]);
    let mut agent = h.agent(Autonomy::Supervised, |_, _| {});
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let reply = agent.process_message_stream("what is in notes.md?", tx).await.unwrap();
    assert_eq!(reply, "The notes start with first line.");
    let mut events = Vec::new();
    while let Some(e) = rx.recv().await {
        events.push(e);
    }
    assert_eq!(events[0], AgentEvent::Running { tool: "file_read".into(), summary: "notes.md".into() });
    assert_eq!(events[1], AgentEvent::Success { tool: "file_read".into(), first_line: "first line".into() });
    let streamed: String = events[2..]
        .iter()
        .map(|e| match e {
            AgentEvent::TextDelta(t) => t.clone(),
            other => panic!("unexpected event {other:?}"),
        })
        .collect();
    assert_eq!(streamed, reply);
    assert!(events.len() > 3, "the text arrived in several deltas: {events:?}");
    let reqs = h.mock.requests();
    assert_eq!(reqs[0]["stream"], json!(true));
    h.mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_tool_reports_its_first_lines() {
    let h = Harness::new().await;
    h.mock.push_all([tool_call("file_read", json!({"path": "missing.txt"})), text("It does not exist.")]);
    let mut agent = h.agent(Autonomy::Supervised, |_, _| {});
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    agent.process_message_stream("read missing.txt", tx).await.unwrap();
    let mut failed = None;
    while let Some(e) = rx.recv().await {
        if let AgentEvent::Failed { tool, lines } = e {
            failed = Some((tool, lines));
        }
    }
    assert_eq!(
        failed,
        Some(("file_read".into(), "[failed] `missing.txt` does not exist; use file_list to see what does".into()))
    );
    let result = crate::common::content(&h.mock.requests()[1], 3);
    assert_eq!(result, "[failed] `missing.txt` does not exist; use file_list to see what does");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_is_kept_within_a_turn_and_cleared_after() {
    let h = Harness::new().await;
    h.mock.push_all([
        tool_call("self_info", json!({})).with_reasoning("I should look myself up."),
        text("I am routines.").with_reasoning("Done thinking."),
        text("Second answer."),
    ]);
    let mut agent = h.agent(Autonomy::Supervised, |_, _| {});
    agent.process_message("who are you?").await.unwrap();
    agent.process_message("and again?").await.unwrap();
    let reqs = h.mock.requests();
    // Within the first turn, the assistant call carries its reasoning back.
    assert_eq!(reqs[1]["messages"][2]["reasoning_content"], json!("I should look myself up."));
    // In the next turn, no message carries reasoning.
    for m in reqs[2]["messages"].as_array().unwrap() {
        assert!(m.get("reasoning_content").is_none(), "reasoning leaked into a later turn: {m}");
    }
    h.mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_tools_and_bad_arguments_go_back_to_the_model() {
    let h = Harness::new().await;
    h.mock.push_all([
        tool_call("file_reed", json!({"path": "a"})),
        tool_call("file_read", json!({"file": "a"})),
        raw_tool_call_args("file_read", "{not json"),
        text("giving up"),
    ]);
    let mut agent = h.agent(Autonomy::Supervised, |_, _| {});
    assert_eq!(agent.process_message("go").await.unwrap(), "giving up");
    let reqs = h.mock.requests();
    let unknown = last_message(&reqs[1]);
    assert_eq!(unknown["role"], "tool");
    let unknown = unknown["content"].as_str().unwrap();
    assert_eq!(
        unknown,
        "[failed] unknown tool `file_reed`. Did you mean `file_read`? Available tools: file_edit, file_list, file_read, file_write, http_request, memory_forget, memory_recall, memory_store, self_info, shell"
    );
    let bad = last_message(&reqs[2])["content"].as_str().unwrap().to_string();
    assert_eq!(
        bad,
        "[failed] invalid arguments for file_read: unknown field `file`, expected one of `path`, `offset`, `limit`; expected file_read(limit?: integer, offset?: integer, path: string)"
    );
    let broken = last_message(&reqs[3])["content"].as_str().unwrap().to_string();
    assert!(broken.starts_with("[failed] the arguments of file_read are not a JSON object"), "{broken}");
    let statuses: Vec<ToolStatus> = h
        .events
        .all()
        .into_iter()
        .filter_map(|e| match e {
            RunEvent::ToolCall { status, .. } => Some(status),
            _ => None,
        })
        .collect();
    assert_eq!(statuses, vec![ToolStatus::UnknownTool, ToolStatus::InvalidArgs, ToolStatus::InvalidArgs]);
    h.mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_identical_call_is_not_run_again_and_then_tools_are_withheld() {
    let h = Harness::new().await;
    h.write("a.txt", "alpha");
    let call = || tool_call("file_read", json!({"path": "a.txt"}));
    h.mock.push_all([call(), call(), call(), text("alpha it is")]);
    let mut agent = h.agent(Autonomy::Supervised, |_, _| {});
    assert_eq!(agent.process_message("read a.txt").await.unwrap(), "alpha it is");
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 4);
    let second = last_message(&reqs[2])["content"].as_str().unwrap().to_string();
    assert!(second.starts_with("You already have the result of that call above; do not make it again."), "{second}");
    let names: Vec<&str> =
        reqs[2]["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert!(!names.contains(&"file_read"), "the repeated tool is no longer offered: {names:?}");
    assert!(reqs[3].get("tools").is_none(), "after the second repeat the model must answer without tools");
    let executed = h
        .events
        .all()
        .into_iter()
        .filter(|e| matches!(e, RunEvent::ToolCall { status: ToolStatus::Success, .. }))
        .count();
    assert_eq!(executed, 1);
    h.mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stops_at_max_iterations_and_says_so() {
    let h = Harness::new().await;
    for i in 0..3 {
        h.mock.push(tool_call("memory_recall", json!({"query": format!("topic {i}")})));
    }
    let mut agent = h.agent(Autonomy::Supervised, |o, _| o.max_iterations = 3);
    let reply = agent.process_message("loop").await.unwrap();
    assert_eq!(reply, "[stopped: reached the limit of 3 model calls (agent.max_iterations) before a final answer]");
    assert_eq!(h.mock.request_count(), 3);
    assert!(agent.last_turn().hit_iteration_limit);
    // The history stays well-formed: it ends with the assistant's note.
    let last = agent.history().last().unwrap();
    assert_eq!(last.text(), reply);
    h.mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_written_as_a_json_block_in_text_is_run() {
    // Native mode: the whole reply is one call and nothing else (a call inside prose is not
    // run; see tests/suite/attacks/injection.rs).
    let h = Harness::new().await;
    h.write("a.txt", "alpha");
    h.mock.push_all([
        text("```json\n{\"name\": \"file_read\", \"arguments\": {\"path\": \"a.txt\"}}\n```"),
        text("It says alpha."),
    ]);
    let mut agent = h.agent(Autonomy::Supervised, |_, _| {});
    assert_eq!(agent.process_message("read a.txt").await.unwrap(), "It says alpha.");
    let reqs = h.mock.requests();
    let msgs = reqs[1]["messages"].as_array().unwrap();
    assert!(msgs[2]["content"].is_null(), "{}", msgs[2]);
    assert_eq!(msgs[2]["tool_calls"][0]["function"]["name"], "file_read");
    assert_eq!(msgs[3]["content"], "alpha");
    assert!(h.events.all().iter().any(|e| matches!(e, RunEvent::Note { kind: "tool_call_in_text", .. })));
    h.mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_mode_describes_tools_in_the_prompt_and_parses_calls_from_text() {
    let h = Harness::new().await;
    h.write("a.txt", "alpha");
    h.mock.push_all([text(r#"{"name": "file_read", "arguments": {"path": "a.txt"}}"#), text("alpha")]);
    let mut agent = h.agent(Autonomy::Supervised, |o, _| o.tool_mode = ToolCallMode::Json);
    assert_eq!(agent.process_message("read a.txt").await.unwrap(), "alpha");
    let reqs = h.mock.requests();
    assert!(reqs[0].get("tools").is_none());
    let system = crate::common::content(&reqs[0], 0);
    assert!(
        system.contains("- file_read(limit?: integer, offset?: integer, path: string): Read a text file"),
        "{system}"
    );
    let msgs = reqs[1]["messages"].as_array().unwrap();
    assert_eq!(msgs[2]["role"], "assistant");
    assert_eq!(msgs[2]["content"], r#"{"arguments":{"path":"a.txt"},"name":"file_read"}"#);
    assert_eq!(msgs[3]["role"], "user");
    assert_eq!(msgs[3]["content"], "[result of file_read]\nalpha");
    h.mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runaway_repetition_is_cut_and_recorded() {
    let h = Harness::new().await;
    h.mock.push(text(&format!("Status: fine. {}", "All systems nominal. ".repeat(40))));
    let mut agent = h.agent(Autonomy::Supervised, |_, _| {});
    let reply = agent.process_message("status?").await.unwrap();
    // One copy of the repeated passage is kept.
    assert_eq!(reply, "Status: fine. All systems nominal");
    assert!(h.events.all().iter().any(|e| matches!(e, RunEvent::Note { kind: "repetition_cut", .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_keeps_its_limit_without_orphaned_tool_results() {
    let h = Harness::new().await;
    for i in 0..4 {
        h.mock.push(tool_call("memory_recall", json!({"query": format!("q{i}")})));
        h.mock.push(text(&format!("answer {i}")));
    }
    let mut agent = h.agent(Autonomy::Supervised, |o, _| o.history_limit = 6);
    for i in 0..4 {
        agent.process_message(&format!("question {i}")).await.unwrap();
        let hist = agent.history();
        assert!(hist.len() <= 6);
        assert_ne!(hist[0].role, routines::llm::Role::Tool, "history starts with a tool result");
    }
    h.mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recalled_memory_enters_the_prompt_and_turns_are_remembered() {
    let h = Harness::new().await;
    h.memory.store("project", "The user is migrating the billing service to Postgres.", "core").unwrap();
    h.mock.push_all([text("You are migrating billing to Postgres."), text("ok")]);
    let mut agent = h.agent(Autonomy::Supervised, |_, _| {});
    agent.process_message("what am I doing with the billing service?").await.unwrap();
    let system = crate::common::content(&h.mock.requests()[0], 0);
    assert!(system.contains("- project: The user is migrating the billing service to Postgres."), "{system}");
    let turns = h.memory.list(Some("conversation"), 10).unwrap();
    assert_eq!(turns.len(), 1);
    assert!(turns[0].content.starts_with("Asked: what am I doing with the billing service?"), "{:?}", turns[0]);
    assert!(turns[0].content.contains("Answered: You are migrating billing to Postgres."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_files_of_the_workspace_join_the_identity_section() {
    let h = Harness::new().await;
    h.write("USER.md", "The user is Ada, a site reliability engineer.");
    h.write("SOUL.md", "   \n");
    h.mock.push(text("Hello Ada."));
    let mut agent = h.agent(Autonomy::Supervised, |_, _| {});
    agent.process_message("hi").await.unwrap();
    let system = crate::common::content(&h.mock.requests()[0], 0);
    let identity = system.split("## Tools").next().unwrap();
    assert!(identity.contains("### USER.md\nThe user is Ada, a site reliability engineer."), "{system}");
    assert!(!identity.contains("SOUL.md"), "an empty file adds nothing");
    h.mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_tools_store_recall_and_forget() {
    let h = Harness::new().await;
    h.mock.push_all([
        tool_call("memory_store", json!({"key": "editor", "content": "The user prefers Helix."})),
        tool_call("memory_recall", json!({"query": "helix editor"})),
        text("noted"),
    ]);
    let mut agent = h.agent(Autonomy::Full, |_, _| {});
    agent.process_message("remember my editor").await.unwrap();
    let reqs = h.mock.requests();
    assert_eq!(last_message(&reqs[1])["content"], "Stored `editor` (core).");
    assert_eq!(last_message(&reqs[2])["content"], "- editor [core]: The user prefers Helix.");
    h.mock.push_all([tool_call("memory_forget", json!({"key": "editor"})), text("forgotten")]);
    agent.process_message("forget it").await.unwrap();
    assert_eq!(last_message(&h.mock.requests()[4])["content"], "Forgot `editor`.");
    assert_eq!(h.memory.get("editor").unwrap(), None);
}

fn scripted_confirm(answers: Vec<Confirmation>) -> (routines::agent::ConfirmFn, Arc<Mutex<Vec<String>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let queue = Arc::new(Mutex::new(answers));
    let asked2 = asked.clone();
    let f: routines::agent::ConfirmFn = Arc::new(move |req| {
        asked2.lock().unwrap().push(format!("{} {}", req.tool, req.summary));
        let answer = queue.lock().unwrap().remove(0);
        async move { answer }.boxed()
    });
    (f, asked)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn supervised_asks_before_a_mutating_tool_and_a_approves_for_the_session() {
    let h = Harness::new().await;
    for k in ["a", "b", "c"] {
        h.memory.store(k, "x", "core").unwrap();
    }
    h.mock.push_all([
        tool_call("memory_forget", json!({"key": "a"})),
        tool_call("memory_forget", json!({"key": "b"})),
        tool_call("memory_forget", json!({"key": "c"})),
        text("done"),
    ]);
    let mut agent = h.agent(Autonomy::Supervised, |_, _| {});
    let (confirm, asked) = scripted_confirm(vec![Confirmation::No, Confirmation::Always]);
    agent.set_confirm_fn(Some(confirm));
    agent.process_message("forget a, b and c").await.unwrap();
    // Asked for a (declined) and b (always); c ran without asking.
    assert_eq!(*asked.lock().unwrap(), vec!["memory_forget a".to_string(), "memory_forget b".to_string()]);
    let reqs = h.mock.requests();
    assert_eq!(
        last_message(&reqs[1])["content"],
        "[failed] the user declined this memory_forget call; do not retry it, continue another way or ask"
    );
    assert_eq!(last_message(&reqs[2])["content"], "Forgot `b`.");
    assert_eq!(last_message(&reqs[3])["content"], "Forgot `c`.");
    assert!(h.memory.get("a").unwrap().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_hides_mutating_tools() {
    let h = Harness::new().await;
    h.mock.push_all([tool_call("memory_forget", json!({"key": "a"})), text("ok")]);
    let mut agent = h.agent(Autonomy::ReadOnly, |_, _| {});
    agent.process_message("forget a").await.unwrap();
    let reqs = h.mock.requests();
    let names: Vec<&str> =
        reqs[0]["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert!(!names.contains(&"memory_forget"), "{names:?}");
    assert!(names.contains(&"file_read"));
    let result = last_message(&reqs[1])["content"].as_str().unwrap().to_string();
    assert!(result.starts_with("[failed] unknown tool `memory_forget`"), "{result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routine_mode_adds_its_section_and_refuses_what_was_not_granted() {
    let h = Harness::new().await;
    h.memory.store("a", "x", "core").unwrap();
    h.memory
        .store(
            "routine:nightly:approach",
            "Tools the last successful run called, in order: file_list, file_read",
            "core",
        )
        .unwrap();
    let mut sections = CHAT_SECTIONS.to_vec();
    sections.push("## Routine execution");
    h.mock.expect_sections(&sections);
    h.mock.push_all([tool_call("memory_forget", json!({"key": "a"})), text("could not forget a")]);
    let mut agent = h.agent(Autonomy::Supervised, |_, _| {});
    agent.set_routine_name("nightly");
    agent.set_silent_token(Some("NO_REPLY".into()));
    let (confirm, asked) = scripted_confirm(vec![]);
    agent.set_confirm_fn(Some(confirm));
    agent.set_grants(Grants::default());
    // Its one call refused, the turn has nothing to answer from: it fails naming the refusal.
    let e = agent.process_message("clean up").await.unwrap_err().to_string();
    assert!(
        e.starts_with("every tool call failed: memory_forget a: memory_forget (memory_forget) needs approval"),
        "{e}"
    );
    assert!(asked.lock().unwrap().is_empty(), "a routine never asks");
    let reqs = h.mock.requests();
    let system = crate::common::content(&reqs[0], 0);
    assert!(system.contains("You are running the routine `nightly` unattended"));
    assert!(!system.contains("NO_REPLY"), "the task does not mention the token, so no silent rule");
    assert!(system.contains("the last successful run called file_list, then file_read."), "{system}");
    let refusal = last_message(&reqs[1])["content"].as_str().unwrap().to_string();
    assert!(
        refusal.starts_with("[failed] memory_forget (memory_forget) needs approval and nobody is present"),
        "{refusal}"
    );
    assert!(h.memory.get("a").unwrap().is_some());
    h.mock.assert_clean();

    // With the tool granted, it runs.
    h.mock.push_all([tool_call("memory_forget", json!({"key": "a"})), text("forgot a")]);
    agent.set_grants(Grants { tools: vec!["memory_forget".into()], commands: vec![] });
    agent.process_message("clean up again").await.unwrap();
    assert!(h.memory.get("a").unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_and_tool_calls_are_recorded_with_tokens_and_durations() {
    let h = Harness::new().await;
    h.write("a.txt", "alpha");
    h.mock.push_all([
        tool_call("file_read", json!({"path": "a.txt"})).with_usage(100, 20),
        text("alpha").with_usage(130, 5),
    ]);
    let mut agent = h.agent(Autonomy::Supervised, |_, _| {});
    let run_id = h
        .store
        .create_run(&routines::store::NewRun {
            kind: routines::store::RunKind::Chat,
            routine: None,
            trigger: "chat".into(),
            scheduled_for: None,
            status: routines::store::RunStatus::Running,
        })
        .unwrap();
    agent.set_event_sink(Some(Arc::new(routines::agent::StoreRecorder { store: h.store.clone(), run_id })));
    agent.process_message("read a.txt").await.unwrap();
    let events = h.store.run_events(run_id).unwrap();
    let summary: Vec<(String, Option<String>, String, Option<u64>)> =
        events.iter().map(|e| (e.kind.clone(), e.tool.clone(), e.status.clone(), e.prompt_tokens)).collect();
    assert_eq!(
        summary,
        vec![
            ("model_call".into(), None, "ok".into(), Some(100)),
            ("tool_call".into(), Some("file_read".into()), "success".into(), None),
            ("model_call".into(), None, "ok".into(), Some(130)),
        ]
    );
    assert_eq!(events[1].arguments.as_deref(), Some(r#"{"path":"a.txt"}"#));
    assert_eq!(agent.last_turn().prompt_tokens, 230);
    assert_eq!(agent.last_turn().completion_tokens, 25);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_silent_rule_is_stated_when_the_task_mentions_the_token() {
    let h = Harness::new().await;
    let mut sections = CHAT_SECTIONS.to_vec();
    sections.push("## Routine execution");
    h.mock.expect_sections(&sections);
    h.mock.push(text("NO_REPLY"));
    let mut agent = h.agent(Autonomy::ReadOnly, |_, _| {});
    agent.set_routine_name("disk-check");
    agent.set_silent_token(Some("NO_REPLY".into()));
    let reply = agent.process_message("Check the disks. If all is fine, reply NO_REPLY.").await.unwrap();
    assert_eq!(reply, "NO_REPLY");
    let system = crate::common::content(&h.mock.requests()[0], 0);
    assert!(
        system.contains("When the task finds nothing worth reporting, reply with exactly NO_REPLY and nothing else"),
        "{system}"
    );
    h.mock.assert_clean();
}
