//! The window in-process: what a queued fire holds in memory, and that fires beyond the
//! window still run, each once and in order.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::{Notify, Semaphore};

use super::{Accepted, Dispatcher, IncomingFire};
use crate::clock::SystemClock;
use crate::config::{self, ProcessEnv};
use crate::engine::Engine;
use crate::llm::{ChatRequest, ChatResponse, LlmError, Provider, Usage};
use crate::routine::{TriggerContext, WebhookRequest, load_all};
use crate::tools::tool_names;

/// Records the messages of each call, then answers once `gate` lets it.
struct GatedModel {
    calls: Mutex<Vec<String>>,
    called: Notify,
    gate: Semaphore,
}

#[async_trait]
impl Provider for GatedModel {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.calls.lock().unwrap().push(format!("{:?}", request.messages));
        self.called.notify_one();
        self.gate.acquire().await.unwrap().forget();
        Ok(ChatResponse {
            content: Some("done".into()),
            usage: Usage { prompt_tokens: 1, completion_tokens: 1 },
            ..Default::default()
        })
    }
}

const MARK: &str = "BODY-MARK-";

fn webhook(i: usize) -> IncomingFire {
    let body = format!("{MARK}{i:02} {}", "x".repeat(64 * 1024));
    let request = WebhookRequest {
        method: "POST".into(),
        path: "/hooks/h".into(),
        headers: Default::default(),
        query: Default::default(),
        body,
        json: None,
    };
    IncomingFire { routine: "hook".into(), trigger: TriggerContext::Webhook(request), catch_up: false, key: None }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_fire_holds_no_body_in_memory_and_its_run_reads_it_back() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("routines")).unwrap();
    std::fs::write(
        dir.path().join("routines.yaml"),
        // A window that holds the 64 KB body the prompt carries (`agent/budget`).
        "provider: { model: m, context_window: 100000 }\nlimits: { max_concurrent_runs: 1, queue_window: 2 }\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("routines/hook.yaml"),
        "on: [{ webhook: { path: /hooks/h, auth: none } }]\nprompt: \"Body: {{ trigger.body }}\"\n\
         overlap: allow\nagent: { tools: [] }\n",
    )
    .unwrap();
    let config = config::load(Some(&dir.path().join("routines.yaml")), dir.path(), &ProcessEnv).unwrap();
    let loaded = load_all(&config, None, &tool_names());
    assert!(loaded.diagnostics.is_empty(), "{}", loaded.diagnostics);
    let model = Arc::new(GatedModel { calls: Mutex::new(Vec::new()), called: Notify::new(), gate: Semaphore::new(0) });
    let engine = Arc::new(Engine::open(config, model.clone(), "m").unwrap());
    let dispatcher = Dispatcher::new(engine, Arc::new(SystemClock), 1);
    *dispatcher.routines.write().unwrap() =
        loaded.routines.into_iter().map(|r| (r.name.clone(), Arc::new(r))).collect::<HashMap<_, _>>();

    let results = dispatcher.accept_many((0..6).map(webhook).collect());
    assert!(results.iter().all(|r| matches!(r, Ok(Accepted::Queued(_)))), "{results:?}");
    tokio::time::timeout(Duration::from_secs(20), model.called.notified()).await.expect("the first run never started");
    // One run holds the slot; the pump refills the window's place it left: two fires wait
    // in the window, three only in the database.
    let refilled = async {
        loop {
            let changed = dispatcher.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if dispatcher.state.lock().unwrap().loaded == 2 {
                return;
            }
            changed.await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), refilled).await.expect("the window was not refilled");
    {
        let state = dispatcher.state.lock().unwrap();
        assert_eq!(state.lanes["hook"].unloaded, 3, "{state:?}");
        assert!(!format!("{state:?}").contains(MARK));
    }
    assert_eq!(dispatcher.queue_depth(), 5);
    for fire in dispatcher.spawned.lock().unwrap().iter() {
        let held = format!("{fire:?}");
        assert!(!held.contains(MARK) && held.len() < 300, "a fire in memory holds {} bytes: {held:.200}", held.len());
    }

    model.gate.add_permits(100);
    tokio::time::timeout(Duration::from_secs(20), dispatcher.idle()).await.expect("the queue never drained");
    // Each fire ran once, oldest first, with its own body read back from the database.
    let calls = model.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 6);
    for (i, call) in calls.iter().enumerate() {
        assert!(call.contains(&format!("{MARK}{i:02}")), "call {i}: {call:.300}");
    }
    assert_eq!(dispatcher.queue_depth(), 0);
    assert_eq!(dispatcher.executing.load(Ordering::SeqCst), 0);
}
