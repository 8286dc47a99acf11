//! Template rendering for routines: prompts, delivery paths, mail subjects and bodies, report templates.
//!
//! Templates are [minijinja](https://docs.rs/minijinja) (Jinja2) templates. Inline templates (a `prompt`
//! field, a delivery path, ...) are rendered with [`Templates::render_str`]; template files live in the
//! templates folder and are rendered with [`Templates::render_file`]. Files can `{% include %}`,
//! `{% extends %}` and `{% import %}` each other by their name relative to that folder.
//!
//! Behaviour:
//! - Undefined variables are errors ([`TemplateError::Undefined`]) naming the variable and the template,
//!   with a did-you-mean hint or the list of names that do exist. `{% if x is defined %}` and
//!   `x | default(...)` keep working for optional values.
//! - A render has a fuel budget ([`DEFAULT_FUEL`]); a template that loops too long fails with
//!   [`TemplateError::Render`].
//! - No auto-escaping, except for templates whose name ends in `.html`/`.htm` (optionally followed by
//!   `.j2`/`.jinja`), which are HTML-escaped.
//! - A trailing newline at the end of a template is kept.
//! - The `date(format='%Y-%m-%d %H:%M', tz=None)` filter formats an RFC 3339 timestamp (such as `now` or
//!   `trigger.scheduled_for`) with chrono's strftime, in the offset the timestamp carries, or in the
//!   IANA zone `tz` when given.
//! - Prompts ([`Templates::render_prompt_str`], [`Templates::render_prompt_file`]) fence untrusted values
//!   (`prompt.rs`); delivery templates are rendered as they are.

mod prompt;

pub use prompt::{DataCheck, FENCE_NOTE, FENCE_TAG, Fencing, fence};

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

use chrono::format::{Item, StrftimeItems};
use chrono::{DateTime, FixedOffset, NaiveDate, NaiveDateTime};
use minijinja::syntax::SyntaxConfig;
use minijinja::value::{Kwargs, Serde};
use minijinja::{AutoEscape, Environment, Error, ErrorKind, TemplateSource, UndefinedBehavior, Value};
use serde_json::Value as Json;

/// Fuel given to one render: about one unit per instruction executed and per 64 bytes produced.
pub const DEFAULT_FUEL: u64 = 100_000;

/// Format used by the `date` filter when none is given.
pub const DEFAULT_DATE_FORMAT: &str = "%Y-%m-%d %H:%M";

/// Why a template could not be checked or rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// Syntax error: `line` is 1-based within the template text.
    #[error("template `{name}` line {line}: {message}")]
    Syntax { name: String, line: usize, message: String },
    /// A variable the template reads is not in the context. `hint` is empty or starts with "; ".
    #[error("template `{name}` uses `{variable}`, which is not defined{hint}")]
    Undefined { name: String, variable: String, hint: String },
    /// The template file (or a file it includes) does not exist.
    #[error("template `{name}` was not found in {dir}")]
    NotFound { name: String, dir: String },
    /// Anything else: fuel exhausted, a filter error, a bad date format, a refused file name ...
    #[error("template `{name}`: {message}")]
    Render { name: String, message: String },
}

impl TemplateError {
    /// The template the error is about.
    pub fn name(&self) -> &str {
        match self {
            TemplateError::Syntax { name, .. }
            | TemplateError::Undefined { name, .. }
            | TemplateError::NotFound { name, .. }
            | TemplateError::Render { name, .. } => name,
        }
    }
}

/// The template engine of a routines folder: a minijinja environment whose loader reads the templates folder.
pub struct Templates {
    env: Environment<'static>,
    /// `env` for prompts: no filter marks text safe, no escaping (`prompt.rs`).
    prompt_env: Environment<'static>,
    dir: PathBuf,
    fuel: u64,
}

impl std::fmt::Debug for Templates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Templates").field("dir", &self.dir).field("fuel", &self.fuel).finish()
    }
}

impl Templates {
    /// `dir` is the templates folder; names are relative to it; `..`, absolute names and symlinks escaping it
    /// are refused. The folder need not exist (then every file template is not found).
    pub fn new(dir: &Path) -> Templates {
        Templates::with_fuel(dir, DEFAULT_FUEL)
    }

    /// Like [`Templates::new`] with another fuel budget per render.
    pub fn with_fuel(dir: &Path, fuel: u64) -> Templates {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        // Defaults plus a kept trailing newline; building this config cannot fail (default delimiters).
        if let Ok(syntax) = SyntaxConfig::builder().keep_trailing_newline(true).build() {
            env.set_syntax(syntax);
        }
        env.set_debug(true);
        env.set_fuel(Some(fuel));
        env.set_auto_escape_callback(|name| if is_html(name) { AutoEscape::Html } else { AutoEscape::None });
        env.set_loader(folder_loader(dir.to_path_buf()));
        env.add_filter("date", date_filter);
        let prompt_env = prompt::prompt_env(&env);
        Templates { env, prompt_env, dir: dir.to_path_buf(), fuel }
    }

    /// The templates folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Compiles `source` (an inline template such as a prompt) without rendering; `name` is used in errors
    /// (e.g. "prompt" or "deliver[0].file.path").
    pub fn check(&self, name: &str, source: &str) -> Result<(), TemplateError> {
        self.env.template_from_named_str(name, source).map(|_| ()).map_err(|e| self.error(name, e, None))
    }

    /// The template file exists inside the folder and compiles. Files it includes are checked when rendered.
    pub fn check_file(&self, file: &str) -> Result<(), TemplateError> {
        self.load(file).map(|_| ())
    }

    /// Top-level variable paths the template reads (e.g. `["now", "routine.name", "vars.repo"]`): variables
    /// assigned in the template (`{% set %}`, loop variables, macro arguments) and global functions such as
    /// `range` are left out. Both `vars` and `vars.repo` appear when the template reads both. Reads guarded by
    /// `is defined` or `default` are listed too, and variables read by included files are not.
    pub fn variables(&self, name: &str, source: &str) -> Result<BTreeSet<String>, TemplateError> {
        let template = self.env.template_from_named_str(name, source).map_err(|e| self.error(name, e, None))?;
        let mut vars: BTreeSet<String> = template.undeclared_variables(true).into_iter().collect();
        vars.retain(|v| !self.is_global(root_of(v)));
        Ok(vars)
    }

    /// Renders an inline template with the context `ctx` (a JSON object).
    pub fn render_str(&self, name: &str, source: &str, ctx: &Json) -> Result<String, TemplateError> {
        let template = self.env.template_from_named_str(name, source).map_err(|e| self.error(name, e, None))?;
        template.render(Value::from(Serde(ctx))).map_err(|e| self.error(name, e, Some((source, ctx))))
    }

    /// Renders the template file `file` (relative to the templates folder) with the context `ctx`.
    pub fn render_file(&self, file: &str, ctx: &Json) -> Result<String, TemplateError> {
        let template = self.load(file)?;
        template.render(Value::from(Serde(ctx))).map_err(|e| self.error(file, e, Some((template.source(), ctx))))
    }

    /// Renders an inline prompt: every value under `fencing.untrusted` (and whatever is derived from
    /// it) is checked and fenced as data.
    pub fn render_prompt_str(
        &self,
        name: &str,
        source: &str,
        ctx: &Json,
        fencing: &Fencing,
    ) -> Result<String, TemplateError> {
        let env = prompt::render_env(&self.prompt_env, fencing);
        let template = env.template_from_named_str(name, source).map_err(|e| self.error(name, e, None))?;
        template.render(prompt::context(ctx, &fencing.untrusted)).map_err(|e| self.error(name, e, Some((source, ctx))))
    }

    /// Renders the prompt template file `file` like [`Templates::render_prompt_str`].
    pub fn render_prompt_file(&self, file: &str, ctx: &Json, fencing: &Fencing) -> Result<String, TemplateError> {
        if let Err(reason) = check_name(file) {
            return Err(TemplateError::Render { name: file.to_string(), message: reason });
        }
        let env = prompt::render_env(&self.prompt_env, fencing);
        let template = env.get_template(file).map_err(|e| self.error(file, e, None))?;
        template
            .render(prompt::context(ctx, &fencing.untrusted))
            .map_err(|e| self.error(file, e, Some((template.source(), ctx))))
    }

    fn load(&self, file: &str) -> Result<minijinja::Template<'_, '_>, TemplateError> {
        if let Err(reason) = check_name(file) {
            return Err(TemplateError::Render { name: file.to_string(), message: reason });
        }
        self.env.get_template(file).map_err(|e| self.error(file, e, None))
    }

    fn is_global(&self, name: &str) -> bool {
        self.env.globals().any(|(global, _)| global == name)
    }

    fn not_found(&self, name: &str) -> TemplateError {
        TemplateError::NotFound { name: name.to_string(), dir: self.dir.display().to_string() }
    }

    /// Turns a minijinja error into a [`TemplateError`]. `name` is the template being checked or rendered;
    /// `render` carries its source and the context when the error happened while rendering.
    fn error(&self, name: &str, err: Error, render: Option<(&str, &Json)>) -> TemplateError {
        let err = innermost(&err);
        // The template the error happened in: `name` itself or a file it includes.
        let origin = err.name().unwrap_or(name).to_string();
        match err.kind() {
            ErrorKind::SyntaxError | ErrorKind::BadEscape | ErrorKind::InvalidDelimiter => TemplateError::Syntax {
                name: origin,
                line: err.line().unwrap_or(1),
                message: err.detail().unwrap_or(err.kind().to_string().as_str()).to_string(),
            },
            ErrorKind::TemplateNotFound => {
                // "template \"x\" does not exist" (extends) or "tried to include non-existing template 'x'".
                let missing = err
                    .detail()
                    .and_then(|d| {
                        d.strip_prefix("template ")
                            .and_then(|d| d.strip_suffix(" does not exist"))
                            .or_else(|| d.strip_prefix("tried to include non-existing template "))
                    })
                    .map(|quoted| quoted.trim_matches(['"', '\'']))
                    .unwrap_or(name);
                self.not_found(missing)
            }
            ErrorKind::OutOfFuel => TemplateError::Render {
                name: origin,
                message: format!(
                    "rendering ran too long and was stopped after {} steps (an endless or very large loop?)",
                    self.fuel
                ),
            },
            ErrorKind::UndefinedError => match render {
                Some((source, ctx)) => self.undefined(name, &origin, source, err, ctx),
                None => TemplateError::Render { name: origin, message: describe(err) },
            },
            _ => TemplateError::Render { name: origin, message: describe(err) },
        }
    }

    /// Names the undefined variable behind `err`, raised in template `origin` while rendering `name`
    /// (whose source is `source`).
    fn undefined(&self, name: &str, origin: &str, source: &str, err: &Error, ctx: &Json) -> TemplateError {
        let origin_source = if origin == name {
            Some(source.to_string())
        } else {
            self.env.get_template(origin).ok().map(|t| t.source().to_string())
        };
        // minijinja says "`expr` is undefined" in the detail when it knows where the undefined value came from.
        let expr = err.detail().and_then(|d| {
            let start = d.find('`')? + 1;
            let end = start + d[start..].find("` is undefined")?;
            Some(d[start..end].to_string())
        });
        let mut missing: Vec<(usize, String)> = Vec::new();
        if let Some(src) = &origin_source
            && let Ok(template) = self.env.template_from_named_str(origin, src)
        {
            for var in template.undeclared_variables(true) {
                if self.is_global(root_of(&var)) && lookup(ctx, root_of(&var)).is_none() {
                    continue;
                }
                if let Some(prefix) = missing_prefix(ctx, &var)
                    && !missing.iter().any(|(_, m)| *m == prefix)
                {
                    missing.push((src.find(&var).unwrap_or(usize::MAX), prefix));
                }
            }
        }
        missing.sort();
        let span = match (&origin_source, err.range()) {
            (Some(src), Some(range)) => src.get(range).unwrap_or(""),
            _ => "",
        };
        let line = err.line().and_then(|l| origin_source.as_deref()?.lines().nth(l.saturating_sub(1))).unwrap_or("");
        let starts = |text: &str, m: &str| {
            text.strip_prefix(m).is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
        };
        let chosen = expr
            .as_deref()
            .and_then(|e| missing.iter().find(|(_, m)| starts(e, m)))
            .or_else(|| missing.iter().find(|(_, m)| !span.is_empty() && span.contains(m.as_str())))
            .or_else(|| missing.iter().find(|(_, m)| !line.is_empty() && line.contains(m.as_str())))
            .or_else(|| missing.first())
            .map(|(_, m)| m.clone())
            .or(expr);
        match chosen {
            Some(variable) => {
                let hint = hint(ctx, &variable);
                TemplateError::Undefined { name: origin.to_string(), variable, hint }
            }
            None => TemplateError::Render { name: origin.to_string(), message: describe(err) },
        }
    }
}

/// The error inside `{% include %}` wrappers ("error in \"x.j2\""), which names the included file and its line.
fn innermost(err: &Error) -> &Error {
    let mut err = err;
    while err.kind() == ErrorKind::BadInclude {
        match std::error::Error::source(err).and_then(|s| s.downcast_ref::<Error>()) {
            Some(inner) => err = inner,
            None => break,
        }
    }
    err
}

/// The message of an error that is not one of the dedicated kinds, with its line.
fn describe(err: &Error) -> String {
    let mut message = match err.detail() {
        Some(detail) => detail.to_string(),
        None => err.kind().to_string(),
    };
    if let Some(line) = err.line() {
        let _ = write!(message, " (line {line})");
    }
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        let _ = write!(message, ": {cause}");
        source = cause.source();
    }
    message
}

fn is_html(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let name = name.strip_suffix(".j2").or_else(|| name.strip_suffix(".jinja")).unwrap_or(&name);
    name.ends_with(".html") || name.ends_with(".htm")
}

fn root_of(path: &str) -> &str {
    path.split('.').next().unwrap_or(path)
}

/// Refuses template names that could leave the templates folder.
fn check_name(name: &str) -> Result<(), String> {
    let refuse = |why: &str| Err(format!("template name refused: {why}"));
    if name.is_empty() {
        return refuse("the name is empty");
    }
    if name.contains('\\') || name.contains('\0') {
        return refuse("use `/` to separate folders");
    }
    let path = Path::new(name);
    if path.is_absolute() || name.starts_with('/') {
        return refuse("names are relative to the templates folder, not absolute paths");
    }
    for component in path.components() {
        match component {
            Component::Normal(_) => {}
            Component::ParentDir => return refuse("`..` may not leave the templates folder"),
            Component::CurDir => return refuse("`.` segments are not allowed"),
            Component::RootDir | Component::Prefix(_) => {
                return refuse("names are relative to the templates folder, not absolute paths");
            }
        }
    }
    Ok(())
}

type LoaderResult = Result<Option<TemplateSource>, Error>;

/// A loader reading template files from `dir`, refusing names and symlinks that leave it. Loaded templates are
/// reloaded when the file's modification time or size changes.
fn folder_loader(dir: PathBuf) -> impl Fn(&str) -> LoaderResult + Send + Sync + 'static {
    move |name| {
        check_name(name).map_err(|reason| Error::new(ErrorKind::InvalidOperation, format!("`{name}`: {reason}")))?;
        let path = dir.join(name);
        let real = match fs::canonicalize(&path) {
            Ok(real) => real,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                let message = format!("could not read template `{name}`");
                return Err(Error::new(ErrorKind::InvalidOperation, message).with_source(e));
            }
        };
        let root = fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
        if !real.starts_with(&root) {
            let message = format!("template name refused: `{name}` is a link to a file outside the templates folder");
            return Err(Error::new(ErrorKind::InvalidOperation, message));
        }
        if real.is_dir() {
            return Ok(None);
        }
        let stamp = file_stamp(&real);
        match fs::read_to_string(&real) {
            Ok(text) => {
                let mut source = TemplateSource::new(text);
                if let Some(stamp) = stamp {
                    source = source.with_uptodate_check(move || file_stamp(&path) == Some(stamp));
                }
                Ok(Some(source))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => {
                let message = format!("could not read template `{name}`");
                Err(Error::new(ErrorKind::InvalidOperation, message).with_source(e))
            }
        }
    }
}

fn file_stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

// ---------------------------------------------------------------------------------------------------------------
// Context lookups and hints

fn lookup<'a>(ctx: &'a Json, path: &str) -> Option<&'a Json> {
    path.split('.').try_fold(ctx, |cur, segment| cur.as_object()?.get(segment))
}

/// `None` when `path` resolves in `ctx`; otherwise the path up to and including the first missing segment.
fn missing_prefix(ctx: &Json, path: &str) -> Option<String> {
    let mut cur = ctx;
    let mut prefix = String::new();
    for segment in path.split('.') {
        if !prefix.is_empty() {
            prefix.push('.');
        }
        prefix.push_str(segment);
        match cur.as_object().and_then(|o| o.get(segment)) {
            Some(next) => cur = next,
            None => return Some(prefix),
        }
    }
    None
}

/// The hint after "is not defined": a close existing name, or what exists where the name was looked up.
fn hint(ctx: &Json, variable: &str) -> String {
    if let Some(suggestion) = suggest(ctx, variable) {
        return format!("; did you mean `{suggestion}`?");
    }
    let (parent, _) = variable.rsplit_once('.').unwrap_or(("", variable));
    let holder = if parent.is_empty() { Some(ctx) } else { lookup(ctx, parent) };
    match holder {
        Some(Json::Object(map)) if map.is_empty() && parent.is_empty() => "; nothing is defined here".to_string(),
        Some(Json::Object(map)) if map.is_empty() => format!("; `{parent}` is empty"),
        Some(Json::Object(map)) => {
            let mut keys: Vec<&str> = map.keys().map(String::as_str).collect();
            keys.sort_unstable();
            let more = keys.len().saturating_sub(20);
            keys.truncate(20);
            let mut list = keys.join(", ");
            if more > 0 {
                let _ = write!(list, " and {more} more");
            }
            if parent.is_empty() { format!("; defined here: {list}") } else { format!("; `{parent}` has: {list}") }
        }
        Some(other) if !parent.is_empty() => format!("; `{parent}` is {}", json_kind(other)),
        _ => String::new(),
    }
}

fn json_kind(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a list",
        Json::Object(_) => "a map",
    }
}

/// All dotted paths of maps in `ctx` (a few levels deep), for suggestions.
fn paths(ctx: &Json) -> Vec<String> {
    fn walk(value: &Json, prefix: &str, depth: usize, out: &mut Vec<String>) {
        let Some(map) = value.as_object() else { return };
        for (key, child) in map {
            if out.len() >= 1000 {
                return;
            }
            let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
            if depth < 4 {
                walk(child, &path, depth + 1, out);
            }
            out.push(path);
        }
    }
    let mut out = Vec::new();
    walk(ctx, "", 0, &mut out);
    out.sort();
    out
}

/// A close existing path for the missing `variable`: the same name under another parent (`repo` → `vars.repo`),
/// or a near spelling among its siblings (`vars.rpeo` → `vars.repo`, `rutine` → `routine`).
fn suggest(ctx: &Json, variable: &str) -> Option<String> {
    let all = paths(ctx);
    let (parent, leaf) = variable.rsplit_once('.').unwrap_or(("", variable));
    let leaf_lower = leaf.to_lowercase();
    let split = |p: &str| -> (String, String) {
        match p.rsplit_once('.') {
            Some((a, b)) => (a.to_string(), b.to_string()),
            None => (String::new(), p.to_string()),
        }
    };
    // Near spellings among siblings.
    let allowed = (leaf.chars().count() / 3).clamp(1, 3);
    let sibling = all
        .iter()
        .filter_map(|p| {
            let (p_parent, p_leaf) = split(p);
            if p_parent != parent {
                return None;
            }
            let distance = strsim::damerau_levenshtein(&leaf_lower, &p_leaf.to_lowercase());
            (distance <= allowed).then_some((distance, p.clone()))
        })
        .min();
    if let Some((_, path)) = sibling {
        return Some(path);
    }
    // The same name elsewhere, shortest path first.
    all.iter()
        .filter(|p| split(p).1.to_lowercase() == leaf_lower && p.as_str() != variable)
        .min_by_key(|p| (p.len(), p.to_string()))
        .cloned()
}

// ---------------------------------------------------------------------------------------------------------------
// The `date` filter

enum Stamp {
    Zoned(DateTime<FixedOffset>),
    Naive(NaiveDateTime),
}

fn parse_stamp(value: &Value) -> Result<Stamp, String> {
    if let Some(text) = value.as_str() {
        let text = text.trim();
        if let Ok(dt) = DateTime::parse_from_rfc3339(text) {
            return Ok(Stamp::Zoned(dt));
        }
        for format in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"] {
            if let Ok(naive) = NaiveDateTime::parse_from_str(text, format) {
                return Ok(Stamp::Naive(naive));
            }
        }
        if let Ok(date) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
            return Ok(Stamp::Naive(date.and_time(chrono::NaiveTime::MIN)));
        }
        return Err(format!(
            "date: `{text}` is not a timestamp; expected RFC 3339 such as `2026-11-22T09:00:00+01:00`"
        ));
    }
    if let Ok(seconds) = i64::try_from(value.clone()) {
        return DateTime::from_timestamp(seconds, 0)
            .map(|dt| Stamp::Zoned(dt.fixed_offset()))
            .ok_or_else(|| format!("date: {seconds} is out of range as seconds since 1970"));
    }
    Err(format!("date: expected an RFC 3339 timestamp string such as `now`, got {} `{value}`", value.kind()))
}

fn date_filter(value: &Value, format: Option<String>, kwargs: Kwargs) -> Result<String, Error> {
    if value.is_undefined() {
        return Err(Error::from(ErrorKind::UndefinedError));
    }
    let fail = |message: String| Error::new(ErrorKind::InvalidOperation, message);
    let tz: Option<String> = kwargs.get("tz")?;
    kwargs.assert_all_used()?;
    let format = format.unwrap_or_else(|| DEFAULT_DATE_FORMAT.to_string());
    let items: Vec<Item<'_>> = StrftimeItems::new(&format)
        .parse()
        .map_err(|_| fail(format!("date: `{format}` is not a valid strftime format")))?;
    let stamp = parse_stamp(value).map_err(fail)?;
    let mut out = String::new();
    let written = match (stamp, tz) {
        (Stamp::Zoned(dt), None) => write!(out, "{}", dt.format_with_items(items.iter())),
        (Stamp::Zoned(dt), Some(tz)) => {
            let zone: chrono_tz::Tz =
                tz.parse().map_err(|_| fail(format!("date: `{tz}` is not a time zone such as `Europe/Paris`")))?;
            write!(out, "{}", dt.with_timezone(&zone).format_with_items(items.iter()))
        }
        (Stamp::Naive(_), Some(_)) => {
            return Err(fail(format!("date: `{value}` has no UTC offset, so it cannot be moved to a time zone")));
        }
        (Stamp::Naive(naive), None) => write!(out, "{}", naive.format_with_items(items.iter())),
    };
    written.map_err(|_| fail(format!("date: format `{format}` cannot be applied to `{value}`")))?;
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
