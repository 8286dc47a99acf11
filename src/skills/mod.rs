//! Skills (SPEC §10): a folder `skills_dir/NAME/` with a `SKILL.md` (YAML front matter with
//! `name`, `description` and optional `tools`, then Markdown instructions) and any resource
//! files the instructions name.
//!
//! [`Catalog::load`] finds the skills and checks their front matter, reporting every problem
//! with its location; the system prompt lists name and description of each, the `skill` tool
//! loads a body with [`Skill::document`], a routine's `skills:` puts bodies into its prompt.
//! Every file is read only inside its folder with symlinks resolved (`read.rs`). A skill never
//! grants tools: its `tools` only say what the instructions use.
//!
//! This module sits beside the tools and uses only config-level pieces (`diag`, `yaml`).

mod front;
pub mod read;

use std::path::{Path, PathBuf};

use crate::diag::{Diagnostic, Diagnostics};
pub use front::valid_name;
pub use read::{ReadError, read_inside};

/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";
/// Largest `SKILL.md` read.
const MAX_SKILL_BYTES: u64 = 256 * 1024;
/// Most resource files listed for one skill, and how deep folders are looked into.
const MAX_RESOURCES: usize = 100;
const MAX_DEPTH: usize = 4;

/// One skill whose front matter loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// Tools its instructions use (never granted by the skill).
    pub tools: Vec<String>,
    /// The skill's folder, canonical.
    pub dir: PathBuf,
    /// The folder as a person would write it (relative to the config folder where inside it).
    pub shown_dir: PathBuf,
}

/// A skill's instructions and resources, read when they are used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillDocument {
    pub name: String,
    /// The Markdown after the front matter.
    pub body: String,
    /// Every other file of the folder (inside it, symlinks resolved), sorted.
    pub resources: Vec<PathBuf>,
}

/// Why a skill's document could not be read when it was needed.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    #[error("no skill named `{0}`")]
    Unknown(String),
    #[error("skill `{name}`: {source}")]
    Read { name: String, source: ReadError },
    #[error("skill `{name}`: {} no longer has a valid front matter; see `routines validate`", file.display())]
    FrontMatter { name: String, file: PathBuf },
}

/// The skills of a folder, and the problems of those that did not load.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    skills: Vec<Skill>,
    /// Folders with a `SKILL.md` that has problems.
    broken: Vec<String>,
    diagnostics: Diagnostics,
}

impl Catalog {
    /// Loads every skill of `dir` (a folder that does not exist holds none). Paths in
    /// diagnostics are shown relative to `base` (the config folder) where inside it;
    /// `known_tools` are the tool names a front matter may list.
    pub fn load(dir: &Path, base: &Path, known_tools: &[&str]) -> Catalog {
        let mut catalog = Catalog::default();
        let shown = |p: &Path| p.strip_prefix(base).map_or_else(|_| p.to_path_buf(), Path::to_path_buf);
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return catalog,
            Err(e) => {
                catalog.diagnostics.push(Diagnostic::new(
                    &shown(dir),
                    1,
                    1,
                    format!("cannot read the skills folder: {e}"),
                ));
                return catalog;
            }
        };
        let Ok(root) = dir.canonicalize() else { return catalog };
        let mut folders: Vec<(String, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter_map(|e| Some((e.file_name().to_str()?.to_string(), e.path())))
            .filter(|(name, path)| !name.starts_with('.') && path.is_dir())
            .collect();
        folders.sort();
        for (folder, path) in folders {
            let file = path.join(SKILL_FILE);
            let shown_file = shown(&file);
            if !file.exists() {
                if let Some(other) = misnamed_skill_file(&path) {
                    catalog.broken.push(folder.clone());
                    catalog.diagnostics.push(
                        Diagnostic::new(&shown(&path.join(&other)), 1, 1, format!("`{other}` is not read as a skill"))
                            .with_hint(format!("name it {SKILL_FILE}, in capitals")),
                    );
                }
                continue;
            }
            match load_one(&root, &path, &file, &shown_file, &folder, known_tools) {
                Ok(mut skill) => {
                    skill.shown_dir = shown(&path);
                    catalog.skills.push(skill);
                }
                Err(d) => {
                    catalog.broken.push(folder);
                    catalog.diagnostics.extend(d);
                }
            }
        }
        catalog.diagnostics = std::mem::take(&mut catalog.diagnostics).sorted();
        catalog
    }

    /// The skills that loaded, by name.
    pub fn skills(&self) -> &[Skill] {
        &self.skills
    }

    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    pub fn names(&self) -> Vec<&str> {
        self.skills.iter().map(|s| s.name.as_str()).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// Whether `name` is a folder whose `SKILL.md` has problems (reported in the diagnostics).
    pub fn is_broken(&self, name: &str) -> bool {
        self.broken.iter().any(|b| b == name)
    }

    /// The problems found in the folder.
    pub fn diagnostics(&self) -> &Diagnostics {
        &self.diagnostics
    }

    /// The folders of the skills that loaded (canonical), which the agent may read inside.
    pub fn dirs(&self) -> Vec<PathBuf> {
        self.skills.iter().map(|s| s.dir.clone()).collect()
    }

    /// The document of skill `name`, read now.
    pub fn document(&self, name: &str) -> Result<SkillDocument, SkillError> {
        self.get(name).ok_or_else(|| SkillError::Unknown(name.to_string()))?.document()
    }
}

impl Skill {
    /// The whole `SKILL.md`, front matter included, read now.
    pub fn text(&self) -> Result<String, SkillError> {
        let bytes = read_inside(&self.dir, &self.dir.join(SKILL_FILE), MAX_SKILL_BYTES)
            .map_err(|source| SkillError::Read { name: self.name.clone(), source })?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Reads the instructions again (the file may have changed since the catalogue loaded)
    /// and lists the resources beside them.
    pub fn document(&self) -> Result<SkillDocument, SkillError> {
        let read_error = |source| SkillError::Read { name: self.name.clone(), source };
        let file = self.dir.join(SKILL_FILE);
        let bytes = read_inside(&self.dir, &file, MAX_SKILL_BYTES).map_err(read_error)?;
        let text = String::from_utf8_lossy(&bytes);
        let body = front::body(&text).ok_or_else(|| SkillError::FrontMatter {
            name: self.name.clone(),
            file: self.shown_dir.join(SKILL_FILE),
        })?;
        let mut resources = Vec::new();
        list_resources(&self.dir, &self.dir, 0, &mut resources);
        resources.sort();
        resources.truncate(MAX_RESOURCES);
        Ok(SkillDocument { name: self.name.clone(), body: body.to_string(), resources })
    }
}

fn load_one(
    root: &Path,
    dir: &Path,
    file: &Path,
    shown_file: &Path,
    folder: &str,
    known_tools: &[&str],
) -> Result<Skill, Diagnostics> {
    let one =
        |message: String, hint: &str| Diagnostics(vec![Diagnostic::new(shown_file, 1, 1, message).with_hint(hint)]);
    // The folder itself must be inside the skills folder: a link to elsewhere is refused.
    let dir = read::resolve_inside(root, dir).map_err(|e| {
        one(format!("the skill folder is not read: {e}"), "copy the skill into the skills folder instead of linking it")
    })?;
    let bytes = read_inside(&dir, file, MAX_SKILL_BYTES).map_err(|e| {
        one(format!("{SKILL_FILE} is not read: {e}"), "make SKILL.md a regular file inside its skill's folder")
    })?;
    let text =
        String::from_utf8(bytes).map_err(|_| one(format!("{SKILL_FILE} is not UTF-8 text"), "save it as UTF-8"))?;
    let parsed = front::parse(shown_file, folder, &text, known_tools)?;
    Ok(Skill {
        name: parsed.name,
        description: parsed.description,
        tools: parsed.tools,
        dir,
        shown_dir: PathBuf::new(),
    })
}

/// A `skill.md` or `Skill.md`: a skill file with the wrong case.
fn misnamed_skill_file(dir: &Path) -> Option<String> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .find(|n| n.eq_ignore_ascii_case(SKILL_FILE))
}

/// Regular files under `dir` (canonical) that resolve inside `root`, except the root's
/// `SKILL.md`, hidden entries and what lies deeper than [`MAX_DEPTH`].
fn list_resources(root: &Path, dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        if out.len() > MAX_RESOURCES {
            return;
        }
        let Ok(target) = read::resolve_inside(root, &path) else { continue };
        if target.is_dir() {
            if depth + 1 < MAX_DEPTH && target == path {
                list_resources(root, &path, depth + 1, out);
            }
        } else if target.is_file() && !(depth == 0 && path.file_name().is_some_and(|n| n == SKILL_FILE)) {
            out.push(path);
        }
    }
}

#[cfg(test)]
mod tests;
