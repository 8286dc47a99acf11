//! Loading routines: one per file in `routines_dir`, and inline under
//! `routines:` in the engine config. Every problem in every file is
//! reported; one bad routine never hides the others.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono_tz::Tz;

use super::template::{TemplateError, Templates};
use super::{Routine, RoutineFile, TimeTrigger, TriggerSpec, reserved};
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
/// Variables delivery templates may read in addition (`error` is empty
/// unless the run failed).
pub const DELIVERY_ROOTS: [&str; 3] = ["output", "status", "error"];

/// Loads every routine of `config`: files in `routines_dir` (`*.yaml`,
/// `*.yml`, sorted) and `inline` (from the config file, with its source).
pub fn load_all(config: &Config, inline: Option<(&[RoutineFile], &SourceMap)>, tool_names: &[&str]) -> LoadedRoutines {
    let templates = Templates::new(&config.templates_dir);
    let mut out = LoadedRoutines::default();
    let mut seen: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut hooks: BTreeMap<String, String> = BTreeMap::new();
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
        let mut clash = false;
        for (i, t) in routine.spec.triggers.iter().enumerate() {
            let Some(w) = &t.webhook else { continue };
            if let Some(other) = hooks.get(&w.path) {
                let idx = i.to_string();
                let (line, col) = at.locate(&["on", &idx, "webhook", "path"]);
                out.diagnostics.push(
                    Diagnostic::new(&at.source.file, line, col, format!("webhook path `{}` is used twice", w.path))
                        .with_hint(format!("routine `{other}` already listens on it; give each webhook its own path")),
                );
                clash = true;
            }
        }
        if clash {
            continue;
        }
        for w in routine.spec.triggers.iter().filter_map(|t| t.webhook.as_ref()) {
            hooks.insert(w.path.clone(), routine.name.clone());
        }
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

    /// A diagnostic at the key that ends `rel` (e.g. `webhook:`), not its value.
    fn error_key(&self, rel: &[&str], message: impl Into<String>) -> Diagnostic {
        let (line, col) = self.source.locate_key(&self.path(rel));
        Diagnostic::new(&self.source.file, line, col, message)
    }

    /// A diagnostic at `line`:`col` inside the string value at `rel` (a template).
    fn error_in(&self, rel: &[&str], line: usize, col: usize, message: impl Into<String>) -> Diagnostic {
        let (line, col) = self.source.locate_in_value(&self.path(rel), line, col);
        Diagnostic::new(&self.source.file, line, col, message)
    }
}

/// `deliver[0].file.path` for `["deliver", "0", "file", "path"]`.
pub(crate) fn field_label(rel: &[&str]) -> String {
    let mut out = String::new();
    for seg in rel {
        if seg.parse::<usize>().is_ok() {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(seg);
        }
    }
    out
}

const SYNTAX_HINT: &str = "close every `{{` with `}}` and `{%` with `%}`, and end each `{% if %}`/`{% for %}` with `{% endif %}`/`{% endfor %}`";

/// Line and column (1-based) of the first use of the variable `root` in a
/// template source: the identifier standing alone, not part of another name.
fn first_use(source: &str, root: &str) -> Option<(usize, usize)> {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(i) = source[from..].find(root).map(|i| i + from) {
        let before = source[..i].chars().next_back();
        let after = source[i + root.len()..].chars().next();
        if !before.is_some_and(|c| is_ident(c) || c == '.') && !after.is_some_and(is_ident) {
            let line = source[..i].matches('\n').count() + 1;
            let line_start = source[..i].rfind('\n').map_or(0, |n| n + 1);
            return Some((line, source[line_start..i].chars().count() + 1));
        }
        from = i + root.len();
    }
    None
}

/// Column (1-based) of the first non-blank character of `line` (1-based) in `source`.
fn line_start_col(source: &str, line: usize) -> usize {
    source.lines().nth(line.saturating_sub(1)).map_or(1, |l| l.chars().take_while(|c| c.is_whitespace()).count() + 1)
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
    let shown_dir = shown(templates.dir(), config).display().to_string();
    let name = match &spec.name {
        Some(n) => n.clone(),
        None if at.prefix.is_empty() => {
            at.source.file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
        }
        None => {
            diags.push(
                at.error(&[], "an inline routine needs a `name`")
                    .with_hint("add e.g. `name: daily-report` (lowercase letters, digits, `-` and `_`)"),
            );
            return None;
        }
    };
    if !valid_name(&name) {
        diags.push(
            at.error(&["name"], format!("`{name}` is not a valid routine name"))
                .with_hint("use lowercase letters, digits, `-` and `_`, starting with a letter or digit"),
        );
    }
    if reserved::RUN_NAMES.contains(&name.as_str()) {
        diags.push(at.error(&["name"], format!("the name `{name}` belongs to the built-in {name}'s runs")).with_hint(
            "choose another name; heartbeats and greetings are configured under `heartbeat:` in routines.yaml",
        ));
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
        (Some(p), None) => check_template(templates, at, &["prompt"], p, &CONTEXT_ROOTS, diags),
        (None, Some(file)) => check_template_file(templates, &shown_dir, at, &["prompt_template"], file, diags),
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
        diags.push(
            at.error(&["agent", "max_iterations"], "max_iterations must be at least 1")
                .with_hint("it counts model calls per run; the engine default is 10"),
        );
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
        diags.push(
            at.error(&["retry", "attempts"], "`retry.attempts` must be at least 1")
                .with_hint("it counts the first attempt too: 1 means no retry"),
        );
    }
    if spec.timeout.get().is_zero() {
        diags.push(at.error(&["timeout"], "timeout must be longer than 0s").with_hint("e.g. timeout: 10m"));
    }
    if spec.silent_token.trim().is_empty() {
        diags.push(
            at.error(&["silent_token"], "silent_token is empty")
                .with_hint("leave it out for the default NO_REPLY, or set a word the model can reply with"),
        );
    }

    // Deliveries.
    for (list_key, list) in [("deliver", &spec.deliver), ("on_failure", &spec.on_failure.deliver)] {
        for (i, target) in list.iter().enumerate() {
            let idx = i.to_string();
            let base: Vec<&str> =
                if list_key == "deliver" { vec!["deliver", &idx] } else { vec!["on_failure", "deliver", &idx] };
            check_delivery(target, &base, at, templates, &shown_dir, diags);
        }
    }

    let zone = spec
        .triggers
        .iter()
        .find_map(|t| t.timezone.as_deref().and_then(|z| z.parse::<Tz>().ok()))
        .unwrap_or(config.timezone);
    // A daemon may hold thousands of routines: no spare capacity.
    let mut spec = spec;
    spec.triggers.shrink_to_fit();
    time_triggers.shrink_to_fit();
    Some(Routine { name, file: at.source.file.clone(), zone, spec, time_triggers })
}

fn check_template(
    templates: &Templates,
    at: &Locator,
    rel: &[&str],
    source: &str,
    roots: &[&str],
    diags: &mut Diagnostics,
) {
    let label = field_label(rel);
    match templates.check(&label, source) {
        Ok(()) => {}
        Err(TemplateError::Syntax { line, message, .. }) => {
            diags.push(
                at.error_in(
                    rel,
                    line,
                    line_start_col(source, line),
                    format!("syntax error in template `{label}`: {message}"),
                )
                .with_hint(SYNTAX_HINT),
            );
            return;
        }
        Err(e) => {
            diags.push(at.error(rel, e.to_string()));
            return;
        }
    }
    if let Ok(vars) = templates.variables(&label, source) {
        let mut reported: Vec<&str> = Vec::new();
        for v in &vars {
            let root = v.split('.').next().unwrap_or(v);
            if let Some(d) = unknown_field(at, rel, &label, source, v) {
                diags.push(d);
                continue;
            }
            if roots.contains(&root) || reported.contains(&root) {
                continue;
            }
            reported.push(root);
            let hint = match did_you_mean(root, roots.iter().copied()) {
                Some(best) => format!("did you mean `{best}`?"),
                None => format!("templates can use: {}", roots.join(", ")),
            };
            let message = format!("template `{label}` uses `{v}`, which is not defined");
            let d = match first_use(source, root) {
                Some((line, col)) => at.error_in(rel, line, col, message),
                None => at.error(rel, message),
            };
            diags.push(d.with_hint(hint));
        }
    }
}

/// Fields of the context objects whose shape is fixed (SPEC §4).
const FIXED_FIELDS: [(&str, &[&str]); 2] = [("routine", &["name", "description"]), ("run", &["id", "attempt"])];

/// `routine.nmae` and the like: a field that the fixed objects never have.
fn unknown_field(at: &Locator, rel: &[&str], label: &str, source: &str, var: &str) -> Option<Diagnostic> {
    let mut segs = var.split('.');
    let (root, field) = (segs.next()?, segs.next()?);
    let (_, fields) = FIXED_FIELDS.iter().find(|(r, _)| *r == root)?;
    if fields.contains(&field) {
        return None;
    }
    let hint = match did_you_mean(field, fields.iter().copied()) {
        Some(best) => format!("did you mean `{root}.{best}`?"),
        None => format!("`{root}` has: {}", fields.join(", ")),
    };
    let message = format!("template `{label}` uses `{root}.{field}`, which is not defined");
    let d = match first_use(source, &format!("{root}.{field}")) {
        Some((line, col)) => at.error_in(rel, line, col, message),
        None => at.error(rel, message),
    };
    Some(d.with_hint(hint))
}

/// A template file named at `rel` (`prompt_template`, a delivery `template`).
fn check_template_file(
    templates: &Templates,
    shown_dir: &str,
    at: &Locator,
    rel: &[&str],
    file: &str,
    diags: &mut Diagnostics,
) {
    let field = field_label(rel);
    let d = match templates.check_file(file) {
        Ok(()) => return,
        Err(TemplateError::NotFound { name, .. }) if name == file => {
            let existing = template_names(templates.dir());
            let hint = match did_you_mean(file, existing.iter().map(String::as_str)) {
                Some(best) => format!("did you mean `{best}`?"),
                None => format!("create {shown_dir}/{file}, or fix the name (it is relative to templates_dir)"),
            };
            at.error(rel, format!("`{field}`: template file `{file}` does not exist in {shown_dir}/")).with_hint(hint)
        }
        Err(TemplateError::NotFound { name, .. }) => at
            .error(rel, format!("`{field}`: template `{file}` includes `{name}`, which does not exist in {shown_dir}/"))
            .with_hint(format!("create {shown_dir}/{name}, or fix the include")),
        Err(e @ TemplateError::Syntax { .. }) => {
            at.error(rel, format!("`{field}`: syntax error: {e}")).with_hint(SYNTAX_HINT)
        }
        Err(e) => at.error(rel, format!("`{field}`: {e}")).with_hint("template names are relative to templates_dir"),
    };
    diags.push(d);
}

/// Files in the templates folder (and one level of subfolders), as template names.
fn template_names(dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return names };
    for e in entries.filter_map(Result::ok) {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = e.path();
        if path.is_file() {
            names.push(name);
        } else if path.is_dir() {
            if let Ok(sub) = std::fs::read_dir(&path) {
                names.extend(
                    sub.filter_map(Result::ok)
                        .filter(|s| s.path().is_file())
                        .map(|s| format!("{name}/{}", s.file_name().to_string_lossy())),
                );
            }
        }
    }
    names.sort();
    names
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
        match super::schedule::parse_cron(expr) {
            Ok(_) => return zone.map(|zone| TimeTrigger::Cron { expr: expr.clone(), zone }),
            Err(e) => {
                let (why, hint) = super::schedule::explain_cron_error(expr, &e);
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
        if reserved::WEBHOOK_PATHS.contains(&w.path.as_str()) {
            diags.push(
                at.error(&wpath, format!("webhook path `{}` is reserved by the daemon's listener", w.path))
                    .with_hint("/healthz and /metrics answer GET; use a path like /hooks/NAME"),
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

fn check_delivery(
    target: &DeliveryTarget,
    base: &[&str],
    at: &Locator,
    templates: &Templates,
    shown_dir: &str,
    diags: &mut Diagnostics,
) {
    let roots: Vec<&str> = CONTEXT_ROOTS.iter().chain(DELIVERY_ROOTS.iter()).copied().collect();
    let path = |tail: &[&str]| -> Vec<String> { base.iter().chain(tail.iter()).map(|s| (*s).to_string()).collect() };
    let with = |tail: &[&str], f: &mut dyn FnMut(&[&str])| {
        let p = path(tail);
        let p: Vec<&str> = p.iter().map(String::as_str).collect();
        f(&p);
    };
    match target {
        DeliveryTarget::File(f) => {
            with(&["file", "path"], &mut |p| check_template(templates, at, p, &f.path, &roots, diags));
            if let Some(t) = &f.template {
                with(&["file", "template"], &mut |p| check_template_file(templates, shown_dir, at, p, t, diags));
            }
        }
        DeliveryTarget::Mail(m) => {
            if m.to.is_empty() {
                with(&["mail"], &mut |p| {
                    diags.push(
                        at.error(p, "a mail delivery needs at least one address in `to`")
                            .with_hint("e.g. mail: { to: [ops@example.com] }"),
                    );
                });
            }
            for (field, list) in [("to", &m.to), ("cc", &m.cc), ("bcc", &m.bcc)] {
                for (i, addr) in list.iter().enumerate() {
                    if mail_address(addr).is_none() {
                        let idx = i.to_string();
                        with(&["mail", field, &idx], &mut |p| {
                            diags.push(
                                at.error(p, format!("`{addr}` in `{}` is not an e-mail address", field_label(p)))
                                    .with_hint("write it as name@example.com or \"Name <name@example.com>\""),
                            );
                        });
                    }
                }
            }
            if let Some(subject) = &m.subject {
                with(&["mail", "subject"], &mut |p| check_template(templates, at, p, subject, &roots, diags));
            }
            for (field, t) in [("template", &m.template), ("html_template", &m.html_template)] {
                if let Some(t) = t {
                    with(&["mail", field], &mut |p| check_template_file(templates, shown_dir, at, p, t, diags));
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
