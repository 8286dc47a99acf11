//! What a template may read: the context's top-level names, and under `trigger` the fields
//! that the routine's trigger kinds give (SPEC §4). A field no trigger of the routine gives is
//! undefined at every fire, so `validate` reports it before a run does.

use crate::routine::TriggerSpec;

/// Fields of `trigger` at every fire.
const COMMON: [&str; 2] = ["kind", "scheduled_for"];
/// What each kind adds (see `TriggerContext::fields`).
const ADDED: [(&str, &[&str]); 2] =
    [("file", &["path", "event"]), ("webhook", &["method", "path", "headers", "query", "body", "json"])];

/// The names a template may read.
pub(super) struct Scope {
    pub roots: Vec<&'static str>,
    /// The kinds of the routine's triggers (`manual` is implied and adds nothing).
    kinds: Vec<&'static str>,
}

impl Scope {
    /// A routine's prompt and images: `roots`, with `trigger` as its triggers give it.
    pub fn of(roots: &[&'static str], triggers: &[TriggerSpec]) -> Scope {
        let mut kinds: Vec<&'static str> = triggers.iter().filter_map(|t| t.kinds().first().copied()).collect();
        kinds.sort_unstable();
        kinds.dedup();
        Scope { roots: roots.to_vec(), kinds }
    }

    /// The same triggers with more top-level names (a delivery's `output`, `status`, `error`).
    pub fn with(&self, more: &[&'static str]) -> Scope {
        Scope { roots: self.roots.iter().chain(more).copied().collect(), kinds: self.kinds.clone() }
    }

    /// The fields `trigger` has at this routine's fires.
    pub fn trigger_fields(&self) -> Vec<&'static str> {
        let mut fields: Vec<&'static str> = COMMON.to_vec();
        for (k, added) in ADDED {
            if self.kinds.contains(&k) {
                fields.extend(added.iter().filter(|f| !fields.contains(f)).collect::<Vec<_>>());
            }
        }
        fields
    }

    /// Every field any kind of trigger gives.
    pub fn every_trigger_field() -> impl Iterator<Item = &'static str> {
        COMMON.into_iter().chain(ADDED.iter().flat_map(|(_, f)| f.iter().copied()))
    }

    /// Why `field` is missing: the kinds that would give it, with this routine's own.
    pub fn missing_because(&self, field: &str) -> Option<String> {
        let givers: Vec<&str> = ADDED.iter().filter(|(_, f)| f.contains(&field)).map(|(k, _)| *k).collect();
        if givers.is_empty() {
            return None;
        }
        let own = if self.kinds.is_empty() { "none but manual".to_string() } else { self.kinds.join(", ") };
        Some(format!(
            "`trigger.{field}` is set only by {} triggers; this routine's triggers: {own}",
            givers.join(" and ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: &str) -> TriggerSpec {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn trigger_fields_follow_the_kinds() {
        let cron = Scope::of(&["trigger"], &[spec("cron: '0 9 * * *'")]);
        assert_eq!(cron.trigger_fields(), ["kind", "scheduled_for"]);
        let both = Scope::of(&["trigger"], &[spec("file: { paths: [a] }"), spec("webhook: { path: /h, auth: none }")]);
        assert_eq!(
            both.trigger_fields(),
            ["kind", "scheduled_for", "path", "event", "method", "headers", "query", "body", "json"]
        );
        assert_eq!(
            cron.missing_because("body").unwrap(),
            "`trigger.body` is set only by webhook triggers; this routine's triggers: cron"
        );
        assert_eq!(cron.missing_because("bdy"), None);
    }
}
