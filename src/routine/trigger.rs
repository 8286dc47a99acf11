//! What fired a run (SPEC §4 `trigger`). One typed value is carried from the
//! timer loop, the file watcher and the webhook listener through the durable
//! queue (`runs.trigger` and `runs.trigger_context`) to the template context.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{FileEvent, TimeKind};

/// What fired a run, with what the trigger knows about it.
#[derive(Debug, Clone, PartialEq)]
pub enum TriggerContext {
    /// By hand: `routines run`, or a beat or greeting asked for.
    Manual,
    /// By hand with the data a webhook or file trigger would bring (`routines run --body
    /// --header`, see [`super::by_hand`]): kind `manual`, and these fields in `trigger`.
    ManualWith(Map<String, Value>),
    /// An instant of a time trigger.
    Schedule { kind: TimeKind, scheduled_for: DateTime<Utc> },
    /// A file event.
    File(FileContext),
    /// An accepted webhook request.
    Webhook(WebhookRequest),
    /// A beat of the daemon's heartbeat.
    Heartbeat,
    /// A greeting at its planned time.
    Greeting { scheduled_for: DateTime<Utc> },
}

/// A file event that fired a routine: `trigger.path` and `trigger.event`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileContext {
    /// The path relative to the workspace, with `/` separators.
    pub path: String,
    pub event: FileEvent,
}

/// A webhook request the listener accepted: `trigger.method`, `path`,
/// `headers`, `query`, `body` and `json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebhookRequest {
    /// The HTTP method, always `POST` for an accepted request.
    pub method: String,
    /// The request path, without the query string.
    pub path: String,
    /// The request headers by lower-case name, without `authorization`, `proxy-authorization`,
    /// `cookie` and `x-signature-256`. Repeated headers are joined with `, `; bytes that are
    /// not UTF-8 are replaced with U+FFFD.
    pub headers: BTreeMap<String, String>,
    /// The decoded query parameters; when a name repeats, the last value wins.
    pub query: BTreeMap<String, String>,
    /// The body as text; bytes that are not UTF-8 are replaced with U+FFFD.
    pub body: String,
    /// The body parsed as JSON, when it is valid JSON.
    pub json: Option<Value>,
}

/// A trigger kind (`runs.trigger`) as a person reads it: `manual` is `fired by hand`. The
/// stored value stays the kind.
pub fn fired_by(kind: &str) -> String {
    match kind {
        "manual" => "fired by hand".into(),
        "cron" | "every" | "at" => format!("fired on schedule ({kind})"),
        "webhook" => "fired by a webhook request".into(),
        "file" => "fired by a file event".into(),
        "heartbeat" => "fired by the heartbeat".into(),
        "greeting" => "a greeting at its planned time".into(),
        other => other.into(),
    }
}

impl WebhookRequest {
    /// Headers a request's `trigger.headers` never shows: they carry credentials.
    pub const HIDDEN_HEADERS: [&'static str; 4] = ["authorization", "proxy-authorization", "cookie", "x-signature-256"];
}

/// Why a stored trigger could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum StoredTriggerError {
    #[error("unknown trigger kind `{0}`")]
    UnknownKind(String),
    #[error("a `{0}` fire has no scheduled instant")]
    NoInstant(&'static str),
    #[error("the context of a `{kind}` fire is not readable: {source}")]
    Context { kind: &'static str, source: serde_json::Error },
}

impl TriggerContext {
    /// The trigger kind, as recorded in `runs.trigger` and shown as
    /// `trigger.kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            TriggerContext::Manual | TriggerContext::ManualWith(_) => "manual",
            TriggerContext::Schedule { kind, .. } => kind.as_str(),
            TriggerContext::File(_) => "file",
            TriggerContext::Webhook(_) => "webhook",
            TriggerContext::Heartbeat => "heartbeat",
            TriggerContext::Greeting { .. } => "greeting",
        }
    }

    /// The instant it fired for: the identity of a scheduled fire.
    pub fn scheduled_for(&self) -> Option<DateTime<Utc>> {
        match self {
            TriggerContext::Schedule { scheduled_for, .. } | TriggerContext::Greeting { scheduled_for } => {
                Some(*scheduled_for)
            }
            _ => None,
        }
    }

    /// What the trigger adds to `trigger` besides `kind` and
    /// `scheduled_for`: `path` and `event` of a file, the request of a
    /// webhook, the data given by hand, nothing for the others.
    pub fn fields(&self) -> Map<String, Value> {
        let value = match self {
            TriggerContext::File(file) => serde_json::to_value(file),
            TriggerContext::Webhook(request) => serde_json::to_value(request),
            TriggerContext::ManualWith(fields) => return fields.clone(),
            _ => return Map::new(),
        };
        match value {
            Ok(Value::Object(fields)) => fields,
            _ => Map::new(),
        }
    }

    /// [`TriggerContext::fields`] as the JSON text stored in
    /// `runs.trigger_context`.
    pub fn to_stored(&self) -> String {
        Value::Object(self.fields()).to_string()
    }

    /// Reads a trigger back from a run's `trigger`, `scheduled_for` and
    /// `trigger_context` columns.
    pub fn from_stored(
        kind: &str,
        scheduled_for: Option<DateTime<Utc>>,
        context: Option<&str>,
    ) -> Result<TriggerContext, StoredTriggerError> {
        let scheduled = |kind: TimeKind| {
            let scheduled_for = scheduled_for.ok_or(StoredTriggerError::NoInstant(kind.as_str()))?;
            Ok(TriggerContext::Schedule { kind, scheduled_for })
        };
        let context = context.unwrap_or("{}");
        match kind {
            "manual" => match serde_json::from_str::<Map<String, Value>>(context) {
                Ok(fields) if !fields.is_empty() => Ok(TriggerContext::ManualWith(fields)),
                Ok(_) => Ok(TriggerContext::Manual),
                Err(source) => Err(StoredTriggerError::Context { kind: "manual", source }),
            },
            "heartbeat" => Ok(TriggerContext::Heartbeat),
            "greeting" => Ok(TriggerContext::Greeting {
                scheduled_for: scheduled_for.ok_or(StoredTriggerError::NoInstant("greeting"))?,
            }),
            "cron" => scheduled(TimeKind::Cron),
            "every" => scheduled(TimeKind::Every),
            "at" => scheduled(TimeKind::At),
            "file" => serde_json::from_str(context)
                .map(TriggerContext::File)
                .map_err(|source| StoredTriggerError::Context { kind: "file", source }),
            "webhook" => serde_json::from_str(context)
                .map(TriggerContext::Webhook)
                .map_err(|source| StoredTriggerError::Context { kind: "webhook", source }),
            other => Err(StoredTriggerError::UnknownKind(other.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request() -> WebhookRequest {
        WebhookRequest {
            method: "POST".into(),
            path: "/hooks/deploy".into(),
            headers: BTreeMap::from([("x-custom".to_string(), "yes".to_string())]),
            query: BTreeMap::from([("env".to_string(), "prod".to_string())]),
            body: r#"{"ref":"main"}"#.into(),
            json: Some(json!({"ref": "main"})),
        }
    }

    #[test]
    fn stored_json_keeps_the_shape_earlier_versions_wrote() {
        let file = TriggerContext::File(FileContext { path: "inbox/a.csv".into(), event: FileEvent::Create });
        assert_eq!(file.to_stored(), r#"{"event":"create","path":"inbox/a.csv"}"#);
        assert_eq!(
            TriggerContext::Webhook(request()).to_stored(),
            r#"{"body":"{\"ref\":\"main\"}","headers":{"x-custom":"yes"},"json":{"ref":"main"},"method":"POST","path":"/hooks/deploy","query":{"env":"prod"}}"#
        );
        let at = DateTime::<Utc>::from_timestamp(1_800_000_000, 0).unwrap();
        for t in [
            TriggerContext::Manual,
            TriggerContext::Heartbeat,
            TriggerContext::Greeting { scheduled_for: at },
            TriggerContext::Schedule { kind: TimeKind::Every, scheduled_for: at },
        ] {
            assert_eq!(t.to_stored(), "{}");
        }
    }

    #[test]
    fn every_trigger_reads_back_as_it_was_stored() {
        let at = DateTime::<Utc>::from_timestamp(1_800_000_000, 0).unwrap();
        let no_json = WebhookRequest { json: None, ..request() };
        for t in [
            TriggerContext::Manual,
            TriggerContext::Heartbeat,
            TriggerContext::Greeting { scheduled_for: at },
            TriggerContext::Schedule { kind: TimeKind::Cron, scheduled_for: at },
            TriggerContext::Schedule { kind: TimeKind::At, scheduled_for: at },
            TriggerContext::File(FileContext { path: "a b/ü.txt".into(), event: FileEvent::Remove }),
            TriggerContext::Webhook(request()),
            TriggerContext::Webhook(no_json),
            TriggerContext::ManualWith(Map::from_iter([("body".to_string(), json!("x"))])),
        ] {
            let stored = t.to_stored();
            let back = TriggerContext::from_stored(t.kind(), t.scheduled_for(), Some(&stored)).unwrap();
            assert_eq!(back, t);
        }
    }

    #[test]
    fn unreadable_stored_triggers_say_why() {
        let err = |kind: &str, at: Option<DateTime<Utc>>, context: Option<&str>| {
            TriggerContext::from_stored(kind, at, context).unwrap_err().to_string()
        };
        assert_eq!(err("cron", None, Some("{}")), "a `cron` fire has no scheduled instant");
        assert_eq!(err("chat", None, None), "unknown trigger kind `chat`");
        assert!(err("file", None, Some(r#"{"event":"create"}"#)).starts_with("the context of a `file` fire"));
        assert!(err("webhook", None, None).contains("missing field"));
        assert!(err("manual", None, Some("[1]")).starts_with("the context of a `manual` fire"));
    }
}
