//! The agent's own overhead per loop iteration, and the system prompt size.
//!
//! An in-process provider answers instantly (one tool call, then a text
//! answer), so what is timed is only the agent: prompt assembly, history,
//! argument parsing, policy, tool dispatch and result formatting.
//! `cargo bench --bench agent` prints p50/p99 per iteration without and with
//! memory (a real SQLite file: recall before each message, a turn summary
//! after), then the prompt size with every tool enabled. Under
//! `cargo test --benches` it runs a short smoke version.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use routines::agent::{Agent, AgentOptions};
use routines::config::Autonomy;
use routines::llm::{ChatRequest, ChatResponse, LlmError, Provider, ToolCall, Usage};
use routines::memory::Memory;
use routines::policy::Policy;
use routines::store::Store;
use routines::tools::Registry;

/// Odd calls ask for a tool, even calls answer.
struct InstantProvider {
    calls: AtomicU64,
}

#[async_trait]
impl Provider for InstantProvider {
    async fn chat(&self, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        let usage = Usage { prompt_tokens: 100, completion_tokens: 10 };
        if n % 2 == 0 {
            Ok(ChatResponse {
                tool_calls: vec![ToolCall {
                    id: format!("call_{n}"),
                    name: "file_read".into(),
                    arguments: r#"{"path": "notes.md"}"#.into(),
                }],
                usage,
                ..Default::default()
            })
        } else {
            Ok(ChatResponse { content: Some("The notes say hello.".into()), usage, ..Default::default() })
        }
    }
}

fn agent(dir: &std::path::Path, memory: Option<Memory>) -> Agent {
    let provider = Arc::new(InstantProvider { calls: AtomicU64::new(0) });
    let policy = Arc::new(Policy::new(Autonomy::Full, dir, &[]).unwrap());
    let mut agent = Agent::new(provider, Registry::builtin(), policy, AgentOptions::new("bench"));
    agent.set_memory(memory);
    agent
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn measure(rt: &tokio::runtime::Runtime, agent: &mut Agent, messages: usize) -> (Duration, Duration) {
    let mut per_iteration = Vec::with_capacity(messages);
    rt.block_on(async {
        for i in 0..messages {
            let started = Instant::now();
            agent.process_message(&format!("What do the notes say? ({i})")).await.unwrap();
            let iterations = agent.last_turn().iterations.max(1);
            per_iteration.push(started.elapsed() / iterations);
        }
    });
    per_iteration.sort();
    (percentile(&per_iteration, 0.5), percentile(&per_iteration, 0.99))
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let messages = if full { 5_000 } else { 50 };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.md"), "# Notes\nhello\n").unwrap();

    let mut plain = agent(dir.path(), None);
    let (p50, p99) = measure(&rt, &mut plain, messages);
    println!("agent overhead per loop iteration, no memory:   p50 {p50:?}  p99 {p99:?}  (target <= 100us)");

    let store = Store::open(&dir.path().join("bench.db")).unwrap();
    let memory = Memory::new(store);
    for i in 0..1_000 {
        memory
            .store(&format!("fact:{i}"), &format!("The user noted item {i} about notes and reports."), "core")
            .unwrap();
    }
    let mut remembering = agent(dir.path(), Some(memory));
    let (p50, p99) = measure(&rt, &mut remembering, messages);
    println!(
        "agent overhead per loop iteration, with memory: p50 {p50:?}  p99 {p99:?}  (recall + turn summary in SQLite)"
    );

    let prompt = plain.system_prompt("What do the notes say?");
    let schemas: usize = plain.tool_specs().iter().map(|t| serde_json::to_string(&t.parameters).unwrap().len()).sum();
    println!(
        "system prompt with every tool enabled ({} tools): {} characters (target <= 6000); tool schemas sent alongside: {} characters",
        plain.tool_specs().len(),
        prompt.chars().count(),
        schemas
    );
}
