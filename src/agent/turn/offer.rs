//! Which tools a turn offers, and the files its task names that no call has used yet.

use std::sync::Arc;

use crate::agent::events::{CallRecord, ToolStatus};
use crate::agent::grounding::FirstCallRule;
use crate::agent::{Agent, named};
use crate::llm::ToolSpec;
use crate::policy::Effect;

impl Agent {
    /// Whether the engine asks for the files a task names: routine turns held to a first tool
    /// call, with a tool that reads files.
    pub(in crate::agent) fn asks_for_named(&self, first: FirstCallRule, specs: &[ToolSpec]) -> bool {
        let reads = specs.iter().any(|t| t.name == "file_read" || t.name == "shell");
        self.routine.is_some() && first != FirstCallRule::Free && reads
    }

    /// The request to use the files the task names that no call has used yet: routine turns
    /// held to a first tool call, with a tool that reads files, after a call that succeeded.
    /// Noted when there is one.
    pub(super) fn named_unused(
        &self,
        task: &str,
        calls: &[CallRecord],
        ctx: &crate::tools::ToolContext,
        first: FirstCallRule,
        specs: &[ToolSpec],
    ) -> Option<String> {
        if !self.opts.assists.allows("named_files_reask") {
            return None;
        }
        // A turn that looked at nothing is the first call's and the silence check's business.
        let looked = calls.iter().any(|c| c.status == ToolStatus::Success);
        if !self.asks_for_named(first, specs) || !looked {
            return None;
        }
        let writes = specs.iter().any(|t| t.name == "file_write");
        let files = named::unused(task, calls, ctx, writes);
        if files.is_empty() {
            return None;
        }
        let all = [files.existing.as_slice(), files.missing.as_slice()].concat().join(", ");
        self.note("named_files_reask", &format!("the task names {all} and no tool call used it; asked for one"));
        let message = named::message(self.opts.language, &files);
        // Where the turn was reading a git log, the file's own history is the call to make.
        match (&files.existing[..], calls.iter().any(|c| crate::agent::git_call::git_log(c).is_some())) {
            ([file], true) if files.missing.is_empty() => {
                Some(format!("{message} {}", crate::agent::git_log::history_call(self.opts.language, file)))
            }
            _ => Some(message),
        }
    }

    /// Whether a tool changes something (a write, a stored memory); `shell` counts as looking,
    /// which is what routines mostly run commands for.
    pub(in crate::agent) fn acts(&self, spec: &ToolSpec) -> bool {
        spec.name != "shell" && self.tools.get(&spec.name).is_some_and(|t| t.effect() != Effect::ReadOnly)
    }

    /// The tools a request offers: all of them but those `spent`, and `file_read` for a path
    /// alone until a read of the turn did not carry the whole file (`calls`: the turn's calls so
    /// far; `tools::whole_file_spec`). A prompt that describes the tools itself (`tool_calls:
    /// json`) keeps its one description for the turn.
    pub(super) fn offered(&self, specs: &Arc<[ToolSpec]>, spent: &[String], calls: &[CallRecord]) -> Arc<[ToolSpec]> {
        let ranged = calls.iter().any(|c| c.tool == "file_read" && crate::tools::needs_range(&c.result));
        let whole = !ranged && specs.iter().any(|t| t.name == "file_read");
        if spent.is_empty() && !whole {
            return specs.clone();
        }
        let offer = |t: &ToolSpec| {
            if whole && t.name == "file_read" { crate::tools::whole_file_spec(t) } else { t.clone() }
        };
        specs.iter().filter(|t| !spent.contains(&t.name)).map(offer).collect::<Vec<_>>().into()
    }
}
