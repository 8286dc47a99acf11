//! Redaction of secret values: what the process reads from `*_env` variables
//! (API keys, the SMTP login and password, webhook secrets and tokens, the
//! status page token, database URLs) never reaches the database, the logs,
//! deliveries, `run --json` or the model's memory.
//!
//! A [`Redactor`] replaces every run of [`FRAGMENT_CHARS`] (8) or more
//! characters of a credential with `[redacted]`, so a key rebuilt from pieces
//! (`grep -o` two fragments at a time) is caught piece by piece; a credential
//! shorter than that is replaced whole, and identifiers ([`Strength::Whole`],
//! e.g. an SMTP login that is an e-mail address) only whole. Values shorter
//! than [`MIN_SECRET_CHARS`] are not redacted. Each secret is also looked for
//! in the forms that decode to it ([`forms`]): JSON-escaped, percent-encoded
//! (as a URL library does it, and every byte in either case), reversed, hex
//! in either case, and base64 in both alphabets at each of the three
//! alignments, padding or not; a piece of an encoded form is the encoding of
//! 8 bytes (10 base64 characters, 16 hex digits). With an SMTP login, the
//! argument of `AUTH PLAIN` (`\0login\0password`) is a secret too. How: one
//! Aho-Corasick automaton over every window of every form of every secret (a
//! 50-character key is about 500 patterns), one overlapping pass over the
//! text, overlapping hits merged into one span (`cargo bench --bench
//! redaction`).
//!
//! One set per process ([`Redactor::process`]): the engine, the store, the
//! delivery stage and the log writer ([`Redacting`]) all redact with it, and
//! whatever reads a secret adds it ([`Redactor::for_config`] for the config's,
//! [`Redactor::learn_vars`] for the webhook secrets of routines). A
//! [`Redactor`] is a handle: clones share their set and see what is added
//! later. [`Redactor::new`] makes an independent set (tests, tools).
//!
//! Not caught: a secret the process never read (a key only in a file of the
//! workspace), a secret split into runs shorter than 8 characters, and
//! transformations beyond those forms (base64 of the hex, mixed-case hex,
//! percent-encoding of some bytes only, a cipher). Base64 and hex pieces of a
//! value shorter than 8 bytes are its whole encoded form, and that is looked
//! for only from 5 base64 characters (30 bits) or 4 encoded bytes up.

mod forms;
mod matcher;
mod writer;

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::{Arc, LazyLock, RwLock};

use crate::config::{Config, Env};
use matcher::Matcher;

pub use matcher::Strength;

/// A run of this many characters of a credential is enough to redact it.
pub const FRAGMENT_CHARS: usize = 8;
/// Values shorter than this are not secrets worth hiding: replacing them
/// would mangle ordinary text (a 3-character password matches everywhere).
pub const MIN_SECRET_CHARS: usize = 4;

pub use writer::{Redacting, RedactingLine};

/// What replaces a secret value.
pub const REDACTED: &str = "[redacted]";

/// Replaces known secret values, and runs of them, in text. Cheap to clone;
/// clones share one set of secrets.
#[derive(Clone, Default)]
pub struct Redactor {
    shared: Arc<RwLock<Arc<Matcher>>>,
}

/// The secrets this process has read.
static PROCESS: LazyLock<Redactor> = LazyLock::new(Redactor::default);

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor").field("secrets", &self.current().secrets.len()).finish()
    }
}

impl Redactor {
    /// An independent set of credentials ([`Strength::Fragments`]).
    pub fn new(values: impl IntoIterator<Item = String>) -> Self {
        let r = Redactor::default();
        r.learn(values);
        r
    }

    /// The set of the whole process, which the log writer uses.
    pub fn process() -> Redactor {
        PROCESS.clone()
    }

    /// The process's set, after adding the secrets `config` names: the
    /// values of its `*_env` variables (the SMTP login as an identifier,
    /// everything else as credentials) and the API key, however it was given.
    /// A value that is a URL with a password adds the password as a
    /// credential and the URL as an identifier.
    pub fn for_config(config: &Config, env: &dyn Env) -> Redactor {
        let smtp = config.mail.as_ref().and_then(|m| m.smtp.as_ref());
        let login = smtp.and_then(|s| s.username_env.as_deref());
        let mut found = Vec::new();
        for var in &config.secret_vars {
            if let Some(value) = env.var(var) {
                let strength = if Some(var.as_str()) == login { Strength::Whole } else { Strength::Fragments };
                found.extend(classify(&value, strength));
            }
        }
        if let Some(key) = &config.provider.api_key {
            found.extend(classify(key.expose(), Strength::Fragments));
        }
        let user = login.and_then(|v| env.var(v));
        let password = smtp.and_then(|s| s.password_env.as_deref()).and_then(|v| env.var(v));
        if let (Some(user), Some(password)) = (user, password) {
            // What `AUTH PLAIN` sends, base64-encoded: caught whole even where
            // the password is too short for its pieces to be.
            found.push((format!("\0{user}\0{password}"), Strength::Whole));
        }
        let r = Redactor::process();
        r.learn_with(found);
        r
    }

    /// Adds credentials to this set (and every clone of it).
    pub fn learn(&self, values: impl IntoIterator<Item = String>) {
        self.learn_with(values.into_iter().flat_map(|v| classify(&v, Strength::Fragments)));
    }

    /// Adds the values of the environment variables `vars` (those set) as
    /// credentials: the secrets of webhook routes, for example.
    pub fn learn_vars<'a>(&self, vars: impl IntoIterator<Item = &'a str>, env: &dyn Env) {
        self.learn(vars.into_iter().filter_map(|v| env.var(v)));
    }

    /// Adds values with their strength. Building the automaton again happens
    /// only when something new arrives.
    pub fn learn_with(&self, secrets: impl IntoIterator<Item = (String, Strength)>) {
        let new: BTreeSet<(String, Strength)> = secrets
            .into_iter()
            .map(|(v, s)| (v.trim().to_string(), s))
            .filter(|(v, _)| v.chars().count() >= MIN_SECRET_CHARS)
            .collect();
        if new.is_empty() || new.is_subset(&self.current().secrets) {
            return;
        }
        let mut guard = match self.shared.write() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut all = guard.secrets.clone();
        all.extend(new);
        *guard = Arc::new(Matcher::build(all));
    }

    /// Whether nothing is redacted.
    pub fn is_empty(&self) -> bool {
        self.current().is_empty()
    }

    /// Patterns in the automaton (every window of every secret).
    pub fn pattern_count(&self) -> usize {
        self.current().pattern_count()
    }

    /// `text` with every secret, and every run of [`FRAGMENT_CHARS`]
    /// characters of a credential, replaced by [`REDACTED`].
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.current().redact(text)
    }

    /// `text` with every whole secret, in every form, replaced by [`REDACTED`]; runs of
    /// characters shared with a credential stay (data the engine acts on later, see
    /// [`crate::store::Scrub::scrub_whole_json`]).
    pub fn redact_whole<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.current().redact_whole(text)
    }

    /// Whether `text` holds a whole credential (a key, a password, a token; not an identifier
    /// such as the SMTP login), as written or in any encoded form the redactor knows: what is
    /// acted on as written (a delivery's path or address) must not carry one.
    pub fn holds_credential(&self, text: &str) -> bool {
        self.current().holds_credential(text)
    }

    /// [`Redactor::redact`] on every string of a JSON value, keys included.
    pub fn redact_json(&self, value: &mut serde_json::Value) {
        let matcher = self.current();
        each_string(value, &|s| matcher.redact(s));
    }

    fn current(&self) -> Arc<Matcher> {
        match self.shared.read() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

/// What the store writes passes through the redactor (text columns, and JSON
/// columns string by string).
impl crate::store::Scrub for Redactor {
    fn scrub(&self, text: &str) -> Option<String> {
        match self.redact(text) {
            Cow::Borrowed(_) => None,
            Cow::Owned(s) => Some(s),
        }
    }

    fn scrub_json(&self, value: &mut serde_json::Value) {
        self.redact_json(value);
    }

    fn scrub_whole_json(&self, value: &mut serde_json::Value) {
        let matcher = self.current();
        each_string(value, &|s| matcher.redact_whole(s));
    }
}

/// `value` with `redact` applied to every string, keys included.
fn each_string(value: &mut serde_json::Value, redact: &dyn for<'a> Fn(&'a str) -> Cow<'a, str>) {
    use serde_json::Value;
    match value {
        Value::String(s) => {
            if let Cow::Owned(r) = redact(s) {
                *s = r;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| each_string(v, redact)),
        Value::Object(map) => {
            let entries = std::mem::take(map);
            for (k, mut v) in entries {
                each_string(&mut v, redact);
                map.insert(redact(&k).into_owned(), v);
            }
        }
        _ => {}
    }
}

/// A value as secrets: a URL with a password gives the password as a
/// credential and the whole URL as an identifier (its other parts, such as
/// `postgres` or the host, are ordinary words).
fn classify(value: &str, strength: Strength) -> Vec<(String, Strength)> {
    let value = value.trim();
    if let Ok(url) = reqwest::Url::parse(value) {
        if let Some(password) = url.password() {
            let decoded = percent_encoding::percent_decode_str(password).decode_utf8_lossy().into_owned();
            let mut out = vec![(value.to_string(), Strength::Whole), (decoded.clone(), Strength::Fragments)];
            if password != decoded {
                out.push((password.to_string(), Strength::Fragments));
            }
            return out;
        }
    }
    vec![(value.to_string(), strength)]
}
