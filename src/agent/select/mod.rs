//! The records of a tool result that a counting or picking task asks about, selected by code
//! the model writes and the engine runs: before the answer from the evidence (`evidence.rs`),
//! when the task asks how many, which ones, or the least or the most of something, and exactly
//! one result of the turn holds records (`records.rs`: the objects of a JSON list, the rows of
//! a CSV table, or, for a count, the lines of a text), the model writes `keep(item) -> bool` or
//! `value(item) -> number` from the task and the records; the engine runs it on every record in
//! the OS sandbox (`python.rs`), and the answer request shows only the kept records and how many
//! they are, or names the record with the least or the most.
//!
//! Why: the 1.5B model cannot count five lines among forty, or pick the least of four numbers
//! ("Gdansk 290" where Lyon has 135), and answers "2" to "how many admins? name them" without
//! the names; it writes `return item["quantity"]` and `"timed out" in line` (bench/README.md,
//! stop 36). The webhook's list filter (`items.rs`) does the same for a trigger's data.
//!
//! The code is the model's output, steered by the data it read, so it is hostile: it runs
//! contained, and all it can do is choose which records (already in the prompt) the answer
//! request shows, or which one it names. Code that cannot run, raises on every record, or keeps
//! all or none leaves the evidence as it came.

use std::time::Duration;

use super::events::{CallRecord, TurnStats};
use super::records::{self, Records, Shape};
use super::{Agent, items, python};

mod ask;
mod checklist;
mod clock;
pub(super) mod condition;
mod dates;
mod frequency;
mod harness;
mod notes;
mod phrase;
mod sections;
mod source;
mod status_class;

pub(super) use ask::{Ask, ask_of};

use harness::{KEY, VALUE, Values};
use phrase::{absent_literals, counts_lines, none_kept, task_phrase};
#[cfg(test)]
use source::begin_alike;
use source::{printed, source_of, the_one};

use notes::{
    average_note, boxes_note, dated_note, distinct_note, extreme_note, kept_note, last_note, newest_note, phrase_note,
    printed_note, share_note, status_note, total_note,
};

/// The wall-clock limit of one run of the model's function over all records.
const TIMEOUT: Duration = Duration::from_secs(10);
/// How many tokens the function may take.
const CODE_TOKENS: u32 = 300;

/// Which of the engine's own rules kept records without a model call.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// A date or a time of day the task compares with (`dates.rs`, `clock.rs`).
    Date,
    /// The boxes of a task list (`checklist.rs`).
    Box,
    /// A class of HTTP statuses (`status_class.rs`).
    Status,
}

/// The records chosen for the answer request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Selected {
    /// Which call's result they came from (an index of the turn's calls).
    pub call: usize,
    /// That result as the answer request shows it.
    pub result: String,
    /// What the answer request says about them.
    pub note: String,
    /// For a "which" task, the kept records, which the answer must name (`items::cover_items`).
    pub kept: Option<items::Kept>,
    /// For a count, the number the engine counted, which the answer must say
    /// (`turn::counted_answer`).
    pub count: Option<usize>,
    /// Whether the note names the one record the task's least, most, newest, or first or last in
    /// time asks for: the engine compared, so the answer request needs no worked comparison
    /// (`evidence::messages`).
    pub picked: bool,
}

impl Selected {
    /// The whole result of `calls[call]`, with `note`.
    fn whole(call: usize, calls: &[CallRecord], note: String) -> Self {
        Selected { call, result: calls[call].result.clone(), note, kept: None, count: None, picked: false }
    }

    /// The same, where the note names the record the task's least or most asks for.
    fn pick(self) -> Self {
        Selected { picked: true, ..self }
    }
}

impl Agent {
    /// The records of the turn's calls that `task` asks about, as the module says, or `None`
    /// when it asks nothing of a list, no single result holds records, or the model's code kept
    /// all or none or could not run (the reason is recorded).
    pub(super) async fn select_records(
        &self,
        task: &str,
        calls: &[CallRecord],
        stats: &mut TurnStats,
    ) -> Option<Selected> {
        // "The latest release" of a document of dated or versioned sections is its newest section.
        if matches!(ask_of(task), None | Some(Ask::Last | Ask::Most))
            && sections::asks_newest(task)
            && let Some(newest) = sections::newest(calls)
        {
            let note = newest_note(self.opts.language, &source_of(&calls[newest.call]), newest.of, newest.by);
            self.note("records_selection", &note);
            return Some(Selected {
                call: newest.call,
                result: newest.section,
                note,
                kept: None,
                count: None,
                picked: true,
            });
        }
        if !applies(task, calls) {
            return None;
        }
        let printed = printed(calls).filter(|_| !bounds_time(task));
        if let (Some(Ask::Count), None, Some((call, lines))) = (ask_of(task), the_one(calls, None, false), printed) {
            let note = printed_note(self.opts.language, &source_of(&calls[call]), lines);
            self.note("records_selection", &note);
            return Some(Selected {
                call,
                result: calls[call].result.clone(),
                note,
                kept: None,
                count: Some(lines),
                picked: false,
            });
        }
        self.select_as(task, ask_of(task)?, calls, stats).await
    }

    /// The selection of [`Agent::select_records`] for `ask`, whatever the task's words ask: a
    /// write that copied a file whole is answered with the lines "which" would keep
    /// (`turn::held_write`).
    pub(super) async fn select_as(
        &self,
        task: &str,
        ask: Ask,
        calls: &[CallRecord],
        stats: &mut TurnStats,
    ) -> Option<Selected> {
        let (call, records) = the_one(calls, Some(ask), bounds_time(task))?;
        let ask = if ask == Ask::Count && counts_a_field(task, &records) { Ask::Total } else { ask };
        let ask = if matches!(ask, Ask::Least | Ask::Most) {
            phrase::by_duration(task, &records).unwrap_or(ask)
        } else {
            ask
        };
        let shown = records.shown()?;
        let source = source_of(&calls[call]);
        // "The most failed logins": counted per value, not compared by a number.
        let per_value = matches!(ask, Ask::Least | Ask::Most) && frequency::counts_per(task, &records);
        let name = match ask {
            _ if per_value => "key",
            Ask::Least | Ask::Most | Ask::Total | Ask::Average => "value",
            Ask::Distinct => "key",
            Ask::Count | Ask::Which | Ask::Share | Ask::Last => "keep",
        };
        // A date the task compares with is compared by the engine.
        if matches!(ask, Ask::Count | Ask::Which | Ask::Share) {
            let lines: Vec<String> = (0..records.len()).map(|i| records.line(i)).collect();
            let today = (self.clock)().with_timezone(&self.opts.timezone).date_naive();
            let by_date = dates::by_date(task, &lines, today)
                .or_else(|| clock::by_clock(task, &lines))
                .map(|(phrase, flags)| (phrase, flags, Rule::Date));
            let by_rule = by_date
                .or_else(|| {
                    checklist::by_box(task, &lines).map(|(phrase, flags)| (phrase.to_string(), flags, Rule::Box))
                })
                .or_else(|| status_class::by_class(task, &lines).map(|(class, flags)| (class, flags, Rule::Status)));
            if let Some((mut phrase, mut flags, rule)) = by_rule {
                let mut holding: Option<String> = None;
                let mut told_apart = false;
                // "Errors after 14:00": the lines in the time that also hold the task's word
                // (`error` of `ERROR`), when some of them do and some do not. So for the boxes:
                // "open tasks assigned to @maria" are the open items that hold `maria` (the
                // engine counted every open box, and asked the model's right 3 again as 4).
                if matches!(rule, Rule::Date | Rule::Box)
                    && let Some((word, holds)) = task_phrase(task, &records)
                    && !(rule == Rule::Box && checklist::names_boxes(&word))
                {
                    let both: Vec<bool> = flags.iter().zip(&holds).map(|(f, h)| *f && *h).collect();
                    let (n, within) = (both.iter().filter(|f| **f).count(), flags.iter().filter(|f| **f).count());
                    if n > 0 && n < within {
                        match rule {
                            Rule::Box => holding = Some(word),
                            _ => phrase = format!("{phrase} and hold \"{word}\""),
                        }
                        flags = both;
                        told_apart = true;
                    }
                }
                // The lines in the time are the task's count only where it counts lines as such
                // or its word told them apart; otherwise the note shows them, and the model counts.
                let counted = ask == Ask::Count && (rule != Rule::Date || told_apart || counts_lines(task));
                let kept = flags.iter().filter(|f| **f).count();
                let some = kept > 0 && kept < flags.len();
                let named = (ask == Ask::Which && some).then(|| {
                    let at: Vec<usize> = (0..flags.len()).filter(|&i| flags[i]).collect();
                    items::Kept {
                        values: at.iter().map(|&i| records.values[i].clone()).collect(),
                        text: at.iter().map(|&i| records.line(i)).collect(),
                    }
                });
                let lang = self.opts.language;
                let of = flags.len();
                let note = match rule {
                    // A share is the engine's percentage whatever kept the records.
                    _ if ask == Ask::Share => share_note(lang, records.shape, &source, kept, of),
                    Rule::Date => dated_note(lang, records.shape, &source, &phrase, kept, of),
                    Rule::Box => boxes_note(lang, &source, &phrase, holding.as_deref(), kept, of),
                    Rule::Status => status_note(lang, records.shape, &source, &phrase, kept, of),
                };
                let result = if some { records.keep(&flags) } else { calls[call].result.clone() };
                let by = match rule {
                    Rule::Date => "date or time",
                    Rule::Box => "task-list box",
                    Rule::Status => "status class",
                };
                self.note("records_selection", &format!("the {} of `{source}` by {by}: {note}", noun(records.shape)));
                return Some(Selected {
                    call,
                    result,
                    note,
                    kept: named,
                    count: counted.then_some(kept),
                    picked: false,
                });
            }
        }
        // The first or the last in time of records that each hold one date is the engine's pick.
        if matches!(ask, Ask::Least | Ask::Most) {
            let lines: Vec<String> = (0..records.len()).map(|i| records.line(i)).collect();
            if let Some((best, value)) = dates::by_time(task, &lines, ask == Ask::Most) {
                let lang = self.opts.language;
                let mut note = extreme_note(lang, records.shape, &source, ask, None, &lines[best], records.len());
                let today = (self.clock)().with_timezone(&self.opts.timezone).date_naive();
                if let Some(days) = dates::days_note(lang, task, value, today) {
                    note = format!("{note} {days}");
                }
                self.note("records_selection", &format!("the {} of `{source}` by date: {note}", noun(records.shape)));
                return Some(Selected::whole(call, calls, note).pick());
            }
        }
        let tokens = Some(self.opts.max_tokens.map_or(CODE_TOKENS, |m| m.min(CODE_TOKENS)));
        let mut messages = request(task, ask, per_value, records.shape, &source, &shown);
        let what = format!("the {} of `{source}`", noun(records.shape));
        let data = serde_json::Value::Array(records.values.clone()).to_string();
        let harness = format!(
            "{}{}{}",
            python::LIMITS,
            python::DEFINE,
            match name {
                "keep" => items::KEEP,
                "key" => KEY,
                _ => VALUE,
            }
        );
        let lang = self.opts.language;
        // A `keep` that keeps nothing is asked for once more: the model tests for the task's
        // word (`timeout`) where the lines say `timed out`.
        // The flags of a first `keep` that left out a condition the task states.
        let mut before: Option<Vec<bool>> = None;
        for attempt in 0..2 {
            let reply = self
                .side_call("selection of a tool result's records", messages.clone(), Some(0.0), tokens, stats)
                .await;
            let Some(code) = reply.as_deref().and_then(|r| python::code_of(r, name)) else {
                self.note(
                    "records_selection",
                    &format!("{what} were not selected: the reply held no `{name}` function"),
                );
                return None;
            };
            if let Some(named) = (name == "keep").then(|| items::names_an_item(&code, &records.values)).flatten() {
                let named: String = named.chars().take(80).collect();
                self.note(
                    "records_selection",
                    &format!("{what} were not selected: the code names a record (\"{named}\")"),
                );
                return None;
            }
            let out = match python::run(&harness, &code, &data, TIMEOUT, &self.opts.shell).await {
                Ok(out) => out,
                Err(why) => {
                    self.note("records_selection", &format!("{what} were not selected: {why}"));
                    return None;
                }
            };
            let last = out.output.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default().trim();
            let selected = match ask {
                Ask::Least | Ask::Most if per_value => {
                    let keys =
                        serde_json::from_str::<Vec<Option<String>>>(last).ok().filter(|k| k.len() == records.len());
                    let Some(keys) = keys.filter(|_| out.code == Some(0)) else {
                        let why = python::failure(last, out.code);
                        self.note("records_selection", &format!("{what} were not counted per value: {why}"));
                        return None;
                    };
                    // Only values the result holds count, and only those reach the note.
                    let result = &calls[call].result;
                    let keys: Vec<Option<String>> =
                        keys.into_iter().map(|k| k.filter(|k| !k.is_empty() && result.contains(k.as_str()))).collect();
                    let counts = frequency::tally(&keys);
                    let Some(note) = (counts.len() >= 2)
                        .then(|| frequency::note(lang, &source, &counts, ask == Ask::Most))
                        .flatten()
                    else {
                        self.note(
                            "records_selection",
                            &format!("{what} were not counted per value: fewer than two values"),
                        );
                        return None;
                    };
                    Selected::whole(call, calls, note).pick()
                }
                Ask::Distinct => {
                    let keys =
                        serde_json::from_str::<Vec<Option<String>>>(last).ok().filter(|k| k.len() == records.len());
                    let Some(keys) = keys.filter(|_| out.code == Some(0)) else {
                        let why = python::failure(last, out.code);
                        self.note("records_selection", &format!("{what} were not told apart: {why}"));
                        return None;
                    };
                    // The model's code could return any text: only values the result holds count,
                    // and only those reach the note.
                    let result = &calls[call].result;
                    let keys: Vec<Option<String>> =
                        keys.into_iter().map(|k| k.filter(|k| result.contains(k.as_str()))).collect();
                    let (different, with) = distinct(&keys);
                    if with < 2 {
                        self.note("records_selection", &format!("{what} were not told apart: fewer than two values"));
                        return None;
                    }
                    let note = distinct_note(lang, &source, &different);
                    Selected::whole(call, calls, note)
                }
                Ask::Count | Ask::Which | Ask::Share | Ask::Last => {
                    let flags = serde_json::from_str::<Vec<bool>>(last).ok().filter(|f| f.len() == records.len());
                    let Some(mut flags) = flags.filter(|_| out.code == Some(0)) else {
                        let why = python::failure(last, out.code);
                        self.note("records_selection", &format!("{what} were not selected: {why}"));
                        return None;
                    };
                    // Asked again for a condition it left out, the model wrote that condition
                    // alone (`item['role'] == 'admin'` after `not item['active']`): both hold.
                    if let Some(before) = before.take() {
                        flags.iter_mut().zip(before).for_each(|(f, b)| *f &= b);
                    }
                    let kept = flags.iter().filter(|f| **f).count();
                    if kept == 0 && attempt == 0 {
                        let absent = absent_literals(&code, &shown);
                        messages.push(crate::llm::Message::assistant(reply.unwrap_or_default()));
                        messages.push(crate::llm::Message::user(none_kept(records.shape, &absent)));
                        continue;
                    }
                    if kept == 0
                        && matches!(ask, Ask::Count | Ask::Share)
                        && let Some((phrase, flags)) = task_phrase(task, &records)
                    {
                        let kept = flags.iter().filter(|f| **f).count();
                        let selected = Selected {
                            call,
                            result: records.keep(&flags),
                            note: phrase_note(lang, &source, &phrase, kept, flags.len()),
                            kept: None,
                            count: (ask == Ask::Count).then_some(kept),
                            picked: false,
                        };
                        self.note(
                            "records_selection",
                            &format!("the code kept none of {what} twice; by the task's words: {}", selected.note),
                        );
                        return Some(selected);
                    }
                    if kept == 0 || kept == flags.len() {
                        self.note("records_selection", &format!("the code kept {kept} of {what}; shown as they came"));
                        return None;
                    }
                    if let Some(inverted) = condition::negated(task, &records.values, &flags) {
                        let detail = format!(
                            "the code kept a record of {what} whose `{}` is `{}`, a value the task negates",
                            inverted.field, inverted.value
                        );
                        if attempt == 0 {
                            self.note("records_selection", &format!("{detail}; asked again"));
                            messages.push(crate::llm::Message::assistant(reply.unwrap_or_default()));
                            messages.push(crate::llm::Message::user(condition::negated_message(lang, &inverted)));
                            continue;
                        }
                        self.note("records_selection", &format!("{detail} twice; shown as they came"));
                        return None;
                    }
                    if let Some(missed) = condition::missed(task, &records.values, &flags) {
                        let detail = format!(
                            "the code kept a record of {what} whose `{}` is `{}`, where the task names `{}`",
                            missed.field, missed.other, missed.named
                        );
                        if attempt == 0 {
                            self.note("records_selection", &format!("{detail}; asked again"));
                            before = Some(flags);
                            messages.push(crate::llm::Message::assistant(reply.unwrap_or_default()));
                            messages.push(crate::llm::Message::user(condition::message(
                                lang,
                                &missed,
                                condition::Function::Keep,
                            )));
                            continue;
                        }
                        self.note("records_selection", &format!("{detail} twice; shown as they came"));
                        return None;
                    }
                    if ask == Ask::Last {
                        let last = flags.iter().rposition(|f| *f).unwrap_or_default();
                        let note = last_note(lang, records.shape, &source, kept, &records.line(last));
                        let selected = Selected {
                            call,
                            result: records.keep(&flags),
                            note,
                            kept: None,
                            count: None,
                            picked: false,
                        };
                        self.note("records_selection", &format!("{what}: {}", selected.note));
                        return Some(selected);
                    }
                    let named = (ask == Ask::Which).then(|| {
                        let at: Vec<usize> = (0..flags.len()).filter(|&i| flags[i]).collect();
                        items::Kept {
                            values: at.iter().map(|&i| records.values[i].clone()).collect(),
                            text: at.iter().map(|&i| records.line(i)).collect(),
                        }
                    });
                    Selected {
                        call,
                        result: records.keep(&flags),
                        note: if ask == Ask::Share {
                            share_note(lang, records.shape, &source, kept, flags.len())
                        } else {
                            kept_note(lang, ask, records.shape, &source, kept, flags.len())
                        },
                        kept: named,
                        count: (ask == Ask::Count).then_some(kept),
                        picked: false,
                    }
                }
                Ask::Least | Ask::Most | Ask::Total | Ask::Average => {
                    let values = serde_json::from_str::<Values>(last).ok().filter(|v| v.values.len() == records.len());
                    let Some(Values { values, dates }) = values.filter(|_| out.code == Some(0)) else {
                        let why = python::failure(last, out.code);
                        self.note("records_selection", &format!("{what} were not compared: {why}"));
                        return None;
                    };
                    // A number given to a record of another value than the one the task names
                    // ("the shipped orders", and `return item['amount']`) is asked for again.
                    let given: Vec<bool> =
                        values.iter().map(|v| v.is_some_and(|v| ask != Ask::Total || v != 0.0)).collect();
                    if let Some(missed) = condition::missed(task, &records.values, &given) {
                        let detail = format!(
                            "the code gave a number to a record of {what} whose `{}` is `{}`, where the task names `{}`",
                            missed.field, missed.other, missed.named
                        );
                        if attempt == 0 {
                            self.note("records_selection", &format!("{detail}; asked again"));
                            let function =
                                if ask == Ask::Total { condition::Function::Total } else { condition::Function::Pick };
                            messages.push(crate::llm::Message::assistant(reply.unwrap_or_default()));
                            messages.push(crate::llm::Message::user(condition::message(lang, &missed, function)));
                            continue;
                        }
                        self.note("records_selection", &format!("{detail} twice; shown as they came"));
                        return None;
                    }
                    if ask == Ask::Total {
                        let Some((sum, counted)) = total(&values).filter(|_| !dates) else {
                            self.note(
                                "records_selection",
                                &format!("{what} were not added up: fewer than two numbers"),
                            );
                            return None;
                        };
                        let note = total_note(
                            lang,
                            records.shape,
                            &source,
                            sum,
                            (counted, records.len()),
                            &calls[call].result,
                        );
                        let selected = Selected::whole(call, calls, note);
                        self.note("records_selection", &format!("{what}: {}", selected.note));
                        return Some(selected);
                    }
                    if ask == Ask::Average {
                        let Some((mean, counted)) = average(&values).filter(|_| !dates) else {
                            self.note(
                                "records_selection",
                                &format!("{what} were not averaged: fewer than two numbers"),
                            );
                            return None;
                        };
                        let note = average_note(
                            lang,
                            records.shape,
                            &source,
                            mean,
                            (counted, records.len()),
                            &calls[call].result,
                        );
                        let selected = Selected::whole(call, calls, note);
                        self.note("records_selection", &format!("{what}: {}", selected.note));
                        return Some(selected);
                    }
                    let Some((best, value)) = extreme(&values, ask == Ask::Most) else {
                        self.note("records_selection", &format!("{what} were not compared: fewer than two numbers"));
                        return None;
                    };
                    let mut note = extreme_note(
                        lang,
                        records.shape,
                        &source,
                        ask,
                        (!dates).then_some(value),
                        &records.line(best),
                        records.len(),
                    );
                    // "In how many days": the days from today to the date picked, counted by the engine.
                    let today = (self.clock)().with_timezone(&self.opts.timezone).date_naive();
                    if let Some(days) = dates.then(|| dates::days_note(lang, task, value, today)).flatten() {
                        note = format!("{note} {days}");
                    }
                    Selected::whole(call, calls, note).pick()
                }
            };
            self.note("records_selection", &format!("{what}: {}", selected.note));
            return Some(selected);
        }
        None
    }
}

/// Whether the selection may apply to a turn that made `calls` for `task`: the task asks
/// something of a list, and one result holds records of a shape that ask can use.
pub(super) fn applies(task: &str, calls: &[CallRecord]) -> bool {
    let ask = ask_of(task);
    match (ask, the_one(calls, ask, bounds_time(task))) {
        (Some(_), Some(_)) => true,
        (Some(Ask::Count), None) => printed(calls).is_some(),
        _ => false,
    }
}

/// Whether an answer the turn gave itself to `task` should be asked from the evidence for the
/// selection: it [`applies`], unless the count is the lines a command printed and the answer
/// already says that number.
pub(super) fn reask(task: &str, calls: &[CallRecord], answer: &str) -> bool {
    if !applies(task, calls) {
        return false;
    }
    match (the_one(calls, ask_of(task), bounds_time(task)), printed(calls)) {
        (None, Some((_, lines))) => !says_number(answer, lines),
        _ => true,
    }
}

/// Whether `text` holds `n` as a number of its own (not inside a longer one).
fn says_number(text: &str, n: usize) -> bool {
    let n = n.to_string();
    text.split(|c: char| !c.is_ascii_digit()).any(|run| run == n)
}

/// Whether the task keeps records by a date or a time of day it bounds ("after 14:00", "due
/// before 2026-12-01", "already expired"): a count of matching lines cannot answer it.
pub(super) fn bounds_time(task: &str) -> bool {
    clock::bounds(task) || dates::bounds(task)
}

fn noun(shape: Shape) -> &'static str {
    match shape {
        Shape::Json => "items",
        Shape::Csv => "rows",
        Shape::Lines => "lines",
    }
}

/// The request for the function. English whatever the routine's language: it asks for code.
fn request(task: &str, ask: Ask, per_value: bool, shape: Shape, source: &str, shown: &str) -> Vec<crate::llm::Message> {
    use crate::llm::Message;
    let of = format!("The {} of `{source}`", noun(shape));
    // The records are what a tool returned, fenced like every outside text in a prompt (SPEC §8).
    let shown = crate::routine::template::fence(shown);
    let ask_kind = ask;
    let ask = match (ask, shape) {
        _ if per_value => frequency::instruction(shape),
        (Ask::Least | Ask::Most, Shape::Lines) => {
            "Write a Python function `value(line: str) -> float` that returns the number the task compares, for one \
             line (a date as it is written), or None for a line without one."
        }
        (Ask::Least | Ask::Most, _) => {
            "Write a Python function `value(item: dict) -> float` that returns the number the task compares, for one \
             item."
        }
        (Ask::Average, Shape::Lines) => {
            "Write a Python function `value(line: str) -> float` that returns the number of one line that the task \
             averages, or None for a line without one."
        }
        (Ask::Average, _) => {
            "Write a Python function `value(item: dict) -> float` that returns the number of one item that the task \
             averages. If the task averages only some of the items, return None for the others."
        }
        (Ask::Total, Shape::Lines) => {
            "Write a Python function `value(line: str) -> float` that returns the number of one line that the task \
             adds up, or None for a line without one."
        }
        (Ask::Total, _) => {
            "Write a Python function `value(item: dict) -> float` that returns the number of one item that the task \
             adds up. If the task adds up only some of the items, return 0 for the others."
        }
        (Ask::Distinct, Shape::Lines) => {
            "Write a Python function `key(line: str) -> str` that returns, for one line, the value whose different \
             values the task counts (an address, a name), or None for a line without one."
        }
        (Ask::Distinct, _) => {
            "Write a Python function `key(item: dict) -> str` that returns, for one item, the value whose different \
             values the task counts (a field's value), or None for an item without one."
        }
        (_, Shape::Lines) => {
            "Write a Python function `keep(line: str) -> bool` that returns True for the lines the task asks about and \
             False for the others. Test for a word or a value the line contains; do not list lines by number."
        }
        _ => {
            "Write a Python function `keep(item: dict) -> bool` that returns True for the items the task asks about \
             and False for the others. Test the value of a field (a status, a number); do not list items by name."
        }
    };
    let keeps = matches!(ask_kind, Ask::Count | Ask::Which | Ask::Share | Ask::Last);
    let date = keeps.then(|| dates::hint(task, &shown)).flatten().map(|h| format!(" {h}")).unwrap_or_default();
    vec![
        Message::system("You write Python. Reply with one code block only."),
        Message::user(format!("Task: {}\n\n{of}:\n{shown}\n\n{ask}{date}", task.trim())),
    ]
}

/// The record with the least (or, `most`, the most) value, and that value; ties go to the first.
/// `None` when fewer than two records gave a number.
fn extreme(values: &[Option<f64>], most: bool) -> Option<(usize, f64)> {
    let numbers: Vec<(usize, f64)> = values.iter().enumerate().filter_map(|(i, v)| v.map(|v| (i, v))).collect();
    if numbers.len() < 2 {
        return None;
    }
    numbers.into_iter().reduce(|a, b| if (most && b.1 > a.1) || (!most && b.1 < a.1) { b } else { a })
}

/// The different values of `keys` in the order first seen, and how many records gave one.
fn distinct(keys: &[Option<String>]) -> (Vec<String>, usize) {
    let mut different: Vec<String> = Vec::new();
    for key in keys.iter().flatten() {
        if !different.contains(key) {
            different.push(key.clone());
        }
    }
    (different, keys.iter().flatten().count())
}

/// Whether a count asks for an amount held in a field rather than a number of records: "how
/// many hours did Ana log" over rows with an `hours` column is a total of that column (the
/// 1.5B model counted rows, or added every row's hours, bench/README.md, stop 39). The word
/// after "how many" names a field (also without or with a plural `s`) whose values are numbers,
/// or, over lines, a unit most lines write after a number ("how many seconds" over
/// `duration=184s`, [`phrase::measures`]).
fn counts_a_field(task: &str, records: &Records<'_>) -> bool {
    let lower = task.to_lowercase();
    const ZH_UNITS: [(&str, &str); 5] =
        [("毫秒", "ms"), ("秒", "seconds"), ("分钟", "minutes"), ("小时", "hours"), ("字节", "bytes")];
    let zh = ZH_UNITS
        .iter()
        .find(|(unit, _)| ["多少", "几"].iter().any(|q| task.contains(&format!("{q}{unit}"))))
        .map(|(_, word)| (*word).to_string());
    let Some(word) = lower
        .split("how many ")
        .nth(1)
        .and_then(|rest| {
            rest.split(|c: char| !c.is_alphanumeric() && c != '_').find(|w| !w.is_empty()).map(str::to_string)
        })
        .or(zh)
    else {
        return false;
    };
    if records.shape == Shape::Lines {
        let lines: Vec<String> = (0..records.len()).map(|i| records.line(i)).collect();
        return phrase::measures(&word, &lines);
    }
    let names = |field: &str| {
        let field = field.to_lowercase();
        field == word
            || field.strip_suffix('s') == Some(word.as_str())
            || word.strip_suffix('s') == Some(field.as_str())
    };
    let Some(serde_json::Value::Object(first)) = records.values.first() else { return false };
    first.keys().filter(|k| names(k)).any(|k| {
        let numbers = records.values.iter().filter(|v| v.get(k).is_some_and(serde_json::Value::is_number)).count();
        numbers * 2 > records.values.len()
    })
}

/// The mean of the numbers in `values` and how many there were; `None` when fewer than two
/// records gave one.
fn average(values: &[Option<f64>]) -> Option<(f64, usize)> {
    let numbers: Vec<f64> = values.iter().flatten().copied().collect();
    (numbers.len() >= 2).then(|| (numbers.iter().sum::<f64>() / numbers.len() as f64, numbers.len()))
}

/// The sum of the numbers in `values`, rounded to cents against float noise (0.1 + 0.2), and
/// how many there were; `None` when fewer than two records gave one.
fn total(values: &[Option<f64>]) -> Option<(f64, usize)> {
    let numbers: Vec<f64> = values.iter().flatten().copied().collect();
    (numbers.len() >= 2).then(|| ((numbers.iter().sum::<f64>() * 100.0).round() / 100.0, numbers.len()))
}

#[cfg(test)]
mod tests;
