//! The template context of a run (SPEC §4), and the prompt rendered from it
//! with the trigger's untrusted data fenced and checked (SPEC §8).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use crate::config::Language;
use crate::policy::injection::{self, Finding, Severity};
use crate::routine::Routine;
use crate::routine::TriggerContext;
use crate::routine::template::{FENCE_TAG, Fencing, TemplateError, Templates};
use crate::store::{EventKind, NewEvent, Store};

/// Why a routine's prompt could not be rendered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PromptError {
    /// Neither `prompt` nor `prompt_template` is set (the name of the routine).
    #[error("routine `{0}` has no prompt")]
    Missing(String),
    #[error(transparent)]
    Template(#[from] TemplateError),
}

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

/// The paths of `ctx` whose text comes from outside the routine: what a
/// webhook sender wrote (headers, query, body) and a file's name (whoever
/// dropped it there chose it). The webhook's method and path are the route's
/// own; kinds, instants and events are the engine's.
///
/// Data given by hand (`routines run --body`) is fenced as the trigger it stands in for.
pub fn untrusted_paths(ctx: &Value) -> Vec<String> {
    const REQUEST: [&str; 4] = ["trigger.headers", "trigger.query", "trigger.body", "trigger.json"];
    let trigger = &ctx["trigger"];
    let paths: &[&str] = match trigger["kind"].as_str() {
        Some("webhook") => &REQUEST,
        Some("file") => &["trigger.path"],
        Some("manual") if trigger.get("event").is_some() => {
            &["trigger.headers", "trigger.query", "trigger.body", "trigger.json", "trigger.path"]
        }
        Some("manual") if trigger.get("body").is_some() => &REQUEST,
        _ => &[],
    };
    paths.iter().map(|p| p.to_string()).collect()
}

/// Whether `prompt`, rendered with `ctx`, carries what a webhook request delivered (its body,
/// headers or query, fenced as data): the run's data is in hand before any tool is called.
pub fn carries_webhook_data(ctx: &Value, prompt: &str) -> bool {
    let request = match ctx["trigger"]["kind"].as_str() {
        Some("webhook") => true,
        Some("manual") => ctx["trigger"].get("body").is_some() && ctx["trigger"].get("event").is_none(),
        _ => false,
    };
    request && prompt.contains(&format!("<{FENCE_TAG}"))
}

/// A rendered prompt and what the injection check found in its untrusted data.
pub struct Prompt {
    pub text: String,
    pub findings: Vec<Finding>,
}

/// The routine's prompt rendered with `ctx`: untrusted values are fenced as
/// data and scanned like a tool result; a `Block` finding withholds the value
/// (a notice in `language` stands in its place), `Review` and `Warn` pass
/// and are logged.
pub fn render_prompt(
    templates: &Templates,
    routine: &Routine,
    ctx: &Value,
    language: Language,
) -> Result<Prompt, PromptError> {
    let found: Arc<Mutex<Vec<Finding>>> = Arc::default();
    let sink = found.clone();
    let check = move |text: &str| {
        let finding = injection::scan(text)?;
        let notice = (finding.severity == Severity::Block).then(|| match language {
            Language::En => injection::withheld_notice(&finding),
            Language::Zh => injection::withheld_notice_zh(&finding),
        });
        if let Ok(mut all) = sink.lock() {
            all.push(finding);
        }
        notice
    };
    let fencing = Fencing { untrusted: untrusted_paths(ctx), check: Arc::new(check) };
    let text = match (&routine.spec.prompt, &routine.spec.prompt_template) {
        (Some(p), _) => templates.render_prompt_str("prompt", p, ctx, &fencing)?,
        (None, Some(f)) => templates.render_prompt_file(f, ctx, &fencing)?,
        (None, None) => return Err(PromptError::Missing(routine.name.clone())),
    };
    let findings = found.lock().map(|mut f| std::mem::take(&mut *f)).unwrap_or_default();
    for f in &findings {
        match f.severity {
            Severity::Block => {
                tracing::warn!(routine = %routine.name, rule = f.rule, "Trigger data withheld from the prompt as a prompt injection.")
            }
            Severity::Review => {
                tracing::warn!(routine = %routine.name, rule = f.rule, excerpt = %f.excerpt, "Trigger data may carry instructions; passed on, fenced as data.")
            }
            Severity::Warn => {
                tracing::info!(routine = %routine.name, rule = f.rule, "Trigger data has a weak sign of injected instructions.")
            }
        }
    }
    Ok(Prompt { text, findings })
}

/// Each finding as an `injection_check` note of run `run_id`, as the agent
/// records those of tool results.
pub fn record_findings(store: &Store, run_id: i64, findings: &[Finding]) {
    for f in findings {
        let detail = format!("trigger: {} ({}): {}", f.severity.as_str(), f.rule, f.excerpt);
        let event = NewEvent {
            kind: EventKind::Note,
            tool: None,
            status: "injection_check",
            arguments: None,
            detail: Some(&detail),
            prompt_tokens: None,
            completion_tokens: None,
            duration_ms: 0,
        };
        if let Err(e) = store.record_event(run_id, &event) {
            tracing::warn!(run_id, error = %e, "Could not record a run event.");
        }
    }
}
