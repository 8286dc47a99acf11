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

use super::events::{CallRecord, ToolStatus, TurnStats};
use super::records::{self, Records, Shape};
use super::{Agent, items, python};
use crate::config::Language;

/// The wall-clock limit of one run of the model's function over all records.
const TIMEOUT: Duration = Duration::from_secs(10);
/// How many tokens the function may take.
const CODE_TOKENS: u32 = 300;

/// Runs the model's `value` on every record and prints one line: a JSON list of numbers, `null`
/// where it raised or gave no number.
const VALUE: &str = r#"import json, math, sys
with open(sys.argv[2], encoding="utf-8") as f:
    items = json.load(f)
value = define(sys.argv[1], "value.py")["value"]
def number(item):
    try:
        v = value(item)
        if isinstance(v, bool):
            return None
        v = float(v)
    except Exception:
        return None
    return v if math.isfinite(v) else None
sys.stdout.write("\n" + json.dumps([number(i) for i in items]) + "\n")
"#;

/// What a task asks of a list of records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ask {
    /// How many of them (the lines of a text count too).
    Count,
    /// Which of them (objects and rows only).
    Which,
    /// The one with the least, or the most, of something (objects and rows only).
    Least,
    Most,
    /// The sum of a number over them (objects and rows only).
    Total,
}

/// What `task` asks, from its words: a superlative first ("which warehouse has the least
/// stock" picks one), then a count, then "which ... are" or "list the ... that", then a total
/// ("what is the total of the amounts": the 1.5B model added 1200, 350, 800 and 150 to 3950).
pub(super) fn ask_of(task: &str) -> Option<Ask> {
    let lower = task.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let has = |w: &str| words.contains(&w);
    let phrase = |p: &str| lower.contains(p);
    const LEAST: [&str; 9] =
        ["least", "lowest", "smallest", "fewest", "minimum", "cheapest", "shortest", "coldest", "slowest"];
    const MOST: [&str; 11] = [
        "highest", "largest", "biggest", "greatest", "maximum", "longest", "warmest", "hottest", "fastest", "busiest",
        "most",
    ];
    const ZH_LEAST: [&str; 5] = ["最少", "最低", "最小", "最便宜", "最短"];
    const ZH_MOST: [&str; 5] = ["最多", "最高", "最大", "最贵", "最长"];
    if LEAST.iter().any(|w| has(w)) || ZH_LEAST.iter().any(|w| phrase(w)) {
        return Some(Ask::Least);
    }
    if MOST.iter().any(|w| has(w)) || ZH_MOST.iter().any(|w| phrase(w)) {
        return Some(Ask::Most);
    }
    // An amount in Chinese says 多少 too ("总额是多少"): the amount's word decides.
    if ["总额", "总和", "合计", "总计", "总金额"].iter().any(|p| phrase(p)) {
        return Some(Ask::Total);
    }
    if ["how many", "number of", "count the"].iter().any(|p| phrase(p))
        || ["多少", "几个", "几条", "几次", "几行"].iter().any(|p| phrase(p))
    {
        return Some(Ask::Count);
    }
    let which = has("which") && ["are", "were", "have", "had"].iter().any(|w| has(w));
    if which || phrase("name them") || phrase("哪些") {
        return Some(Ask::Which);
    }
    let total = ["total", "sum", "altogether", "combined"].iter().any(|w| has(w)) || phrase("add up");
    if total || ["总共", "一共"].iter().any(|p| phrase(p)) {
        return Some(Ask::Total);
    }
    None
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
        if !applies(task, calls) {
            return None;
        }
        if let (Some(Ask::Count), None, Some((call, lines))) = (ask_of(task), the_one(calls), printed(calls)) {
            let note = printed_note(self.opts.language, &source_of(&calls[call]), lines);
            self.note("records_selection", &note);
            return Some(Selected { call, result: calls[call].result.clone(), note, kept: None });
        }
        let (ask, (call, records)) = (ask_of(task)?, the_one(calls)?);
        let shown = records.shown()?;
        let source = source_of(&calls[call]);
        let name = if matches!(ask, Ask::Least | Ask::Most | Ask::Total) { "value" } else { "keep" };
        let tokens = Some(self.opts.max_tokens.map_or(CODE_TOKENS, |m| m.min(CODE_TOKENS)));
        let mut messages = request(task, ask, records.shape, &source, &shown);
        let what = format!("the {} of `{source}`", noun(records.shape));
        let data = serde_json::Value::Array(records.values.clone()).to_string();
        let harness =
            format!("{}{}{}", python::LIMITS, python::DEFINE, if name == "keep" { items::KEEP } else { VALUE });
        let lang = self.opts.language;
        // A `keep` that keeps nothing is asked for once more: the model tests for the task's
        // word (`timeout`) where the lines say `timed out`.
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
                Ask::Count | Ask::Which => {
                    let flags = serde_json::from_str::<Vec<bool>>(last).ok().filter(|f| f.len() == records.len());
                    let Some(flags) = flags.filter(|_| out.code == Some(0)) else {
                        let why = python::failure(last, out.code);
                        self.note("records_selection", &format!("{what} were not selected: {why}"));
                        return None;
                    };
                    let kept = flags.iter().filter(|f| **f).count();
                    if kept == 0 && attempt == 0 {
                        let absent = absent_literals(&code, &shown);
                        messages.push(crate::llm::Message::assistant(reply.unwrap_or_default()));
                        messages.push(crate::llm::Message::user(none_kept(records.shape, &absent)));
                        continue;
                    }
                    if kept == 0
                        && let Some((phrase, flags)) = task_phrase(task, &records)
                    {
                        let kept = flags.iter().filter(|f| **f).count();
                        let selected = Selected {
                            call,
                            result: records.keep(&flags),
                            note: phrase_note(lang, &source, &phrase, kept, flags.len()),
                            kept: None,
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
                        note: kept_note(lang, ask, records.shape, &source, kept, flags.len()),
                        kept: named,
                    }
                }
                Ask::Least | Ask::Most | Ask::Total => {
                    let values =
                        serde_json::from_str::<Vec<Option<f64>>>(last).ok().filter(|v| v.len() == records.len());
                    let Some(values) = values.filter(|_| out.code == Some(0)) else {
                        let why = python::failure(last, out.code);
                        self.note("records_selection", &format!("{what} were not compared: {why}"));
                        return None;
                    };
                    if ask == Ask::Total {
                        let Some((sum, counted)) = total(&values) else {
                            self.note(
                                "records_selection",
                                &format!("{what} were not added up: fewer than two numbers"),
                            );
                            return None;
                        };
                        let note = total_note(lang, records.shape, &source, sum, counted, records.len());
                        let selected = Selected { call, result: calls[call].result.clone(), note, kept: None };
                        self.note("records_selection", &format!("{what}: {}", selected.note));
                        return Some(selected);
                    }
                    let Some((best, value)) = extreme(&values, ask == Ask::Most) else {
                        self.note("records_selection", &format!("{what} were not compared: fewer than two numbers"));
                        return None;
                    };
                    Selected {
                        call,
                        result: calls[call].result.clone(),
                        note: extreme_note(
                            lang,
                            records.shape,
                            &source,
                            ask,
                            value,
                            &records.line(best),
                            records.len(),
                        ),
                        kept: None,
                    }
                }
            };
            self.note("records_selection", &format!("{what}: {}", selected.note));
            return Some(selected);
        }
        None
    }
}

/// What asks once more for a `keep` that kept nothing, naming the strings of its code that
/// occur in none of the records shown (the model tested for `timeout` where the lines say
/// `timed out`, and asked again without being told, wrote the same function).
fn none_kept(shape: Shape, absent: &[String]) -> String {
    let noun = noun(shape);
    let why = match absent {
        [] => String::new(),
        some => format!(
            ": none of them contains {}",
            some.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(" or ")
        ),
    };
    format!(
        "Your function returned False for every one of the {noun}{why}. Write it again: test for words or values exactly \
         as the {noun} above write them."
    )
}

/// Words of a task that say nothing about which lines it means.
const STOP_WORDS: [&str; 40] = [
    "the",
    "and",
    "how",
    "many",
    "much",
    "what",
    "which",
    "are",
    "were",
    "was",
    "for",
    "with",
    "that",
    "this",
    "these",
    "those",
    "from",
    "according",
    "file",
    "files",
    "line",
    "lines",
    "log",
    "logs",
    "count",
    "number",
    "there",
    "have",
    "has",
    "had",
    "did",
    "does",
    "its",
    "their",
    "them",
    "they",
    "all",
    "any",
    "into",
    "you",
];

/// For a count over the lines of a text whose model-written `keep` kept nothing twice: the
/// longest run of the task's own words (one to three, English) that some lines but not all hold
/// as words of their own, ignoring case, and which lines hold it. A single word is also tried
/// without a plural `s` (`errors` finds `ERROR`). `None` when no run tells lines apart.
///
/// Why: asked how many requests "timed out", the model tests for `timeout` and, told that no
/// line holds it, writes the same test again (bench/README.md, stop 36); the task's words are
/// what the user saw in the file.
fn task_phrase(task: &str, records: &Records<'_>) -> Option<(String, Vec<bool>)> {
    if records.shape != Shape::Lines {
        return None;
    }
    let lines: Vec<String> = (0..records.len()).map(|i| records.line(i).to_lowercase()).collect();
    let lower = task.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let content = |w: &str| w.len() >= 3 && w.chars().all(|c| c.is_ascii_alphabetic()) && !STOP_WORDS.contains(&w);
    let mut best: Option<(usize, String, Vec<bool>)> = None;
    for n in (1..=3).rev() {
        for run in words.windows(n) {
            if !content(run[0]) || !content(run[n - 1]) {
                continue;
            }
            let phrase = run.join(" ");
            let mut forms = vec![phrase.clone()];
            if let Some(singular) = phrase.strip_suffix('s').filter(|s| n == 1 && s.len() >= 3) {
                forms.push(singular.to_string());
            }
            for form in forms {
                let flags: Vec<bool> = lines.iter().map(|l| holds_words(l, &form)).collect();
                let kept = flags.iter().filter(|f| **f).count();
                let better = best.as_ref().is_none_or(|(words, _, _)| n > *words);
                if kept > 0 && kept < flags.len() && better {
                    best = Some((n, form, flags));
                }
            }
        }
    }
    best.map(|(_, phrase, flags)| (phrase, flags))
}

/// Whether `line` holds `phrase` with no letter or digit right before or after it.
fn holds_words(line: &str, phrase: &str) -> bool {
    line.match_indices(phrase).any(|(at, _)| {
        let before = line[..at].chars().next_back().is_none_or(|c| !c.is_alphanumeric());
        let after = line[at + phrase.len()..].chars().next().is_none_or(|c| !c.is_alphanumeric());
        before && after
    })
}

/// What the answer request says about the lines that hold the task's words.
fn phrase_note(lang: Language, source: &str, phrase: &str, kept: usize, of: usize) -> String {
    match lang {
        Language::En => format!(
            "({kept} of the {of} lines of `{source}` contain \"{phrase}\", the task's words; the data above shows only those {kept}.)"
        ),
        Language::Zh => {
            format!(
                "（`{source}` 的 {of} 行中有 {kept} 行含有任务中的词 \"{phrase}\"；上面的数据只列出了这 {kept} 行。）"
            )
        }
    }
}

/// The string literals of Python `code` (quoted with `'` or `"`, two characters or more, at most
/// five) that occur nowhere in `shown`.
fn absent_literals(code: &str, shown: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for literal in python::literals(code) {
        if literal.chars().count() >= 2 && !shown.contains(&literal) && !out.contains(&literal) && out.len() < 5 {
            out.push(literal);
        }
    }
    out
}

/// Whether the selection may apply to a turn that made `calls` for `task`: the task asks
/// something of a list, and one result holds records of a shape that ask can use.
pub(super) fn applies(task: &str, calls: &[CallRecord]) -> bool {
    match (ask_of(task), the_one(calls)) {
        (Some(ask), Some((_, records))) => records.shape != Shape::Lines || ask == Ask::Count,
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
    match (the_one(calls), printed(calls)) {
        (None, Some((_, lines))) => !says_number(answer, lines),
        _ => true,
    }
}

/// Whether `text` holds `n` as a number of its own (not inside a longer one).
fn says_number(text: &str, n: usize) -> bool {
    let n = n.to_string();
    text.split(|c: char| !c.is_ascii_digit()).any(|run| run == n)
}

/// For a count, the one command the turn ran that printed a few lines (two to five: fewer
/// than a text's lines need to be selected from, `records.rs`), when it is the turn's only
/// successful call: the call and how many lines. The model that greps three matching rows lists
/// them where a count was asked; the number of lines a search printed is a fact the engine
/// states. One line (`grep -c`, `wc -l`) is its own count.
fn printed(calls: &[CallRecord]) -> Option<(usize, usize)> {
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

/// What the answer request says about the lines a command printed.
fn printed_note(lang: Language, command: &str, lines: usize) -> String {
    match lang {
        Language::En => format!("(The command `{command}` printed {lines} lines.)"),
        Language::Zh => format!("（命令 `{command}` 输出了 {lines} 行。）"),
    }
}

/// The one successful call of the turn whose result holds records (a listing of files aside:
/// its lines are names, and counting them is the listing's own job), or `None` when there are
/// none or several (comparing two files is not picking from one).
fn the_one(calls: &[CallRecord]) -> Option<(usize, Records<'_>)> {
    let mut seen: Vec<(&str, &str)> = Vec::new();
    let mut found = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        let key = (call.tool.as_str(), call.arguments.as_str());
        if call.status != ToolStatus::Success || call.tool == "file_list" || seen.contains(&key) {
            continue;
        }
        seen.push(key);
        // A file read in part is not the file's records.
        if crate::tools::read_range(&call.result).is_some() {
            continue;
        }
        if let Some(records) = Records::of(call.result.trim()) {
            found.push((i, records));
        }
    }
    (found.len() == 1).then(|| found.pop()).flatten()
}

/// What a call's result is of: its path, command or URL.
fn source_of(call: &CallRecord) -> String {
    let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_default();
    ["path", "command", "url"]
        .iter()
        .find_map(|k| args.get(k).and_then(|v| v.as_str()))
        .map_or_else(|| call.tool.clone(), str::to_string)
}

fn noun(shape: Shape) -> &'static str {
    match shape {
        Shape::Json => "items",
        Shape::Csv => "rows",
        Shape::Lines => "lines",
    }
}

/// The request for the function. English whatever the routine's language: it asks for code.
fn request(task: &str, ask: Ask, shape: Shape, source: &str, shown: &str) -> Vec<crate::llm::Message> {
    use crate::llm::Message;
    let of = format!("The {} of `{source}`", noun(shape));
    // The records are what a tool returned, fenced like every outside text in a prompt (SPEC §8).
    let shown = crate::routine::template::fence(shown);
    let ask = match (ask, shape) {
        (Ask::Least | Ask::Most, _) => {
            "Write a Python function `value(item: dict) -> float` that returns the number the task compares, for one \
             item."
        }
        (Ask::Total, _) => {
            "Write a Python function `value(item: dict) -> float` that returns the number of one item that the task \
             adds up. If the task adds up only some of the items, return 0 for the others."
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
    vec![
        Message::system("You write Python. Reply with one code block only."),
        Message::user(format!("Task: {}\n\n{of}:\n{shown}\n\n{ask}", task.trim())),
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

/// What the answer request says about the kept records.
///
/// For a "which" task the note says only that they are the ones asked about, and to name each:
/// told "2 of the 4 items ... are the ones the task asks about", the 1.5B model answered that
/// no user had two-factor authentication turned off beside the two that had (and again when
/// asked to name them); told this, "Ben and Dara" (bench/README.md, stop 38). A count keeps
/// the numbers, which it answers from.
fn kept_note(lang: Language, ask: Ask, shape: Shape, source: &str, kept: usize, of: usize) -> String {
    let noun = noun(shape);
    match (lang, ask) {
        (Language::En, Ask::Which) => format!(
            "(The data above shows only the {kept} {noun} of `{source}` that the task asks about. Name each of them.)"
        ),
        (Language::Zh, Ask::Which) => {
            format!("（上面的数据只列出了 `{source}` 中任务所问的 {kept} 行。请逐一写出它们。）")
        }
        (Language::En, _) => format!(
            "({kept} of the {of} {noun} of `{source}` are the ones the task asks about; the data above shows only those {kept}.)"
        ),
        (Language::Zh, _) => {
            format!("（`{source}` 的 {of} 行中有 {kept} 行是任务所问的；上面的数据只列出了这 {kept} 行。）")
        }
    }
}

/// The sum of the numbers in `values`, rounded to cents against float noise (0.1 + 0.2), and
/// how many there were; `None` when fewer than two records gave one.
fn total(values: &[Option<f64>]) -> Option<(f64, usize)> {
    let numbers: Vec<f64> = values.iter().flatten().copied().collect();
    (numbers.len() >= 2).then(|| ((numbers.iter().sum::<f64>() * 100.0).round() / 100.0, numbers.len()))
}

/// What the answer request says about a total.
fn total_note(lang: Language, shape: Shape, source: &str, sum: f64, counted: usize, of: usize) -> String {
    let noun = noun(shape);
    let sum = if sum.fract() == 0.0 && sum.abs() < 1e15 { format!("{}", sum as i64) } else { format!("{sum:.2}") };
    let over = if counted == of { format!("the {of} {noun}") } else { format!("{counted} of the {of} {noun}") };
    match lang {
        Language::En => format!("(Added up over {over} of `{source}`, what the task adds up comes to {sum}.)"),
        Language::Zh => format!("（按任务所加总的数值，`{source}` 的 {of} 行合计为 {sum}。）"),
    }
}

/// What the answer request says about the record with the least or the most.
fn extreme_note(lang: Language, shape: Shape, source: &str, ask: Ask, value: f64, line: &str, of: usize) -> String {
    let noun = noun(shape);
    let value =
        if value.fract() == 0.0 && value.abs() < 1e15 { format!("{}", value as i64) } else { value.to_string() };
    match (lang, ask == Ask::Most) {
        (Language::En, most) => format!(
            "(Of the {of} {noun} of `{source}`, the one with the {} by what the task compares ({value}) is: {line})",
            if most { "most" } else { "least" }
        ),
        (Language::Zh, most) => format!(
            "（`{source}` 的 {of} 行中，按任务所比较的数值{}的是（{value}）：{line}）",
            if most { "最大" } else { "最小" }
        ),
    }
}

#[cfg(test)]
#[path = "select_tests.rs"]
mod tests;
