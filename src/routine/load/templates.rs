//! Checks of the templates a routine names: syntax, variables the context
//! does not have (placed at their first use inside the template), and
//! template files that do not exist.

use std::path::Path;

use super::Locator;
use super::scope::Scope;
use crate::diag::{Diagnostic, Diagnostics, did_you_mean};
use crate::routine::template::{TemplateError, Templates};
use crate::yaml::display_path;

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

/// Checks the template `source` written at `rel`: syntax, and variables
/// outside `scope` or fields the context objects do not have.
pub(super) fn check_template(
    templates: &Templates,
    at: &Locator,
    rel: &[&str],
    source: &str,
    scope: &Scope,
    diags: &mut Diagnostics,
) {
    let roots = scope.roots.as_slice();
    let label = display_path(rel);
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
            if let Some(f) = unknown_field(&label, source, v, scope) {
                let d = match f.place {
                    Some((line, col)) => at.error_in(rel, line, col, f.message),
                    None => at.error(rel, f.message),
                };
                diags.push(d.with_hint(f.hint));
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

/// A field a template reads that its context does not have.
struct UnknownField {
    message: String,
    hint: String,
    /// Line and column of its first use in the template.
    place: Option<(usize, usize)>,
}

/// `routine.nmae`, `trigger.bdy` and the like: a field that the fixed objects never have, or
/// that no trigger of the routine gives.
fn unknown_field(label: &str, source: &str, var: &str, scope: &Scope) -> Option<UnknownField> {
    let mut segs = var.split('.');
    let (root, field) = (segs.next()?, segs.next()?);
    let trigger_fields = scope.trigger_fields();
    let fields: &[&str] = match FIXED_FIELDS.iter().find(|(r, _)| *r == root) {
        Some((_, fields)) => fields,
        None if root == "trigger" => &trigger_fields,
        None => return None,
    };
    if fields.contains(&field) || guarded(source, &format!("{root}.{field}")) {
        return None;
    }
    let hint = match did_you_mean(field, fields.iter().copied()) {
        Some(best) => format!("did you mean `{root}.{best}`?"),
        None if root == "trigger" => trigger_hint(scope, field, fields),
        None => format!("`{root}` has: {}", fields.join(", ")),
    };
    let message = format!("template `{label}` uses `{root}.{field}`, which is not defined");
    Some(UnknownField { message, hint, place: first_use(source, &format!("{root}.{field}")) })
}

/// The fields a template file reads that its context does not have (`trigger.bdy`), placed in
/// the file (`shown_dir/file`). Unknown top-level names are left to the render: a file may be
/// shared, extended or imported in ways its own source does not show.
fn check_file_fields(templates: &Templates, shown_dir: &str, file: &str, scope: &Scope, diags: &mut Diagnostics) {
    let Ok(source) = std::fs::read_to_string(templates.dir().join(file)) else { return };
    let Ok(vars) = templates.variables(file, &source) else { return };
    let shown = Path::new(shown_dir).join(file);
    for f in vars.iter().filter_map(|v| unknown_field(file, &source, v, scope)) {
        let (line, col) = f.place.unwrap_or((1, 1));
        diags.push(Diagnostic::new(&shown, line, col, f.message).with_hint(f.hint));
    }
}

/// Why `trigger.{field}` is missing here: another kind of trigger sets it (or a name close to
/// it), or no trigger has it.
fn trigger_hint(scope: &Scope, field: &str, fields: &[&str]) -> String {
    if let Some(why) = scope.missing_because(field) {
        return why;
    }
    match did_you_mean(field, Scope::every_trigger_field()).and_then(|best| Some((best, scope.missing_because(best)?)))
    {
        Some((best, why)) => format!("did you mean `trigger.{best}`? {why}"),
        None => format!("`trigger` has: {}", fields.join(", ")),
    }
}

/// Whether a read of `path` is guarded where it is written (`path is defined`, `path | default`):
/// the template then works where it is missing.
fn guarded(source: &str, path: &str) -> bool {
    source.match_indices(path).any(|(i, _)| {
        let rest = source[i + path.len()..].trim_start();
        let filter = rest.strip_prefix('|').map(str::trim_start);
        ["is defined", "is not defined", "is undefined"].iter().any(|t| rest.starts_with(t))
            || filter.is_some_and(|f| f.starts_with("default") || f.starts_with("d("))
    })
}

/// A template file named at `rel` (`prompt_template`, a delivery `template`), and the fields
/// it reads that `scope` lacks.
pub(super) fn check_template_file(
    templates: &Templates,
    shown_dir: &str,
    at: &Locator,
    rel: &[&str],
    file: &str,
    scope: &Scope,
    diags: &mut Diagnostics,
) {
    let field = display_path(rel);
    let d = match templates.check_file(file) {
        Ok(()) => return check_file_fields(templates, shown_dir, file, scope, diags),
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
