//! The template context of a run (SPEC §4).

use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use crate::routine::Routine;

/// What fired a run.
#[derive(Debug, Clone, PartialEq)]
pub struct TriggerInfo {
    /// `manual`, `cron`, `every`, `at`, `file`, `webhook`, `heartbeat`.
    pub kind: String,
    pub scheduled_for: Option<DateTime<Utc>>,
    /// Per kind: `path`, `event` for file; `method`, `headers`, `body`,
    /// `json`, `query` for webhook. An object.
    pub context: Value,
}

impl TriggerInfo {
    pub fn manual() -> Self {
        TriggerInfo { kind: "manual".into(), scheduled_for: None, context: json!({}) }
    }
}

pub fn build(
    routine: &Routine,
    trigger: &TriggerInfo,
    run_id: i64,
    attempt: u32,
    overrides: &BTreeMap<String, String>,
    now: DateTime<Utc>,
) -> Value {
    let mut vars: serde_json::Map<String, Value> =
        routine.spec.vars.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    for (k, v) in overrides {
        vars.insert(k.clone(), Value::String(v.clone()));
    }
    let mut t = json!({
        "kind": trigger.kind,
        "scheduled_for": trigger.scheduled_for.map(|s| s.with_timezone(&routine.zone).to_rfc3339_opts(SecondsFormat::Secs, false)),
    });
    if let (Some(obj), Some(extra)) = (t.as_object_mut(), trigger.context.as_object()) {
        for (k, v) in extra {
            obj.insert(k.clone(), v.clone());
        }
    }
    json!({
        "routine": { "name": routine.name, "description": routine.spec.description.clone().unwrap_or_default() },
        "trigger": t,
        "now": now.with_timezone(&routine.zone).to_rfc3339_opts(SecondsFormat::Secs, false),
        "vars": vars,
        "run": { "id": run_id, "attempt": attempt },
    })
}
