//! Recording an agent's events as the events of a run in the store.

use super::events::{EventSink, RunEvent};
use crate::store::{EventKind, NewEvent, Store};

/// Records an agent's events as the events of one run.
pub struct StoreRecorder {
    pub store: Store,
    pub run_id: i64,
}

impl EventSink for StoreRecorder {
    fn record(&self, event: &RunEvent) {
        let result = match event {
            RunEvent::ModelCall { prompt_tokens, completion_tokens, duration, tool_calls, error, iteration } => {
                let detail = match error {
                    Some(e) => format!("iteration {iteration}: {e}"),
                    None => format!("iteration {iteration}: {tool_calls} tool call(s)"),
                };
                self.store.record_event(
                    self.run_id,
                    &NewEvent {
                        kind: EventKind::ModelCall,
                        tool: None,
                        status: if error.is_some() { "error" } else { "ok" },
                        arguments: None,
                        detail: Some(&detail),
                        prompt_tokens: Some(*prompt_tokens),
                        completion_tokens: Some(*completion_tokens),
                        duration_ms: millis(*duration),
                    },
                )
            }
            RunEvent::Review { what, prompt_tokens, completion_tokens, duration, error } => {
                let detail = match error {
                    Some(e) => format!("{what}: {e}"),
                    None => what.clone(),
                };
                self.store.record_event(
                    self.run_id,
                    &NewEvent {
                        kind: EventKind::ModelCall,
                        tool: None,
                        status: if error.is_some() { "error" } else { "ok" },
                        arguments: None,
                        detail: Some(&detail),
                        prompt_tokens: Some(*prompt_tokens),
                        completion_tokens: Some(*completion_tokens),
                        duration_ms: millis(*duration),
                    },
                )
            }
            RunEvent::ToolCall { tool, arguments, status, duration, detail } => self.store.record_event(
                self.run_id,
                &NewEvent {
                    kind: EventKind::ToolCall,
                    tool: Some(tool),
                    status: status.as_str(),
                    arguments: Some(arguments),
                    detail: Some(detail),
                    prompt_tokens: None,
                    completion_tokens: None,
                    duration_ms: millis(*duration),
                },
            ),
            RunEvent::Note { kind, detail } => self.store.record_event(
                self.run_id,
                &NewEvent {
                    kind: EventKind::Note,
                    tool: None,
                    status: kind,
                    arguments: None,
                    detail: Some(detail),
                    prompt_tokens: None,
                    completion_tokens: None,
                    duration_ms: 0,
                },
            ),
        };
        if let Err(e) = result {
            tracing::warn!(run_id = self.run_id, error = %e, "Could not record a run event.");
        }
    }
}

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
