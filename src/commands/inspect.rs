//! `list`, `next`, `history`, `show`: reading routines and run history.

use chrono::{DateTime, SecondsFormat, Utc};
use chrono_tz::Tz;
use routines::config::Config;
use routines::routine::schedule::next_fires;
use routines::routine::{LoadedRoutines, fired_by};
use routines::status::format::first_line;
use routines::store::{DeliveryStatus, RunFilter, RunRow, RunStatus, Store};
use serde_json::{Value, json};

use super::{find, print_json, progress, recorded, table};
use crate::app::{Error, open_store, routines, style};

fn ts<Tz: chrono::TimeZone>(t: &DateTime<Tz>) -> String
where
    Tz::Offset: std::fmt::Display,
{
    t.to_rfc3339_opts(SecondsFormat::Secs, false)
}

pub fn list(config: &Config, json_out: bool) -> Result<(), Error> {
    let loaded = routines(config);
    let store = open_store(config)?;
    let now = Utc::now();
    let counts = store.skip_counts()?;
    let paused = store.paused_routines()?;
    let mut rows = Vec::new();
    let mut items = Vec::new();
    for r in &loaded.routines {
        // A disabled routine does not fire.
        let next =
            if r.spec.enabled && !paused.contains(&r.name) { next_fires(r, now, 1).into_iter().next() } else { None };
        let last = store.last_status(&r.name)?;
        let triggers = r.trigger_kinds();
        let c = counts.get(&r.name).copied().unwrap_or_default();
        items.push(json!({
            "name": r.name,
            "enabled": r.spec.enabled,
            "paused": paused.contains(&r.name),
            "triggers": triggers,
            "next_fire": next.as_ref().map(|f| ts(&f.at)),
            "next_fire_zone": next.as_ref().map(|f| f.at.timezone().name()),
            "last_status": last.map(|s| s.as_str()),
            "skipped": c.skipped,
            "missed": c.missed,
        }));
        rows.push(vec![
            r.name.clone(),
            match (r.spec.enabled, paused.contains(&r.name)) {
                (false, _) => "no".into(),
                (true, true) => "paused".into(),
                (true, false) => "yes".into(),
            },
            triggers.join(", "),
            next.map_or_else(
                || "-".into(),
                |f| format!("{} ({})", f.at.format("%Y-%m-%d %H:%M:%S %:z"), f.at.timezone().name()),
            ),
            last.map_or_else(|| "-".into(), |s| s.as_str().to_string()),
            c.skipped.to_string(),
            c.missed.to_string(),
        ]);
    }
    if json_out {
        print_json(&Value::Array(items))?;
    } else if rows.is_empty() {
        eprintln!("no routines in {}", config.routines_dir.display());
    } else {
        outln!("{}", table(&["NAME", "ENABLED", "TRIGGERS", "NEXT FIRE", "LAST STATUS", "SKIPPED", "MISSED"], &rows))?;
    }
    if !loaded.diagnostics.is_empty() {
        eprintln!("warning: {} problem(s) in routine files; see `routines validate`", loaded.diagnostics.len());
    }
    Ok(())
}

pub fn next(config: &Config, name: &str, n: usize, json_out: bool) -> Result<(), Error> {
    let loaded = routines(config);
    let r = find(&loaded, name)?;
    let fires = next_fires(r, Utc::now(), n.max(1));
    if !r.spec.enabled {
        eprintln!("note: `{name}` is disabled; it fires at these times once `enabled: true` is set");
    }
    if json_out {
        let items: Vec<Value> =
            fires.iter().map(|f| json!({"at": ts(&f.at), "zone": f.at.timezone().name(), "trigger": f.kind})).collect();
        print_json(&Value::Array(items))?;
    } else if fires.is_empty() {
        eprintln!("`{name}` has no upcoming time triggers (it runs by hand, on files or webhooks)");
    } else {
        for f in fires {
            outln!("{} ({})  {}", f.at.format("%Y-%m-%d %H:%M:%S %:z"), f.at.timezone().name(), f.kind)?;
        }
    }
    Ok(())
}

/// A run as `history --json` shows it; times in the engine's zone, with what it took and cost.
fn run_json(r: &RunRow, tz: &chrono_tz::Tz) -> Value {
    let local = |t: &DateTime<Utc>| ts(&t.with_timezone(tz));
    json!({
        "run_id": r.id,
        "routine": r.routine,
        "status": r.status.as_str(),
        "trigger": r.trigger,
        "scheduled_for": r.scheduled_for.as_ref().map(local),
        "started_at": r.started_at.as_ref().map(local),
        "finished_at": r.finished_at.as_ref().map(local),
        "error": r.error,
        "duration_ms": took(r).map(|d| d.num_milliseconds()),
        "model_calls": r.iterations,
        "tokens": r.prompt_tokens + r.completion_tokens,
        "prompt_tokens": r.prompt_tokens,
        "completion_tokens": r.completion_tokens,
    })
}

/// How long a finished run took.
fn took(r: &RunRow) -> Option<chrono::TimeDelta> {
    Some(r.finished_at? - r.started_at?)
}

pub fn history(
    config: &Config,
    name: Option<&str>,
    limit: usize,
    status: Option<&str>,
    json_out: bool,
) -> Result<(), Error> {
    let status = match status {
        None => None,
        Some(s) => Some(s.parse::<RunStatus>().map_err(|_| Error::UnknownStatus(s.into()))?),
    };
    let store = open_store(config)?;
    let loaded = routines(config);
    if let Some(name) = name {
        recorded(&loaded, &store, name)?;
    }
    let runs = store.list_runs(&RunFilter { routine: name, status, limit })?;
    if json_out {
        print_json(&Value::Array(runs.iter().map(|r| run_json(r, &config.timezone)).collect()))?;
        return Ok(());
    }
    if runs.is_empty() {
        eprintln!("no runs yet");
        return Ok(());
    }
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            vec![
                r.id.to_string(),
                r.routine.clone().unwrap_or_default(),
                r.status.as_str().into(),
                r.trigger.clone(),
                r.started_at.map_or_else(|| "-".into(), |t| zoned(t, zone_of(config, &loaded, r))),
                took(r).map_or_else(|| "-".into(), |d| progress::took(d.to_std().unwrap_or_default())),
                first_line(r.error.as_deref().unwrap_or(""), ERROR_WIDTH),
            ]
        })
        .collect();
    outln!("{}", table(&["RUN", "ROUTINE", "STATUS", "TRIGGER", "STARTED", "TOOK", "ERROR"], &rows))?;
    Ok(())
}

/// The most of an error's first line that `history` shows; a longer one ends with `…`.
const ERROR_WIDTH: usize = 60;

/// The zone a run's times are shown in: its routine's, the engine's for a heartbeat or a
/// greeting, UTC for a routine whose file is gone.
fn zone_of(config: &Config, loaded: &LoadedRoutines, r: &RunRow) -> Tz {
    match &r.routine {
        Some(name) => loaded.get(name).map_or(Tz::UTC, |routine| routine.zone),
        None => config.timezone,
    }
}

/// `t` in `zone`, with the zone shown: `2026-12-01 09:00:00 CET`, `2026-12-01 08:00:00 UTC`.
fn zoned(t: DateTime<Utc>, zone: Tz) -> String {
    t.with_timezone(&zone).format("%Y-%m-%d %H:%M:%S %Z").to_string()
}

/// The run `what` names: a run id, `last` (the newest run) or a routine's name (its newest run).
fn pick(config: &Config, store: &Store, what: &str) -> Result<i64, Error> {
    if let Ok(id) = what.parse::<i64>() {
        return Ok(id);
    }
    let routine = if what == "last" {
        None
    } else {
        recorded(&routines(config), store, what)?;
        Some(what)
    };
    let newest = store.list_runs(&RunFilter { routine, status: None, limit: 1 })?;
    newest.first().map(|r| r.id).ok_or_else(|| Error::NoRuns { routine: routine.map(str::to_string) })
}

/// A tool call's arguments as JSON when they parse, else as the text recorded.
fn arguments(text: Option<&str>) -> Value {
    match text {
        None => Value::Null,
        Some(t) => serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.to_string())),
    }
}

pub fn show(config: &Config, what: &str, json_out: bool) -> Result<(), Error> {
    let store = open_store(config)?;
    let run_id = pick(config, &store, what)?;
    let Some(run) = store.get_run(run_id)? else {
        return Err(Error::NoRun(run_id));
    };
    let detail = store.run_detail(run_id)?.unwrap_or_default();
    let events = store.run_events(run_id)?;
    let deliveries = store.deliveries(run_id)?;
    if json_out {
        let mut v = run_json(&run, &config.timezone);
        v["kind"] = json!(run.kind.as_str());
        v["output"] = json!(run.output);
        v["prompt"] = json!(detail.prompt);
        v["attempt"] = json!(detail.attempt);
        v["earlier_attempts"] = json!(detail.earlier_attempts);
        v["trigger_context"] =
            detail.trigger_context.as_deref().and_then(|t| serde_json::from_str(t).ok()).unwrap_or(Value::Null);
        v["tokens"] = json!({"prompt": run.prompt_tokens, "completion": run.completion_tokens});
        v["iterations"] = json!(run.iterations);
        v["events"] = Value::Array(
            events
                .iter()
                .map(|e| {
                    json!({
                        "seq": e.seq, "at": ts(&e.at.with_timezone(&config.timezone)), "kind": e.kind, "tool": e.tool, "status": e.status,
                        "arguments": arguments(e.arguments.as_deref()), "detail": e.detail, "prompt_tokens": e.prompt_tokens,
                        "completion_tokens": e.completion_tokens, "duration_ms": e.duration_ms,
                    })
                })
                .collect(),
        );
        v["deliveries"] = Value::Array(
            deliveries
                .iter()
                .map(|d| json!({"target": d.target, "kind": d.kind, "status": d.status, "error": d.error, "attempts": d.attempts, "on_failure": d.on_failure, "permanent": d.permanent}))
                .collect(),
        );
        print_json(&v)?;
        return Ok(());
    }
    let tz = &config.timezone;
    let when = |t: Option<DateTime<Utc>>| {
        t.map_or_else(|| "-".into(), |t| t.with_timezone(tz).format("%Y-%m-%d %H:%M:%S %:z").to_string())
    };
    let status = run.status.as_str();
    outln!(
        "run {}  {}  {}",
        run.id,
        run.routine.as_deref().unwrap_or(run.kind.as_str()),
        style::status(status, status)
    )?;
    outln!("trigger:   {}, attempt {}", fired_by(&run.trigger), detail.attempt)?;
    for earlier in &detail.earlier_attempts {
        outln!("earlier:   {earlier}")?;
    }
    if let Some(s) = run.scheduled_for {
        outln!("scheduled: {}", when(Some(s)))?;
    }
    outln!("started:   {}\nfinished:  {}", when(run.started_at), when(run.finished_at))?;
    outln!(
        "tokens:    {} prompt, {} completion, {} model call(s)",
        run.prompt_tokens,
        run.completion_tokens,
        run.iterations
    )?;
    if let Some(data) = detail.trigger_context.as_deref().and_then(trigger_data) {
        outln!("\ntrigger data:\n{data}")?;
    }
    if let Some(p) = &detail.prompt {
        outln!("\nprompt:\n{}", indent(p))?;
    }
    outln!("\nevents:")?;
    for e in &events {
        let what = match (&e.tool, &e.arguments) {
            (Some(t), Some(a)) => format!("{t} {a}"),
            _ => e.detail.clone().unwrap_or_default(),
        };
        let tokens = match (e.prompt_tokens, e.completion_tokens) {
            (Some(p), Some(c)) => format!("  [{p}+{c} tokens]"),
            _ => String::new(),
        };
        outln!(
            "  {:>3}. {:<10} {:<12} {}ms  {}{}",
            e.seq,
            e.kind,
            e.status,
            e.duration_ms,
            first_line(&what, 100),
            tokens
        )?;
    }
    if !deliveries.is_empty() {
        outln!("\ndeliveries:")?;
        // With no SMTP server configured, a delivered mail only reached the outbox folder.
        let outbox_only = routines::delivery::configured_smtp(config).is_none();
        for d in &deliveries {
            let err = d.error.as_deref().map(|e| format!("  ({e})")).unwrap_or_default();
            let status = d.status.as_str();
            let words = match d.status {
                DeliveryStatus::Delivered if outbox_only && d.kind == "mail" => {
                    "queued in the outbox (no SMTP configured)"
                }
                _ => status,
            };
            outln!("  {} {}  {}{}", d.kind, d.target, style::status(status, words), err)?;
        }
    }
    if let Some(o) = &run.output {
        outln!("\noutput:\n{}", indent(o))?;
    }
    if let Some(e) = &run.error {
        outln!("\nerror:\n{}", indent(e))?;
    }
    Ok(())
}

/// Lines of trigger data `show` prints, and characters of each, before cutting it with a mark;
/// `show --json` has it all.
const TRIGGER_DATA_LINES: usize = 40;
const TRIGGER_DATA_WIDTH: usize = 200;

/// What the trigger gave the run beyond its kind (a webhook's or `run --body`'s body and
/// headers, a file event's path), as indented JSON cut at [`TRIGGER_DATA_LINES`] lines of
/// [`TRIGGER_DATA_WIDTH`] characters; `None` when it gave nothing more.
fn trigger_data(context: &str) -> Option<String> {
    let Ok(Value::Object(mut fields)) = serde_json::from_str::<Value>(context) else { return None };
    fields.remove("kind");
    if fields.is_empty() {
        return None;
    }
    let text = serde_json::to_string_pretty(&Value::Object(fields)).ok()?;
    let lines: Vec<String> = text.lines().map(|l| cut(l, TRIGGER_DATA_WIDTH)).collect();
    let mut shown = indent(&lines[..lines.len().min(TRIGGER_DATA_LINES)].join("\n"));
    if let n @ 1.. = lines.len().saturating_sub(TRIGGER_DATA_LINES) {
        shown.push_str(&format!("\n  … {n} more line(s); `routines show --json` has all of it"));
    }
    Some(shown)
}

/// `line` cut to `max` characters with an ellipsis.
fn cut(line: &str, max: usize) -> String {
    match line.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n")
}
