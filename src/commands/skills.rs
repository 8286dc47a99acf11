//! `routines skills [NAME]`: the skills found in `skills_dir` (SPEC §10), or one `SKILL.md`.

use std::path::Path;

use routines::config::Config;
use routines::diag::did_you_mean;
use routines::skills::{Catalog, Skill};
use routines::tools::tool_names;
use serde_json::{Value, json};

use super::{print_json, table};
use crate::app::Error;

pub fn run(config: &Config, name: Option<&str>, json_out: bool) -> Result<(), Error> {
    let catalog = Catalog::load(&config.skills_dir, &config.base_dir, &tool_names());
    let shown = |p: &Path| p.strip_prefix(&config.base_dir).unwrap_or(p).display().to_string();
    let Some(name) = name else {
        let problems = catalog.diagnostics().len();
        if problems > 0 {
            eprintln!("warning: {problems} problem(s) in skills; see `routines validate`");
        }
        if json_out {
            print_json(&Value::Array(catalog.skills().iter().map(|s| summary(s, &shown)).collect()))?;
        } else if catalog.is_empty() {
            eprintln!(
                "no skills in {}/ (a skill is a folder with a SKILL.md; `routines init` writes an example)",
                shown(&config.skills_dir)
            );
        } else {
            let rows: Vec<Vec<String>> = catalog
                .skills()
                .iter()
                .map(|s| vec![s.name.clone(), s.description.clone(), shown(&s.shown_dir)])
                .collect();
            outln!("{}", table(&["NAME", "DESCRIPTION", "FOLDER"], &rows))?;
        }
        return Ok(());
    };
    let Some(skill) = catalog.get(name) else {
        if catalog.is_broken(name) {
            return Err(Error::BrokenSkill(name.to_string()));
        }
        let hint = match did_you_mean(name, catalog.names()) {
            Some(best) => format!("; did you mean `{best}`?"),
            None if catalog.is_empty() => format!("; there are no skills in {}/", shown(&config.skills_dir)),
            None => format!("; skills: {}", catalog.names().join(", ")),
        };
        return Err(Error::UnknownSkill { name: name.to_string(), hint });
    };
    if json_out {
        let doc = skill.document()?;
        let mut v = summary(skill, &shown);
        v["body"] = json!(doc.body);
        v["resources"] = json!(doc.resources.iter().map(|p| shown(p)).collect::<Vec<_>>());
        print_json(&v)?;
    } else {
        let text = skill.text()?;
        out!("{text}")?;
        if !text.ends_with('\n') {
            outln!()?;
        }
    }
    Ok(())
}

fn summary(s: &Skill, shown: &dyn Fn(&Path) -> String) -> Value {
    json!({"name": s.name, "description": s.description, "folder": shown(&s.shown_dir), "tools": s.tools})
}
