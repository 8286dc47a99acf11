//! The routine file the `schedule` tool writes: a header comment saying who made it and when,
//! `created_by: agent`, and the routine's keys. Every text value is written as a JSON string,
//! which YAML reads as a double-quoted scalar, so nothing a model writes can change the shape
//! of the file.

use std::fmt::Write as _;

use chrono::{DateTime, FixedOffset};

use crate::config::Autonomy;

/// When a created routine fires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum When {
    Cron { expr: String, timezone: Option<String> },
    Every(String),
    At(DateTime<FixedOffset>),
}

/// Everything a created routine file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRoutine {
    pub name: String,
    pub prompt: String,
    pub when: When,
    pub autonomy: Autonomy,
    pub tools: Vec<String>,
    pub commands: Vec<String>,
    pub deliver_file: Option<String>,
    pub deliver_mail: Vec<String>,
}

fn quoted(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

fn list(items: &[String]) -> String {
    format!("[{}]", items.iter().map(|i| quoted(i)).collect::<Vec<_>>().join(", "))
}

/// The first line of the prompt, short, as the routine's description.
fn description(prompt: &str) -> String {
    let line = prompt.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    if line.chars().count() > 80 { format!("{}…", line.chars().take(79).collect::<String>()) } else { line.into() }
}

/// The text of the file. `creator` says who asked (`routines chat`, routine `x`), `now` when.
pub fn render(r: &NewRoutine, creator: &str, now: DateTime<chrono_tz::Tz>) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Created by the agent ({creator}) with the schedule tool on {}.",
        now.format("%Y-%m-%d %H:%M %:z")
    );
    s.push_str("# The schedule tool may change or remove it because of `created_by: agent`;\n");
    s.push_str("# delete that line to make this routine your own.\n");
    let _ = writeln!(s, "name: {}", r.name);
    let _ = writeln!(s, "description: {}", quoted(&description(&r.prompt)));
    s.push_str("created_by: agent\non:\n");
    match &r.when {
        When::Cron { expr, timezone } => {
            let _ = writeln!(s, "  - cron: {}", quoted(expr));
            if let Some(z) = timezone {
                let _ = writeln!(s, "    timezone: {}", quoted(z));
            }
        }
        When::Every(every) => {
            let _ = writeln!(s, "  - every: {}", quoted(every));
        }
        When::At(at) => {
            let _ = writeln!(s, "  - at: {}", quoted(&at.to_rfc3339()));
        }
    }
    let _ = writeln!(s, "prompt: {}", quoted(&r.prompt));
    let _ = writeln!(s, "agent:\n  autonomy: {}\n  tools: {}", r.autonomy.as_str(), list(&r.tools));
    if !r.commands.is_empty() {
        let _ = writeln!(s, "  allow_commands: {}", list(&r.commands));
    }
    if r.deliver_file.is_some() || !r.deliver_mail.is_empty() {
        s.push_str("deliver:\n");
        if let Some(path) = &r.deliver_file {
            let _ = writeln!(s, "  - file: {{ path: {} }}", quoted(path));
        }
        if !r.deliver_mail.is_empty() {
            let _ = writeln!(s, "  - mail: {{ to: {} }}", list(&r.deliver_mail));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn writes_a_header_and_quotes_every_value() {
        let zone: chrono_tz::Tz = "Asia/Shanghai".parse().unwrap();
        let now = zone.with_ymd_and_hms(2026, 11, 22, 14, 3, 0).unwrap();
        let at = DateTime::parse_from_rfc3339("2026-11-23T09:00:00+08:00").unwrap();
        let r = NewRoutine {
            name: "check-release".into(),
            prompt: "Remind me: check the \"release\" branch.\nkey: value".into(),
            when: When::At(at),
            autonomy: Autonomy::Supervised,
            tools: vec!["shell".into()],
            commands: vec!["git".into()],
            deliver_file: Some("reminders/{{ routine.name }}.md".into()),
            deliver_mail: vec!["me@example.com".into()],
        };
        assert_eq!(
            render(&r, "routines chat", now),
            "# Created by the agent (routines chat) with the schedule tool on 2026-11-22 14:03 +08:00.\n\
             # The schedule tool may change or remove it because of `created_by: agent`;\n\
             # delete that line to make this routine your own.\n\
             name: check-release\n\
             description: \"Remind me: check the \\\"release\\\" branch.\"\n\
             created_by: agent\n\
             on:\n  - at: \"2026-11-23T09:00:00+08:00\"\n\
             prompt: \"Remind me: check the \\\"release\\\" branch.\\nkey: value\"\n\
             agent:\n  autonomy: supervised\n  tools: [\"shell\"]\n  allow_commands: [\"git\"]\n\
             deliver:\n  - file: { path: \"reminders/{{ routine.name }}.md\" }\n  - mail: { to: [\"me@example.com\"] }\n"
        );
        let cron = NewRoutine {
            when: When::Cron { expr: "0 9 * * 1-5".into(), timezone: Some("Europe/Berlin".into()) },
            tools: vec![],
            commands: vec![],
            deliver_file: None,
            deliver_mail: vec![],
            ..r
        };
        let text = render(&cron, "routine `daily`", now);
        assert!(text.contains("on:\n  - cron: \"0 9 * * 1-5\"\n    timezone: \"Europe/Berlin\"\n"), "{text}");
        assert!(text.ends_with("agent:\n  autonomy: supervised\n  tools: []\n"), "{text}");
    }
}
