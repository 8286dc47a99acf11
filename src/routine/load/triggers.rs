//! Checks of one trigger of a routine: exactly one kind, and what that kind
//! needs (a valid cron expression and zone, an interval, an instant with an
//! offset, globs inside the workspace, a webhook path with authentication).

use chrono_tz::Tz;

use super::Locator;
use crate::diag::{Diagnostics, did_you_mean};
use crate::routine::{TimeTrigger, TriggerSpec, cron, reserved};

/// Checks the trigger at `rel`; a time trigger comes back parsed.
pub(super) fn check_trigger(
    t: &TriggerSpec,
    rel: &[&str],
    at: &Locator,
    engine_zone: Tz,
    diags: &mut Diagnostics,
) -> Option<TimeTrigger> {
    let kinds = t.kinds();
    let sub = |k: &'static str| -> Vec<&str> { rel.iter().copied().chain([k]).collect() };
    match kinds.as_slice() {
        [] => {
            diags.push(
                at.error(rel, "a trigger needs one of cron, every, at, file, webhook")
                    .with_hint("manual runs need no trigger: `manual` is always implied"),
            );
            return None;
        }
        [_] => {}
        many => {
            diags.push(
                at.error(rel, format!("one trigger sets {}", many.join(" and ")))
                    .with_hint("write each trigger as its own list item"),
            );
            return None;
        }
    }
    if t.timezone.is_some() && t.cron.is_none() {
        diags.push(
            at.error_key(&sub("timezone"), format!("`timezone` applies only to a cron trigger, not to `{}`", kinds[0]))
                .with_hint("remove it: `every` counts real time and `at` carries its own offset"),
        );
    }
    if let Some(expr) = &t.cron {
        let zone = match t.timezone.as_deref() {
            None => Some(engine_zone),
            Some(z) => match z.parse::<Tz>() {
                Ok(tz) => Some(tz),
                Err(_) => {
                    let hint = match did_you_mean(z, chrono_tz::TZ_VARIANTS.iter().map(|tz| tz.name())) {
                        Some(best) => format!("did you mean `{best}`?"),
                        None => "use an IANA zone name such as Europe/Berlin".into(),
                    };
                    diags.push(at.error(&sub("timezone"), format!("unknown time zone `{z}`")).with_hint(hint));
                    None
                }
            },
        };
        let upper = expr.to_ascii_uppercase();
        if upper.contains("TZ=") {
            diags.push(
                at.error(&sub("cron"), "a time zone inside the cron expression is not supported")
                    .with_hint("remove TZ=/CRON_TZ= and set `timezone:` next to `cron:`"),
            );
            return None;
        }
        match cron::parse_cron(expr) {
            Ok(_) => return zone.map(|zone| TimeTrigger::Cron { expr: expr.clone(), zone }),
            Err(e) => {
                let (why, hint) = cron::explain_cron_error(expr, &e);
                diags.push(at.error(&sub("cron"), format!("invalid cron expression `{expr}`: {why}")).with_hint(hint));
                return None;
            }
        }
    }
    if let Some(every) = t.every {
        if every.get() < std::time::Duration::from_secs(1) {
            diags.push(
                at.error(&sub("every"), format!("`every: {every}` is too short; it must be at least 1s"))
                    .with_hint("e.g. every: 30s, every: 10m or every: 1h"),
            );
            return None;
        }
        return Some(TimeTrigger::Every(every.get()));
    }
    if let Some(when) = &t.at {
        return match chrono::DateTime::parse_from_rfc3339(when) {
            Ok(dt) => Some(TimeTrigger::At(dt)),
            Err(_) => {
                let local = ["%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"]
                    .iter()
                    .any(|f| chrono::NaiveDateTime::parse_from_str(when.trim(), f).is_ok());
                let message = if local {
                    format!("`at: {when}` has no UTC offset, so the instant is ambiguous")
                } else {
                    format!("`at: {when}` is not a date and time")
                };
                diags.push(at.error(&sub("at"), message).with_hint(
                    "write it as RFC 3339 with an offset, e.g. 2026-12-01T09:00:00+01:00 or 2026-12-01T08:00:00Z",
                ));
                None
            }
        };
    }
    if let Some(f) = &t.file {
        if f.paths.is_empty() {
            diags.push(
                at.error(&sub("file"), "a file trigger needs at least one path")
                    .with_hint("e.g. paths: [\"inbox/*.csv\"]"),
            );
        }
        for (i, p) in f.paths.iter().enumerate() {
            if p.starts_with('/') || p.split('/').any(|seg| seg == "..") {
                let idx = i.to_string();
                let path: Vec<&str> = rel.iter().copied().chain(["file", "paths", &idx]).collect();
                diags.push(
                    at.error(&path, format!("`{p}` leaves the workspace"))
                        .with_hint("file trigger globs are relative to the workspace"),
                );
            }
        }
        if f.events.is_empty() {
            diags.push(
                at.error(&sub("file"), "a file trigger needs at least one event")
                    .with_hint("e.g. events: [create, modify]; events are create, modify and remove"),
            );
        }
    }
    if let Some(w) = &t.webhook {
        let wpath: Vec<&str> = rel.iter().copied().chain(["webhook", "path"]).collect();
        if !w.path.starts_with('/') || w.path.contains(char::is_whitespace) {
            diags.push(
                at.error(&wpath, format!("webhook path `{}` must start with /", w.path))
                    .with_hint("e.g. /hooks/deploy"),
            );
        }
        if reserved::is_reserved_path(&w.path) {
            diags.push(
                at.error(&wpath, format!("webhook path `{}` is reserved by the daemon's listener", w.path))
                    .with_hint("/healthz, /metrics and the status page (/, /runs, /charts, /static/) are the listener's; use a path like /hooks/NAME"),
            );
        }
        if w.secret_env.is_none() && w.token_env.is_none() && w.auth.is_none() {
            diags.push(at.error_key(&sub("webhook"), "a webhook without authentication is refused").with_hint(
                "set secret_env (HMAC signature) or token_env (bearer token), or `auth: none` to accept anyone",
            ));
        }
    }
    None
}
