//! The approach memory of a routine: the tool calls of its last successful
//! run, offered to its next run in the prompt.

use super::{Agent, approach_key};
use crate::store::{EventKind, Store};

impl Agent {
    /// After a successful run of the routine, the tool calls it made (as
    /// recorded in `store` for run `run_id`) become the approach offered to
    /// the next run (memory `routine:<name>:approach`). Nothing outside
    /// routine mode.
    pub fn remember_approach(&self, store: &Store, run_id: i64) {
        let (Some(routine), Some(memory)) = (&self.routine, &self.memory) else { return };
        let Ok(events) = store.run_events(run_id) else { return };
        let steps: Vec<String> = events
            .iter()
            .filter(|e| e.event_kind() == Some(EventKind::ToolCall) && e.status == "success")
            .map(|e| format!("- {} {}", e.tool.as_deref().unwrap_or("?"), e.arguments.as_deref().unwrap_or("{}")))
            .collect();
        if steps.is_empty() {
            return;
        }
        let text = format!("Tool calls of the last successful run:\n{}", steps.join("\n"));
        if let Err(e) = memory.store(&approach_key(&routine.name), &self.redactor.redact(&text), crate::memory::CORE) {
            tracing::warn!(routine = %routine.name, error = %e, "Could not store the approach memory.");
        }
    }
}
