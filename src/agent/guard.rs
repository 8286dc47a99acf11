//! The run guard: before every model call and tool call of a run on a shared database, the
//! engine asks whether the run is still this process's (SPEC §12). A node that was cut off or
//! frozen (a network partition, `SIGSTOP`, a machine that slept) longer than its lease has had
//! its runs taken over by another node; when it comes back it must not take one more step in
//! them, or a tool call would be made twice. Its end was already fenced (`end_run`); the guard
//! fences the steps before it.
//!
//! While the database cannot answer, the run waits before its next step rather than act
//! unsure: a database restart pauses runs, it does not kill them, and when the database is back
//! the run goes on or stops, as the database says.

use std::time::Duration;

use super::events::{RunGuard, Standing};
use super::{Agent, AgentError};
use crate::store::{Store, StoreError};

/// First wait before asking again while the database is out of reach; doubled up to
/// [`MAX_WAIT`].
const FIRST_WAIT: Duration = Duration::from_millis(250);
const MAX_WAIT: Duration = Duration::from_secs(5);

impl Agent {
    /// Returns once the run may take its next step; `Err(Lost)` when another process has it.
    /// Without a guard (chat, a private database) at once.
    pub(super) async fn hold_the_run(&self) -> Result<(), AgentError> {
        let Some(guard) = &self.guard else { return Ok(()) };
        let mut wait = FIRST_WAIT;
        let mut told = false;
        loop {
            // The store's calls block their thread (up to the pool's wait while the database is
            // away): not one of the runtime's few workers, which serve the webhooks and health.
            let asked = guard.clone();
            let standing = tokio::task::spawn_blocking(move || asked.standing())
                .await
                .unwrap_or_else(|e| Standing::Unsure(format!("the check of the run failed: {e}")));
            match standing {
                Standing::Held => return Ok(()),
                Standing::Lost(why) => return Err(AgentError::Lost(why)),
                Standing::Unsure(why) => {
                    if !told {
                        tracing::warn!(error = %why, "Cannot tell whether the run is still this node's; waiting before its next step.");
                        told = true;
                    }
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(MAX_WAIT);
                }
            }
        }
    }
}

/// The guard of run `run_id` in a shared store: the run is held while it is still running as
/// this process's.
pub struct StoreGuard {
    pub store: Store,
    pub run_id: i64,
}

impl RunGuard for StoreGuard {
    fn standing(&self) -> Standing {
        match self.store.still_mine(self.run_id) {
            Ok(true) => Standing::Held,
            Ok(false) | Err(StoreError::RunNotFound(_)) => Standing::Lost(format!(
                "run {} was taken over by another node after this node's lease lapsed (it was cut off from the \
                 database or stopped for longer than cluster.lease); this attempt stops here and nothing more is \
                 done or recorded for it",
                self.run_id
            )),
            Err(e) => Standing::Unsure(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::{Arc, Mutex};

    use async_trait::async_trait;
    use schemars::JsonSchema;
    use serde::Deserialize;

    use super::*;
    use crate::agent::AgentOptions;
    use crate::config::Autonomy;
    use crate::llm::{ChatRequest, ChatResponse, LlmError, Provider, ToolCall};
    use crate::policy::{CallInfo, Effect, Policy};
    use crate::tools::{Registry, Tool, ToolContext, ToolError};

    /// Answers what it was given, in order.
    struct Script(Mutex<Vec<Standing>>);

    impl RunGuard for Script {
        fn standing(&self) -> Standing {
            self.0.lock().unwrap().remove(0)
        }
    }

    /// Calls `file_read` once, then answers; counts its calls.
    struct Model(Arc<AtomicU32>);

    #[async_trait]
    impl Provider for Model {
        async fn chat(&self, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
            Ok(match self.0.fetch_add(1, Ordering::SeqCst) {
                0 => ChatResponse {
                    tool_calls: vec![ToolCall { id: "c1".into(), name: "file_read".into(), arguments: "{}".into() }],
                    ..Default::default()
                },
                _ => ChatResponse { content: Some("read it".into()), ..Default::default() },
            })
        }
    }

    /// A `file_read` that counts its calls.
    struct Counted(Arc<AtomicU32>);

    #[derive(Deserialize, JsonSchema)]
    struct NoArgs {}

    #[async_trait]
    impl Tool for Counted {
        const NAME: &'static str = "file_read";
        type Args = NoArgs;
        fn description(&self) -> &'static str {
            "counted"
        }
        fn effect(&self) -> Effect {
            Effect::ReadOnly
        }
        fn info(&self, _: &NoArgs) -> CallInfo {
            CallInfo::new("", "file_read")
        }
        async fn call(&self, _: NoArgs, _: &ToolContext) -> Result<String, ToolError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok("contents".into())
        }
    }

    /// An agent whose guard answers `standings` in order; with its model's and tool's counts.
    fn guarded(dir: &std::path::Path, standings: Vec<Standing>) -> (Agent, Arc<AtomicU32>, Arc<AtomicU32>) {
        let (asked, ran) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
        let mut tools = Registry::new();
        tools.add(Counted(ran.clone()));
        let policy = Arc::new(Policy::new(Autonomy::ReadOnly, dir, &[]).unwrap());
        let mut agent = Agent::new(Arc::new(Model(asked.clone())), tools, policy, AgentOptions::new("m"));
        agent.set_run_guard(Some(Arc::new(Script(Mutex::new(standings)))));
        (agent, asked, ran)
    }

    #[tokio::test(start_paused = true)]
    async fn a_step_waits_while_unsure_and_goes_on_once_the_run_is_held() {
        let dir = tempfile::tempdir().unwrap();
        let unsure = || Standing::Unsure("the database is out of reach".into());
        // Before the first model call, the tool call, the second model call.
        let (mut agent, asked, ran) =
            guarded(dir.path(), vec![Standing::Held, unsure(), unsure(), Standing::Held, Standing::Held]);
        let started = tokio::time::Instant::now();
        assert_eq!(agent.process_message("read").await.unwrap(), "read it");
        assert_eq!((asked.load(Ordering::SeqCst), ran.load(Ordering::SeqCst)), (2, 1));
        assert_eq!(started.elapsed(), FIRST_WAIT + FIRST_WAIT * 2, "waited 250 ms, then 500 ms");
    }

    #[tokio::test]
    async fn a_run_lost_to_another_node_takes_no_step_more() {
        let dir = tempfile::tempdir().unwrap();
        let (mut agent, asked, ran) = guarded(dir.path(), vec![Standing::Held, Standing::Lost("taken over".into())]);
        let err = agent.process_message("read").await.unwrap_err();
        assert!(matches!(&err, AgentError::Lost(why) if why == "taken over"), "{err}");
        assert_eq!((asked.load(Ordering::SeqCst), ran.load(Ordering::SeqCst)), (1, 0), "no tool call after the loss");

        let (mut agent, asked, _) = guarded(dir.path(), vec![Standing::Lost("taken over".into())]);
        assert!(agent.process_message("read").await.is_err());
        assert_eq!(asked.load(Ordering::SeqCst), 0, "no model call either");
    }
}
