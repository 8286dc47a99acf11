//! `skill`: loads a skill's instructions (SPEC §10) with the list of its resource files, which
//! `file_read` can then read inside the skill's folder.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Tool, ToolContext, ToolError};
use crate::diag::did_you_mean;
use crate::policy::{CallInfo, Effect};
use crate::skills::{Catalog, SkillError};

/// The `skill` tool over the skills of one session.
pub struct SkillTool {
    catalog: Arc<Catalog>,
}

impl SkillTool {
    pub fn new(catalog: Arc<Catalog>) -> Self {
        SkillTool { catalog }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillArgs {
    /// The skill's name, as listed in the Skills section.
    pub name: String,
}

#[async_trait]
impl Tool for SkillTool {
    const NAME: &'static str = "skill";
    type Args = SkillArgs;

    fn description(&self) -> &'static str {
        "Load a skill's instructions (listed under Skills) and the list of its files."
    }

    fn effect(&self) -> Effect {
        Effect::ReadOnly
    }

    fn info(&self, args: &SkillArgs) -> CallInfo {
        CallInfo::new(args.name.clone(), Self::NAME)
    }

    async fn call(&self, args: SkillArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let name = args.name.trim();
        if self.catalog.get(name).is_none() {
            let names = self.catalog.names();
            let hint = match did_you_mean(name, names.iter().copied()) {
                Some(best) => format!("did you mean `{best}`?"),
                None if names.is_empty() => "there are no skills".into(),
                None => format!("skills: {}", names.join(", ")),
            };
            return Err(ToolError::InvalidArgs(format!("no skill named `{name}`; {hint}")));
        }
        let catalog = self.catalog.clone();
        let (name, workspace) = (name.to_string(), ctx.workspace.clone());
        tokio::task::spawn_blocking(move || render(&catalog, &name, &workspace))
            .await
            .map_err(|e| ToolError::System(format!("loading the skill failed: {e}")))?
    }
}

fn render(catalog: &Catalog, name: &str, workspace: &Path) -> Result<String, ToolError> {
    let doc = catalog.document(name).map_err(|e| match e {
        SkillError::Unknown(_) => ToolError::InvalidArgs(e.to_string()),
        other => ToolError::failed(other.to_string()),
    })?;
    let mut out = format!("# Skill {}\n{}\n", doc.name, doc.body);
    if !doc.resources.is_empty() {
        out.push_str("\nIts files (read them with file_read when the instructions need them):\n");
        for r in &doc.resources {
            out.push_str(&format!("- {}\n", shown(r, workspace)));
        }
    }
    Ok(out)
}

/// A path as `file_read` takes it: relative inside the workspace, else absolute.
pub fn shown(path: &Path, workspace: &Path) -> String {
    path.strip_prefix(workspace).map_or_else(|_| path.display().to_string(), |p| p.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Autonomy;
    use crate::policy::Policy;
    use crate::tools::{FileRead, file::FileReadArgs};

    #[tokio::test]
    async fn loads_a_body_and_lists_files_that_file_read_can_read_outside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("ws")).unwrap();
        std::fs::create_dir_all(root.join("shared/skills/notes")).unwrap();
        std::fs::write(
            root.join("shared/skills/notes/SKILL.md"),
            "---\nname: notes\ndescription: Take notes\n---\nUse format.md.\n",
        )
        .unwrap();
        std::fs::write(root.join("shared/skills/notes/format.md"), "# Format\n").unwrap();
        std::fs::write(root.join("shared/other.md"), "not a skill file\n").unwrap();
        let catalog = Arc::new(Catalog::load(&root.join("shared/skills"), &root, &["file_read"]));
        let mut ctx = ToolContext::for_test(Policy::new(Autonomy::Supervised, &root.join("ws"), &[]).unwrap());
        ctx.read_roots = catalog.dirs().into();
        let tool = SkillTool::new(catalog);

        let out = tool.call(SkillArgs { name: "notes".into() }, &ctx).await.unwrap();
        let resource = root.join("shared/skills/notes/format.md");
        assert_eq!(
            out,
            format!(
                "# Skill notes\nUse format.md.\n\nIts files (read them with file_read when the instructions need them):\n- {}\n",
                resource.display()
            )
        );
        let read = |path: String| FileRead.call(FileReadArgs { path, offset: None, limit: None }, &ctx);
        assert_eq!(read(resource.display().to_string()).await.unwrap(), "# Format\n");
        // Only inside the skill's folder.
        assert!(matches!(read(root.join("shared/other.md").display().to_string()).await, Err(ToolError::Refused(_))));
        assert!(matches!(
            read(format!("{}/../../other.md", root.join("shared/skills/notes").display())).await,
            Err(ToolError::Refused(_))
        ));
        let err = tool.call(SkillArgs { name: "note".into() }, &ctx).await.unwrap_err();
        assert_eq!(err, ToolError::InvalidArgs("no skill named `note`; did you mean `notes`?".into()));
    }
}
