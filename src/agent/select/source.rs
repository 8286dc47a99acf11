//! Where the records a task asks about come from: the one result of the turn that holds them
//! ([`the_one`]), the few lines a command printed for a count ([`printed`]), and what a result
//! is of ([`source_of`]).

use super::Ask;
use crate::agent::events::{CallRecord, ToolStatus};
use crate::agent::records::{self, Records, Shape};

/// For a count, the one command the turn ran that printed a few lines (two to five: fewer
/// than a text's lines need to be selected from, `records.rs`), when it is the turn's only
/// successful call: the call and how many lines. The model that greps three matching rows lists
/// them where a count was asked; the number of lines a search printed is a fact the engine
/// states. One line (`grep -c`, `wc -l`) is its own count.
pub(super) fn printed(calls: &[CallRecord]) -> Option<(usize, usize)> {
    let mut seen: Vec<(&str, &str)> = Vec::new();
    let mut ok = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        let key = (call.tool.as_str(), call.arguments.as_str());
        if call.status == ToolStatus::Success && !seen.contains(&key) {
            seen.push(key);
            ok.push(i);
        }
    }
    let [i] = ok[..] else { return None };
    let lines = calls[i].result.lines().filter(|l| !l.trim().is_empty()).count();
    (calls[i].tool == "shell" && (2..records::MIN_LINES).contains(&lines) && !prints_whole(&calls[i]))
        .then_some((i, lines))
}

/// Whether a `shell` call printed whole files rather than the lines it chose: `cat`, or a
/// `grep` whose pattern matches every line (`grep -n '' FILE`, the engine's own way to read a
/// file when `file_read` is not offered, `grounding.rs`). What it printed is the file, and
/// how many lines it has counts nothing the task asks about.
fn prints_whole(call: &CallRecord) -> bool {
    let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_default();
    let Some(Ok(parsed)) = args.get("command").and_then(|c| c.as_str()).map(crate::policy::command::parse) else {
        return false;
    };
    match parsed.base.as_str() {
        "cat" => true,
        "grep" | "egrep" | "fgrep" => {
            let pattern = parsed.argv[1..].iter().find(|a| !a.starts_with('-') || a.as_str() == "-");
            pattern.is_some_and(|p| ["", "^", "$", ".*"].contains(&p.as_str()))
        }
        _ => false,
    }
}

/// Whether every line of `text` (three or more) begins with a word of one shape, digits aside:
/// a log's `10:01`, a list's `-`. A file of settings (`host = a`, `port = 1`) does not.
pub(super) fn begin_alike(text: &str) -> bool {
    let shape = |line: &str| -> Option<String> {
        let word = line.split_whitespace().next()?;
        Some(word.chars().map(|c| if c.is_ascii_digit() { '0' } else { c }).collect())
    };
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let first = lines.first().and_then(|l| shape(l));
    lines.len() >= 3 && first.is_some() && lines.iter().all(|l| shape(l) == first)
}

/// Whether `ask` picks one record (the least or the most) or works out one number over all of
/// them (a mean, a total), for which a text of fewer lines is records too ([`the_one`]).
fn picks(ask: Ask) -> bool {
    matches!(ask, Ask::Least | Ask::Most | Ask::Last | Ask::Average | Ask::Total)
}

/// The one successful call of the turn whose result holds records for `ask` (a listing of files
/// and a memory call aside: a listing's lines are names, and counting them is the listing's own
/// job; memory holds what was remembered), or `None` when there
/// are none or several (a comparison of two files is not a pick from one). Lines are records from
/// six, or from three for a pick (the least, the most, the last: lines alike, each with a digit)
/// and for "which" over a file read whole or a page fetched with at most one heading (its lines
/// are what it lists; a command's output, a git log's `Author:` and `Date:` lines, is not a list to pick
/// from, nor is a document of sections), and for a count over lines that begin alike, in a file
/// or a page, or in any output when the task bounds a date or a time (`timed`).
pub(super) fn the_one(calls: &[CallRecord], ask: Option<Ask>, timed: bool) -> Option<(usize, Records<'_>)> {
    let mut seen: Vec<(&str, &str)> = Vec::new();
    let mut found = Vec::new();
    let few = ask.is_some_and(picks);
    for (i, call) in calls.iter().enumerate() {
        let key = (call.tool.as_str(), call.arguments.as_str());
        // What memory returns is what was remembered, not the records of a source: a recall of
        // the last run's answer beside today's log made two lists, and neither was counted.
        let memory = call.tool.starts_with("memory_");
        if call.status != ToolStatus::Success || call.tool == "file_list" || memory || seen.contains(&key) {
            continue;
        }
        seen.push(key);
        // A file read in part is not the file's records; one read whole by a range (`offset: 1`,
        // "(lines 1-6 of 6)") is, without the range's line.
        // A response is its body's records: the status line is not one of them.
        let text = match crate::tools::read_range(&call.result) {
            Some((first, last, lines)) if first > 1 || last < lines => continue,
            Some(_) => crate::tools::without_range(&call.result),
            None if call.tool == "http_request" => crate::tools::http_body(&call.result),
            None => call.result.as_str(),
        };
        // A document of sections (two headings or more) is not a list: "what was done this
        // week" is the lines under one heading, which no test of a line alone tells (the model
        // kept the three headings of a weekly report).
        let headings = text.lines().filter(|l| l.trim_start().starts_with('#')).count();
        let listed =
            ask == Some(Ask::Which) && ["file_read", "http_request"].contains(&call.tool.as_str()) && headings <= 1;
        // A count over a short log: "how many ERROR lines" of three lines, which the 1.5B model
        // counted as 3 for 2 (stop 43). Lines that begin alike (a time, a list mark) are records,
        // as are a command's when the task bounds their time (`timed`: "since 08:30").
        let counted = matches!(ask, Some(Ask::Count | Ask::Share))
            && (timed || ["file_read", "http_request"].contains(&call.tool.as_str()))
            && begin_alike(text);
        let min_lines = if few || listed || counted { 3 } else { records::MIN_LINES };
        let document = ["file_read", "http_request"].contains(&call.tool.as_str());
        if let Some(records) = Records::of_lines_from(text.trim(), min_lines, document) {
            // A pick among lines needs lines alike: each holds a number or a date (a listing,
            // a log), not a git log's `Author:` and message lines.
            let alike = match records.shape {
                Shape::Lines if few => (0..records.len()).all(|i| records.line(i).chars().any(|c| c.is_ascii_digit())),
                Shape::Lines => ask != Some(Ask::Which) || listed,
                Shape::Json | Shape::Csv => true,
            };
            if alike {
                found.push((i, records));
            }
        }
    }
    (found.len() == 1).then(|| found.pop()).flatten()
}

/// What a call's result is of: its path, command or URL.
pub(super) fn source_of(call: &CallRecord) -> String {
    let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_default();
    ["path", "command", "url"]
        .iter()
        .find_map(|k| args.get(k).and_then(|v| v.as_str()))
        .map_or_else(|| call.tool.clone(), str::to_string)
}
