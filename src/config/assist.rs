//! `agent.assist` and `agent.assist_off` (SPEC §13): how far the engine steps into a turn beyond
//! the plain loop, and the single assists turned off by name. An assist's name is the kind of
//! the event it records when it steps in. The table lives here, below the agent, so that loading
//! the config and the routines can check the names.

use schemars::JsonSchema;
use serde::Deserialize;

/// How much the engine assists the model (`agent.assist`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AssistLevel {
    /// The plain loop: model calls and tool calls, answer hygiene (a tool call written as text,
    /// template tokens, an empty reply asked once more) and the silent token; nothing else.
    Off,
    /// The assists of [`EVIDENCE`]: each steps in only on a fact about the turn's calls (no
    /// call made, a call failed, a file read in part, a named file never used, a write before
    /// the reads), so a model that looks and answers right gets no request more. The default:
    /// SPEC §13 promises a model that is right no request more.
    #[default]
    Evidence,
    /// Every assist of [`ASSISTS`] not named in `agent.assist_off`, also those that question
    /// an answer from the task's words or ask the model for more (for small models).
    Full,
}

/// The assists of `agent.assist: evidence`.
pub const EVIDENCE: &[&str] = &[
    "first_call_reask",
    "failed_check_reask",
    "part_read_reask",
    "named_files_reask",
    "write_held",
    "write_redirected",
    "silence_nudge",
];

/// Every assist that can be turned off by name, with what it does.
pub const ASSISTS: &[(&str, &str)] = &[
    ("first_call_reask", "the first model call must call a tool; a first reply without one is asked again"),
    ("failed_check_reask", "an answer after a failed tool call, or a repeated failed call, gets the failure back once"),
    ("capped_count_reask", "a count from a command whose limit cut its output is sent back with the command uncut"),
    ("window_reask", "an answer from a git log not cut to the time the task names is sent back with the cut command"),
    ("count_only_reask", "an answer from a search that only counted is sent back when the task needs the lines"),
    (
        "whole_word_reask",
        "a search for a number that also finds it inside longer ones is sent back as a whole-word search",
    ),
    ("part_read_reask", "an answer after a file was read only in part asks for the rest"),
    ("named_files_reask", "an answer before any call used the files the task names asks for them"),
    ("unchanged_reask", "an answer that claims a change no call made is sent back"),
    ("commits_count_reask", "a count of commits that is not the git log's is asked again from the evidence"),
    ("records_selection_reask", "a count or a pick over records answered in the turn is asked again from the evidence"),
    ("difference_reask", "which lines one list lacks, answered in the turn, is asked again from the evidence"),
    ("newest_commit_reask", "an answer about the last commit that does not name the newest is asked again"),
    ("questions_reask", "a task of several questions answered in the turn is asked again from the evidence"),
    ("read_value_reask", "an answer giving another number than the run read is asked again from the evidence"),
    ("named_all_used", "once the calls used everything the task names, the answer is asked from the evidence"),
    ("records_selection", "the records the task asks about are selected from a tool result for the evidence"),
    ("answer_from_payload", "a webhook's run is first asked the answer from the data in its prompt"),
    ("items_filter", "a webhook's list is filtered to the items the task asks about"),
    ("items_left_out", "an answer that leaves out items the task's selection kept is asked to name them"),
    ("silence_over_selection", "a silence beside records the task's selection kept is asked to name them"),
    ("fields_left_out", "a webhook summary that leaves out a field the task asks for is asked for it"),
    ("example_copied", "an answer copied from a worked example of the prompt is asked again"),
    ("count_not_said", "an answer that does not say the count the engine made is asked to"),
    ("comparison_not_said", "an answer that does not compare with the last check's number is asked to"),
    ("false_comparison", "an answer that compares two numbers falsely is asked again"),
    ("value_not_said", "an answer about a limit that does not say the value is asked to"),
    ("write_held", "a write made before the files the task names were read, or a copy, is held back once"),
    ("write_redirected", "a held write made again elsewhere goes to the file the task names"),
    ("silence_nudge", "a silent answer from a turn that looked at nothing is asked to look"),
    ("code_check", "a silent answer after tool calls is checked by a function the model writes, run in the sandbox"),
    ("silence_review", "a silent answer after tool calls is reviewed once against what the tools returned"),
];

/// Whether `name` is an assist of [`ASSISTS`].
pub fn is_assist(name: &str) -> bool {
    ASSISTS.iter().any(|(n, _)| *n == name)
}

/// The hint for a name that is no assist: the nearest name, or all of them.
pub fn unknown_hint(name: &str) -> String {
    match crate::diag::did_you_mean(name, ASSISTS.iter().map(|(n, _)| *n)) {
        Some(best) => format!("did you mean `{best}`?"),
        None => format!("assists: {}", ASSISTS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_unknown_ones_get_the_nearest() {
        let mut names: Vec<&str> = ASSISTS.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ASSISTS.len());
        assert!(is_assist("named_all_used"));
        assert!(!is_assist("named_all"));
        assert_eq!(unknown_hint("named_al_used"), "did you mean `named_all_used`?");
        assert!(unknown_hint("zzzzzzzz").starts_with("assists: first_call_reask, "));
    }

    #[test]
    fn the_evidence_level_names_assists_of_the_table() {
        for name in EVIDENCE {
            assert!(is_assist(name), "{name}");
        }
    }

    #[test]
    fn the_reference_lists_every_assist() {
        let doc = include_str!("../../docs/routines.md");
        for (name, what) in ASSISTS {
            assert!(doc.contains(&format!("| `{name}` | {what} |")), "docs/routines.md lacks the row of {name}");
        }
    }
}
