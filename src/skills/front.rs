//! The front matter of a `SKILL.md`: a YAML block between a first line `---` and the next line
//! `---`, with `name`, `description` and optional `tools`, followed by the Markdown body.
//! Problems are diagnostics with the file's own lines and columns.

use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::diag::{Diagnostic, Diagnostics, did_you_mean};
use crate::yaml;

/// The keys of a skill's front matter.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FrontMatter {
    /// The skill's name: the name of its folder.
    name: Option<String>,
    /// One line saying when the skill helps; listed in the system prompt.
    description: Option<String>,
    /// Tools the instructions use. A skill never grants them.
    #[serde(default)]
    tools: Vec<String>,
    /// Keys of the SKILL.md format shared by agent tools that routines does not use: accepted,
    /// so skills written for other tools load, and ignored.
    #[allow(dead_code)]
    license: Option<serde_json::Value>,
    #[allow(dead_code)]
    compatibility: Option<serde_json::Value>,
    #[allow(dead_code)]
    metadata: Option<serde_json::Value>,
    #[allow(dead_code)]
    #[serde(rename = "allowed-tools")]
    allowed_tools: Option<serde_json::Value>,
}

/// A `SKILL.md` split and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    pub name: String,
    pub description: String,
    pub tools: Vec<String>,
    /// The Markdown after the front matter, trimmed.
    pub body: String,
}

const FORMAT_HINT: &str = "start SKILL.md with a front matter block:\n        ---\n        name: FOLDER-NAME\n        description: when this skill helps, in one line\n        ---\n      then the instructions in Markdown";

/// Where the front matter is: its YAML (with every line outside it blanked, so positions are the
/// file's), the line of its closing `---` (1-based) and the body after it.
fn split(text: &str) -> Option<(String, usize, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next()?;
    if first.trim_end() != "---" {
        return None;
    }
    let mut yaml = String::from("\n");
    let mut offset = first.len();
    for (i, line) in lines.enumerate() {
        offset += line.len();
        if matches!(line.trim_end(), "---" | "...") {
            return Some((yaml, i + 2, &text[offset..]));
        }
        yaml.push_str(line);
    }
    None
}

/// Parses the text of `file`, the `SKILL.md` of the folder `folder`. `known_tools` are the
/// tool names a skill may name.
pub fn parse(file: &Path, folder: &str, text: &str, known_tools: &[&str]) -> Result<Parsed, Diagnostics> {
    let Some((front, closing, body)) = split(text) else {
        let message = if text.trim_start_matches('\u{feff}').starts_with("---") {
            "the front matter of SKILL.md is not closed by a line `---`"
        } else {
            "SKILL.md has no front matter"
        };
        return Err(Diagnostics(vec![Diagnostic::new(file, 1, 1, message).with_hint(FORMAT_HINT)]));
    };
    let loaded = yaml::from_str::<FrontMatter>(file, &front)?;
    let fm = loaded.value;
    let source = loaded.source;
    let mut diags = Diagnostics::default();
    let name = fm.name.unwrap_or_default();
    if name.trim().is_empty() {
        diags.push(
            Diagnostic::new(file, 2, 1, "the front matter has no `name`")
                .with_hint(format!("add `name: {folder}` (the name of the skill's folder)")),
        );
    } else if name != folder {
        diags.push(
            source
                .error_at(&["name"], format!("the skill is named `{name}` but its folder is `{folder}`"))
                .with_hint(format!("write `name: {folder}`, or rename the folder to `{name}`")),
        );
    } else if !valid_name(&name) {
        diags.push(
            source
                .error_at(&["name"], format!("`{name}` is not a valid skill name"))
                .with_hint("use lowercase letters, digits, `-` and `_`, starting with a letter or digit"),
        );
    }
    let description = fm.description.unwrap_or_default().trim().to_string();
    if description.is_empty() {
        let d = match source.root.get("description") {
            Some(_) => source.error_at(&["description"], "the description is empty"),
            None => Diagnostic::new(file, 2, 1, "the front matter has no `description`"),
        };
        diags.push(d.with_hint(
            "describe in one line when the skill helps, e.g. `description: Write release notes from the git history`; it is what the model reads to choose it",
        ));
    }
    for (i, tool) in fm.tools.iter().enumerate() {
        if !known_tools.contains(&tool.as_str()) {
            let hint = match did_you_mean(tool, known_tools.iter().copied()) {
                Some(best) => format!("did you mean `{best}`?"),
                None => format!("tools: {}", known_tools.join(", ")),
            };
            diags.push(source.error_at(&["tools", &i.to_string()], format!("unknown tool `{tool}`")).with_hint(hint));
        }
    }
    let body = body.trim();
    if body.is_empty() {
        diags.push(
            Diagnostic::new(file, closing, 1, "SKILL.md has no instructions after its front matter")
                .with_hint("write what the agent should do, in Markdown, below the closing `---`"),
        );
    }
    if !diags.is_empty() {
        return Err(diags.sorted());
    }
    Ok(Parsed { name, description, tools: fm.tools, body: body.to_string() })
}

/// The body of a `SKILL.md` already checked at load, read again when it is used.
pub fn body(text: &str) -> Option<&str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    if lines.next()?.trim_end() != "---" {
        return None;
    }
    let mut offset = text.find('\n')? + 1;
    for line in lines {
        offset += line.len();
        if matches!(line.trim_end(), "---" | "...") {
            return Some(text[offset..].trim());
        }
    }
    None
}

/// `[a-z0-9][a-z0-9_-]*`, as routine names.
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: [&str; 3] = ["shell", "file_read", "file_list"];

    fn errors(folder: &str, text: &str) -> Vec<String> {
        parse(Path::new("skills/x/SKILL.md"), folder, text, &TOOLS)
            .unwrap_err()
            .0
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn parses_name_description_tools_and_body() {
        let text =
            "---\nname: notes\ndescription: Take notes\ntools: [file_read]\nlicense: MIT\n---\n\n# Notes\nDo it.\n";
        let p = parse(Path::new("SKILL.md"), "notes", text, &TOOLS).unwrap();
        assert_eq!(
            p,
            Parsed {
                name: "notes".into(),
                description: "Take notes".into(),
                tools: vec!["file_read".into()],
                body: "# Notes\nDo it.".into()
            }
        );
        assert_eq!(body(text), Some("# Notes\nDo it."));
        // A byte order mark and `...` as the closing line are fine.
        let p = parse(Path::new("SKILL.md"), "n", "\u{feff}---\nname: n\ndescription: d\n...\nbody\n", &TOOLS).unwrap();
        assert_eq!(p.body, "body");
    }

    #[test]
    fn reports_each_problem_where_it_is() {
        assert_eq!(
            errors("x", "# Notes\n"),
            vec![format!("skills/x/SKILL.md:1:1: SKILL.md has no front matter\n  help: {FORMAT_HINT}")]
        );
        assert!(errors("x", "---\nname: x\n")[0].contains("is not closed"));
        assert_eq!(
            errors("x", "---\nname: x\ndescripton: d\n---\nbody\n"),
            vec!["skills/x/SKILL.md:3:1: unknown field `descripton`\n  help: did you mean `description`?"]
        );
        assert_eq!(
            errors("x", "---\nname: y\ndescription: d\n---\nbody\n"),
            vec![
                "skills/x/SKILL.md:2:7: the skill is named `y` but its folder is `x`\n  help: write `name: x`, or rename the folder to `y`"
            ]
        );
        assert_eq!(
            errors("x", "---\nname: x\ndescription: '  '\ntools: [shel]\n---\n\n"),
            vec![
                "skills/x/SKILL.md:3:14: the description is empty\n  help: describe in one line when the skill helps, e.g. `description: Write release notes from the git history`; it is what the model reads to choose it",
                "skills/x/SKILL.md:4:9: unknown tool `shel`\n  help: did you mean `shell`?",
                "skills/x/SKILL.md:5:1: SKILL.md has no instructions after its front matter\n  help: write what the agent should do, in Markdown, below the closing `---`",
            ]
        );
        assert!(errors("x", "---\nname: [x\n---\nbody\n")[0].starts_with("skills/x/SKILL.md:"));
        assert!(errors("Big", "---\nname: Big\ndescription: d\n---\nbody\n")[0].contains("not a valid skill name"));
        assert_eq!(
            errors("x", "---\ndescription: d\n---\nbody\n"),
            vec![
                "skills/x/SKILL.md:2:1: the front matter has no `name`\n  help: add `name: x` (the name of the skill's folder)"
            ]
        );
    }
}
