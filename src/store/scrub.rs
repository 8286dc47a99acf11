//! Secrets kept out of the database: what a store writes passes through a
//! [`Scrub`] first, set once by whoever opens the store for runs (the engine
//! gives it the policy's redactor). The store sits below the policy, so it
//! knows only this trait.

use std::borrow::Cow;
use std::sync::Arc;

use super::Store;

/// Takes secrets out of text before it is written.
pub trait Scrub: Send + Sync {
    /// The text without its secrets, or `None` when it holds none. Secrets
    /// must be found in JSON text too, escaped as JSON escapes them (JSON
    /// columns are cleaned value by value only when this finds something).
    fn scrub(&self, text: &str) -> Option<String>;

    /// Every string of a JSON value (keys included), in place.
    fn scrub_json(&self, value: &mut serde_json::Value);

    /// Every string of a JSON value the engine acts on later (a run's trigger context, which a
    /// queued fire is run from), in place: whole secrets only. A run of characters that a path
    /// or a body shares with a secret stays, so the run is given what arrived and not a
    /// record's `[redacted]` in its place (issue 47: records never steer actions).
    fn scrub_whole_json(&self, value: &mut serde_json::Value);
}

impl Store {
    /// This store, with every text it writes from now on (run outputs and
    /// errors, prompts, trigger contexts, events, delivery payloads and
    /// errors, sessions) passed through `scrub`. Clones made after share it.
    pub fn with_scrub(mut self, scrub: Arc<dyn Scrub>) -> Store {
        self.scrub = Some(scrub);
        self
    }

    /// `text` as it may be written.
    pub(super) fn clean<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self.scrub.as_ref().and_then(|s| s.scrub(text)) {
            Some(clean) => Cow::Owned(clean),
            None => Cow::Borrowed(text),
        }
    }

    /// [`Store::clean`] of an optional text.
    pub(super) fn clean_opt<'a>(&self, text: Option<&'a str>) -> Option<Cow<'a, str>> {
        text.map(|t| self.clean(t))
    }

    /// A delivery's payload as it may be written: the top-level fields named in `acted_on`
    /// as they are (what the engine acts on), every other string cleaned ([`Store::clean_json`]).
    pub(super) fn clean_payload<'a>(&self, text: &'a str, acted_on: &[&str]) -> Cow<'a, str> {
        let Some(scrub) = &self.scrub else { return Cow::Borrowed(text) };
        if acted_on.is_empty() || scrub.scrub(text).is_none() {
            return self.clean_json(text);
        }
        match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::Object(mut fields)) => {
                for (key, value) in fields.iter_mut() {
                    if !acted_on.contains(&key.as_str()) {
                        scrub.scrub_json(value);
                    }
                }
                Cow::Owned(serde_json::Value::Object(fields).to_string())
            }
            _ => self.clean_json(text),
        }
    }

    /// A trigger context (JSON) as it may be written: whole secrets out, the rest as it arrived
    /// ([`Scrub::scrub_whole_json`]). Text that is not JSON is cleaned as text.
    pub(super) fn clean_context<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let Some(scrub) = &self.scrub else { return Cow::Borrowed(text) };
        let Ok(mut value) = serde_json::from_str::<serde_json::Value>(text) else { return self.clean(text) };
        let before = value.clone();
        scrub.scrub_whole_json(&mut value);
        if value == before { Cow::Borrowed(text) } else { Cow::Owned(value.to_string()) }
    }

    /// JSON text as it may be written: when it holds a secret, its strings
    /// are cleaned one by one, so the result is still the same JSON (a
    /// replacement inside an escape sequence could break the text). Text that
    /// is not JSON is cleaned as text.
    pub(super) fn clean_json<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let Some(scrub) = &self.scrub else { return Cow::Borrowed(text) };
        let Some(plain) = scrub.scrub(text) else { return Cow::Borrowed(text) };
        match serde_json::from_str::<serde_json::Value>(text) {
            Ok(mut value) => {
                scrub.scrub_json(&mut value);
                Cow::Owned(value.to_string())
            }
            Err(_) => Cow::Owned(plain),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::store::testing::{each_backend, text_rows};
    use crate::store::{EventKind, NewDelivery, NewEvent, NewRun, RunKind, RunOutcome, RunStatus};

    /// Replaces one word, as the policy's redactor replaces secrets (also
    /// finding its JSON escape).
    struct Word(&'static str);

    impl Scrub for Word {
        fn scrub(&self, text: &str) -> Option<String> {
            let escaped = serde_json::to_string(self.0).unwrap();
            let escaped = &escaped[1..escaped.len() - 1];
            (text.contains(self.0) || text.contains(escaped))
                .then(|| text.replace(self.0, "[redacted]").replace(escaped, "[redacted]"))
        }
        fn scrub_json(&self, value: &mut serde_json::Value) {
            match value {
                serde_json::Value::String(s) => *s = s.replace(self.0, "[redacted]"),
                serde_json::Value::Array(a) => a.iter_mut().for_each(|v| self.scrub_json(v)),
                serde_json::Value::Object(o) => o.values_mut().for_each(|v| self.scrub_json(v)),
                _ => {}
            }
        }

        fn scrub_whole_json(&self, value: &mut serde_json::Value) {
            self.scrub_json(value);
        }
    }

    #[test]
    fn every_text_a_run_writes_is_scrubbed_and_json_stays_json() {
        // A secret with a backslash: cleaned as raw text, its JSON escape would break.
        let secret = r"s3cr\et";
        each_backend(|_kind, _dir, store| {
            let store = store.with_scrub(Arc::new(Word(secret)));
            let id = store
                .create_run(&NewRun {
                    kind: RunKind::Routine,
                    routine: Some("r".into()),
                    trigger: "webhook".into(),
                    scheduled_for: None,
                    status: RunStatus::Running,
                })
                .unwrap();
            let context = serde_json::json!({ "body": format!("key {secret}") }).to_string();
            store.set_trigger_context(id, &context).unwrap();
            store.set_prompt(id, &format!("p {secret}")).unwrap();
            let event = NewEvent {
                kind: EventKind::ToolCall,
                tool: Some("shell"),
                status: "success",
                arguments: Some(&serde_json::json!({ "command": format!("echo {secret}") }).to_string()),
                detail: Some(&format!("out {secret}")),
                prompt_tokens: None,
                completion_tokens: None,
                duration_ms: 1,
            };
            store.record_event(id, &event).unwrap();
            let payload = serde_json::json!({ "kind": "file", "content": secret }).to_string();
            let delivery = NewDelivery {
                run_id: id,
                seq: 0,
                kind: "file",
                target: "out.md",
                on_failure: false,
                payload: &payload,
                acted_on: &[],
                failed: None,
            };
            let d = store.add_delivery(&delivery).unwrap();
            store.set_delivery(d, crate::store::DeliveryStatus::Failed, Some(&format!("e {secret}"))).unwrap();
            store.save_session("r", &serde_json::json!([{ "content": secret }]).to_string()).unwrap();
            let outcome = RunOutcome {
                output: Some(format!("o {secret}")),
                ..RunOutcome::new(RunStatus::Failed, Some(format!("x {secret}")))
            };
            store.finish_run(id, &outcome).unwrap();

            let mut dump: Vec<String> = Vec::new();
            for (table, cols) in [
                ("runs", "prompt, trigger_context, output, error"),
                ("run_events", "arguments, detail, '', ''"),
                ("deliveries", "payload, error, target, ''"),
                ("sessions", "history, '', '', ''"),
            ] {
                for row in text_rows(&store, &format!("SELECT {cols} FROM {table}")) {
                    dump.extend(row.into_iter().flatten().filter(|t| !t.is_empty()));
                }
            }
            assert!(dump.len() >= 10, "{dump:?}");
            for text in &dump {
                assert!(!text.contains("s3cr"), "a secret reached the database: {text}");
                if text.starts_with(['{', '[']) {
                    serde_json::from_str::<serde_json::Value>(text).unwrap_or_else(|e| panic!("{text}: {e}"));
                }
            }
            assert!(dump.iter().any(|t| t == "o [redacted]"), "{dump:?}");
        });
    }
}
