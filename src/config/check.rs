//! The checks on a parsed config that serde cannot make (time zones, URLs,
//! ranges, settings that must agree), each problem with its location and hint.

use std::path::Path;

use chrono_tz::Tz;

use super::{
    AgentSettings, ClusterSettings, ConfigFile, HeartbeatSettings, LimitSettings, MailSettings, ProviderSettings,
    ServerSettings, parse_time,
};
use crate::diag::{Diagnostic, Diagnostics, did_you_mean};
use crate::yaml::SourceMap;

/// What the checks found that the resolved config needs.
pub(super) struct Checked {
    pub timezone: Tz,
    /// The names of the variables that hold secrets, to keep their values out of logs.
    pub secret_vars: Vec<String>,
}

/// Checks every setting and reports every problem at once.
pub(super) fn settings(raw: &ConfigFile, source: Option<&SourceMap>) -> Result<Checked, Diagnostics> {
    let mut problems = Problems { source, diags: Diagnostics::default() };
    let timezone = timezone(raw.timezone.as_deref(), &mut problems);
    provider(&raw.provider, &mut problems);
    agent(&raw.agent, &mut problems);
    server(&raw.server, &mut problems);
    limits(&raw.limits, &mut problems);
    recipients(raw.mail.as_ref(), &mut problems);
    active_hours(&raw.heartbeat, &mut problems);
    greeting(&raw.heartbeat, &mut problems);
    check_env_name(&raw.store.url_env, &mut |m, h| problems.add(&["store", "url_env"], m, h));
    cluster(&raw.cluster, &mut problems);
    let secret_vars = secret_vars(raw, &mut problems);
    if problems.diags.is_empty() { Ok(Checked { timezone, secret_vars }) } else { Err(problems.diags) }
}

/// The problems found so far, each placed at its setting in the file (or at the defaults).
struct Problems<'a> {
    source: Option<&'a SourceMap>,
    diags: Diagnostics,
}

impl Problems<'_> {
    fn add(&mut self, path: &[&str], message: String, hint: Option<String>) {
        let d = match self.source {
            Some(s) => s.error_at(path, message),
            None => Diagnostic::new(Path::new("<defaults>"), 1, 1, message),
        };
        self.diags.push(match hint {
            Some(h) => d.with_hint(h),
            None => d,
        });
    }
}

fn timezone(name: Option<&str>, problems: &mut Problems) -> Tz {
    match name {
        None => Tz::UTC,
        Some(name) => match name.parse::<Tz>() {
            Ok(tz) => tz,
            Err(_) => {
                problems.add(&["timezone"], format!("unknown time zone `{name}`"), Some(zone_hint(name)));
                Tz::UTC
            }
        },
    }
}

fn provider(p: &ProviderSettings, problems: &mut Problems) {
    if let Some(url) = &p.base_url {
        check_url(url, &mut |m, h| problems.add(&["provider", "base_url"], m, h));
    }
    if !(0.0..=2.0).contains(&p.temperature) {
        problems.add(
            &["provider", "temperature"],
            format!("temperature {} is out of range", p.temperature),
            Some("use a value from 0 to 2".into()),
        );
    }
    check_env_name(&p.api_key_env, &mut |m, h| problems.add(&["provider", "api_key_env"], m, h));
    if p.timeout.get().is_zero() {
        problems.add(&["provider", "timeout"], "timeout must be longer than 0s".into(), None);
    }
    if p.context_window == Some(0) {
        problems.add(
            &["provider", "context_window"],
            "context_window must be at least 1".into(),
            Some("the model's context in tokens, e.g. 8192; leave it out to use what the server reports".into()),
        );
    }
}

fn agent(agent: &AgentSettings, problems: &mut Problems) {
    if agent.max_iterations == 0 {
        problems.add(&["agent", "max_iterations"], "max_iterations must be at least 1".into(), None);
    }
    for (i, name) in agent.assist_off.iter().enumerate() {
        if !super::assist::is_assist(name) {
            let hint = super::assist::unknown_hint(name);
            problems.add(&["agent", "assist_off", &i.to_string()], format!("unknown assist `{name}`"), Some(hint));
        }
    }
    if agent.history_limit < 2 {
        problems.add(
            &["agent", "history_limit"],
            "history_limit must be at least 2".into(),
            Some("a turn needs at least the question and the answer".into()),
        );
    }
}

fn server(server: &ServerSettings, problems: &mut Problems) {
    match server.listen.parse::<std::net::SocketAddr>() {
        Err(_) => problems.add(
            &["server", "listen"],
            format!("`{}` is not an address with a port", server.listen),
            Some("write it as IP:PORT, e.g. 127.0.0.1:8787".into()),
        ),
        // The status page shows every run's prompt and output: beyond loopback it needs a token.
        Ok(addr) if !addr.ip().is_loopback() && server.token_env.is_none() => problems.add(
            &["server", "listen"],
            format!("`{}` listens beyond this machine but the status page has no token", server.listen),
            Some(
                "set server.token_env to the name of a variable holding a long random token, or listen on 127.0.0.1"
                    .into(),
            ),
        ),
        Ok(_) => {}
    }
    if let Some(var) = &server.token_env {
        check_env_name(var, &mut |m, h| problems.add(&["server", "token_env"], m, h));
    }
}

fn limits(limits: &LimitSettings, problems: &mut Problems) {
    if limits.max_concurrent_runs == 0 {
        problems.add(&["limits", "max_concurrent_runs"], "max_concurrent_runs must be at least 1".into(), None);
    }
    if limits.max_queued == 0 {
        problems.add(&["limits", "max_queued"], "max_queued must be at least 1".into(), None);
    }
    if limits.queue_window == Some(0) {
        problems.add(&["limits", "queue_window"], "queue_window must be at least 1".into(), None);
    }
    if limits.min_agent_interval.get() < std::time::Duration::from_secs(1) {
        problems.add(
            &["limits", "min_agent_interval"],
            format!("min_agent_interval {} is shorter than 1s", limits.min_agent_interval),
            Some("the default is 15m".into()),
        );
    }
}

fn recipients(mail: Option<&MailSettings>, problems: &mut Problems) {
    for (i, pattern) in mail.iter().flat_map(|m| m.allowed_recipients.iter()).enumerate() {
        if let Err(e) = super::recipients::check_pattern(pattern) {
            let hint = "write an address (ops@example.com) or every address of one domain (*@example.com)";
            problems.add(&["mail", "allowed_recipients", &i.to_string()], e.to_string(), Some(hint.into()));
        }
    }
}

fn active_hours(heartbeat: &HeartbeatSettings, problems: &mut Problems) {
    if let Some(h) = &heartbeat.active_hours {
        for (field, value) in [("start", &h.start), ("end", &h.end)] {
            if parse_time(value).is_none() {
                problems.add(
                    &["heartbeat", "active_hours", field],
                    format!("`{value}` is not a time of day"),
                    Some("write it as HH:MM, e.g. 08:00".into()),
                );
            }
        }
    }
}

/// The greetings asked for must fit in the greeting hours at their least gap.
fn greeting(heartbeat: &HeartbeatSettings, problems: &mut Problems) {
    let greeting = &heartbeat.greeting;
    if !greeting.enabled {
        return;
    }
    if greeting.max_per_day() == 0 {
        problems.add(
            &["heartbeat", "greeting", "max_per_day"],
            "max_per_day must be at least 1".into(),
            Some("set `enabled: false` to send no greetings".into()),
        );
    } else if let Ok(window) = heartbeat.greeting_window() {
        let length = window.length();
        let gap = chrono::TimeDelta::from_std(greeting.min_gap().get()).unwrap_or(chrono::TimeDelta::MAX);
        let needed = gap.checked_mul(i32::try_from(greeting.max_per_day() - 1).unwrap_or(i32::MAX));
        if needed.is_none_or(|n| n >= length) {
            let fit = (length.num_seconds() - 1) / gap.num_seconds().max(1) + 1;
            let hours = format!("{}–{}", window.start.format("%H:%M"), window.end.format("%H:%M"));
            problems.add(
                &["heartbeat", "greeting", "max_per_day"],
                format!(
                    "{} greetings at least {} apart do not fit in the greeting hours {hours}",
                    greeting.max_per_day(),
                    greeting.min_gap()
                ),
                Some(format!("at most {fit} fit; lower max_per_day or min_gap, or widen heartbeat.active_hours")),
            );
        }
    }
}

fn cluster(cluster: &ClusterSettings, problems: &mut Problems) {
    if cluster.lease.get() < std::time::Duration::from_secs(1) {
        problems.add(
            &["cluster", "lease"],
            format!("lease {} is too short: a node renews it every quarter of it", cluster.lease),
            Some("use at least 1s; the default is 30s".into()),
        );
    } else if cluster.max_skew().get() >= cluster.lease.get() {
        problems.add(
            &["cluster", "max_skew"],
            format!("max_skew {} must be shorter than lease {}", cluster.max_skew(), cluster.lease),
            Some("leave max_skew unset to use its default: 5s, or a sixth of lease when that is shorter".into()),
        );
    }
}

/// The variables that hold secrets; the SMTP ones are checked here, as they are collected.
fn secret_vars(raw: &ConfigFile, problems: &mut Problems) -> Vec<String> {
    let mut secret_vars = vec![raw.provider.api_key_env.clone(), raw.store.url_env.clone()];
    secret_vars.extend(raw.server.token_env.iter().cloned());
    if let Some(smtp) = raw.mail.as_ref().and_then(|m| m.smtp.as_ref()) {
        for (field, var) in [("username_env", &smtp.username_env), ("password_env", &smtp.password_env)] {
            if let Some(var) = var {
                check_env_name(var, &mut |m, h| problems.add(&["mail", "smtp", field], m, h));
                secret_vars.push(var.clone());
            }
        }
    }
    secret_vars
}

fn check_url(url: &str, report: &mut dyn FnMut(String, Option<String>)) {
    match reqwest::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => {}
        Ok(u) => report(format!("base_url has scheme `{}`", u.scheme()), Some("use an http:// or https:// URL".into())),
        Err(e) => {
            report(format!("base_url `{url}` is not a URL: {e}"), Some("for example http://127.0.0.1:11434/v1".into()))
        }
    }
}

fn check_env_name(name: &str, report: &mut dyn FnMut(String, Option<String>)) {
    let valid = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if !valid || name.starts_with("sk-") {
        report(
            "this must be the name of an environment variable, not a secret".into(),
            Some("put the secret in a variable, e.g. export OPENAI_API_KEY=..., and write its name here".into()),
        );
    }
}

fn zone_hint(name: &str) -> String {
    match did_you_mean(name, chrono_tz::TZ_VARIANTS.iter().map(|tz| tz.name())) {
        Some(best) => format!("did you mean `{best}`?"),
        None => "use an IANA zone name such as Europe/Berlin or Asia/Shanghai".into(),
    }
}
