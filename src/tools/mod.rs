//! Tools the agent can call.
//!
//! A tool is a typed struct ([`Tool`]): its arguments are a serde struct
//! whose JSON schema is derived with schemars, so the schema the model sees
//! and the parser that reads its calls cannot drift apart. One blanket impl
//! erases the type ([`DynTool`]) for the [`Registry`].

mod exit_status;
pub use exit_status::status_answers;
mod file;
mod format;
mod glob;
mod html_text;
mod http;
mod memory;
mod near;
pub mod schedule;
mod self_info;
mod shell;
mod shell_spec;
mod skill;
mod split_format;
mod write;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::config::{Autonomy, Language};
use crate::llm::ToolSpec;
use crate::memory::Memory;
use crate::policy::{CallInfo, Confinement, Effect, OpenError, Opened, PathError, Policy};

pub use file::{FileList, FileRead, needs_range, read_range, whole_file_spec, without_range};
pub use format::{MAX_RESULT_CHARS, format_result, truncate, truncated_marker, was_truncated};
pub use http::{HttpRequest, body_of as http_body};
pub use memory::{MemoryForget, MemoryRecall, MemoryStore};
pub use near::{names_a_near_path, near_path};
pub use schedule::{Schedule, ScheduleScope, own_recipients};
pub use self_info::SelfInfo;
pub(crate) use shell::run_contained;
pub use shell::{Contained, Shell, ShellArgs, ShellSandbox, ShellSettings, safe_env};
pub use shell_spec::describe as describe_shell;
pub use skill::SkillTool;
pub use split_format::{hint as format_fix_note, joined as joined_format};
pub use write::{FileEdit, FileWrite, write_atomic};

/// Why a tool call did not produce its output. Who sees what:
/// everything but [`ToolError::Fatal`] goes back to the model as the tool
/// result, so it can fix its call; `Fatal` ends the turn.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The tool ran and failed (file missing, non-zero exit); what it
    /// produced before failing is kept.
    #[error("{message}")]
    Failed { message: String, partial: Option<String> },
    /// The tool failed for a reason that may pass: a timeout, a 5xx answer, a reset
    /// connection, a busy database. Read to the model like [`ToolError::Failed`]; a read-only
    /// call that failed so may be made again ([`retry_safe`]).
    #[error("{message}")]
    Transient { message: String, partial: Option<String> },
    /// The arguments do not fit the schema.
    #[error("{0}")]
    InvalidArgs(String),
    /// The security policy refused the call.
    #[error("{0}")]
    Refused(String),
    /// Something in the system failed (I/O, the database); the model is told.
    #[error("{0}")]
    System(String),
    /// The turn cannot go on.
    #[error("{0}")]
    Fatal(String),
}

impl ToolError {
    pub fn failed(message: impl Into<String>) -> Self {
        ToolError::Failed { message: message.into(), partial: None }
    }

    /// A failure that may pass if the call is made again.
    pub fn transient(message: impl Into<String>) -> Self {
        ToolError::Transient { message: message.into(), partial: None }
    }

    /// Whether making the same call again may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(self, ToolError::Transient { .. })
    }
}

/// The tools whose calls only look: one that failed for a passing reason may be made again.
const RETRY_SAFE: [&str; 4] = ["file_read", "file_list", "http_request", "memory_recall"];

/// Whether a call of `tool` whose effect is `effect` (the call's own, e.g. an http_request POST
/// is mutating) may be made again after a [transient](ToolError::is_transient) failure: only
/// reads of the read-only tools are, so a retry never repeats a change.
pub fn retry_safe(tool: &str, effect: Effect) -> bool {
    RETRY_SAFE.contains(&tool) && effect == Effect::ReadOnly
}

/// A path the policy refuses is a refusal the model reads.
impl From<PathError> for ToolError {
    fn from(e: PathError) -> Self {
        ToolError::Refused(e.to_string())
    }
}

/// Facts about the running agent, for `self_info`.
#[derive(Debug, Clone, Default)]
pub struct AgentFacts {
    pub model: String,
    pub autonomy: Option<Autonomy>,
    pub routine: Option<String>,
    pub tools: Vec<String>,
    pub timezone: String,
}

/// Everything a tool call may use.
#[derive(Clone)]
pub struct ToolContext {
    pub workspace: PathBuf,
    pub policy: Arc<Policy>,
    pub memory: Option<Memory>,
    pub language: Language,
    pub facts: AgentFacts,
    /// Secret values to keep out of what tools store.
    pub redactor: Arc<crate::policy::Redactor>,
    pub shell: ShellSettings,
    /// Folders outside the workspace that `file_read` may read inside, never write (the
    /// skills' folders when `skills_dir` lies outside the workspace). Canonical.
    pub read_roots: Arc<[PathBuf]>,
}

impl ToolContext {
    /// A path to read: inside the workspace by the policy's rules, else inside one of the
    /// read-only roots (symlinks resolved, forbidden paths refused). The workspace's refusal
    /// is the error when neither takes it.
    pub fn resolve_read_path(&self, input: &str) -> Result<PathBuf, PathError> {
        match self.policy.resolve_path(input) {
            Ok(p) => {
                crate::policy::paths::refuse_hard_link(&p, input)?;
                Ok(p)
            }
            Err(e @ PathError::Outside { .. }) if Path::new(input).is_absolute() => self
                .read_roots
                .iter()
                .find_map(|root| crate::policy::paths::confine(root, &[], input).ok())
                .filter(|p| !self.policy.is_forbidden(p))
                .ok_or(e),
            Err(e) => Err(e),
        }
    }
}

impl ToolContext {
    /// Opens a path to read, by [`ToolContext::resolve_read_path`]'s rules, through an open
    /// handle of the workspace (or of the read-only root it lies in), so what is checked is
    /// what is read.
    pub fn open_read(&self, input: &str) -> Result<Opened, OpenError> {
        match self.policy.fs().open_read(input) {
            Err(OpenError::Refused(e @ PathError::Outside { .. })) if Path::new(input).is_absolute() => {
                for root in self.read_roots.iter() {
                    let Ok(fs) = Confinement::open(root, Vec::new(), Vec::new()) else { continue };
                    match fs.open_read(input) {
                        Ok(opened) if self.policy.is_forbidden(&opened.path) => {
                            return Err(PathError::Forbidden { input: input.into() }.into());
                        }
                        Err(OpenError::Refused(PathError::Outside { .. })) => {}
                        other => return other,
                    }
                }
                Err(e.into())
            }
            other => other,
        }
    }
}

#[cfg(test)]
impl ToolContext {
    /// A context for unit tests of tools: `policy`'s workspace, no memory,
    /// English, default shell settings.
    pub(crate) fn for_test(policy: Policy) -> Self {
        ToolContext {
            workspace: policy.workspace().to_path_buf(),
            policy: Arc::new(policy),
            memory: None,
            language: Language::En,
            facts: AgentFacts::default(),
            redactor: Default::default(),
            shell: ShellSettings::default(),
            read_roots: Arc::new([]),
        }
    }
}

/// A typed tool.
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    const NAME: &'static str;
    type Args: DeserializeOwned + JsonSchema + Send + Sync;

    fn description(&self) -> &'static str;
    fn effect(&self) -> Effect;
    fn info(&self, args: &Self::Args) -> CallInfo {
        let _ = args;
        CallInfo::new("", Self::NAME)
    }
    async fn call(&self, args: Self::Args, ctx: &ToolContext) -> Result<String, ToolError>;
}

/// A tool with its type erased, as the registry holds it.
#[async_trait]
pub trait DynTool: Send + Sync {
    fn name(&self) -> &'static str;
    fn spec(&self) -> ToolSpec;
    fn effect(&self) -> Effect;
    /// Parses the arguments and describes the call; bad arguments are an
    /// [`ToolError::InvalidArgs`] the model can act on.
    fn inspect(&self, args: &Value) -> Result<CallInfo, ToolError>;
    async fn invoke(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError>;
}

#[async_trait]
impl<T: Tool> DynTool for T {
    fn name(&self) -> &'static str {
        T::NAME
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: T::NAME.to_string(),
            description: self.description().to_string(),
            parameters: parameters_schema::<T::Args>(),
        }
    }

    fn effect(&self) -> Effect {
        Tool::effect(self)
    }

    fn inspect(&self, args: &Value) -> Result<CallInfo, ToolError> {
        let parsed = parse_args::<T::Args>(T::NAME, args.clone())?;
        Ok(self.info(&parsed))
    }

    async fn invoke(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let parsed = parse_args::<T::Args>(T::NAME, args)?;
        self.call(parsed, ctx).await
    }
}

fn parse_args<A: DeserializeOwned + JsonSchema>(name: &str, args: Value) -> Result<A, ToolError> {
    let args = if args.is_null() { Value::Object(Default::default()) } else { args };
    serde_json::from_value(args).map_err(|e| {
        let sig = crate::llm::json_calls::signature(&parameters_schema::<A>());
        ToolError::InvalidArgs(format!("invalid arguments for {name}: {e}; expected {name}({sig})"))
    })
}

/// The JSON schema of an argument struct, in the plain form chat APIs and
/// small models read best: inlined, no `$schema`/`title`, optional fields
/// typed by their value rather than `[T, "null"]`.
pub fn parameters_schema<A: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft07().with(|s| s.inline_subschemas = true).into_generator();
    let mut schema = generator.into_root_schema_for::<A>().to_value();
    if let Some(o) = schema.as_object_mut() {
        o.remove("$schema");
        o.remove("title");
        o.entry("properties").or_insert_with(|| Value::Object(Default::default()));
        if let Some(props) = o.get_mut("properties").and_then(Value::as_object_mut) {
            for p in props.values_mut() {
                simplify(p);
            }
        }
    }
    schema
}

fn simplify(p: &mut Value) {
    let Some(o) = p.as_object_mut() else { return };
    o.remove("default");
    if let Some(Value::Array(types)) = o.get("type") {
        let non_null: Vec<Value> = types.iter().filter(|t| t.as_str() != Some("null")).cloned().collect();
        if non_null.len() == 1 {
            o.insert("type".into(), non_null[0].clone());
        }
    }
    if let Some(Value::String(f)) = o.get("format") {
        if f.starts_with("uint") || f.starts_with("int") {
            o.remove("format");
            o.remove("minimum");
        }
    }
}

/// Every tool name a routine's `agent.tools` (and a skill's `tools`) may list: the built-in
/// tools and the ones of a session (`skill`, `schedule`).
pub fn tool_names() -> Vec<&'static str> {
    let mut names = Registry::builtin().names();
    names.extend([<SkillTool as Tool>::NAME, <Schedule as Tool>::NAME]);
    names.sort_unstable();
    names
}

/// The tools one agent has, by name.
#[derive(Clone, Default)]
pub struct Registry {
    tools: BTreeMap<&'static str, Arc<dyn DynTool>>,
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Every built-in tool that needs nothing from its session. The `skill` and `schedule`
    /// tools are added by the agent's setup, which gives them the skills and the config; see
    /// [`tool_names`] for every name a routine may list.
    pub fn builtin() -> Self {
        let mut r = Registry::new();
        r.add(Shell);
        r.add(FileRead);
        r.add(FileList);
        r.add(FileWrite);
        r.add(FileEdit);
        r.add(HttpRequest);
        r.add(MemoryStore);
        r.add(MemoryRecall);
        r.add(MemoryForget);
        r.add(SelfInfo);
        r
    }

    pub fn add<T: DynTool + 'static>(&mut self, tool: T) {
        self.tools.insert(tool.name(), Arc::new(tool));
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn DynTool>> {
        self.tools.get(name)
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.tools.keys().copied().collect()
    }

    /// Keeps only the named tools (a routine's `tools:` list).
    pub fn retain(&mut self, keep: &[String]) {
        self.tools.retain(|name, _| keep.iter().any(|k| k == name));
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn DynTool>> {
        self.tools.values()
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn derives_plain_schemas_from_argument_structs() {
        let spec = FileRead.spec();
        assert_eq!(spec.name, "file_read");
        let props = &spec.parameters["properties"];
        assert_eq!(props["path"]["type"], json!("string"));
        assert_eq!(props["offset"]["type"], json!("integer"));
        assert_eq!(spec.parameters["required"], json!(["path"]));
        assert!(spec.parameters.get("$schema").is_none());
        let spec = SelfInfo.spec();
        assert_eq!(spec.parameters["properties"], json!({}));
    }

    #[test]
    fn only_reads_of_read_only_tools_are_retried() {
        assert!(retry_safe("file_read", Effect::ReadOnly));
        assert!(retry_safe("http_request", Effect::ReadOnly));
        assert!(!retry_safe("http_request", Effect::Mutating), "a POST is never sent twice");
        assert!(!retry_safe("shell", Effect::ReadOnly));
        assert!(!retry_safe("memory_store", Effect::Memory));
        assert!(ToolError::transient("timed out").is_transient());
        assert!(!ToolError::failed("no such file").is_transient());
    }

    #[test]
    fn reports_bad_arguments_with_the_expected_signature() {
        let err = FileRead.inspect(&json!({"file": "a"})).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid arguments for file_read: unknown field `file`, expected one of `path`, `offset`, `limit`; expected file_read(limit?: integer, offset?: integer, path: string)"
        );
        let err = FileRead.inspect(&json!({"path": 5})).unwrap_err();
        assert!(err.to_string().starts_with("invalid arguments for file_read: invalid type: integer `5`"), "{err}");
    }
}
