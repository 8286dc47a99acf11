//! Calls that act (a write, an edit, a stored memory) which a routine turn does not run, and what the
//! model gets back instead (`write_check.rs`, `edit_check.rs`, `named::unread_before`): a guess
//! made again over what was written since, a copy or a list of every line, a list of other
//! lines than the task asks about, a write before the task's files were read (each kind once
//! per turn; a held list made again gets its answer again), an edit that would not make the
//! change asked for, and a write elsewhere than the file the task names (every time; made
//! again after the reads, the engine makes it to the named file: [`Agent::redirected`]).

use super::events::{CallRecord, ToolStatus, TurnStats};
use super::grounding::FirstCallRule;
use super::{Agent, edit_check, named, read_value, write_check};
use crate::llm::{ToolCall, ToolSpec};

/// The holds of a turn's writes sent so far, each kind once per turn (`Agent::held_write`).
#[derive(Debug, Default, Clone)]
pub(super) struct HeldSent {
    /// The list writes held (`write_check::Held::Subset`), with what they got back: the same
    /// call made again gets it again. The 1.5B model, told which hosts were down, wrote its
    /// wrong list a second time, and that write ran (bench/README.md, stop 43).
    lists: Vec<(String, String)>,
    /// A copy, a list of every line, or a receipt (`write_check::held`).
    copy: bool,
    /// A write before the files the task names were read (`named::unread_before`).
    unread: bool,
    /// An edit that removes words the task names (`edit_check::EditHeld::Removes`).
    removes: bool,
}

impl HeldSent {
    fn any(&self) -> bool {
        self.copy || self.unread
    }
}

const STALE: &str = "it repeats a write made before the reads, over the write made from them";

/// Whether the model is stuck on `call`: the same call, word for word, was held twice before in
/// the turn (`calls`). The 1.5B model made one held write ten times, until the turn's last call.
/// Held once before is not enough: told "Call this instead: ...", the model made the held call
/// again once and then the call named.
pub(super) fn stuck_on(call: &ToolCall, calls: &[CallRecord]) -> bool {
    let held =
        |c: &&CallRecord| c.status == ToolStatus::Refused && c.tool == call.name && c.arguments == call.arguments;
    calls.iter().filter(held).count() >= 2
}

impl Agent {
    /// What `call` gets back instead of running, when it is held (noted), or `None` when it
    /// runs: a guess made again over what was written since (after any hold), an edit that
    /// would not make the change asked for, a write elsewhere, and the holds of
    /// [`Agent::held_write`] not sent yet this turn.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn hold(
        &self,
        task: &str,
        call: &ToolCall,
        calls: &[CallRecord],
        ctx: &crate::tools::ToolContext,
        (first, specs): (FirstCallRule, &[ToolSpec]),
        sent: &mut HeldSent,
        stats: &mut TurnStats,
    ) -> Option<String> {
        if !self.opts.assists.allows("write_held") {
            return None;
        }
        // A held guess made again over what was written since is never run.
        if sent.any()
            && let Some(stale) = write_check::stale(&call.name, &call.arguments, calls)
        {
            self.note("write_held", &format!("{}: {}; not run", call.name, STALE));
            return Some(write_check::message(self.opts.language, &stale, None));
        }
        // A write of what an earlier write returned is never run (a store of its receipt).
        if self.routine.is_some()
            && let Some(receipt) = write_check::receipt(&call.name, &call.arguments, calls)
        {
            self.note("write_held", &format!("{}: its content is an earlier write's result; not run", call.name));
            return Some(write_check::message(self.opts.language, &receipt, None));
        }
        // A memory that gives what the task asks about another number than this run read.
        if self.routine.is_some()
            && let Some((word, value)) = read_value::stored_contradiction(task, &call.name, &call.arguments, calls)
        {
            self.note(
                "write_held",
                &format!("memory_store: its content gives {word} another number than this run read ({value}); not run"),
            );
            return Some(read_value::held_message(self.opts.language, &word, &value));
        }
        if let Some(text) = self.held_edit(task, call, ctx, sent) {
            return Some(text);
        }
        // A write elsewhere than the file the task names is held every time, before its content
        // is looked at.
        if let Some(text) = self.held_elsewhere(task, call) {
            return Some(text);
        }
        self.held_write(task, call, calls, ctx, first, specs, sent, stats).await
    }

    /// The answer to a call that acts (a write, a stored memory) and is not run, in routine
    /// turns held to a first tool call: a write of a file read whole or of an earlier write's
    /// result (`write_check.rs`), or, with a tool that reads files, any such call while files
    /// the task names that exist are unread (`named::unread_before`; the model is told to read
    /// first). Noted when there is one.
    #[allow(clippy::too_many_arguments)]
    async fn held_write(
        &self,
        task: &str,
        call: &ToolCall,
        calls: &[CallRecord],
        ctx: &crate::tools::ToolContext,
        first: FirstCallRule,
        specs: &[ToolSpec],
        sent: &mut HeldSent,
        stats: &mut TurnStats,
    ) -> Option<String> {
        let acts = specs.iter().find(|t| t.name == call.name).is_some_and(|t| self.acts(t));
        if self.routine.is_none() || first == FirstCallRule::Free || !acts {
            return None;
        }
        if let Some((_, back)) = sent.lists.iter().find(|(arguments, _)| *arguments == call.arguments) {
            self.note("write_held", &format!("{}: the list held before, made again; not run", call.name));
            return Some(back.clone());
        }
        if let Some(held) = (!sent.copy).then(|| write_check::held(task, &call.name, &call.arguments, calls)).flatten()
        {
            // A list the model chose runs when it names the lines the engine's selection keeps.
            if let write_check::Held::Subset { source, at, names } = &held {
                let one = std::slice::from_ref(&calls[*at]);
                let selected = self.select_as(task, super::select::Ask::Which, one, stats).await?;
                let kept = selected.kept.as_ref()?;
                let chosen: Vec<&str> = kept.text.iter().map(|l| write_check::first_field(l)).collect();
                let (mut sorted, mut written) = (chosen.clone(), names.iter().map(String::as_str).collect::<Vec<_>>());
                sorted.sort_unstable();
                written.sort_unstable();
                if sorted == written {
                    return None;
                }
                sent.copy = true;
                self.note(
                    "write_held",
                    &format!(
                        "{}: its content names other lines of {source} than the task asks about; not run",
                        call.name
                    ),
                );
                let back = write_check::message(self.opts.language, &held, Some(&selected.result));
                // The same list of the lines asked about, as the call to make.
                let back = match write_check::listed_call(&call.name, &call.arguments, &chosen) {
                    Some(listed) => format!("{back}\n{}", write_check::call_instead(self.opts.language, &listed)),
                    None => back,
                };
                sent.lists.push((call.arguments.clone(), back.clone()));
                return Some(back);
            }
            sent.copy = true;
            let (why, selected) = match &held {
                write_check::Held::Copy { source, at } | write_check::Held::Column { source, at } => {
                    let one = std::slice::from_ref(&calls[*at]);
                    let selected = self.select_as(task, super::select::Ask::Which, one, stats).await;
                    let why = if matches!(held, write_check::Held::Copy { .. }) {
                        format!("its content is {source} as read")
                    } else {
                        format!("its content names every line of {source}")
                    };
                    // "Write the number of errors to count.txt": the number of the kept lines
                    // is what to write, not the lines (the 1.5B model wrote them, stop 43).
                    let counted = super::select::ask_of(task) == Some(super::select::Ask::Count);
                    if let Some((s, kept)) =
                        selected.as_ref().and_then(|s| Some((s, s.kept.as_ref()?))).filter(|_| counted)
                    {
                        self.note("write_held", &format!("{}: {why}; not run, the number asked for", call.name));
                        let n = kept.values.len();
                        let back = write_check::count_message(self.opts.language, source, &s.result, n);
                        // The same write with the number as its content, as the call to make.
                        return Some(match write_check::with_content(&call.name, &call.arguments, &n.to_string()) {
                            Some(c) => format!("{back}\n{}", write_check::call_instead(self.opts.language, &c)),
                            None => back,
                        });
                    }
                    (why, selected.map(|s| s.result))
                }
                write_check::Held::Elsewhere { .. } | write_check::Held::Subset { .. } => return None,
                write_check::Held::Receipt(_) => ("its content is an earlier write's result".to_string(), None),
                write_check::Held::Stale(_) => (STALE.to_string(), None),
            };
            self.note("write_held", &format!("{}: {why}; not run", call.name));
            return Some(write_check::message(self.opts.language, &held, selected.as_deref()));
        }
        if sent.unread || !self.asks_for_named(first, specs) {
            return None;
        }
        let files = named::unread_before(task, calls, ctx, &call.arguments);
        if files.is_empty() {
            return None;
        }
        sent.unread = true;
        let list = files.join(", ");
        self.note(
            "write_held",
            &format!("{} came before the task's {list} was read; not run, asked to read first", call.name),
        );
        Some(named::held_message(self.opts.language, &files))
    }

    /// The answer to a `file_edit` of a routine turn that would not make the change the task
    /// asks for (`edit_check.rs`): a box left as it was every time, words the task names
    /// removed once per turn; noted.
    fn held_edit(
        &self,
        task: &str,
        call: &ToolCall,
        ctx: &crate::tools::ToolContext,
        sent: &mut HeldSent,
    ) -> Option<String> {
        self.routine.as_ref()?;
        let held = edit_check::held(task, &call.name, &call.arguments, ctx)?;
        match &held {
            edit_check::EditHeld::Box { line, .. } => {
                self.note("write_held", &format!("{}: `{line}` would keep its box; not run", call.name));
            }
            edit_check::EditHeld::Setting { line, .. } => {
                self.note("write_held", &format!("{}: `{line}` would not be set as asked; not run", call.name));
            }
            edit_check::EditHeld::Removes { words } => {
                if sent.removes {
                    return None;
                }
                sent.removes = true;
                self.note(
                    "write_held",
                    &format!("{}: it removes \"{words}\", which the task names; not run", call.name),
                );
            }
        }
        Some(edit_check::message(self.opts.language, &held))
    }

    /// The call the engine makes in place of `call` (noted), with the path it names: a write
    /// elsewhere than the file the task names (`write_check::elsewhere_held`), made again word
    /// for word after it was held, once every file the task names that exists was read and a
    /// call of the turn succeeded. Told "Call this instead: file_write {... "path":
    /// "failing.txt"}", the 1.5B model wrote `reports/failing.txt` six times in one turn, before
    /// and after it read the tests (bench/README.md, stop 47); the content stays the model's
    /// and goes through every other hold, and the policy, like any call. A write before the reads
    /// is not made for it: that is a guess.
    pub(super) fn redirected(
        &self,
        task: &str,
        call: &ToolCall,
        calls: &[CallRecord],
        ctx: &crate::tools::ToolContext,
    ) -> Option<(ToolCall, String)> {
        if !self.opts.assists.allows("write_redirected") {
            return None;
        }
        self.routine.as_ref()?;
        let held =
            |c: &CallRecord| c.status == ToolStatus::Refused && c.tool == call.name && c.arguments == call.arguments;
        if !calls.iter().any(held) || !calls.iter().any(|c| c.status == ToolStatus::Success) {
            return None;
        }
        let write_check::Held::Elsewhere { named, path, .. } =
            write_check::elsewhere_held(task, &call.name, &call.arguments)?
        else {
            return None;
        };
        if !named::unread_before(task, calls, ctx, &call.arguments).is_empty() {
            return None;
        }
        let mut args: serde_json::Value = serde_json::from_str(&call.arguments).ok()?;
        args["path"] = serde_json::Value::String(named.clone());
        self.note(
            "write_redirected",
            &format!("{}: the write to `{path}` made again; made to `{named}`, the file the task names", call.name),
        );
        let said = match self.opts.language {
            crate::config::Language::En => format!("(Written to `{named}`, the file the task names, not `{path}`.)"),
            crate::config::Language::Zh => format!("（已写入任务指定的文件 `{named}`，而不是 `{path}`。）"),
        };
        Some((ToolCall { id: call.id.clone(), name: call.name.clone(), arguments: args.to_string() }, said))
    }

    /// The answer to a `file_write` of a routine turn to a path other than the file the task
    /// names (`write_check::elsewhere_held`); noted.
    fn held_elsewhere(&self, task: &str, call: &ToolCall) -> Option<String> {
        self.routine.as_ref()?;
        let held = write_check::elsewhere_held(task, &call.name, &call.arguments)?;
        if let write_check::Held::Elsewhere { named, .. } = &held {
            self.note("write_held", &format!("{}: the task names {named} to write; not run", call.name));
        }
        Some(write_check::message(self.opts.language, &held, None))
    }
}
