//! Heartbeat check-ins (SPEC §7): every `heartbeat.every`, inside
//! `active_hours`, the agent goes through the checklist file with memory
//! recall and says only what needs attention. Outside active hours, and
//! with an empty or missing checklist, no model call is made: the beat is
//! recorded as skipped with the reason.

pub mod greeting;

use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, NaiveTime, Utc};
use tokio_util::sync::CancellationToken;

use crate::clock::{Clock, sleep_for};
use crate::config::{ActiveHours, Config, Duration};
use crate::engine::{Engine, EngineError, RunOptions, RunReport};
use crate::llm::Message;
use crate::routine::schedule::Every;
use crate::routine::{Overlap, Routine, RoutineFile, TriggerContext};
use crate::store::{NewRun, RunKind, RunOutcome, RunStatus};

/// The name heartbeat runs are recorded under (reserved in `routine`).
pub use crate::routine::reserved::HEARTBEAT as NAME;

/// Words a model adds around the ok token when all is well ("All good!
/// HEARTBEAT_OK"); a reply made only of these and the token is silent.
const CHATTER: &[&str] = &[
    "all",
    "good",
    "fine",
    "ok",
    "okay",
    "nothing",
    "to",
    "report",
    "everything",
    "is",
    "looks",
    "no",
    "issues",
    "attention",
    "needed",
    "needs",
    "here",
    "the",
    "checklist",
    "items",
    "are",
    "clear",
    "status",
    "done",
    "checked",
];

/// Whether a heartbeat reply means "nothing needs attention": the ok token,
/// also wrapped in punctuation or markdown, or with only all-is-well words
/// around it. A reply that says anything else is delivered.
pub fn is_ok(reply: &str, token: &str) -> bool {
    let token = token.trim();
    if token.is_empty() {
        return false;
    }
    let words: Vec<String> = reply
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let token_lower = token.to_lowercase();
    let mentions = words.iter().filter(|w| **w == token_lower).count();
    mentions >= 1 && words.iter().all(|w| *w == token_lower || CHATTER.contains(&w.as_str()))
}

/// Active hours as local times; a window whose end is before its start
/// crosses midnight (`22:00`–`06:00`), and one that ends when it starts
/// (`00:00`–`00:00`) is the whole day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start: NaiveTime,
    pub end: NaiveTime,
}

impl Window {
    pub fn parse(hours: &ActiveHours) -> Result<Window, String> {
        let time = |field: &str, text: &str| {
            NaiveTime::parse_from_str(text.trim(), "%H:%M")
                .map_err(|_| format!("heartbeat.active_hours.{field} `{text}` is not a time like 08:00"))
        };
        Ok(Window { start: time("start", &hours.start)?, end: time("end", &hours.end)? })
    }

    pub fn contains(&self, t: NaiveTime) -> bool {
        if self.start == self.end {
            true
        } else if self.start < self.end {
            self.start <= t && t < self.end
        } else {
            t >= self.start || t < self.end
        }
    }
}

/// Why a beat made no model call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Quiet {
    OutsideActiveHours { local: String, window: String },
    NoChecklist(PathBuf),
    EmptyChecklist(PathBuf),
}

impl std::fmt::Display for Quiet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Quiet::OutsideActiveHours { local, window } => {
                write!(f, "outside active hours ({window}); it is {local}: no model call")
            }
            Quiet::NoChecklist(p) => write!(f, "the checklist {} does not exist: no model call", p.display()),
            Quiet::EmptyChecklist(p) => write!(f, "the checklist {} is empty: no model call", p.display()),
        }
    }
}

/// The checklist file of the config (relative paths from the config's folder).
pub fn checklist_path(config: &Config) -> PathBuf {
    let p = &config.heartbeat.checklist;
    match config.file.as_ref().and_then(|f| f.parent()) {
        Some(dir) if p.is_relative() => dir.join(p),
        _ => p.clone(),
    }
}

/// What the next beat would do at `now`: the checklist text, or why it
/// stays quiet. `force` ignores active hours.
pub fn prepare(config: &Config, now: DateTime<Utc>, force: bool) -> Result<Result<String, Quiet>, String> {
    let hb = &config.heartbeat;
    if let (Some(hours), false) = (&hb.active_hours, force) {
        let window = Window::parse(hours)?;
        let local = now.with_timezone(&config.timezone);
        if !window.contains(local.time()) {
            return Ok(Err(Quiet::OutsideActiveHours {
                local: local.format("%H:%M %Z").to_string(),
                window: format!("{}–{} {}", hours.start, hours.end, config.timezone.name()),
            }));
        }
    }
    let path = checklist_path(config);
    match std::fs::read_to_string(&path) {
        Ok(text) if text.trim().is_empty() => Ok(Err(Quiet::EmptyChecklist(path))),
        Ok(text) => Ok(Ok(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Err(Quiet::NoChecklist(path))),
        Err(e) => Err(format!("cannot read the checklist {}: {e}", path.display())),
    }
}

/// The lean prompt of a beat. The checklist comes first and the ok token
/// last: a small model told early that it may answer the token answers it
/// without doing the checks.
fn prompt(checklist: &str, token: &str) -> String {
    format!(
        "Heartbeat check-in. Do these checks one at a time. Each check is one tool call; after its result, \
         go on with the next check.\n\n\
         {}\n\n\
         After the last check, reply briefly with only what needs the user's attention. \
         If nothing does, reply with exactly {token}.",
        checklist.trim_end()
    )
}

/// How much of one check's output the review sees, and of all of them.
const REVIEW_PER_CHECK: usize = 2000;
const REVIEW_TOTAL: usize = 8000;

/// The prompt of the review of an all-is-well beat: the checklist and what
/// each tool call of the beat returned (from the agent's `history`), and
/// one question. `None` when no tool returned anything to review. Results
/// of repeated and unknown calls are left out: they are the agent's own
/// notes, not what was checked.
pub fn review_prompt(checklist: &str, history: &[Message], token: &str) -> Option<String> {
    let mut seen = Vec::new();
    let mut results = String::new();
    for call in history.iter().flat_map(|m| &m.tool_calls) {
        let Some(output) = history.iter().find(|m| m.tool_call_id.as_deref() == Some(call.id.as_str())) else {
            continue;
        };
        let output = output.content.as_deref().unwrap_or("").trim();
        let key = (call.name.as_str(), call.arguments.as_str());
        if seen.contains(&key)
            || output.starts_with("You already called")
            || output.starts_with("[failed] unknown tool")
        {
            continue;
        }
        seen.push(key);
        let shown: String = output.chars().take(REVIEW_PER_CHECK).collect();
        let cut = if shown.len() < output.len() { "\n[… cut]" } else { "" };
        let block = format!("--- {} {} ---\n{shown}{cut}\n", call.name, call.arguments);
        if results.len() + block.len() > REVIEW_TOTAL {
            results.push_str("[… more results cut]\n");
            break;
        }
        results.push_str(&block);
    }
    if results.is_empty() {
        return None;
    }
    // Quoting lines is a task a small model does well; judging "does this
    // need attention" it does not (a 1.5B model said all was well next to
    // an ERROR line in most tries, and quoted it in all).
    Some(format!(
        "Checklist:\n{}\n\nResults of the checks:\n{results}---\n\n\
         Quote every line of the results that the checklist says to report, or that shows a problem it asks \
         about, one per line, and nothing else. If there is no such line, reply with exactly {token}.",
        checklist.trim_end()
    ))
}

/// The routine a beat runs as: the heartbeat's deliveries, the ok token as
/// the silent token, a fresh history each beat (so a long-running daemon's
/// prompt does not grow).
fn routine(config: &Config, checklist: &str) -> Routine {
    let hb = &config.heartbeat;
    let spec = RoutineFile {
        prompt: Some(prompt(checklist, &hb.ok_token)),
        silent_token: hb.ok_token.clone(),
        timeout: Duration::from_secs(10 * 60),
        overlap: Overlap::Skip,
        ..RoutineFile::default()
    };
    builtin_routine(config, NAME, spec)
}

/// A built-in routine (the heartbeat, greetings): `spec` named `name`, in
/// the engine's zone, delivering to `heartbeat.deliver`.
fn builtin_routine(config: &Config, name: &str, spec: RoutineFile) -> Routine {
    let spec = RoutineFile { name: Some(name.into()), deliver: config.heartbeat.deliver.clone(), ..spec };
    Routine {
        name: name.into(),
        file: config.file.clone().unwrap_or_default(),
        zone: config.timezone,
        spec,
        time_triggers: Vec::new(),
    }
}

/// One beat now. A quiet beat is recorded `skipped` with its reason and
/// calls no model; otherwise the agent runs and delivers unless all is well.
pub async fn beat(engine: &Engine, now: DateTime<Utc>, force: bool, trigger: &str) -> Result<RunReport, EngineError> {
    let checklist = match prepare(&engine.config, now, force).map_err(EngineError::Setup)? {
        Ok(text) => text,
        Err(quiet) => return record_quiet(engine, &quiet, trigger),
    };
    let routine = routine(&engine.config, &checklist);
    // The prompt is the checklist itself; `{{` in it is not a template.
    let mut routine = routine;
    routine.spec.prompt = Some(format!("{{% raw %}}{}{{% endraw %}}", routine.spec.prompt.unwrap_or_default()));
    let opts = RunOptions { kind: Some(RunKind::Heartbeat), checklist: Some(checklist), ..RunOptions::default() };
    let trigger = if trigger == "manual" { TriggerContext::Manual } else { TriggerContext::Heartbeat };
    engine.run(&routine, trigger, &opts, None).await
}

fn record_quiet(engine: &Engine, quiet: &Quiet, trigger: &str) -> Result<RunReport, EngineError> {
    let skipped = Skipped { kind: RunKind::Heartbeat, trigger, scheduled_for: None, reason: "quiet" };
    let run_id = skipped.record(engine, &quiet.to_string())?.ok_or_else(|| {
        EngineError::Setup("a quiet beat has no instant, so it cannot have been recorded already".into())
    })?;
    Ok(skipped_report(NAME, run_id, quiet.to_string()))
}

/// A built-in run that makes no model call, to record as `skipped`.
struct Skipped<'a> {
    kind: RunKind,
    trigger: &'a str,
    scheduled_for: Option<DateTime<Utc>>,
    reason: &'static str,
}

impl Skipped<'_> {
    /// Records it with `why`; `None` when its instant was recorded already.
    fn record(&self, engine: &Engine, why: &str) -> Result<Option<i64>, EngineError> {
        let name = if self.kind == RunKind::Greeting { greeting::NAME } else { NAME };
        let run_id = match engine.store.create_run(&NewRun {
            kind: self.kind,
            routine: Some(name.into()),
            trigger: self.trigger.into(),
            scheduled_for: self.scheduled_for,
            status: RunStatus::Queued,
        }) {
            Ok(id) => id,
            Err(crate::store::StoreError::DuplicateFire { .. }) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        engine.store.finish_run(
            run_id,
            &RunOutcome {
                status: RunStatus::Skipped,
                output: None,
                error: Some(why.into()),
                prompt_tokens: 0,
                completion_tokens: 0,
                iterations: 0,
                reason: Some(self.reason),
            },
        )?;
        Ok(Some(run_id))
    }
}

/// The report of a run that was skipped because of `why`.
fn skipped_report(name: &str, run_id: i64, why: String) -> RunReport {
    RunReport {
        run_id,
        routine: name.into(),
        status: RunStatus::Skipped,
        output: None,
        error: Some(why),
        deliveries: Vec::new(),
    }
}

/// Beats every `heartbeat.every` until `stop`, at multiples of it since the
/// epoch on the injected clock; a beat outside active hours or without a
/// checklist is recorded skipped and calls no model.
pub async fn run_loop(engine: Arc<Engine>, clock: Arc<dyn Clock>, stop: CancellationToken) {
    let every = Every::new(engine.config.heartbeat.every.get().max(std::time::Duration::from_secs(1)));
    loop {
        let Some(next) = every.next_after(clock.now()) else { return };
        while clock.now() < next {
            tokio::select! {
                _ = tokio::time::sleep(sleep_for(clock.now(), Some(next))) => {}
                _ = stop.cancelled() => return,
            }
        }
        match beat(&engine, clock.now(), false, "heartbeat").await {
            Ok(r) => tracing::info!(run_id = r.run_id, status = %r.status, "Heartbeat."),
            Err(e) => tracing::error!(error = %e, "The heartbeat could not run."),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ok_token_is_recognized_wrapped_or_with_all_is_well_chatter() {
        for reply in [
            "HEARTBEAT_OK",
            "  HEARTBEAT_OK.\n",
            "**HEARTBEAT_OK**",
            "`HEARTBEAT_OK`",
            "\"HEARTBEAT_OK\"",
            "heartbeat_ok",
            "All good! HEARTBEAT_OK",
            "HEARTBEAT_OK - everything looks fine, nothing to report.",
        ] {
            assert!(is_ok(reply, "HEARTBEAT_OK"), "{reply:?}");
        }
        for reply in [
            "",
            "All good.",
            "HEARTBEAT_OK except the disk is 95% full",
            "The backup failed last night. HEARTBEAT_OK",
            "HEARTBEAT_OKAY",
            "NO_HEARTBEAT_OK",
        ] {
            assert!(!is_ok(reply, "HEARTBEAT_OK"), "{reply:?}");
        }
    }

    #[test]
    fn active_hours_may_cross_midnight() {
        let t = |s: &str| NaiveTime::parse_from_str(s, "%H:%M").unwrap();
        let day = Window { start: t("08:00"), end: t("22:00") };
        assert!(day.contains(t("08:00")) && day.contains(t("21:59")));
        assert!(!day.contains(t("22:00")) && !day.contains(t("07:59")));
        let night = Window { start: t("22:00"), end: t("06:00") };
        assert!(night.contains(t("23:30")) && night.contains(t("05:59")));
        assert!(!night.contains(t("12:00")));
        let all_day = Window { start: t("07:00"), end: t("07:00") };
        assert!(all_day.contains(t("06:59")) && all_day.contains(t("07:00")) && all_day.contains(t("23:59")));
        let bad = ActiveHours { start: "8am".into(), end: "22:00".into() };
        assert_eq!(Window::parse(&bad).unwrap_err(), "heartbeat.active_hours.start `8am` is not a time like 08:00");
    }
}
