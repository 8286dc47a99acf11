//! Variables that hold secrets (`*_env` names), where they are written, and what `validate`
//! says when one is unset. `validate` often runs where the secrets are not (a laptop, CI), so an
//! unset variable is a warning that says what the daemon or a run would do without it; only a
//! contradiction within the environment `validate` sees (an SMTP username without its password,
//! which stops every run there) is an error. Loading never reads them: a routine loads whatever
//! the environment holds, and the daemon says at start what it lacks.

use super::Locator;
use crate::config::{Config, Env, ProviderSettings, StoreSettings};
use crate::diag::{Diagnostic, Diagnostics};
use crate::routine::Routine;
use crate::yaml::SourceMap;

/// A variable named in a config or routine file, with the problem to report while it is unset.
#[derive(Debug, Clone)]
pub struct NamedSecret {
    pub var: String,
    /// What `validate` prints while the variable is unset or empty.
    pub unset: Diagnostic,
    /// The engine works without it until a later step (the message starts with `warning: `).
    pub warning: bool,
}

/// The problems of every secret variable the config and the loaded routines name that `env`
/// lacks: errors, then warnings.
pub fn unset_secrets(config: &Config, routines: &[NamedSecret], env: &dyn Env) -> (Diagnostics, Diagnostics) {
    let set = |var: &str| env.var(var).is_some_and(|v| !v.trim().is_empty());
    let (mut errors, mut warnings) = (Diagnostics::default(), Diagnostics::default());
    let named = config.source.as_ref().map(|s| of_config(config, s, &set)).unwrap_or_default();
    for s in named.iter().chain(routines).filter(|s| !set(&s.var)) {
        if s.warning { &mut warnings } else { &mut errors }.push(s.unset.clone());
    }
    (errors.sorted(), warnings.sorted())
}
/// `secret_env` and `token_env` of each webhook of a loaded routine: while unset, the route
/// refuses every request (a warning: the daemon's environment may hold it).
pub(super) fn of_webhooks(routine: &Routine, at: &Locator) -> Vec<NamedSecret> {
    let mut out = Vec::new();
    for (i, w) in routine.spec.triggers.iter().enumerate().filter_map(|(i, t)| Some((i, t.webhook.as_ref()?))) {
        let idx = i.to_string();
        for (field, var) in [("secret_env", &w.secret_env), ("token_env", &w.token_env)] {
            let Some(var) = var else { continue };
            let message = format!(
                "warning: `{field}` names ${var}, which is not set: the webhook {} refuses every request without it",
                w.path
            );
            let hint = format!("export {var} in the daemon's environment (e.g. `openssl rand -hex 32`)");
            let unset = at.error(&["on", &idx, "webhook", field], message).with_hint(hint);
            out.push(NamedSecret { var: var.clone(), unset, warning: true });
        }
    }
    out
}

/// The variables the config file names itself: a name left out, or written as its default
/// (`OPENAI_API_KEY`, `ROUTINES_DATABASE_URL`, optional by design), is not asked for. `set`
/// tells which variables hold a value.
fn of_config(config: &Config, source: &SourceMap, set: &dyn Fn(&str) -> bool) -> Vec<NamedSecret> {
    let defaults = [ProviderSettings::default().api_key_env, StoreSettings::default().url_env];
    let mut out = Vec::new();
    let mut named = |path: &[&str], warning: bool, why: &str, hint: &str| {
        let Some(var) = written(source, path).filter(|v| !defaults.iter().any(|d| d == v)) else { return };
        let field = path.join(".");
        let severity = if warning { "warning: " } else { "" };
        let message = format!("{severity}{field} names ${var}, which is not set: {why}");
        let unset = source.error_at(path, message).with_hint(hint.replace("VAR", var));
        out.push(NamedSecret { var: var.to_string(), unset, warning });
    };
    named(
        &["server", "token_env"],
        true,
        "the daemon does not start while it is unset",
        "export VAR with a long random token (e.g. `openssl rand -hex 32`), or remove token_env",
    );
    if config.provider.api_key.is_none() {
        named(
            &["provider", "api_key_env"],
            true,
            "model requests are sent without a key",
            "export VAR, or remove api_key_env if the model server needs no key",
        );
    }
    named(
        &["store", "url_env"],
        true,
        "the state is kept in SQLite in data_dir",
        "export VAR with a postgres:// URL, or remove url_env to keep the state in SQLite",
    );
    if let Some(smtp) = config.mail.as_ref().and_then(|m| m.smtp.as_ref()) {
        let login = [smtp.username_env.as_deref(), smtp.password_env.as_deref()];
        // A username without a password (or the reverse) stops the mailer, and with it every
        // run and the daemon; neither: mail goes without a login.
        let (warning, why) = match login.iter().filter(|v| v.is_some_and(set)).count() {
            1 => (false, "with only one of username and password, `routines run` and the daemon stop with an error"),
            _ => (true, "mail is sent without a login, which most servers refuse"),
        };
        for field in ["username_env", "password_env"] {
            named(
                &["mail", "smtp", field],
                warning,
                why,
                "export VAR in the environment of the daemon and of `routines run`",
            );
        }
    }
    out
}

/// The variable name written at `path`, if the file writes one.
fn written<'a>(source: &'a SourceMap, path: &[&str]) -> Option<&'a str> {
    let mut node = &source.root;
    for key in path {
        node = node.get(key)?;
    }
    node.scalar_str().filter(|v| !v.trim().is_empty())
}
