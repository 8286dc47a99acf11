//! Loading routines: one per file in `routines_dir`, and inline under
//! `routines:` in the engine config. Every problem in every file is
//! reported; one bad routine never hides the others.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono_tz::Tz;

use super::template::Templates;
use super::{Routine, RoutineFile, TimeTrigger, TriggerSpec};
use crate::config::{Config, DeliveryTarget};
use crate::diag::{Diagnostic, Diagnostics, did_you_mean};
use crate::yaml::{self, SourceMap};

/// The routines that loaded, and the problems of those that did not.
#[derive(Debug, Default)]
pub struct LoadedRoutines {
    pub routines: Vec<Routine>,
    pub diagnostics: Diagnostics,
}

impl LoadedRoutines {
    pub fn get(&self, name: &str) -> Option<&Routine> {
        self.routines.iter().find(|r| r.name == name)
    }

    pub fn names(&self) -> Vec<&str> {
        self.routines.iter().map(|r| r.name.as_str()).collect()
    }
}

/// Variables every template may read.
pub const CONTEXT_ROOTS: [&str; 5] = ["routine", "trigger", "now", "vars", "run"];
/// Variables delivery templates may read in addition.
pub const DELIVERY_ROOTS: [&str; 2] = ["output", "status"];

/// Loads every routine of `config`: files in `routines_dir` (`*.yaml`,
/// `*.yml`, sorted) and `inline` (from the config file, with its source).
pub fn load_all(config: &Config, inline: Option<(&[RoutineFile], &SourceMap)>, tool_names: &[&str]) -> LoadedRoutines {
    let templates = Templates::new(&config.templates_dir);
    let mut out = LoadedRoutines::default();
    let mut seen: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut candidates: Vec<(RoutineFile, Locator)> = Vec::new();

    if let Some((list, source)) = inline {
        for (i, r) in list.iter().enumerate() {
            candidates
                .push((r.clone(), Locator { source: source.clone(), prefix: vec!["routines".into(), i.to_string()] }));
        }
    }
    for path in routine_files(&config.routines_dir) {
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                out.diagnostics.push(Diagnostic::new(
                    &shown(&path, config),
                    1,
                    1,
                    format!("cannot read the file: {e}"),
                ));
                continue;
            }
        };
        match yaml::from_str::<RoutineFile>(&shown(&path, config), &text) {
            Ok(loaded) => candidates.push((loaded.value, Locator { source: loaded.source, prefix: Vec::new() })),
            Err(d) => out.diagnostics.extend(d),
        }
    }

    for (spec, at) in candidates {
        let before = out.diagnostics.len();
        let routine = check(spec, &at, config, &templates, tool_names, &mut out.diagnostics);
        let Some(routine) = routine.filter(|_| out.diagnostics.len() == before) else { continue };
        if let Some(first) = seen.get(&routine.name) {
            let (line, col) = at.locate(&["name"]);
            out.diagnostics.push(
                Diagnostic::new(&at.source.file, line, col, format!("routine `{}` is defined twice", routine.name))
                    .with_hint(format!("it is already defined in {}; names must be unique", first.display())),
            );
            continue;
        }
        seen.insert(routine.name.clone(), at.source.file.clone());
        out.routines.push(routine);
    }
    out.diagnostics = std::mem::take(&mut out.diagnostics).sorted();
    out
}

fn routine_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
        .collect();
    files.sort();
    files
}

/// The path as a person would type it: relative to the config folder.
fn shown(path: &Path, config: &Config) -> PathBuf {
    path.strip_prefix(&config.base_dir).map_or_else(|_| path.to_path_buf(), Path::to_path_buf)
}

/// Places diagnostics of one routine, wherever it was written.
struct Locator {
    source: SourceMap,
    prefix: Vec<String>,
}

impl Locator {
    fn path<'a>(&'a self, rel: &[&'a str]) -> Vec<&'a str> {
        self.prefix.iter().map(String::as_str).chain(rel.iter().copied()).collect()
    }

    fn locate(&self, rel: &[&str]) -> (usize, usize) {
        self.source.locate(&self.path(rel))
    }

    fn error(&self, rel: &[&str], message: impl Into<String>) -> Diagnostic {
        let (line, col) = self.locate(rel);
        Diagnostic::new(&self.source.file, line, col, message)
    }
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

fn check(
    spec: RoutineFile,
    at: &Locator,
    config: &Config,
    templates: &Templates,
    tool_names: &[&str],
    diags: &mut Diagnostics,
) -> Option<Routine> {
    let name = match &spec.name {
        Some(n) => n.clone(),
        None if at.prefix.is_empty() => {
            at.source.file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
        }
        None => {
            diags.push(at.error(&[], "an inline routine needs a `name`"));
            return None;
        }
    };
    if !valid_name(&name) {
        diags.push(
            at.error(&["name"], format!("`{name}` is not a valid routine name"))
                .with_hint("use lowercase letters, digits, `-` and `_`, starting with a letter or digit"),
        );
    }

    // The prompt.
    match (&spec.prompt, &spec.prompt_template) {
        (None, None) => diags.push(
            at.error(&[], format!("routine `{name}` has no prompt"))
                .with_hint("add `prompt: |` with the task, or `prompt_template: FILE` from the templates folder"),
        ),
        (Some(_), Some(_)) => diags.push(
            at.error(&["prompt_template"], "both `prompt` and `prompt_template` are set").with_hint("keep one of them"),
        ),
        (Some(p), None) => check_template(templates, at, &["prompt"], "prompt", p, &CONTEXT_ROOTS, diags),
        (None, Some(file)) => {
            if let Err(e) = templates.check_file(file) {
                diags.push(at.error(&["prompt_template"], e.to_string()));
            }
        }
    }

    // Triggers.
    let mut time_triggers = Vec::new();
    for (i, t) in spec.triggers.iter().enumerate() {
        let idx = i.to_string();
        if let Some(tt) = check_trigger(t, &["on", &idx], at, config.timezone, diags) {
            time_triggers.push(tt);
        }
    }

    // Agent overrides.
    let a = &spec.agent;
    if let Some(tools) = &a.tools {
        for (i, tool) in tools.iter().enumerate() {
            if !tool_names.contains(&tool.as_str()) {
                let idx = i.to_string();
                let hint = match did_you_mean(tool, tool_names.iter().copied()) {
                    Some(best) => format!("did you mean `{best}`?"),
                    None => format!("tools: {}", tool_names.join(", ")),
                };
                diags.push(at.error(&["agent", "tools", &idx], format!("unknown tool `{tool}`")).with_hint(hint));
            }
        }
    }
    if let Some(t) = a.temperature {
        if !(0.0..=2.0).contains(&t) {
            diags.push(
                at.error(&["agent", "temperature"], format!("temperature {t} is out of range"))
                    .with_hint("use a value from 0 to 2"),
            );
        }
    }
    if a.max_iterations == Some(0) {
        diags.push(at.error(&["agent", "max_iterations"], "max_iterations must be at least 1"));
    }
    for (i, c) in a.allow_commands.iter().enumerate() {
        if c.trim().is_empty() || c.contains(char::is_whitespace) {
            let idx = i.to_string();
            diags.push(
                at.error(&["agent", "allow_commands", &idx], format!("`{c}` is not a command name"))
                    .with_hint("list base commands such as git or ls; arguments are not part of an approval"),
            );
        }
    }
    if spec.retry.attempts == 0 {
        diags.push(at.error(&["retry", "attempts"], "attempts must be at least 1").with_hint("1 means no retry"));
    }
    if spec.timeout.get().is_zero() {
        diags.push(at.error(&["timeout"], "timeout must be longer than 0s"));
    }
    if spec.silent_token.trim().is_empty() {
        diags.push(at.error(&["silent_token"], "silent_token is empty"));
    }

    // Deliveries.
    for (list_key, list) in [("deliver", &spec.deliver), ("on_failure", &spec.on_failure.deliver)] {
        for (i, target) in list.iter().enumerate() {
            let idx = i.to_string();
            let base: Vec<&str> =
                if list_key == "deliver" { vec!["deliver", &idx] } else { vec!["on_failure", "deliver", &idx] };
            check_delivery(target, &base, at, templates, diags);
        }
    }

    let zone = spec
        .triggers
        .iter()
        .find_map(|t| t.timezone.as_deref().and_then(|z| z.parse::<Tz>().ok()))
        .unwrap_or(config.timezone);
    Some(Routine { name, file: at.source.file.clone(), zone, spec, time_triggers })
}

fn check_template(
    templates: &Templates,
    at: &Locator,
    rel: &[&str],
    label: &str,
    source: &str,
    roots: &[&str],
    diags: &mut Diagnostics,
) {
    if let Err(e) = templates.check(label, source) {
        diags.push(at.error(rel, e.to_string()));
        return;
    }
    if let Ok(vars) = templates.variables(label, source) {
        for v in vars {
            let root = v.split('.').next().unwrap_or(&v);
            if !roots.contains(&root) {
                let hint = match did_you_mean(root, roots.iter().copied()) {
                    Some(best) => format!("did you mean `{best}`?"),
                    None => format!("templates can use: {}", roots.join(", ")),
                };
                diags.push(
                    at.error(rel, format!("template `{label}` uses `{v}`, which is not defined")).with_hint(hint),
                );
            }
        }
    }
}

fn check_trigger(
    t: &TriggerSpec,
    rel: &[&str],
    at: &Locator,
    engine_zone: Tz,
    diags: &mut Diagnostics,
) -> Option<TimeTrigger> {
    let kinds: Vec<&str> = [
        t.cron.as_ref().map(|_| "cron"),
        t.every.as_ref().map(|_| "every"),
        t.at.as_ref().map(|_| "at"),
        t.file.as_ref().map(|_| "file"),
        t.webhook.as_ref().map(|_| "webhook"),
    ]
    .into_iter()
    .flatten()
    .collect();
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
        diags.push(at.error(&sub("timezone"), "`timezone` applies only to a cron trigger"));
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
        match super::schedule::parse_cron(expr) {
            Ok(cron) => return zone.map(|zone| TimeTrigger::Cron { expr: expr.clone(), cron: Box::new(cron), zone }),
            Err(e) => {
                diags.push(
                    at.error(&sub("cron"), format!("invalid cron expression `{expr}`: {e}"))
                        .with_hint("5 fields (minute hour day-of-month month day-of-week), 6 with seconds first, or @hourly/@daily/@weekly/@monthly/@yearly"),
                );
                return None;
            }
        }
    }
    if let Some(every) = t.every {
        if every.get() < std::time::Duration::from_secs(1) {
            diags.push(at.error(&sub("every"), "`every` must be at least 1s"));
            return None;
        }
        return Some(TimeTrigger::Every(every.get()));
    }
    if let Some(when) = &t.at {
        return match chrono::DateTime::parse_from_rfc3339(when) {
            Ok(dt) => Some(TimeTrigger::At(dt)),
            Err(e) => {
                diags.push(
                    at.error(&sub("at"), format!("`{when}` is not a time with an offset: {e}"))
                        .with_hint("write it as RFC 3339, e.g. 2026-12-01T09:00:00+01:00"),
                );
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
            diags.push(at.error(&sub("file"), "a file trigger needs at least one event (create, modify, remove)"));
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
        if w.secret_env.is_none() && w.token_env.is_none() && w.auth.is_none() {
            diags.push(at.error(&sub("webhook"), "a webhook without authentication is refused").with_hint(
                "set secret_env (HMAC signature) or token_env (bearer token), or `auth: none` to accept anyone",
            ));
        }
    }
    None
}

fn check_delivery(
    target: &DeliveryTarget,
    base: &[&str],
    at: &Locator,
    templates: &Templates,
    diags: &mut Diagnostics,
) {
    let roots: Vec<&str> = CONTEXT_ROOTS.iter().chain(DELIVERY_ROOTS.iter()).copied().collect();
    let path = |tail: &[&str]| -> Vec<String> { base.iter().chain(tail.iter()).map(|s| (*s).to_string()).collect() };
    let error = |p: &[String], message: String| {
        let p: Vec<&str> = p.iter().map(String::as_str).collect();
        at.error(&p, message)
    };
    let template = |tail: &[&str], label: &str, source: &str, diags: &mut Diagnostics| {
        let p = path(tail);
        let p: Vec<&str> = p.iter().map(String::as_str).collect();
        check_template(templates, at, &p, label, source, &roots, diags);
    };
    match target {
        DeliveryTarget::File(f) => {
            template(&["file", "path"], "file path", &f.path, diags);
            if let Some(t) = &f.template {
                if let Err(e) = templates.check_file(t) {
                    diags.push(error(&path(&["file", "template"]), e.to_string()));
                }
            }
        }
        DeliveryTarget::Mail(m) => {
            if m.to.is_empty() {
                diags.push(error(&path(&["mail"]), "a mail delivery needs at least one address in `to`".into()));
            }
            for (field, list) in [("to", &m.to), ("cc", &m.cc), ("bcc", &m.bcc)] {
                for (i, addr) in list.iter().enumerate() {
                    if mail_address(addr).is_none() {
                        let idx = i.to_string();
                        diags.push(error(&path(&["mail", field, &idx]), format!("`{addr}` is not an e-mail address")));
                    }
                }
            }
            if let Some(s) = &m.subject {
                template(&["mail", "subject"], "mail subject", s, diags);
            }
            for (field, t) in [("template", &m.template), ("html_template", &m.html_template)] {
                if let Some(t) = t {
                    if let Err(e) = templates.check_file(t) {
                        diags.push(error(&path(&["mail", field]), e.to_string()));
                    }
                }
            }
        }
    }
}

/// `Name <a@b.c>` or `a@b.c`, roughly: one `@` with text on both sides.
fn mail_address(s: &str) -> Option<&str> {
    let addr = match (s.find('<'), s.rfind('>')) {
        (Some(a), Some(b)) if a < b => &s[a + 1..b],
        _ => s.trim(),
    };
    let (local, domain) = addr.split_once('@')?;
    (!local.is_empty() && domain.contains('.') && !domain.starts_with('.') && !addr.contains(char::is_whitespace))
        .then_some(addr)
}
