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
mod figures;
mod frequency;
mod harness;
mod notes;
mod phrase;
mod request;
mod rules;
mod sections;
mod source;
mod status_class;
mod status_key;

pub(super) use ask::{Ask, ask_of};

use figures::{average, distinct, extreme, total};
use harness::{KEY, VALUE, Values};
use phrase::{absent_literals, none_kept, task_phrase};
use request::request;
#[cfg(test)]
use source::begin_alike;
use source::{printed, source_of, the_one};

use notes::{
    average_note, distinct_note, extreme_note, kept_note, last_note, newest_note, phrase_note, printed_note,
    share_note, total_note,
};

/// The wall-clock limit of one run of the model's function over all records.
const TIMEOUT: Duration = Duration::from_secs(10);
/// How many tokens the function may take.
const CODE_TOKENS: u32 = 300;

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
        Self::of(call, calls[call].result.clone(), note)
    }

    /// `result` of `calls[call]` (the whole or a part), with `note`.
    fn of(call: usize, result: String, note: String) -> Self {
        Selected { call, result, note, kept: None, count: None, picked: false }
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
        if !self.opts.assists.allows("records_selection") {
            return None;
        }
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
        let source = source_of(&calls[call]);
        // A time, a date or a status class the task names bounds the records first (`rules.rs`).
        let bound = matches!(ask, Ask::Least | Ask::Most | Ask::Total | Ask::Average | Ask::Distinct)
            .then(|| self.bounded(task, &records, &source))
            .flatten();
        let (whole, bound_note) = match &bound {
            Some((text, note)) => (text.clone(), Some(note.clone())),
            None => (calls[call].result.clone(), None),
        };
        let records = match &bound {
            Some((text, _)) => match Records::of_lines_from(text, 2, true).filter(|r| r.shape == records.shape) {
                Some(inside) => inside,
                None => return None,
            },
            None => records,
        };
        let with_bound = |note: String| match &bound_note {
            Some(b) => format!("{b} {note}"),
            None => note,
        };
        // Where the records were bounded, the bounded ones go to the answer whatever the code does.
        let fallback = bound_note.as_ref().map(|n| Selected::of(call, whole.clone(), n.clone()));
        let Some(shown) = records.shown() else { return fallback };
        // "The most failed attempts": counted per value, not compared by a number.
        let per_value = matches!(ask, Ask::Least | Ask::Most) && frequency::counts_per(task, &records);
        let name = match ask {
            _ if per_value => "key",
            Ask::Least | Ask::Most | Ask::Total | Ask::Average => "value",
            Ask::Distinct => "key",
            Ask::Count | Ask::Which | Ask::Share | Ask::Last => "keep",
        };
        // The engine's own rules keep records without a model call (`rules.rs`).
        if let Some(selected) = self.select_by_rule(task, ask, call, calls, &records, &source) {
            return Some(selected);
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
            let reply =
                self.code_call("selection of a tool result's records", name, messages.clone(), tokens, stats).await;
            let Some(code) = reply.as_deref().and_then(|r| python::code_of(r, name)) else {
                self.note(
                    "records_selection",
                    &format!("{what} were not selected: the reply held no `{name}` function"),
                );
                return fallback;
            };
            if let Some(named) = (name == "keep").then(|| items::names_an_item(&code, &records.values)).flatten() {
                let named: String = named.chars().take(80).collect();
                self.note(
                    "records_selection",
                    &format!("{what} were not selected: the code names a record (\"{named}\")"),
                );
                return fallback;
            }
            let out = match python::run(&harness, &code, &data, TIMEOUT, &self.opts.shell).await {
                Ok(out) => out,
                Err(why) => {
                    self.note("records_selection", &format!("{what} were not selected: {why}"));
                    return fallback;
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
                        return fallback;
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
                        return fallback;
                    };
                    Selected::of(call, whole.clone(), with_bound(note)).pick()
                }
                Ask::Distinct => {
                    let keys =
                        serde_json::from_str::<Vec<Option<String>>>(last).ok().filter(|k| k.len() == records.len());
                    let Some(keys) = keys.filter(|_| out.code == Some(0)) else {
                        let why = python::failure(last, out.code);
                        self.note("records_selection", &format!("{what} were not told apart: {why}"));
                        return fallback;
                    };
                    // The model's code could return any text: only values the result holds count,
                    // and only those reach the note.
                    let result = &calls[call].result;
                    let keys: Vec<Option<String>> =
                        keys.into_iter().map(|k| k.filter(|k| result.contains(k.as_str()))).collect();
                    // `ok` and `failed` where the task counts the different users (`status_key.rs`).
                    if let Some((found, noun)) = status_key::statuses(task, &keys) {
                        let detail = format!(
                            "the code returned statuses ({}) for {what}, where the task counts the different {noun}",
                            found.join(", ")
                        );
                        if attempt == 0 {
                            self.note("records_selection", &format!("{detail}; asked again"));
                            messages.push(crate::llm::Message::assistant(reply.unwrap_or_default()));
                            messages.push(crate::llm::Message::user(status_key::message(&found, &noun)));
                            continue;
                        }
                        self.note("records_selection", &format!("{detail} twice; shown as they came"));
                        return fallback;
                    }
                    let (different, with) = distinct(&keys);
                    if with < 2 {
                        self.note("records_selection", &format!("{what} were not told apart: fewer than two values"));
                        return fallback;
                    }
                    let note = distinct_note(lang, &source, &different);
                    Selected::of(call, whole.clone(), with_bound(note))
                }
                Ask::Count | Ask::Which | Ask::Share | Ask::Last => {
                    let flags = serde_json::from_str::<Vec<bool>>(last).ok().filter(|f| f.len() == records.len());
                    let Some(mut flags) = flags.filter(|_| out.code == Some(0)) else {
                        let why = python::failure(last, out.code);
                        self.note("records_selection", &format!("{what} were not selected: {why}"));
                        return fallback;
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
                        return fallback;
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
                        return fallback;
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
                        return fallback;
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
                        return fallback;
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
                        return fallback;
                    }
                    if ask == Ask::Total {
                        let Some((sum, counted)) = total(&values).filter(|_| !dates) else {
                            self.note(
                                "records_selection",
                                &format!("{what} were not added up: fewer than two numbers"),
                            );
                            return fallback;
                        };
                        let note = total_note(lang, records.shape, &source, sum, (counted, records.len()), &whole);
                        let selected = Selected::of(call, whole.clone(), with_bound(note));
                        self.note("records_selection", &format!("{what}: {}", selected.note));
                        return Some(selected);
                    }
                    if ask == Ask::Average {
                        let Some((mean, counted)) = average(&values).filter(|_| !dates) else {
                            self.note(
                                "records_selection",
                                &format!("{what} were not averaged: fewer than two numbers"),
                            );
                            return fallback;
                        };
                        let note = average_note(lang, records.shape, &source, mean, (counted, records.len()), &whole);
                        let selected = Selected::of(call, whole.clone(), with_bound(note));
                        self.note("records_selection", &format!("{what}: {}", selected.note));
                        return Some(selected);
                    }
                    let Some((best, value)) = extreme(&values, ask == Ask::Most) else {
                        self.note("records_selection", &format!("{what} were not compared: fewer than two numbers"));
                        return fallback;
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
                    Selected::of(call, whole.clone(), with_bound(note)).pick()
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

/// Whether a count asks for an amount held in a field rather than a number of records: "how
/// many hours has Ana logged" over rows with an `hours` column is a total of that column (the
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

#[cfg(test)]
mod tests;
