//! The agent in-process: a workspace in a tempdir, a real SQLite store and memory, and a
//! mock model, for tests of the agent loop, its tools and its policy.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use routines::agent::{Agent, AgentOptions, EventSink, RunEvent};
use routines::config::{Autonomy, Secret};
use routines::llm::{OpenAiProvider, ProviderOptions, RetryPolicy};
use routines::memory::Memory;
use routines::policy::Policy;
use routines::store::Store;
use routines::tools::Registry;

use super::mock_llm::MockLlm;

/// The system prompt headings of chat mode, in order.
pub const CHAT_SECTIONS: [&str; 7] =
    ["## Identity", "## Tools", "## Safety", "## Memory", "## Environment", "## Decision principles", "## Language"];

/// Provider options for `mock`: the key `sk-test-key` (named `$TEST_KEY`), a 10 s timeout,
/// and two quick retries.
pub fn provider_options(mock: &MockLlm) -> ProviderOptions {
    ProviderOptions {
        base_url: mock.base_url(),
        api_key: Some(Secret::new("sk-test-key")),
        api_key_var: Some("TEST_KEY".into()),
        timeout: Duration::from_secs(10),
        retry: RetryPolicy {
            max_retries: 2,
            base: Duration::from_millis(10),
            max_delay: Duration::from_millis(50),
            max_retry_after: Duration::from_secs(5),
        },
    }
}

/// Captures every run event an agent records.
#[derive(Default)]
pub struct Events(pub Mutex<Vec<RunEvent>>);

impl EventSink for Events {
    fn record(&self, event: &RunEvent) {
        self.0.lock().unwrap().push(event.clone());
    }
}

impl Events {
    pub fn all(&self) -> Vec<RunEvent> {
        self.0.lock().unwrap().clone()
    }
}

/// A workspace in a tempdir, a real SQLite store, and a mock model.
pub struct Harness {
    pub mock: MockLlm,
    pub dir: tempfile::TempDir,
    pub store: Store,
    pub memory: Memory,
    pub events: Arc<Events>,
}

impl Harness {
    pub async fn new() -> Harness {
        let mock = MockLlm::start().await;
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        let store = Store::open(&dir.path().join("state/routines.db")).unwrap();
        let memory = Memory::new(store.clone());
        // Every request of every test has the chat sections in order, unless
        // a test expects others.
        mock.expect_sections(&CHAT_SECTIONS);
        Harness { mock, dir, store, memory, events: Arc::new(Events::default()) }
    }

    pub fn workspace(&self) -> PathBuf {
        self.dir.path().join("ws").canonicalize().unwrap()
    }

    pub fn write(&self, rel: &str, text: &str) {
        let p = self.workspace().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    pub fn agent(&self, autonomy: Autonomy, tweak: impl FnOnce(&mut AgentOptions, &mut ProviderOptions)) -> Agent {
        self.agent_with(autonomy, tweak, |_| {})
    }

    /// [`Harness::agent`] with the policy adjusted too (e.g. `allowed_hosts`).
    pub fn agent_with(
        &self,
        autonomy: Autonomy,
        tweak: impl FnOnce(&mut AgentOptions, &mut ProviderOptions),
        policy_tweak: impl FnOnce(&mut Policy),
    ) -> Agent {
        let mut opts = AgentOptions::new("mock-model");
        let mut popts = provider_options(&self.mock);
        tweak(&mut opts, &mut popts);
        let provider = Arc::new(OpenAiProvider::new(popts).unwrap());
        let mut policy = Policy::new(autonomy, &self.workspace(), &[]).unwrap();
        policy_tweak(&mut policy);
        let policy = Arc::new(policy);
        let mut agent = Agent::new(provider, Registry::builtin(), policy, opts);
        agent.set_memory(Some(self.memory.clone()));
        agent.set_event_sink(Some(self.events.clone()));
        agent
    }
}
