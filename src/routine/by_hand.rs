//! The trigger data of a run fired by hand with `routines run NAME --body FILE|- --header K:V`:
//! what the routine's webhook or file trigger would bring, so a webhook or file routine can be
//! tried without a request or a file event. The run stays kind `manual` (SPEC §2).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::{Routine, TriggerContext, WebhookRequest};

/// What was given on the command line.
#[derive(Debug, Clone, Default)]
pub struct HandData {
    /// The body (`--body`), as text.
    pub body: Option<String>,
    /// `--header NAME:VALUE`, in the order given.
    pub headers: Vec<(String, String)>,
    /// The body's file relative to the workspace, when `--body` named one inside it.
    pub file: Option<String>,
}

impl HandData {
    /// Nothing given: the run is a plain manual run.
    pub fn is_empty(&self) -> bool {
        self.body.is_none() && self.headers.is_empty()
    }
}

/// The trigger of a run by hand with `data`: [`TriggerContext::Manual`] when nothing was given;
/// else the fields a webhook request would carry (`method`, `path` of the routine's webhook,
/// `headers` by lower-case name without credentials, `query`, `body`, `json`), and for a routine
/// fired by files and not by webhooks, also `path` (the file given) and `event` (`create`).
pub fn by_hand(routine: &Routine, data: HandData) -> TriggerContext {
    if data.is_empty() {
        return TriggerContext::Manual;
    }
    let triggers = &routine.spec.triggers;
    let webhook = triggers.iter().find_map(|t| t.webhook.as_ref());
    let files = triggers.iter().any(|t| t.file.is_some());
    let body = data.body.unwrap_or_default();
    let request = WebhookRequest {
        method: "POST".into(),
        path: webhook.map_or_else(|| "/".into(), |w| w.path.clone()),
        headers: visible(data.headers),
        query: BTreeMap::new(),
        json: serde_json::from_str(&body).ok(),
        body,
    };
    let mut fields = match serde_json::to_value(request) {
        Ok(Value::Object(fields)) => fields,
        _ => Map::new(),
    };
    if webhook.is_none() && files {
        fields.remove("path");
        fields.remove("method");
        if let Some(file) = data.file {
            fields.insert("path".into(), json!(file));
        }
        fields.insert("event".into(), json!("create"));
    }
    TriggerContext::ManualWith(fields)
}

/// Headers as the webhook listener passes them on: lower-case names, credentials left out,
/// repeated names joined with `, `.
fn visible(headers: Vec<(String, String)>) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in headers {
        let name = name.trim().to_ascii_lowercase();
        if WebhookRequest::HIDDEN_HEADERS.contains(&name.as_str()) {
            continue;
        }
        out.entry(name)
            .and_modify(|joined| {
                joined.push_str(", ");
                joined.push_str(&value);
            })
            .or_insert(value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routine::{FileEvent, FileTrigger, RoutineFile, TriggerSpec, WebhookAuth, WebhookTrigger};

    fn routine(trigger: TriggerSpec) -> Routine {
        let spec = RoutineFile { triggers: vec![trigger], ..RoutineFile::default() };
        Routine { name: "r".into(), file: "r.yaml".into(), zone: chrono_tz::UTC, spec, time_triggers: Vec::new() }
    }

    fn data(body: &str, headers: &[(&str, &str)]) -> HandData {
        HandData {
            body: Some(body.into()),
            headers: headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            file: Some("inbox/a.csv".into()),
        }
    }

    #[test]
    fn a_webhook_routine_gets_the_request_it_would_get() {
        let webhook = WebhookTrigger {
            path: "/hooks/deploy".into(),
            secret_env: None,
            token_env: None,
            auth: Some(WebhookAuth::None),
        };
        let r = routine(TriggerSpec { webhook: Some(webhook), ..TriggerSpec::default() });
        let t = by_hand(&r, data(r#"{"ref":"main"}"#, &[("X-Event", "push"), ("Authorization", "Bearer x")]));
        assert_eq!(t.kind(), "manual");
        assert_eq!(
            Value::Object(t.fields()),
            json!({"method": "POST", "path": "/hooks/deploy", "headers": {"x-event": "push"}, "query": {},
                   "body": "{\"ref\":\"main\"}", "json": {"ref": "main"}})
        );
    }

    #[test]
    fn a_file_routine_gets_the_path_and_an_event() {
        let file = FileTrigger {
            paths: vec!["inbox/*".into()],
            events: vec![FileEvent::Create],
            debounce: crate::config::Duration::from_secs(2),
            poll: None,
        };
        let r = routine(TriggerSpec { file: Some(file), ..TriggerSpec::default() });
        let t = by_hand(&r, data("a,b\n", &[]));
        assert_eq!(
            Value::Object(t.fields()),
            json!({"path": "inbox/a.csv", "event": "create", "headers": {}, "query": {}, "body": "a,b\n", "json": null})
        );
    }

    #[test]
    fn nothing_given_is_a_plain_manual_run() {
        let r = routine(TriggerSpec { every: Some(crate::config::Duration::from_secs(60)), ..TriggerSpec::default() });
        assert_eq!(by_hand(&r, HandData::default()), TriggerContext::Manual);
        let t = by_hand(
            &r,
            HandData { headers: vec![("A".into(), "1".into()), ("a".into(), "2".into())], ..HandData::default() },
        );
        assert_eq!(t.fields()["headers"], json!({"a": "1, 2"}));
    }
}
