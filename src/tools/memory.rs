//! `memory_store`, `memory_recall`, `memory_forget`: the agent's long-term memory.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Tool, ToolContext, ToolError};
use crate::memory::{Memory, MemoryError};
use crate::policy::{CallInfo, Effect};

fn memory(ctx: &ToolContext) -> Result<&Memory, ToolError> {
    ctx.memory.as_ref().ok_or_else(|| ToolError::System("memory is not available in this session".into()))
}

fn memory_error(e: MemoryError) -> ToolError {
    match e {
        MemoryError::Invalid(m) => ToolError::InvalidArgs(m),
        // Another process holds the database for longer than the busy timeout.
        MemoryError::Store(crate::store::StoreError::Sqlite(rusqlite::Error::SqliteFailure(f, _)))
            if matches!(f.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) =>
        {
            ToolError::transient(format!("memory: the database is busy ({f}); try again"))
        }
        other => ToolError::System(format!("memory: {other}")),
    }
}

pub struct MemoryStore;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryStoreArgs {
    /// Unique key; storing under an existing key replaces it.
    pub key: String,
    /// What to remember.
    pub content: String,
    /// core (lasting facts), daily, conversation, or your own word. Default core.
    pub category: Option<String>,
}

#[async_trait]
impl Tool for MemoryStore {
    const NAME: &'static str = "memory_store";
    type Args = MemoryStoreArgs;

    fn description(&self) -> &'static str {
        "Remember a fact for later sessions under a key."
    }

    fn effect(&self) -> Effect {
        Effect::Memory
    }

    fn info(&self, args: &MemoryStoreArgs) -> CallInfo {
        CallInfo::new(args.key.clone(), Self::NAME)
    }

    async fn call(&self, args: MemoryStoreArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let category = args.category.as_deref().unwrap_or(crate::memory::CORE);
        let content = ctx.redactor.redact(&args.content);
        memory(ctx)?.store(&args.key, &content, category).map_err(memory_error)?;
        Ok(format!("Stored `{}` ({category}).", args.key))
    }
}

pub struct MemoryRecall;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryRecallArgs {
    /// Words to search for.
    pub query: String,
    /// Most results (default 5).
    pub limit: Option<usize>,
}

#[async_trait]
impl Tool for MemoryRecall {
    const NAME: &'static str = "memory_recall";
    type Args = MemoryRecallArgs;

    fn description(&self) -> &'static str {
        "Search long-term memory by words; best matches first."
    }

    fn effect(&self) -> Effect {
        Effect::ReadOnly
    }

    fn info(&self, args: &MemoryRecallArgs) -> CallInfo {
        CallInfo::new(args.query.clone(), Self::NAME)
    }

    async fn call(&self, args: MemoryRecallArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let limit = args.limit.unwrap_or(5).clamp(1, 50);
        let found = memory(ctx)?.recall(&args.query, limit).map_err(memory_error)?;
        if found.is_empty() {
            return Ok(format!("No memory matches `{}`.", args.query));
        }
        Ok(found.iter().map(|m| format!("- {} [{}]: {}", m.key, m.category, m.content)).collect::<Vec<_>>().join("\n"))
    }
}

pub struct MemoryForget;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryForgetArgs {
    /// Key of the memory to delete.
    pub key: String,
}

#[async_trait]
impl Tool for MemoryForget {
    const NAME: &'static str = "memory_forget";
    type Args = MemoryForgetArgs;

    fn description(&self) -> &'static str {
        "Delete a memory by key."
    }

    /// Forgetting destroys knowledge that cannot be recovered, so it needs
    /// the same approval as changing a file.
    fn effect(&self) -> Effect {
        Effect::Mutating
    }

    fn info(&self, args: &MemoryForgetArgs) -> CallInfo {
        CallInfo::new(args.key.clone(), Self::NAME)
    }

    async fn call(&self, args: MemoryForgetArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        if memory(ctx)?.forget(&args.key).map_err(memory_error)? {
            Ok(format!("Forgot `{}`.", args.key))
        } else {
            Err(ToolError::failed(format!("no memory has the key `{}`; use memory_recall to find keys", args.key)))
        }
    }
}
