//! Checks of a routine's `attach:`: it needs a model that takes images (`provider.vision`),
//! each entry is a valid template, and a literal path stays inside the workspace. What the
//! entries match is checked at each run, before any model call.

use super::Locator;
use super::scope::Scope;
use super::templates::check_template;
use crate::config::Config;
use crate::diag::Diagnostics;
use crate::routine::RoutineFile;
use crate::routine::template::Templates;

pub(super) fn check_attach(
    spec: &RoutineFile,
    at: &Locator,
    config: &Config,
    templates: &Templates,
    scope: &Scope,
    diags: &mut Diagnostics,
) {
    if spec.attach.is_empty() {
        return;
    }
    if !config.provider.vision {
        diags.push(at.error_key(&["attach"], "`attach` sends images, but provider.vision is false").with_hint(
            "set `vision: true` under `provider:` in routines.yaml if the model accepts images; else remove `attach`",
        ));
    }
    for (i, entry) in spec.attach.iter().enumerate() {
        let idx = i.to_string();
        let rel = ["attach", idx.as_str()];
        let entry_trimmed = entry.trim();
        if entry_trimmed.is_empty() {
            diags.push(
                at.error(&rel, "an `attach` entry is empty")
                    .with_hint("e.g. \"{{ trigger.path }}\" or \"shots/*.png\""),
            );
            continue;
        }
        check_template(templates, at, &rel, entry, scope, diags);
        let templated = entry.contains("{{") || entry.contains("{%");
        if !templated && (entry_trimmed.starts_with('/') || entry_trimmed.split('/').any(|seg| seg == "..")) {
            diags.push(
                at.error(&rel, format!("`{entry}` leaves the workspace"))
                    .with_hint("images are sent only from inside the workspace; write paths and globs relative to it"),
            );
        }
    }
}
