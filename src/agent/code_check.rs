//! The code check of a silent reply: before the engine believes a silent token that follows
//! tool calls, the model writes a small Python function that finds, in what the tools returned,
//! what the task asks to report; the engine runs it on those results inside the OS sandbox and
//! believes the silence only when the function finds nothing.
//!
//! Why code: a 1.5B model answers `NO_REPLY` next to the ERROR line it just read, `ALL_UP` next
//! to `"state": "down"` and "normal" next to 93% where the task says above 90%; asked again in
//! words (reviews, yes/no questions, their probabilities) it does not make the comparison
//! (bench/README.md, stops 28 and 29). Asked to write the comparison as code, the same model
//! wrote a right check in 11 of 15 recorded cases, and the four others raised an error; no
//! check that ran gave the wrong verdict. A check that cannot decide leaves the decision to the
//! review, as before.
//!
//! The function is the model's output, so it is hostile like every tool argument: it runs in
//! the sandbox of `security.sandbox` (bubblewrap or Landlock; never without one), with no
//! network, writing only a fresh scratch folder, as one process (it cannot fork or start
//! threads), with a few seconds of CPU, a memory and file size limit, and the wall-clock
//! timeout below. What comes back is whether it found something and the strings it returned,
//! which only pick lines of the tool results (already in the prompt) for the report and must
//! occur in them: what it returned never reaches a prompt, a delivery or the database itself,
//! so code that reads a file it can see has nowhere to send it; and the verdict can only turn a
//! silence into a report the model is then asked to write from the tool results, never a
//! report into silence.

use std::time::Duration;

use super::events::{CallRecord, RunEvent, ToolStatus, TurnStats};
use super::{Agent, python};
use crate::llm::Message;

/// The program that runs the model's function: limits first, then the function on the data,
/// then one line with the verdict and the strings the function returned. The model's code runs
/// in the same interpreter and could print a verdict of its own; that only keeps a silence the
/// model chose anyway, or picks which lines of the results the report is asked from.
const HARNESS: &str = r#"import json, sys
with open(sys.argv[2], encoding="utf-8") as f:
    data = f.read()
findings = define(sys.argv[1], "check.py")["findings"]
def parses(text):
    try:
        findings(text)
        return True
    except Exception:
        return False
# A function that fails on the whole output runs once more without a table's header: when the
# only lines it cannot take on their own are the first line, if it holds no number of its own
# (`domain days_left`, a `df` table's column names; a log line has its time), and lines of
# no letter or digit (`-----`), and some line is left. A data line it cannot take leaves the
# failure standing: the line could hold what the task asks about.
import re
skipped = 0
try:
    found = findings(data)
except Exception:
    lines = data.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    fails = {i for i, line in enumerate(lines) if not parses(line)}
    kept = [line for i, line in enumerate(lines) if i not in fails]
    number = re.compile(r"\b\d+(?:[.,:]\d+)*\b")
    header = lambda i: (i == first and not number.search(lines[i])) or not any(c.isalnum() for c in lines[i])
    if not fails or not all(header(i) for i in fails) or not any(line.strip() for line in kept):
        raise
    skipped = len(fails)
    found = findings("\n".join(kept))
COLLECTIONS = (list, tuple, set, frozenset, dict)
def parts(v):
    # What counts in a value: a dict with lists in it counts by those lists only
    # ({"checked_at": "...", "services": []} found nothing).
    if isinstance(v, dict):
        inner = [x for x in v.values() if isinstance(x, COLLECTIONS)]
        return inner or list(v.values())
    return list(v) if isinstance(v, COLLECTIONS) else None
def something(v, depth=0):
    if depth > 20 or v is None or isinstance(v, bool):
        return v is True
    inner = parts(v)
    if inner is not None:
        return any(something(x, depth + 1) for x in inner)
    if isinstance(v, (int, float)):
        return v != 0
    return bool(str(v).strip())
strings = []
def walk(v, depth=0):
    if depth > 20 or len(strings) >= 200 or not something(v):
        return
    inner = parts(v)
    if inner is not None:
        for x in inner:
            walk(x, depth + 1)
    elif not isinstance(v, bool):
        strings.append(str(v)[:500])
walk(found)
sys.stdout.write("\n" + json.dumps({"found": something(found), "strings": strings, "skipped": skipped}) + "\n")
"#;

/// The wall-clock limit of one check (the harness also limits CPU time to 5 s).
const TIMEOUT: Duration = Duration::from_secs(10);
/// How much of the tool results the model sees as the example its function must parse (the
/// function itself runs on all of them).
const EXAMPLE_CHARS: usize = 3_000;
/// How many tokens the function may take.
const CODE_TOKENS: u32 = 600;

/// What a silent reply is checked against: the task without its sentences that name the
/// token (what is left says what to report), and the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SilenceTask {
    pub task: String,
    pub token: String,
}

impl SilenceTask {
    /// The task `task` of a silent `token`, without the sentences that name the token. `None`
    /// when nothing is left.
    pub fn new(task: &str, token: &str) -> Option<SilenceTask> {
        let token = token.trim();
        if token.is_empty() {
            return None;
        }
        let kept: Vec<&str> = sentences(task).filter(|s| !s.contains(token)).collect();
        let task = kept.join(" ");
        (!task.trim().is_empty()).then(|| SilenceTask { task, token: token.to_string() })
    }
}

/// The sentences of `text`: split after `.`, `!`, `?`, `;` followed by white space, after
/// `。！？；` and at line ends, trimmed, empty ones left out.
fn sentences(text: &str) -> impl Iterator<Item = &str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next_blank = chars.peek().is_none_or(|(_, n)| n.is_whitespace());
        let end = match c {
            '。' | '！' | '？' | '；' | '\n' => true,
            '.' | '!' | '?' | ';' => next_blank,
            _ => false,
        };
        if end {
            out.push(&text[start..i + c.len_utf8()]);
            start = i + c.len_utf8();
        }
    }
    out.push(&text[start..]);
    out.into_iter().map(str::trim).filter(|s| !s.is_empty())
}

/// What the check decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The function found something the task asks to report: the silence is not believed. The
    /// strings in what it returned (they pick the lines the report is asked from).
    Found(Vec<String>),
    /// The engine saw, without the model, what the task asks to report: percentages that cross
    /// the limit the task states (`threshold.rs`), as written, or a state the task names held
    /// as a value (`state_value.rs`). The silence is not believed; the report is asked from the
    /// lines that hold them.
    Seen(Vec<String>),
    /// It found nothing: the silence stands.
    Nothing,
    /// No verdict (no sandbox or no `python3` here, no results, no function, the function
    /// failed): why, for the run's events.
    Unknown(String),
}

impl Agent {
    /// Checks a silent reply of the last turn against `task` by code, as the module says. The
    /// model call is recorded as a review and counted in `stats`.
    pub async fn code_check(&self, task: &SilenceTask, stats: &mut TurnStats) -> Verdict {
        if let Some(found) = self.threshold_crossed(task).or_else(|| self.state_held(task)) {
            return Verdict::Seen(found);
        }
        let verdict = self.decide(task, stats).await;
        let detail = match &verdict {
            Verdict::Found(_) | Verdict::Seen(_) => {
                "the code check found something the task asks to report".to_string()
            }
            Verdict::Nothing => "the code check found nothing to report".to_string(),
            Verdict::Unknown(why) => format!("the code check could not decide: {why}"),
        };
        self.record(RunEvent::Note { kind: "code_check", detail });
        verdict
    }

    /// The percentages of the results that cross the limit the task states (`threshold.rs`),
    /// or the values of the quantity it names that cross a limit with a unit (`unit_limit.rs`),
    /// when there are any; noted.
    fn threshold_crossed(&self, task: &SilenceTask) -> Option<Vec<String>> {
        let results: Vec<&str> = looked_calls(&self.last_calls).into_iter().map(content).collect();
        let last_only = super::threshold::last_only(&task.task);
        let percent = super::threshold::limit(sentences(&task.task))
            .map(|limit| (super::threshold::crossing(&limit, &results, last_only), limit.words))
            .filter(|(found, _)| !found.is_empty());
        let (found, words, last_only) = match percent {
            Some((found, words)) => (found, words, last_only),
            None => {
                let limit = super::unit_limit::limit(sentences(&task.task))?;
                (super::unit_limit::crossing(&limit, &results), limit.words, false)
            }
        };
        if found.is_empty() {
            return None;
        }
        let detail = format!(
            "the results hold {} where the task says \"{}\"{}; the silence is not believed",
            found.join(", "),
            words,
            if last_only { " (the last line of each result)" } else { "" }
        );
        self.record(RunEvent::Note { kind: "threshold_check", detail });
        Some(found)
    }

    /// What of the results holds, as a value, a state the task names (`state_value.rs`), when
    /// anything does; noted.
    fn state_held(&self, task: &SilenceTask) -> Option<Vec<String>> {
        let found: Vec<String> = looked_calls(&self.last_calls)
            .into_iter()
            .flat_map(|c| super::state_value::found(&task.task, content(c)))
            .collect();
        let first: String = found.first()?.chars().take(80).collect();
        let detail =
            format!("the results hold a state the task names as a value (\"{first}\"); the silence is not believed");
        self.record(RunEvent::Note { kind: "state_check", detail });
        Some(found)
    }

    async fn decide(&self, task: &SilenceTask, stats: &mut TurnStats) -> Verdict {
        let calls: Vec<&CallRecord> = looked_calls(&self.last_calls);
        if calls.is_empty() {
            return Verdict::Unknown("no tool returned anything".into());
        }
        let data: String = calls.iter().map(|c| content(c)).collect::<Vec<_>>().join("\n");
        let tokens = Some(self.opts.max_tokens.map_or(CODE_TOKENS, |m| m.min(CODE_TOKENS)));
        let mut messages = code_request(task, &calls, &data);
        // A function that raised is asked for once more, told why: the 1.5B model's first one
        // for a health endpoint's JSON called `requests.get(output)` (bench/README.md, stop 41).
        let mut attempt = 0;
        let (verdict, skipped) = loop {
            let what = "code check of the silent reply";
            let reply = match self.code_call(what, "findings", messages.clone(), tokens, stats).await {
                Some(reply) => reply,
                None => return Verdict::Unknown("the model call failed or said nothing".into()),
            };
            let Some(code) = python::code_of(&reply, "findings") else {
                return Verdict::Unknown("the reply held no `findings` function".into());
            };
            match run(&code, &data, &self.opts.shell).await {
                Ran::Raised(why) if attempt == 0 => {
                    attempt += 1;
                    let detail = format!("the function failed ({why}); asked for it again");
                    self.record(RunEvent::Note { kind: "code_check_again", detail });
                    messages.push(Message::assistant(reply));
                    messages.push(Message::user(raised_message(&why)));
                }
                Ran::Raised(why) | Ran::Failed(why) => break (Verdict::Unknown(why), 0),
                Ran::Decided(verdict, skipped) => break (verdict, skipped),
            }
        };
        if skipped > 0 {
            let detail = format!(
                "the function failed on the whole output; it ran again without the {skipped} lines it cannot take on their own"
            );
            self.record(RunEvent::Note { kind: "code_check_lines_left_out", detail });
        }
        match verdict {
            Verdict::Found(strings) => match in_data(strings, &data) {
                Verdict::Found(strings) => self.without_none(&task.task, strings, &data),
                other => other,
            },
            other => other,
        }
    }

    /// What the function found without the strings whose every line counts none of what the
    /// task looks for (`zero_count.rs`: `0 failed`); [`Verdict::Nothing`] when no string of
    /// three characters or more is left of some. Noted when any is dropped.
    fn without_none(&self, task: &str, strings: Vec<String>, data: &str) -> Verdict {
        let none = |s: &String| {
            let s = s.trim();
            let lines: Vec<&str> = data.lines().filter(|l| s.chars().count() >= 3 && l.contains(s)).collect();
            !lines.is_empty() && lines.iter().all(|l| super::zero_count::says_none(task, l))
        };
        let dropped = strings.iter().filter(|s| none(s)).count();
        if dropped == 0 {
            return Verdict::Found(strings);
        }
        let long = |s: &&String| s.trim().chars().count() >= 3;
        let kept: Vec<String> = strings.into_iter().filter(|s| !none(s)).collect();
        let detail = format!("{dropped} of the lines the function found count none of what the task looks for");
        self.record(RunEvent::Note { kind: "code_check_zero_counts", detail });
        if kept.iter().any(|s| long(&s)) { Verdict::Found(kept) } else { Verdict::Nothing }
    }

    /// The report after the check [`Verdict::Found`] something: the answer to the task (without
    /// the sentences that name the token) asked from what the tools returned, as the turn asks
    /// for an answer from the evidence, with the check's finding said. The data is only the
    /// lines of the results that hold a string the function returned, where there are such
    /// lines: asked from the whole `services.json`, the 1.5B model named a service that is up
    /// beside the one down; asked from the line the function found, only the one down (three
    /// clock times of three). `None` when the call failed or its answer is empty or not an answer
    /// (a call written as text, template tokens): then the review decides.
    ///
    /// What the check found is said as "(The data above shows only the lines of the results that
    /// the task asks about. Quote each of them.)": told "A check of the data found something
    /// the task asks you to report", the model answered that failed payments were listed in the
    /// log file, beside the FAILED line; replayed on the eight recorded reports,
    /// seven the same or better (the payment's FAILED line, `/backups 95%`), one that
    /// gave the failure's reason without its time (bench/README.md, stop 38). The same goes for
    /// a limit crossed (`by_code` false): with no sentence, the model answered that no host used
    /// more than 90% of its CPU, from the line `web-2  97%`, and told "a check found something"
    /// it named `/backups` without the 95% the task asked for (four forms of that sentence);
    /// with this one, "web-2 is using 97% CPU" and "/backups 95%" (three recorded reports of
    /// three). Where no line holds what was found, the results are shown whole and only the
    /// code check says, in the older sentence, that a check found something.
    ///
    /// With the report, whether it is the answer to the request that named a false comparison
    /// of the first (`false_comparison.rs`): a silence reached that way stands.
    pub async fn report_found(
        &self,
        task: &SilenceTask,
        found: &[String],
        by_code: bool,
        stats: &mut TurnStats,
    ) -> Option<(String, bool)> {
        use crate::config::Language::{En, Zh};
        let lang = self.opts.language;
        let looked = looked_calls(&self.last_calls);
        let calls = found_lines(&looked, found);
        // Whether the data is cut to the lines found, or shown whole (no line held a string found).
        let cut = calls.len() != looked.len() || calls.iter().zip(&looked).any(|(c, l)| c.result != l.result);
        let said = match (lang, cut, by_code) {
            (En, true, _) => {
                "(The data above shows only the lines of the results that the task asks about. Quote each of them.)"
            }
            (Zh, true, _) => "（上面的数据只列出了结果中任务所问的那些行。请逐一引用它们。）",
            (En, false, true) => "A check of the data found something the task asks you to report.",
            (Zh, false, true) => "对数据的检查发现了任务要求报告的内容。",
            (_, false, false) => "",
        };
        let now = (self.clock)().with_timezone(&self.opts.timezone);
        let now = format!("Current time: {} ({})", now.format("%Y-%m-%d %H:%M %:z, %A"), self.opts.timezone.name());
        let messages = super::evidence::messages(
            format!("{}\n\n{said}", task.task.trim()).trim_end(),
            &calls,
            lang,
            &now,
            "",
            None,
            false,
        )?;
        let reply = self
            .side_call(
                "report of what the code check found",
                messages.clone(),
                self.opts.temperature,
                self.opts.max_tokens,
                stats,
            )
            .await?;
        // Like every final reply: a call written as text or template tokens is never delivered.
        let known = |name: &str| self.tools.get(name).is_some();
        let text = match super::hygiene::settle(&super::answer::answer_of(&reply), &known) {
            super::hygiene::Verdict::Answer(text) if !text.trim().is_empty() => text,
            _ => return None,
        };
        // Nor a comparison of two numbers it states falsely (`false_comparison.rs`): the check
        // that found something may have compared the wrong numbers.
        let first = text.clone();
        let text = self.compared_right(&messages, text, Some(&task.token), stats).await;
        let corrected = text != first;
        if !cut || text.contains(task.token.trim()) {
            return Some((text, corrected));
        }
        // Asked to quote the lines found, an answer that holds none of them gets them under it.
        let whole: Vec<&str> = looked.iter().map(|c| c.result.as_str()).collect();
        Some((super::quoted::with_lines(&text, &task.task, &calls, &whole, lang), corrected))
    }
}

/// The calls whose results the check reads: the successful ones, each call once.
fn looked_calls(calls: &[CallRecord]) -> Vec<&CallRecord> {
    let mut seen: Vec<(&str, &str)> = Vec::new();
    let mut out = Vec::new();
    for call in calls.iter().filter(|c| c.status == ToolStatus::Success && !c.result.trim().is_empty()) {
        let key = (call.tool.as_str(), call.arguments.as_str());
        if !seen.contains(&key) {
            seen.push(key);
            out.push(call);
        }
    }
    out
}

/// What a call returned, as the function should parse it: without the range line `file_read`
/// adds and without trailing white space (the model's functions take `lines[-1]` for the last
/// line, which a final newline makes empty).
fn content(call: &CallRecord) -> &str {
    match call.tool.as_str() {
        "file_read" => crate::tools::without_range(&call.result),
        // The body alone: `json.loads` of the whole result failed on its status line, and the
        // 1.5B model's check then kept a silence beside a component marked unhealthy (stop 39).
        "http_request" => crate::tools::http_body(&call.result).trim_end(),
        _ => call.result.trim_end(),
    }
}

/// A finding stands when it names something the results hold: some string the function
/// returned (of three characters or more; shorter ones match too much) occurs in `data`, or
/// shares a word with it ([`words`]: a number such as the `93` of `当前的使用率: 93%`, a name
/// such as `payments`). A function that returns words of its own (`["No findings"]`, as the
/// 1.5B model wrote for a checklist where all was well) says nothing about the data: no
/// verdict, and the review decides. Values without such strings (`True`, `[4]`) stand as found.
fn in_data(strings: Vec<String>, data: &str) -> Verdict {
    let long: Vec<&str> = strings.iter().map(|s| s.trim()).filter(|s| s.chars().count() >= 3).collect();
    let data_words = words(data);
    let held = |s: &&str| data.contains(*s) || words(s).iter().any(|w| data_words.contains(w));
    if long.is_empty() || long.iter().any(held) {
        return Verdict::Found(strings);
    }
    let shown: String = long.first().unwrap_or(&"").chars().take(80).collect();
    Verdict::Unknown(format!("what it found is not in the results (\"{shown}\")"))
}

/// The words of `text` that can tie a finding to the data: runs of letters, digits, `_`, `-`
/// and `.` (trimmed of `.` and `-`), lowercased; numbers of two digits or more (`93.0` counts
/// as `93`), other words of four characters or more, except the ones a function uses to say
/// there is nothing ("no findings", "nothing found", "all good").
fn words(text: &str) -> std::collections::HashSet<String> {
    const NOTHING: &[&str] = &[
        "none",
        "nothing",
        "found",
        "finding",
        "findings",
        "error",
        "errors",
        "issue",
        "issues",
        "problem",
        "problems",
        "report",
        "alert",
        "alerts",
        "good",
        "fine",
        "okay",
        "normal",
        "clear",
        "everything",
        "there",
        "were",
        "with",
        "detected",
        "empty",
        "result",
        "results",
        "true",
        "false",
        "null",
    ];
    text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .map(|w| w.trim_matches(|c| c == '.' || c == '-').to_lowercase())
        .map(|w| match w.parse::<f64>() {
            Ok(f) if f.fract() == 0.0 && f.abs() < 1e15 => (f as i64).to_string(),
            _ => w,
        })
        .filter(|w| {
            let number = w.chars().all(|c| c.is_ascii_digit() || c == '.');
            if number { w.len() >= 2 } else { w.chars().count() >= 4 && !NOTHING.contains(&w.as_str()) }
        })
        .collect()
}

/// The results of `calls` cut to the lines that hold one of `found` (strings of three
/// characters or more; shorter ones match too much), calls without such a line left out; all of
/// them whole when no line holds one. Only lines of the results are kept, so what the function
/// returned never reaches the prompt itself.
fn found_lines(calls: &[&CallRecord], found: &[String]) -> Vec<CallRecord> {
    let found: Vec<&str> = found.iter().map(|s| s.trim()).filter(|s| s.chars().count() >= 3).collect();
    let cut: Vec<CallRecord> = calls
        .iter()
        .filter_map(|c| {
            let lines: Vec<&str> = c.result.lines().filter(|l| found.iter().any(|f| l.contains(f))).collect();
            (!lines.is_empty()).then(|| CallRecord { result: lines.join("\n"), ..(*c).clone() })
        })
        .collect();
    if cut.is_empty() { calls.iter().map(|c| (*c).clone()).collect() } else { cut }
}

/// The request for the function. English whatever the routine's language: it asks for code.
/// The sentences that name the token are left out of the task, so that the function finds what
/// to report rather than looking for the token in the data (which the model did when they were
/// kept: `return "NO_REPLY" not in output`).
fn code_request(task: &SilenceTask, calls: &[&CallRecord], data: &str) -> Vec<Message> {
    let what =
        calls.iter().map(|c| format!("`{} {}`", c.tool, c.arguments)).collect::<Vec<_>>().join(", then the output of ");
    let example: String = data.chars().take(EXAMPLE_CHARS).collect();
    let cut = if example.len() < data.len() { "\n[... cut here; the function gets all of it]" } else { "" };
    vec![
        Message::system("You write Python."),
        Message::user(format!(
            "Task: {}\n\nWrite a Python function `findings(output: str) -> list` that takes the output of {what} \
             (an example is below) and returns the things the task asks to tell about: an empty list when there \
             is nothing to tell. Reply with the code only.\n\nExample output:\n```\n{example}{cut}\n```",
            task.task.trim()
        )),
    ]
}

/// How one run of the model's function ended.
enum Ran {
    /// The harness printed its verdict, and how many lines the function ran without.
    Decided(Verdict, usize),
    /// The function (or the harness around it) raised and exited: the error's last line.
    Raised(String),
    /// It could not run here (no sandbox, no `python3`), or it was killed at a limit (a
    /// function that loops or forks is not asked for again): why.
    Failed(String),
}

/// Runs `code` on `data` with the harness, contained (`python.rs`).
async fn run(code: &str, data: &str, shell: &crate::tools::ShellSettings) -> Ran {
    let harness = format!("{}{}{HARNESS}", python::LIMITS, python::DEFINE);
    match python::run(&harness, code, data, TIMEOUT, shell).await {
        Ok(out) => match verdict_of(&out.output, out.code) {
            // Python exits 1 on an exception; 128 and more is a signal (a limit), none a kill.
            (Verdict::Unknown(why), _) if out.code == Some(1) => Ran::Raised(why),
            (Verdict::Unknown(why), _) => Ran::Failed(why),
            (verdict, skipped) => Ran::Decided(verdict, skipped),
        },
        Err(why) => Ran::Failed(why.to_string()),
    }
}

/// What asks once more for a function that failed. English, as the request is.
fn raised_message(why: &str) -> String {
    format!(
        "Your function failed on the output: {why}\nThe output is given to `findings` as one string, the text shown \
         above: parse that string, with the standard library only (no network, no files). Write the function again."
    )
}

/// The verdict in the harness's last line and the lines it left out, when it exited 0; else
/// the error's last line.
fn verdict_of(output: &str, code: Option<i32>) -> (Verdict, usize) {
    let last = output.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default().trim();
    if code == Some(0) {
        #[derive(serde::Deserialize)]
        struct Line {
            found: bool,
            strings: Vec<String>,
            #[serde(default)]
            skipped: usize,
        }
        if let Ok(line) = serde_json::from_str::<Line>(last) {
            let verdict = if line.found { Verdict::Found(line.strings) } else { Verdict::Nothing };
            return (verdict, line.skipped);
        }
    }
    (Verdict::Unknown(python::failure(last, code).to_string()), 0)
}

#[cfg(test)]
#[path = "code_check_tests.rs"]
mod tests;
