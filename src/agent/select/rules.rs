//! The records the engine keeps by its own rules, without a model call: the lines of a date
//! or a time of day the task compares with, the boxes of a Markdown task list, a class of HTTP
//! statuses (refined by the task's word where it tells them apart), and the first or the last in
//! time of records that each hold one date.

use super::notes::{boxes_note, dated_note, extreme_note, share_note, status_note};
use super::phrase::{counts_lines, task_phrase};
use super::{Ask, Selected, checklist, clock, dates, noun, status_class};
use crate::agent::events::CallRecord;
use crate::agent::records::Records;
use crate::agent::{Agent, items};

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

impl Agent {
    /// The records of `records` (the result of `calls[call]`, from `source`) that `task` asks
    /// about by `ask`, kept by one of the engine's rules; `None` when none applies.
    pub(super) fn select_by_rule(
        &self,
        task: &str,
        ask: Ask,
        call: usize,
        calls: &[CallRecord],
        records: &Records<'_>,
        source: &str,
    ) -> Option<Selected> {
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
                    && let Some((word, holds)) = task_phrase(task, records)
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
                    _ if ask == Ask::Share => share_note(lang, records.shape, source, kept, of),
                    Rule::Date => dated_note(lang, records.shape, source, &phrase, kept, of),
                    Rule::Box => boxes_note(lang, source, &phrase, holding.as_deref(), kept, of),
                    Rule::Status => status_note(lang, records.shape, source, &phrase, kept, of),
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
                let mut note = extreme_note(lang, records.shape, source, ask, None, &lines[best], records.len());
                let today = (self.clock)().with_timezone(&self.opts.timezone).date_naive();
                if let Some(days) = dates::days_note(lang, task, value, today) {
                    note = format!("{note} {days}");
                }
                self.note("records_selection", &format!("the {} of `{source}` by date: {note}", noun(records.shape)));
                return Some(Selected::whole(call, calls, note).pick());
            }
        }
        None
    }

    /// The records of `records` a time, a date or a class of HTTP statuses the task names
    /// bounds, for a pick, a count per value, a total, a mean or the different values ("the
    /// most 5xx responses", "the mean CPU from 09:00 to 09:30"): the text of the
    /// ones inside (two or more, not all) and the note that says which they are. The model's
    /// function then runs only over those, as a count's does (`select_by_rule`).
    pub(super) fn bounded(&self, task: &str, records: &Records<'_>, source: &str) -> Option<(String, String)> {
        let lines: Vec<String> = (0..records.len()).map(|i| records.line(i)).collect();
        let today = (self.clock)().with_timezone(&self.opts.timezone).date_naive();
        let lang = self.opts.language;
        let dated = dates::by_date(task, &lines, today).or_else(|| clock::by_clock(task, &lines));
        let (phrase, flags, rule) = match dated {
            Some((phrase, flags)) => (phrase, flags, Rule::Date),
            None => status_class::by_class(task, &lines).map(|(class, flags)| (class, flags, Rule::Status))?,
        };
        let note = |kept: usize, of: usize| match rule {
            Rule::Date => dated_note(lang, records.shape, source, &phrase, kept, of),
            _ => status_note(lang, records.shape, source, &phrase, kept, of),
        };
        let kept = flags.iter().filter(|f| **f).count();
        (kept >= 2 && kept < flags.len()).then(|| (records.keep(&flags), note(kept, flags.len())))
    }
}
