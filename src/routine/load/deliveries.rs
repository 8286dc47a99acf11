//! Checks of delivery targets: their templates, file paths and mail addresses. They serve a
//! routine's `deliver` and `on_failure.deliver`, and `heartbeat.deliver` of the config.

use std::path::{Component, Path};

use super::scope::Scope;
use super::templates::{check_template, check_template_file};
use super::{DELIVERY_ROOTS, Locator};
use crate::config::DeliveryTarget;
use crate::diag::Diagnostics;
use crate::policy::paths::lexical;
use crate::routine::template::Templates;
use crate::yaml::display_path;

/// What the deliveries of one routine (or of the heartbeat) are checked against.
pub(super) struct Setting<'a> {
    pub templates: &'a Templates,
    /// The templates folder as shown to the user.
    pub shown_dir: &'a str,
    /// What the routine's templates may read (before the delivery's own names).
    pub scope: &'a Scope,
}

/// The file targets among `targets` (at `base`) whose path leaves the workspace as written:
/// each is refused at every run, alone, while the run and the other targets go on.
pub(super) fn leaving_workspace(
    targets: &[DeliveryTarget],
    base: &[&str],
    at: &Locator,
    workspace: &Path,
) -> Diagnostics {
    let mut out = Diagnostics::default();
    for (i, target) in targets.iter().enumerate() {
        let DeliveryTarget::File(f) = target else { continue };
        if leaves(workspace, &skeleton(&f.path)) {
            let idx = i.to_string();
            let rel: Vec<&str> = base.iter().copied().chain([idx.as_str(), "file", "path"]).collect();
            out.push(
                at.error(&rel, format!("`{}` leaves the workspace", f.path))
                    .with_hint("deliveries are written only inside the workspace; write the path relative to it"),
            );
        }
    }
    out
}

/// Checks one delivery target at `base` (`deliver.N` or `on_failure.deliver.N` of a routine,
/// `heartbeat.deliver.N` of the config).
pub(super) fn check_delivery(
    target: &DeliveryTarget,
    base: &[&str],
    at: &Locator,
    setting: &Setting<'_>,
    diags: &mut Diagnostics,
) {
    let (templates, shown_dir) = (setting.templates, setting.shown_dir);
    let roots = setting.scope.with(&DELIVERY_ROOTS);
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
                with(&["file", "template"], &mut |p| {
                    check_template_file(templates, shown_dir, at, p, t, &roots, diags)
                });
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
                                at.error(p, format!("`{addr}` in `{}` is not an e-mail address", display_path(p)))
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
                    with(&["mail", field], &mut |p| check_template_file(templates, shown_dir, at, p, t, &roots, diags));
                }
            }
        }
    }
}

/// The path template with each `{{ }}`, `{% %}` and `{# #}` block standing for one plain name:
/// what the template writes whatever its values (a value holding `..` is refused at delivery).
fn skeleton(template: &str) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(i) = rest.find(['{']) {
        let close = match rest[i..].chars().nth(1) {
            Some('{') => "}}",
            Some('%') => "%}",
            Some('#') => "#}",
            _ => {
                out.push_str(&rest[..=i]);
                rest = &rest[i + 1..];
                continue;
            }
        };
        out.push_str(&rest[..i]);
        let Some(end) = rest[i..].find(close) else { return out };
        out.push('x');
        rest = &rest[i + end + close.len()..];
    }
    out.push_str(rest);
    out
}

/// Whether `path` (absolute, or relative to `workspace`) lies outside the workspace, as written.
fn leaves(workspace: &Path, path: &str) -> bool {
    let path = Path::new(path.trim());
    if path.is_absolute() {
        let root = workspace.canonicalize().unwrap_or_else(|_| workspace.to_path_buf());
        let lexical = lexical(path);
        return !(lexical.starts_with(&root) || lexical.starts_with(workspace));
    }
    let mut depth = 0usize;
    for c in path.components() {
        match c {
            Component::Normal(_) => depth += 1,
            Component::ParentDir if depth == 0 => return true,
            Component::ParentDir => depth -= 1,
            _ => {}
        }
    }
    false
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_leaves_the_workspace_as_its_template_writes_it() {
        let ws = Path::new("/srv/project");
        assert_eq!(skeleton("reports/{{ routine.name }}/{% if x %}a{% endif %}.md"), "reports/x/xax.md");
        for (path, out) in [
            ("reports/out.md", false),
            ("../outside.md", true),
            ("a/../../b.md", true),
            ("{{ vars.dir }}/../x.md", false),
            ("../{{ routine.name }}.md", true),
            ("/srv/project/r.md", false),
            ("/srv/project/../r.md", true),
            ("/tmp/r.md", true),
        ] {
            assert_eq!(leaves(ws, &skeleton(path)), out, "{path}");
        }
    }
}
