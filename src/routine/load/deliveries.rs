//! Checks of a routine's deliveries: their templates and mail addresses.

use super::templates::{check_template, check_template_file};
use super::{CONTEXT_ROOTS, DELIVERY_ROOTS, Locator};
use crate::config::DeliveryTarget;
use crate::diag::Diagnostics;
use crate::routine::template::Templates;
use crate::yaml::display_path;

/// Checks one delivery target at `base` (`deliver.N` or `on_failure.deliver.N`).
pub(super) fn check_delivery(
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
