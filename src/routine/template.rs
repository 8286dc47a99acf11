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
        Templates { env, dir: dir.to_path_buf(), fuel }
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
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx() -> Json {
        json!({
            "routine": {"name": "daily-digest", "description": "Morning summary"},
            "trigger": {
                "kind": "webhook",
                "scheduled_for": "2026-11-22T09:00:00+01:00",
                "method": "POST",
                "headers": {"content-type": "application/json"},
                "body": "{\"ref\":\"main\"}",
                "json": {"ref": "main", "commits": [{"id": "a1"}, {"id": "b2"}]},
                "query": {"dry": "1"},
            },
            "now": "2026-11-22T09:00:00+01:00",
            "vars": {"repo": "acme/widgets", "team": "core"},
            "run": {"id": "r-42", "attempt": 2},
            "output": "All green.",
            "status": "ok",
        })
    }

    fn templates() -> (tempfile::TempDir, Templates) {
        let dir = tempfile::tempdir().unwrap();
        let t = Templates::new(dir.path());
        (dir, t)
    }

    #[test]
    fn renders_every_context_part() {
        let (_d, t) = templates();
        let src = "{{ routine.name }} ({{ routine.description }}) by {{ trigger.kind }} {{ trigger.method }} \
                   {{ trigger.headers['content-type'] }} ref={{ trigger.json.ref }} \
                   {% for c in trigger.json.commits %}{{ c.id }}{% if not loop.last %},{% endif %}{% endfor %} \
                   dry={{ trigger.query.dry }} body={{ trigger.body }} at {{ now | date('%H:%M') }} \
                   sched={{ trigger.scheduled_for | date }} repo={{ vars.repo }} run={{ run.id }}#{{ run.attempt }} \
                   {{ status }}: {{ output }}";
        let out = t.render_str("prompt", src, &ctx()).unwrap();
        assert_eq!(
            out,
            "daily-digest (Morning summary) by webhook POST application/json ref=main a1,b2 dry=1 \
             body={\"ref\":\"main\"} at 09:00 sched=2026-11-22 09:00 repo=acme/widgets run=r-42#2 ok: All green."
        );
    }

    #[test]
    fn tojson_and_default_work() {
        let (_d, t) = templates();
        let out = t
            .render_str(
                "p",
                "{{ trigger.query | tojson }} {{ vars.missing | default('none') }} \
                 {% if vars.missing is defined %}yes{% else %}no{% endif %}",
                &ctx(),
            )
            .unwrap();
        assert_eq!(out, "{\"dry\": \"1\"} none no");
    }

    #[test]
    fn date_filter_formats_and_zones() {
        let (_d, t) = templates();
        let c = json!({
            "now": "2026-11-22T09:05:03+01:00",
            "east": "2026-03-01T23:30:00+08:00",
            "west": "2026-03-01T23:30:00-05:00",
            "day": "2026-03-01",
            "epoch": 0,
        });
        let r = |s: &str| t.render_str("p", s, &c).unwrap();
        assert_eq!(r("{{ now | date }}"), "2026-11-22 09:05");
        assert_eq!(r("{{ now | date('%Y-%m-%d') }}"), "2026-11-22");
        assert_eq!(r("{{ now | date('%A %d %B %Y, %H:%M:%S %:z') }}"), "Sunday 22 November 2026, 09:05:03 +01:00");
        assert_eq!(r("{{ east | date('%Y-%m-%d %H:%M %z') }}"), "2026-03-01 23:30 +0800");
        assert_eq!(r("{{ west | date('%Y-%m-%dT%H:%M%:z') }}"), "2026-03-01T23:30-05:00");
        assert_eq!(r("{{ west | date('%Y-%m-%d %H:%M', tz='UTC') }}"), "2026-03-02 04:30");
        assert_eq!(r("{{ east | date('%H:%M %Z', tz='Europe/Paris') }}"), "16:30 CET");
        assert_eq!(r("{{ day | date('%d.%m.%Y') }}"), "01.03.2026");
        assert_eq!(r("{{ epoch | date('%Y') }}"), "1970");
        assert_eq!(r("reports/{{ now | date('%Y/%m') }}/x.md"), "reports/2026/11/x.md");
    }

    #[test]
    fn date_filter_errors() {
        let (_d, t) = templates();
        let c = json!({"now": "2026-11-22T09:00:00+01:00", "bad": "yesterday", "day": "2026-03-01"});
        let err = t.render_str("p", "{{ now | date('%Q') }}", &c).unwrap_err();
        assert_eq!(
            err,
            TemplateError::Render {
                name: "p".into(),
                message: "date: `%Q` is not a valid strftime format (line 1)".into()
            }
        );
        let err = t.render_str("p", "\n{{ bad | date }}", &c).unwrap_err();
        assert_eq!(
            err.to_string(),
            "template `p`: date: `yesterday` is not a timestamp; expected RFC 3339 such as \
             `2026-11-22T09:00:00+01:00` (line 2)"
        );
        let err = t.render_str("p", "{{ now | date('%H', tz='Mars/Base') }}", &c).unwrap_err();
        assert!(err.to_string().contains("`Mars/Base` is not a time zone"), "{err}");
        let err = t.render_str("p", "{{ day | date('%H %z') }}", &c).unwrap_err();
        assert!(err.to_string().contains("cannot be applied"), "{err}");
        let err = t.render_str("p", "{{ 3.5 | date }}", &c).unwrap_err();
        assert!(err.to_string().contains("expected an RFC 3339 timestamp"), "{err}");
    }

    #[test]
    fn undefined_top_level_variable() {
        let (_d, t) = templates();
        let err = t.render_str("prompt", "Hello {{ rutine.name }}", &ctx()).unwrap_err();
        assert_eq!(
            err,
            TemplateError::Undefined {
                name: "prompt".into(),
                variable: "rutine".into(),
                hint: "; did you mean `routine`?".into()
            }
        );
        assert_eq!(err.to_string(), "template `prompt` uses `rutine`, which is not defined; did you mean `routine`?");
        let err = t.render_str("prompt", "{{ weather }}", &ctx()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "template `prompt` uses `weather`, which is not defined; defined here: now, output, routine, run, \
             status, trigger, vars"
        );
        let err = t.render_str("deliver[0].file.path", "x/{{ repo }}.md", &ctx()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "template `deliver[0].file.path` uses `repo`, which is not defined; did you mean `vars.repo`?"
        );
    }

    #[test]
    fn undefined_nested_variable() {
        let (_d, t) = templates();
        let err = t.render_str("prompt", "Repo {{ vars.repo }} in {{ vars.region }}", &ctx()).unwrap_err();
        assert_eq!(
            err,
            TemplateError::Undefined {
                name: "prompt".into(),
                variable: "vars.region".into(),
                hint: "; `vars` has: repo, team".into()
            }
        );
        assert_eq!(
            err.to_string(),
            "template `prompt` uses `vars.region`, which is not defined; `vars` has: repo, team"
        );
        let err = t.render_str("prompt", "{{ vars.rpeo }}", &ctx()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "template `prompt` uses `vars.rpeo`, which is not defined; did you mean `vars.repo`?"
        );
        // Deeper: the first missing segment is named.
        let err = t.render_str("prompt", "{% if true %}{{ trigger.pth.name }}{% endif %}", &ctx()).unwrap_err();
        assert!(matches!(&err, TemplateError::Undefined { variable, .. } if variable == "trigger.pth"), "{err}");
        // Undefined in a condition or a loop is an error too.
        let err = t.render_str("prompt", "{% for x in vars.items %}{{ x }}{% endfor %}", &ctx()).unwrap_err();
        assert!(matches!(&err, TemplateError::Undefined { variable, .. } if variable == "vars.items"), "{err}");
        // Only the variable actually hit is reported, not one guarded by `is defined`.
        let err = t
            .render_str("prompt", "{% if vars.opt is defined %}{{ vars.opt }}{% endif %}{{ run.idd }}", &ctx())
            .unwrap_err();
        assert!(matches!(&err, TemplateError::Undefined { variable, .. } if variable == "run.idd"), "{err}");
    }

    #[test]
    fn loop_and_set_variables_are_not_undefined() {
        let (_d, t) = templates();
        let src = "{% set greeting = 'Hi ' ~ vars.team %}{% for c in trigger.json.commits %}{{ greeting }} \
                   {{ c.id }}{{ loop.index }}{% endfor %}{% for i in range(2) %}{{ i }}{% endfor %}";
        assert_eq!(t.render_str("p", src, &ctx()).unwrap(), "Hi core a11Hi core b2201");
        let vars = t.variables("p", src).unwrap();
        let expected: BTreeSet<String> = ["trigger.json.commits", "vars.team"].into_iter().map(String::from).collect();
        assert_eq!(vars, expected);
    }

    #[test]
    fn variables_lists_paths() {
        let (_d, t) = templates();
        let src = "{{ now | date('%Y') }} {{ routine.name }} {{ vars.repo }} {{ vars }} \
                   {% macro m(x) %}{{ x }}{% endmacro %}{{ m(run.id) }}";
        let vars = t.variables("p", src).unwrap();
        let expected: Vec<&str> = vec!["now", "routine.name", "run.id", "vars", "vars.repo"];
        assert_eq!(vars.iter().map(String::as_str).collect::<Vec<_>>(), expected);
        assert!(matches!(t.variables("p", "{{ x"), Err(TemplateError::Syntax { .. })));
    }

    #[test]
    fn syntax_error_line() {
        let (_d, t) = templates();
        let err = t.check("prompt", "line one\nline two\n{% for x in vars %}\n{{ x }\n").unwrap_err();
        match &err {
            TemplateError::Syntax { name, line, .. } => {
                assert_eq!(name, "prompt");
                assert_eq!(*line, 4);
            }
            other => panic!("{other:?}"),
        }
        assert!(err.to_string().starts_with("template `prompt` line 4: "), "{err}");
        let err = t.check("prompt", "a\n{% if x %}\nb\n").unwrap_err();
        assert!(matches!(err, TemplateError::Syntax { .. }), "{err}");
        assert!(t.check("prompt", "{{ vars.x | upper }}").is_ok());
        let err = t.render_str("prompt", "\n\n{{ 1 + }}", &ctx()).unwrap_err();
        assert!(matches!(err, TemplateError::Syntax { line: 3, .. }), "{err}");
    }

    #[test]
    fn missing_file() {
        let (d, t) = templates();
        let err = t.check_file("daily.md.j2").unwrap_err();
        assert_eq!(err, TemplateError::NotFound { name: "daily.md.j2".into(), dir: d.path().display().to_string() });
        assert_eq!(err.to_string(), format!("template `daily.md.j2` was not found in {}", d.path().display()));
        assert!(matches!(t.render_file("nope/x.j2", &ctx()), Err(TemplateError::NotFound { .. })));
        fs::create_dir(d.path().join("sub")).unwrap();
        assert!(matches!(t.check_file("sub"), Err(TemplateError::NotFound { .. })));
    }

    #[test]
    fn escaping_names_are_refused() {
        let (d, t) = templates();
        let outside = d.path().parent().unwrap().join("escape.j2");
        for name in ["../escape.j2", "a/../../escape.j2", "/etc/passwd", "./x.j2", ""] {
            let err = t.check_file(name).unwrap_err();
            match &err {
                TemplateError::Render { message, .. } => assert!(message.contains("refused"), "{err}"),
                other => panic!("{name}: {other:?}"),
            }
        }
        let err = t.render_file("../escape.j2", &ctx()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "template `../escape.j2`: template name refused: `..` may not leave the templates folder"
        );
        // Includes cannot escape either.
        fs::write(d.path().join("inc.j2"), "{% include '../escape.j2' %}").unwrap();
        let err = t.render_file("inc.j2", &ctx()).unwrap_err();
        assert!(err.to_string().contains("refused"), "{err}");
        let _ = outside;
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_of_the_folder_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("templates");
        fs::create_dir(&dir).unwrap();
        fs::write(root.path().join("secret.txt"), "secret").unwrap();
        fs::write(dir.join("real.j2"), "real").unwrap();
        std::os::unix::fs::symlink(root.path().join("secret.txt"), dir.join("leak.j2")).unwrap();
        std::os::unix::fs::symlink(dir.join("real.j2"), dir.join("alias.j2")).unwrap();
        let t = Templates::new(&dir);
        let err = t.render_file("leak.j2", &ctx()).unwrap_err();
        assert!(matches!(&err, TemplateError::Render { message, .. } if message.contains("outside")), "{err}");
        assert_eq!(t.render_file("alias.j2", &ctx()).unwrap(), "real");
    }

    #[test]
    fn fuel_exhaustion_stops_huge_loops() {
        let (_d, t) = templates();
        let started = std::time::Instant::now();
        let src = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}";
        let err = t.render_str("prompt", src, &ctx()).unwrap_err();
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        match &err {
            TemplateError::Render { name, message } => {
                assert_eq!(name, "prompt");
                assert!(message.contains("ran too long"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        // Normal templates have plenty.
        let ok = t.render_str("p", "{% for i in range(1000) %}{{ i }},{% endfor %}", &ctx()).unwrap();
        assert!(ok.ends_with("999,"));
    }

    #[test]
    fn include_extends_and_import_between_files() {
        let (d, t) = templates();
        fs::create_dir(d.path().join("partials")).unwrap();
        fs::write(d.path().join("partials/footer.j2"), "-- {{ routine.name }}").unwrap();
        fs::write(d.path().join("base.j2"), "# {% block title %}{% endblock %}\n{% block body %}{% endblock %}\n")
            .unwrap();
        fs::write(d.path().join("macros.j2"), "{% macro shout(s) %}{{ s | upper }}!{% endmacro %}").unwrap();
        fs::write(
            d.path().join("daily.md.j2"),
            "{% extends 'base.j2' %}{% import 'macros.j2' as m %}{% block title %}{{ m.shout(vars.team) }}{% endblock %}\
             {% block body %}Repo {{ vars.repo }}\n{% include 'partials/footer.j2' %}{% endblock %}",
        )
        .unwrap();
        assert!(t.check_file("daily.md.j2").is_ok());
        assert_eq!(t.render_file("daily.md.j2", &ctx()).unwrap(), "# CORE!\nRepo acme/widgets\n-- daily-digest\n");
        // An inline template can include files too.
        assert_eq!(t.render_str("prompt", "{% include 'partials/footer.j2' %}", &ctx()).unwrap(), "-- daily-digest");
        // Missing include.
        fs::write(d.path().join("broken.j2"), "{% include 'partials/nope.j2' %}").unwrap();
        let err = t.render_file("broken.j2", &ctx()).unwrap_err();
        assert_eq!(
            err,
            TemplateError::NotFound { name: "partials/nope.j2".into(), dir: d.path().display().to_string() }
        );
        fs::write(d.path().join("child.j2"), "{% extends 'nobase.j2' %}").unwrap();
        let err = t.render_file("child.j2", &ctx()).unwrap_err();
        assert!(matches!(&err, TemplateError::NotFound { name, .. } if name == "nobase.j2"), "{err}");
        // Other errors in included files name that file.
        fs::write(d.path().join("partials/div.j2"), "\n{{ 1 // 0 }}").unwrap();
        let err = t.render_str("prompt", "{% include 'partials/div.j2' %}", &ctx()).unwrap_err();
        assert!(
            matches!(&err, TemplateError::Render { name, message } if name == "partials/div.j2" && message.contains("line 2")),
            "{err}"
        );
        // Undefined inside an included file names that file.
        fs::write(d.path().join("partials/bad.j2"), "x\n{{ vars.branch }}").unwrap();
        fs::write(d.path().join("outer.j2"), "{% include 'partials/bad.j2' %}").unwrap();
        let err = t.render_file("outer.j2", &ctx()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "template `partials/bad.j2` uses `vars.branch`, which is not defined; `vars` has: repo, team"
        );
        // Syntax error inside an included file names that file and its line.
        fs::write(d.path().join("partials/syntax.j2"), "ok\n\n{% if %}").unwrap();
        let err = t.render_str("prompt", "{% include 'partials/syntax.j2' %}", &ctx()).unwrap_err();
        assert!(matches!(&err, TemplateError::Syntax { name, line: 3, .. } if name == "partials/syntax.j2"), "{err}");
    }

    #[test]
    fn changed_files_are_reloaded() {
        let (d, t) = templates();
        fs::write(d.path().join("a.j2"), "one").unwrap();
        assert_eq!(t.render_file("a.j2", &ctx()).unwrap(), "one");
        fs::write(d.path().join("a.j2"), "two!").unwrap();
        assert_eq!(t.render_file("a.j2", &ctx()).unwrap(), "two!");
    }

    #[test]
    fn trailing_newline_is_kept() {
        let (d, t) = templates();
        fs::write(d.path().join("daily.md.j2"), "Hello {{ vars.team }}\n").unwrap();
        assert_eq!(t.render_file("daily.md.j2", &ctx()).unwrap(), "Hello core\n");
        assert_eq!(t.render_str("p", "a\n\n", &ctx()).unwrap(), "a\n\n");
        assert_eq!(t.render_str("p", "a", &ctx()).unwrap(), "a");
    }

    #[test]
    fn html_escaping_only_for_html_files() {
        let (d, t) = templates();
        let c = json!({"output": "<b>5 > 3 & \"ok\"</b>"});
        fs::write(d.path().join("report.html"), "<p>{{ output }}</p>").unwrap();
        fs::write(d.path().join("report.html.j2"), "<p>{{ output }}</p>").unwrap();
        fs::write(d.path().join("report.md.j2"), "{{ output }}").unwrap();
        let escaped = "<p>&lt;b&gt;5 &gt; 3 &amp; &quot;ok&quot;&lt;&#x2f;b&gt;</p>";
        assert_eq!(t.render_file("report.html", &c).unwrap(), escaped);
        assert_eq!(t.render_file("report.html.j2", &c).unwrap(), escaped);
        assert_eq!(t.render_file("report.md.j2", &c).unwrap(), "<b>5 > 3 & \"ok\"</b>");
        assert_eq!(t.render_str("prompt", "{{ output }}", &c).unwrap(), "<b>5 > 3 & \"ok\"</b>");
        assert_eq!(t.render_str("report.json", "{{ output }}", &c).unwrap(), "<b>5 > 3 & \"ok\"</b>");
    }

    #[test]
    fn other_render_errors() {
        let (_d, t) = templates();
        let err = t.render_str("prompt", "{{ vars.repo | nosuchfilter }}", &ctx()).unwrap_err();
        assert!(matches!(&err, TemplateError::Render { message, .. } if message.contains("nosuchfilter")), "{err}");
        let err = t.render_str("prompt", "{{ 1 / 0 }}", &ctx()).unwrap_err();
        assert!(matches!(err, TemplateError::Render { .. }), "{err}");
    }

    #[test]
    fn templates_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Templates>();
    }
}
