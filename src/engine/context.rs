//! The template context of a run (SPEC §4).

use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use crate::routine::{Routine, TriggerContext};

/// `routine`, `trigger` (its kind, instant and what the trigger adds),
/// `now`, `vars` (with `overrides`) and `run`.
pub fn build(
    routine: &Routine,
    trigger: &TriggerContext,
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
    let mut t = serde_json::Map::new();
    t.insert("kind".into(), json!(trigger.kind()));
    let scheduled_for = trigger.scheduled_for();
    t.insert(
        "scheduled_for".into(),
        json!(scheduled_for.map(|s| s.with_timezone(&routine.zone).to_rfc3339_opts(SecondsFormat::Secs, false))),
    );
    t.extend(trigger.fields());
    json!({
        "routine": { "name": routine.name, "description": routine.spec.description.clone().unwrap_or_default() },
        "trigger": t,
        "now": now.with_timezone(&routine.zone).to_rfc3339_opts(SecondsFormat::Secs, false),
        "vars": vars,
        "run": { "id": run_id, "attempt": attempt },
    })
}
