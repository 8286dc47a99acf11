//! Loading routines: one per file in `routines_dir`, and inline under
//! `routines:` in the engine config. Every problem in every file is
//! reported; one bad routine never hides the others.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono_tz::Tz;

mod agent_made;
mod attach;
mod deliveries;
mod schedule_grant;
mod scope;
mod secrets;
mod skills;
mod templates;
mod triggers;

use super::template::Templates;
use super::{Routine, RoutineFile, reserved};
use crate::config::Config;
use crate::diag::{Diagnostic, Diagnostics, did_you_mean};
use crate::sandbox::SandboxMode;
use crate::skills::Catalog;
use crate::yaml::{self, SourceMap};
use agent_made::check_agent_made;
use attach::check_attach;
use deliveries::{Setting, check_delivery, leaving_workspace};
use schedule_grant::check_schedule_grant;
use scope::Scope;
pub use secrets::{NamedSecret, unset_secrets};
use skills::check_skills;
use templates::{check_template, check_template_file};
use triggers::check_trigger;

/// The routines that loaded, and the problems of those that did not (and of the skills).
#[derive(Debug, Default)]
pub struct LoadedRoutines {
    pub routines: Vec<Routine>,
    pub diagnostics: Diagnostics,
    /// What works but is likely not meant (a skill naming tools its routine lacks); the
    /// routines load. Each message starts with `warning: `.
    pub warnings: Diagnostics,
    /// What fails at every run though the routine loads (a file delivery whose path leaves the
    /// workspace is refused alone; the run and its other targets go on): `validate` counts
    /// these as errors.
    pub failing: Diagnostics,
    /// The secret variables the loaded routines name, for `validate` to look up.
    pub secrets: Vec<NamedSecret>,
}

impl LoadedRoutines {
    /// Records what `validate` tells of `routine` before a run: delivery paths that leave the
    /// workspace, and the secret variables it names.
    fn before_a_run(&mut self, routine: &Routine, at: &Locator, config: &Config) {
        let spec = &routine.spec;
        self.failing.extend(leaving_workspace(&spec.deliver, &["deliver"], at, &config.workspace));
        let on_failure = leaving_workspace(&spec.on_failure.deliver, &["on_failure", "deliver"], at, &config.workspace);
        self.failing.extend(on_failure);
        self.secrets.extend(secrets::of_webhooks(routine, at));
    }

    pub fn get(&self, name: &str) -> Option<&Routine> {
        self.routines.iter().find(|r| r.name == name)
    }

    pub fn names(&self) -> Vec<&str> {
        self.routines.iter().map(|r| r.name.as_str()).collect()
    }
}

/// Most retries of one read-only tool call a routine may ask for.
const MAX_TOOL_RETRIES: u32 = 10;

/// Variables every template may read.
pub const CONTEXT_ROOTS: [&str; 5] = ["routine", "trigger", "now", "vars", "run"];
/// Variables delivery templates may read in addition (`error` is empty
/// unless the run failed).
pub const DELIVERY_ROOTS: [&str; 3] = ["output", "status", "error"];

/// Loads every routine of `config`: files in `routines_dir` (`*.yaml`,
/// `*.yml`, sorted) and `inline` (from the config file, with its source).
pub fn load_all(config: &Config, inline: Option<(&[RoutineFile], &SourceMap)>, tool_names: &[&str]) -> LoadedRoutines {
    let templates = Templates::new(&config.templates_dir);
    let catalog = Catalog::load(&config.skills_dir, &config.base_dir, tool_names);
    let mut out = LoadedRoutines { diagnostics: catalog.diagnostics().clone(), ..LoadedRoutines::default() };
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

    let known = Known { templates: &templates, tool_names, catalog: &catalog };
    for (spec, at) in candidates {
        let before = out.diagnostics.len();
        let Some(routine) = check(spec, &at, config, &known, &mut out.diagnostics, &mut out.warnings) else { continue };
        if out.diagnostics.len() != before {
            // Its other problems are reported with these, all at once.
            out.before_a_run(&routine, &at, config);
            continue;
        }
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
        out.before_a_run(&routine, &at, config);
        out.routines.push(routine);
    }
    if let Some((_, source)) = inline {
        check_builtin_deliveries(config, source, &templates, &mut out.diagnostics);
        let at = Locator { source: source.clone(), prefix: Vec::new() };
        let beats = &config.heartbeat.deliver;
        out.failing.extend(leaving_workspace(beats, &["heartbeat", "deliver"], &at, &config.workspace));
    }
    if config.security.sandbox == SandboxMode::None {
        let (file, line, col) = match inline {
            Some((_, source)) => {
                let at = Locator { source: source.clone(), prefix: Vec::new() };
                let (line, col) = at.locate(&["security", "sandbox"]);
                (shown(&source.file, config), line, col)
            }
            None => (config.file.as_ref().map_or_else(|| "routines.yaml".into(), |f| shown(f, config)), 1, 1),
        };
        out.warnings.push(
            Diagnostic::new(
                &file,
                line,
                col,
                "warning: `security.sandbox: none`: shell commands run without an OS sandbox",
            )
            .with_hint("a command the model writes can then read and write anything this user can; use `auto`"),
        );
    }
    out.diagnostics = std::mem::take(&mut out.diagnostics).sorted();
    // A template file shared by routines is reported once.
    out.diagnostics.0.dedup();
    out.warnings = std::mem::take(&mut out.warnings).sorted();
    out.failing = std::mem::take(&mut out.failing).sorted();
    out
}

/// `heartbeat.deliver`, where beats and greetings are delivered, checked by the same rules as a
/// routine's deliveries and placed in the config file.
fn check_builtin_deliveries(config: &Config, source: &SourceMap, templates: &Templates, diags: &mut Diagnostics) {
    let at = Locator { source: source.clone(), prefix: Vec::new() };
    let shown_dir = shown(templates.dir(), config).display().to_string();
    // Beats and greetings: `trigger` has its kind and instant only.
    let scope = Scope::of(&CONTEXT_ROOTS, &[]);
    for (i, target) in config.heartbeat.deliver.iter().enumerate() {
        let idx = i.to_string();
        let setting = Setting { templates, shown_dir: &shown_dir, scope: &scope };
        check_delivery(target, &["heartbeat", "deliver", &idx], &at, &setting, diags);
    }
}

/// Checks one routine file's text as [`load_all`] checks each file (`path` is where it is or
/// will be written), without looking at the other routines. The `schedule` tool checks what it
/// writes with it.
pub fn load_one(config: &Config, path: &Path, text: &str, tool_names: &[&str]) -> Result<Routine, Diagnostics> {
    let templates = Templates::new(&config.templates_dir);
    let catalog = Catalog::load(&config.skills_dir, &config.base_dir, tool_names);
    let loaded = yaml::from_str::<RoutineFile>(&shown(path, config), text)?;
    let at = Locator { source: loaded.source, prefix: Vec::new() };
    let known = Known { templates: &templates, tool_names, catalog: &catalog };
    let mut diags = Diagnostics::default();
    let routine = check(loaded.value, &at, config, &known, &mut diags, &mut Diagnostics::default());
    match routine {
        Some(r) if diags.is_empty() => Ok(r),
        _ => Err(diags.sorted()),
    }
}

/// What a routine may name: templates, tools and skills.
struct Known<'a> {
    templates: &'a Templates,
    tool_names: &'a [&'a str],
    catalog: &'a Catalog,
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

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

fn check(
    spec: RoutineFile,
    at: &Locator,
    config: &Config,
    known: &Known<'_>,
    diags: &mut Diagnostics,
    warnings: &mut Diagnostics,
) -> Option<Routine> {
    let (templates, tool_names) = (known.templates, known.tool_names);
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
    let scope = Scope::of(&CONTEXT_ROOTS, &spec.triggers);
    match (&spec.prompt, &spec.prompt_template) {
        (None, None) => diags.push(
            at.error(&[], format!("routine `{name}` has no prompt"))
                .with_hint("add `prompt: |` with the task, or `prompt_template: FILE` from the templates folder"),
        ),
        (Some(_), Some(_)) => diags.push(
            at.error(&["prompt_template"], "both `prompt` and `prompt_template` are set").with_hint("keep one of them"),
        ),
        (Some(p), None) => check_template(templates, at, &["prompt"], p, &scope, diags),
        (None, Some(file)) => {
            check_template_file(templates, &shown_dir, at, &["prompt_template"], file, &scope, diags);
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
    check_agent_made(&spec, &time_triggers, at, config, diags);
    check_schedule_grant(&spec, &name, at, warnings);

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
    for (i, assist) in a.assist_off.iter().enumerate() {
        if !crate::config::assist::is_assist(assist) {
            let idx = i.to_string();
            let hint = crate::config::assist::unknown_hint(assist);
            diags.push(at.error(&["agent", "assist_off", &idx], format!("unknown assist `{assist}`")).with_hint(hint));
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
    if let Some(n) = a.tool_retries.filter(|n| *n > MAX_TOOL_RETRIES) {
        diags.push(
            at.error(&["agent", "tool_retries"], format!("tool_retries {n} is more than {MAX_TOOL_RETRIES}"))
                .with_hint("retries of a read-only tool wait longer each time; use 0 to 10 (default 2)"),
        );
    }
    let allowlist: Vec<&str> =
        config.security.allowed_commands.iter().map(|c| crate::policy::command::file_name(c)).collect();
    for (i, c) in a.allow_commands.iter().enumerate() {
        let idx = i.to_string();
        if c.trim().is_empty() || c.contains(char::is_whitespace) {
            diags.push(
                at.error(&["agent", "allow_commands", &idx], format!("`{c}` is not a command name"))
                    .with_hint("list base commands such as git or ls; arguments are not part of an approval"),
            );
        } else if !allowlist.contains(&c.as_str()) {
            // The engine's allowlist is a first filter at every autonomy level: such a grant
            // runs nothing, and the routine is not told it may run the command.
            warnings.push(
                at.error(
                    &["agent", "allow_commands", &idx],
                    format!("warning: `{c}` is not in security.allowed_commands, so this routine cannot run it"),
                )
                .with_hint(format!(
                    "add `{c}` to security.allowed_commands in the engine config, or leave it out here"
                )),
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

    // Skills and images.
    check_skills(&spec, at, config, known.catalog, tool_names, diags, warnings);
    check_attach(&spec, at, config, templates, &scope, diags);

    // Deliveries.
    let setting = Setting { templates, shown_dir: &shown_dir, scope: &scope };
    for (list_key, list) in [("deliver", &spec.deliver), ("on_failure", &spec.on_failure.deliver)] {
        for (i, target) in list.iter().enumerate() {
            let idx = i.to_string();
            let base: Vec<&str> =
                if list_key == "deliver" { vec!["deliver", &idx] } else { vec!["on_failure", "deliver", &idx] };
            check_delivery(target, &base, at, &setting, diags);
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

#[cfg(test)]
mod tests;
