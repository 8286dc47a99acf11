//! When a routine turn has looked at everything its task names: then the answer is asked from
//! the evidence at once, one request before a small model would make the same call again
//! (bench/agent-notebook.md, "It is asked as soon as the task's named sources are used").

use serde_json::Value;

use super::events::{CallRecord, ToolStatus};
use super::grounding::{self, FirstCallRule};
use super::{Agent, named};
use crate::llm::{ToolCall, ToolSpec};
use crate::policy::Effect;

impl Agent {
    /// Whether the answer may be asked from the evidence right after this round of `calls`
    /// (routine turns held to a first tool call, whose tools all only look, `shell` not among
    /// them): every call of the round looked and succeeded (a read, a listing, a GET, a
    /// recall), every tool offered but `file_list` has been used (a task may name a source
    /// only in words: "the website", "what you remembered"), no file was read only in part or
    /// cut,
    /// and the calls of the turn have used every file, folder and web address the task names
    /// ([`named::all_used`]). A routine with `shell` is left its next step: "does
    /// package.json agree with the newest git tag" names one file and one command.
    pub(super) fn looked_at_all(
        &self,
        task: &str,
        calls: &[ToolCall],
        made: &[CallRecord],
        ctx: &crate::tools::ToolContext,
        first: FirstCallRule,
        specs: &[ToolSpec],
    ) -> bool {
        if !self.opts.assists.allows("named_all_used") {
            return false;
        }
        let only_looks = !specs.iter().any(|t| self.acts(t) || t.name == "shell");
        let used = |name: &str| made.iter().any(|c| c.tool == name && c.status == ToolStatus::Success);
        let all_offered_used = specs.iter().filter(|t| t.name != "file_list").all(|t| used(&t.name));
        let round = &made[made.len().saturating_sub(calls.len())..];
        let looked = !calls.is_empty()
            && calls.iter().all(|c| self.looks(c))
            && round.iter().all(|c| c.status == ToolStatus::Success);
        self.routine.is_some()
            && first != FirstCallRule::Free
            && only_looks
            && all_offered_used
            && looked
            && grounding::part_read(made).is_none()
            // Nor one cut to fit the context (`budget.rs`): the rest is a search away.
            && !made.iter().any(|c| c.tool == "file_read" && crate::tools::needs_range(&c.result))
            && named::all_used(task, made, ctx)
    }

    /// Whether a call only looks: not `shell`, and its own effect (an `http_request` GET, not a
    /// POST) is read-only.
    fn looks(&self, call: &ToolCall) -> bool {
        let Some(tool) = self.tools.get(&call.name).filter(|_| call.name != "shell") else { return false };
        let effect = serde_json::from_str::<Value>(&call.arguments)
            .ok()
            .and_then(|args| tool.inspect(&args).ok())
            .map_or(tool.effect(), |info| info.effect.unwrap_or_else(|| tool.effect()));
        effect == Effect::ReadOnly
    }
}
