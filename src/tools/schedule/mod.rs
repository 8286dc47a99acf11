//! `schedule`: the agent's own routines (SPEC §8). `add` writes `routines_dir/NAME.yaml`, marked
//! `created_by: agent` with a header saying who made it and when, after checking it with the
//! routine loader that checks every hand-written file; `list` shows the routines; `remove`
//! deletes only routines marked `created_by: agent`.
//!
//! A created routine gets no tool or command the creating session lacked: at most the tools
//! the session has (never `schedule` itself, so routines cannot breed), the creating
//! routine's `allow_commands` when it gets `shell` (a chat has none: a person approved each
//! command there), and the session's autonomy, written out so a later change of the engine's
//! default does not widen it. By default it gets no tools: its reply is its output.
//!
//! `at` takes a local date and time in the user's zone (`timezone`, else the engine's), which
//! is what a model writes for "tomorrow at 9"; the file holds it with its offset. The daemon
//! picks a new file up by hot reload; without a daemon the reply says how to start one.

mod bounds;
mod daemon;
mod file;
mod when;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use chrono::Utc;
use chrono_tz::Tz;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Tool, ToolContext, ToolError, tool_names, write_atomic};
use crate::config::Config;
use crate::diag::{Diagnostics, did_you_mean};
use crate::policy::{CallInfo, Effect};
use crate::routine::{CreatedBy, LoadedRoutines, Routine, RoutineFile, load_all, load_one, schedule};
pub use bounds::own_recipients;
pub use daemon::daemon_running;
use file::{NewRoutine, When};
pub use when::{AtError, parse_at};

/// What the tool needs from the session that uses it.
#[derive(Debug, Clone)]
pub struct ScheduleScope {
    /// The engine config: where routines go, the engine's zone, what the loader checks.
    pub config: Arc<Config>,
    /// Who asks, for the header: `routines chat`, routine `NAME`.
    pub creator: String,
    /// Commands the session has approved in advance (a routine's `agent.allow_commands`).
    pub commands: Vec<String>,
    /// The creating routine's own mail recipients ([`own_recipients`]), which a routine it
    /// creates may mail besides `mail.allowed_recipients`; none in chat.
    pub recipients: Vec<String>,
}

/// The `schedule` tool of one session.
pub struct Schedule {
    scope: Arc<ScheduleScope>,
}

impl Schedule {
    pub fn new(scope: ScheduleScope) -> Self {
        Schedule { scope: Arc::new(scope) }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Add,
    List,
    Remove,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleArgs {
    /// add, list or remove.
    pub action: Action,
    /// add, remove: the routine's name (lowercase letters, digits, - and _).
    pub name: Option<String>,
    /// add: the instruction run each time it fires, e.g. "Remind the user to water the plants."
    pub prompt: Option<String>,
    /// add, only for a task that repeats on the calendar ("every weekday at 9"): a cron expression.
    pub cron: Option<String>,
    /// add, only for a task that repeats at an interval ("every 2 hours"): e.g. "30m", "2h", "1d".
    pub every: Option<String>,
    /// add, for something that happens once ("tomorrow at 9"): the local date and time, YYYY-MM-DDTHH:MM.
    pub at: Option<String>,
    /// add: IANA time zone of cron and at; default the user's.
    pub timezone: Option<String>,
    /// add: a file each result is written to (a path template).
    pub deliver_file: Option<String>,
    /// add: mail addresses each result is sent to.
    #[serde(default, deserialize_with = "one_or_many")]
    pub deliver_mail: Option<Vec<String>>,
    /// add: only the tools the task needs when it runs, from your own (a reminder needs none).
    pub tools: Option<Vec<String>>,
}

/// A list written as a single string too (small models send `"a@b.c"` for `["a@b.c"]`).
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match Option::<OneOrMany>::deserialize(d)? {
        None => None,
        Some(OneOrMany::One(one)) => Some(vec![one]),
        Some(OneOrMany::Many(many)) => Some(many),
    })
}

/// The name a routine gets: the one given, made a valid name (lowercase, `-` for spaces), else
/// one made from the first words of the prompt that say what it does.
fn name_of(args: &ScheduleArgs) -> Option<String> {
    const FILLER: [&str; 25] = [
        "remind", "me", "to", "the", "a", "an", "please", "of", "and", "my", "i", "you", "us", "about", "every", "at",
        "on", "in", "for", "that", "this", "it", "user", "tell", "say",
    ];
    let words = |text: &str, skip: &[&str]| -> String {
        let words: Vec<String> = text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .map(str::to_ascii_lowercase)
            .filter(|w| !skip.contains(&w.as_str()))
            .collect();
        let mut name = String::new();
        for w in words {
            if name.len() + w.len() + 1 > 40 {
                break;
            }
            if !name.is_empty() {
                name.push('-');
            }
            name.push_str(&w);
        }
        name
    };
    match given(&args.name) {
        Some(n) => Some(words(n, &[])).filter(|n| !n.is_empty()),
        None => {
            let prompt = given(&args.prompt)?;
            let short: String = words(prompt, &FILLER).split('-').take(4).collect::<Vec<_>>().join("-");
            Some(if short.is_empty() { "reminder".into() } else { short })
        }
    }
}

/// A text argument that was given: present and not blank (small models send "" for unused ones).
fn given(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

#[async_trait]
impl Tool for Schedule {
    const NAME: &'static str = "schedule";
    type Args = ScheduleArgs;

    fn description(&self) -> &'static str {
        "Create (add), list or remove routines that run later on their own. Something that happens once (\"remind me tomorrow at 9\") gets `at`; only a repeating task gets `cron` or `every`."
    }

    fn effect(&self) -> Effect {
        Effect::Mutating
    }

    fn info(&self, args: &ScheduleArgs) -> CallInfo {
        match args.action {
            Action::List => CallInfo { effect: Some(Effect::ReadOnly), ..CallInfo::new("list", Self::NAME) },
            Action::Remove => CallInfo::new(format!("remove {}", given(&args.name).unwrap_or("?")), Self::NAME),
            Action::Add => {
                let when: Vec<String> = [("at", &args.at), ("cron", &args.cron), ("every", &args.every)]
                    .iter()
                    .filter_map(|(k, v)| given(v).map(|v| format!("{k} {v}")))
                    .collect();
                let name = name_of(args).unwrap_or_else(|| "?".into());
                let tools = args.tools.as_deref().unwrap_or_default();
                let tools = if tools.is_empty() { String::new() } else { format!("; tools: {}", tools.join(", ")) };
                let mail = args.deliver_mail.as_deref().unwrap_or_default();
                let mail = if mail.is_empty() { String::new() } else { format!("; mail: {}", mail.join(", ")) };
                CallInfo::new(format!("add {name} ({}{tools}{mail})", when.join(", ")), Self::NAME)
            }
        }
    }

    async fn call(&self, args: ScheduleArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let scope = self.scope.clone();
        let ctx = ctx.clone();
        tokio::task::spawn_blocking(move || match args.action {
            Action::Add => add(&scope, &ctx, &args),
            Action::List => Ok(list(&scope)),
            Action::Remove => remove(&scope, &args),
        })
        .await
        .map_err(|e| ToolError::System(format!("the schedule tool failed: {e}")))?
    }
}

fn loaded(config: &Config) -> LoadedRoutines {
    let inline = config.source.as_ref().map(|s| (config.inline_routines.as_slice(), s));
    load_all(config, inline, &tool_names())
}

/// The file the tool writes for `name`, relative to the config folder for messages.
fn file_of(config: &Config, name: &str) -> (PathBuf, String) {
    let path = config.routines_dir.join(format!("{name}.yaml"));
    let shown = path.strip_prefix(&config.base_dir).unwrap_or(&path).display().to_string();
    (path, shown)
}

/// Whether the routine file at `path` says `created_by: agent` (`None`: it cannot be read).
fn created_by_agent(path: &Path) -> Option<bool> {
    let text = std::fs::read_to_string(path).ok()?;
    let spec = crate::yaml::from_str::<RoutineFile>(path, &text).ok()?.value;
    Some(spec.created_by == Some(CreatedBy::Agent))
}

fn add(scope: &ScheduleScope, ctx: &ToolContext, args: &ScheduleArgs) -> Result<String, ToolError> {
    let config = &scope.config;
    let invalid = |m: String| ToolError::InvalidArgs(m);
    let prompt =
        given(&args.prompt).ok_or_else(|| invalid("add needs `prompt`: the task to do each time it fires".into()))?;
    let existing = loaded(config);
    let name = match (given(&args.name), name_of(args)) {
        (_, None) => return Err(invalid("add needs `name`, e.g. \"check-release\"".into())),
        (Some(_), Some(name)) => name,
        // A name of its own making must not replace another routine: the first free one.
        (None, Some(base)) => (1..)
            .map(|i| if i == 1 { base.clone() } else { format!("{base}-{i}") })
            .find(|n| {
                existing.get(n).is_none()
                    && !config.routines_dir.join(format!("{n}.yaml")).exists()
                    && !config.routines_dir.join(format!("{n}.yml")).exists()
            })
            .unwrap_or(base),
    };
    let name = name.as_str();
    let zone = match given(&args.timezone) {
        None => config.timezone,
        Some(z) => z.parse::<Tz>().map_err(|_| {
            let hint = did_you_mean(z, chrono_tz::TZ_VARIANTS.iter().map(|tz| tz.name()))
                .map_or_else(|| "use an IANA name such as Europe/Berlin".into(), |b| format!("did you mean `{b}`?"));
            invalid(format!("unknown time zone `{z}`; {hint}"))
        })?,
    };
    let now = Utc::now();
    let when = match (given(&args.cron), given(&args.every), given(&args.at)) {
        (Some(expr), None, None) => When::Cron { expr: expr.into(), timezone: given(&args.timezone).map(Into::into) },
        (None, Some(every), None) => When::Every(every.into()),
        (None, None, Some(at)) => When::At(parse_at(at, zone, now).map_err(|e| invalid(e.to_string()))?),
        (None, None, None) => {
            let tomorrow = (now.with_timezone(&zone) + chrono::Duration::days(1)).format("%Y-%m-%d");
            return Err(invalid(format!(
                "add needs a time: call schedule again with `at` for something that happens once (e.g. \"{tomorrow}T09:00\" for tomorrow at 9), or `cron` or `every` for a task that repeats"
            )));
        }
        _ => {
            return Err(invalid(
                "give only one of `at` (once, e.g. a reminder), `cron` and `every` (repeating), and leave the others out".into(),
            ));
        }
    };

    // At most what the creating session has, and never this tool.
    let tools: Vec<String> = args.tools.clone().unwrap_or_default();
    for tool in &tools {
        if tool == Schedule::NAME {
            return Err(ToolError::Refused(
                "a routine made with the schedule tool cannot get the schedule tool itself".into(),
            ));
        }
        if !ctx.facts.tools.contains(tool) {
            return Err(ToolError::Refused(format!(
                "the routine cannot get `{tool}`: it may only get tools you have ({})",
                ctx.facts.tools.join(", ")
            )));
        }
    }
    let commands = if tools.iter().any(|t| t == "shell") { scope.commands.clone() } else { Vec::new() };
    let deliver_mail: Vec<String> =
        args.deliver_mail.iter().flatten().map(|a| a.trim().to_string()).filter(|a| !a.is_empty()).collect();
    bounds::check_recipients(scope, &deliver_mail)?;
    let routine = NewRoutine {
        name: name.into(),
        prompt: prompt.into(),
        when,
        autonomy: ctx.policy.autonomy,
        tools,
        commands,
        deliver_file: given(&args.deliver_file).map(Into::into),
        deliver_mail,
    };

    // Only a routine the agent made may be replaced.
    let (path, shown) = file_of(config, name);
    let replace = match created_by_agent(&path) {
        Some(true) => true,
        Some(false) | None if path.exists() => {
            return Err(ToolError::Refused(format!(
                "{shown} exists and was not made by the agent; choose another name (the schedule tool never changes it)"
            )));
        }
        _ => false,
    };
    bounds::check_count(config, replace.then_some(path.as_path()))?;
    if let Some(other) = existing.get(name).filter(|r| r.file != Path::new(&shown) && r.file != path) {
        return Err(ToolError::Refused(format!(
            "a routine named `{name}` is already defined in {}; choose another name",
            other.file.display()
        )));
    }
    if config.routines_dir.join(format!("{name}.yml")).exists() {
        return Err(ToolError::Refused(format!("a routine file {name}.yml exists; choose another name")));
    }

    let text = file::render(&routine, &scope.creator, now.with_timezone(&zone));
    let checked = load_one(config, &path, &text, &tool_names()).map_err(|d| rejected(&d))?;
    let written = if replace { write_atomic(&path, text.as_bytes()) } else { write_new(&path, text.as_bytes()) };
    written.map_err(|e| ToolError::System(format!("cannot write {shown}: {e}")))?;

    let verb = if replace { "Replaced" } else { "Scheduled" };
    let mut out = format!("{verb} routine `{name}` ({shown}): {}.", fires(&checked, &routine.when, zone));
    out.push_str(&match (&routine.deliver_file, routine.deliver_mail.is_empty()) {
        (None, true) => format!(" It delivers nothing; its results are kept in `routines history {name}`."),
        (Some(f), true) => format!(" Each result is written to {f}."),
        (None, false) => format!(" Each result is mailed to {}.", routine.deliver_mail.join(", ")),
        (Some(f), false) => {
            format!(" Each result is written to {f} and mailed to {}.", routine.deliver_mail.join(", "))
        }
    });
    out.push_str(&daemon_note(config));
    Ok(out)
}

/// When a created routine fires, as the reply says it.
fn fires(routine: &Routine, when: &When, zone: Tz) -> String {
    // A one-shot time is shown in the zone it was given in; a repeating one in its trigger's.
    let z = if matches!(when, When::At(_)) { zone } else { routine.zone };
    let next = schedule::next_after(routine, Utc::now())
        .map(|t| format!("{} ({})", t.with_timezone(&z).format("%Y-%m-%d %H:%M %:z"), z.name()));
    match (when, next) {
        (When::At(_), Some(t)) => format!("once, at {t}"),
        (_, Some(t)) => format!("next at {t}"),
        (_, None) => "it has no time left to fire".into(),
    }
}

/// What the reply says about the daemon, which alone fires routines on their schedule.
fn daemon_note(config: &Config) -> String {
    if daemon_running(&config.data_dir) {
        " The running daemon picks it up within seconds.".into()
    } else {
        " No daemon is running, so nothing fires on schedule: start one with `routines daemon`.".into()
    }
}

/// The loader's problems with what would be written, for the model to fix its arguments.
fn rejected(d: &Diagnostics) -> ToolError {
    let problems: Vec<String> =
        d.0.iter()
            .map(|p| match &p.hint {
                Some(h) => format!("{} ({h})", p.message),
                None => p.message.clone(),
            })
            .collect();
    ToolError::InvalidArgs(format!("the routine would not be valid: {}", problems.join("; ")))
}

/// Writes a file that must not exist yet, atomically: a temporary file linked into place,
/// which fails if something appeared there meanwhile.
fn write_new(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().ok_or_else(|| std::io::Error::other("the path has no folder"))?;
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.new-{}-{:08x}", std::process::id(), rand::random::<u32>()));
    let result = (|| {
        use std::io::Write as _;
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
        std::fs::hard_link(&tmp, path)
    })();
    let _ = std::fs::remove_file(&tmp);
    result
}

fn list(scope: &ScheduleScope) -> String {
    let config = &scope.config;
    let loaded = loaded(config);
    if loaded.routines.is_empty() {
        return "There are no routines.".into();
    }
    let now = Utc::now();
    let mut lines: Vec<String> = loaded
        .routines
        .iter()
        .take(50)
        .map(|r| {
            let who = if r.spec.created_by == Some(CreatedBy::Agent) { "made by the agent" } else { "the user's" };
            let next = schedule::next_after(r, now).map_or_else(
                || "no next fire".to_string(),
                |t| format!("next {}", t.with_timezone(&r.zone).format("%Y-%m-%d %H:%M %:z")),
            );
            format!("- {} ({}; {}; {who})", r.name, r.trigger_kinds().join(", "), next)
        })
        .collect();
    if loaded.routines.len() > 50 {
        lines.push(format!("(and {} more)", loaded.routines.len() - 50));
    }
    format!("Routines (only those made by the agent can be removed):\n{}", lines.join("\n"))
}

fn remove(scope: &ScheduleScope, args: &ScheduleArgs) -> Result<String, ToolError> {
    let config = &scope.config;
    let name = given(&args.name).ok_or_else(|| ToolError::InvalidArgs("remove needs `name`".into()))?;
    let loaded = loaded(config);
    let path = match loaded.get(name) {
        Some(r) => config.base_dir.join(&r.file),
        None => file_of(config, name).0,
    };
    let shown = path.strip_prefix(&config.base_dir).unwrap_or(&path).display().to_string();
    let in_dir = path.parent().is_some_and(|d| d == config.routines_dir);
    match created_by_agent(&path) {
        Some(true) if in_dir => {}
        Some(_) | None if path.exists() || loaded.get(name).is_some() => {
            return Err(ToolError::Refused(format!(
                "routine `{name}` ({shown}) was not made by the agent; only the user may remove it"
            )));
        }
        _ => {
            let hint = match did_you_mean(name, loaded.names()) {
                Some(best) => format!("; did you mean `{best}`?"),
                None => String::new(),
            };
            return Err(ToolError::failed(format!("there is no routine named `{name}`{hint}")));
        }
    }
    std::fs::remove_file(&path).map_err(|e| ToolError::System(format!("cannot remove {shown}: {e}")))?;
    Ok(format!(
        "Removed routine `{name}` ({shown}).{}",
        if daemon_running(&config.data_dir) { " The running daemon drops it within seconds." } else { "" }
    ))
}

#[cfg(test)]
mod tests;
