//! The items of a webhook's list that the task asks about: before the answer from a webhook's
//! data (`payload.rs`), the engine finds the longest list of records in the data (a JSON array
//! of two or more objects: alerts, jobs, pods, monitors), has the model write a Python
//! predicate `keep(item)` for the task, runs it on every item inside the OS sandbox
//! (`python.rs`), and asks for the answer from the data with only the kept items, saying how many
//! of how many they are. When the answer then leaves out a kept item, one more request asks for
//! the part about the items left out; when it names none of them (a bare count), for the answer
//! again, naming each. What that request gives is added after the first answer, which stays.
//!
//! Why: asked to pick from a list, the 1.5B model names one of two pods that keep restarting, keeps
//! the resolved alert, lists the bolts well above their reorder level; asked for a predicate, it
//! writes `item["state"] == "down"`, and a list it no longer has to filter it restates. Replayed
//! on 16 webhook tasks at two clock times (bench/README.md, stop 35): 11 of 32 answers right as
//! the answer request alone, 15 of 32 with a yes-or-no question per item, 28 of 32 with the
//! predicate and the count, 32 of 32 with the request for the items left out.
//!
//! The predicate is the model's output, steered by the data it reads, so it is hostile: it runs
//! contained, and all it can do is choose which of the items (already in the prompt) the answer
//! request shows. A predicate that raises on an item does not keep it; one that keeps every item
//! or none, or that cannot run, leaves the data as it came.

use std::ops::Range;
use std::time::Duration;

use serde_json::Value;

use super::events::{RunEvent, TurnStats};
use super::{Agent, payload, python};
use crate::config::Language;
use crate::llm::Message;

/// The fewest items a list must have to be filtered: two the model restates well enough, and a
/// scripted model of a test that answers a two-item webhook gets the one request it expects.
const MIN_ITEMS: usize = 3;
/// The most items, and characters of items, a list may have to be filtered: the predicate
/// request shows them all.
const MAX_ITEMS: usize = 100;
const MAX_CHARS: usize = 6_000;
/// The wall-clock limit of one run of the predicate over all items.
const TIMEOUT: Duration = Duration::from_secs(10);
/// How many tokens the predicate may take.
const CODE_TOKENS: u32 = 300;

/// Runs the model's `keep` on every item and prints one line: a JSON list of booleans (also the
/// harness of `select.rs`).
pub(super) const KEEP: &str = r#"import json, sys
with open(sys.argv[2], encoding="utf-8") as f:
    items = json.load(f)
keep = define(sys.argv[1], "keep.py")["keep"]
def kept(item):
    try:
        return bool(keep(item))
    except Exception:
        return False
flags = [kept(i) for i in items]
# A test written in one case over lines written in another (`"blocked" in line` where the lines
# say `Blocked:`) keeps no line: it runs once more on the lines in lower case, then in upper
# case, and the first run that keeps some but not all of them counts.
if not any(flags) and items and all(isinstance(i, str) for i in items):
    for case in (str.lower, str.upper):
        again = [kept(case(i)) for i in items]
        if any(again) and not all(again):
            flags = again
            break
sys.stdout.write("\n" + json.dumps(flags) + "\n")
"#;

/// A list of records in a JSON text: the key it is the value of, where its brackets are, and
/// where each item is (byte ranges of the text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct List {
    pub key: Option<String>,
    pub open: usize,
    pub close: usize,
    pub items: Vec<Range<usize>>,
}

/// The task with only the kept items of its list, what to tell the model about them, and the
/// kept items themselves.
#[derive(Debug, Clone)]
pub(super) struct Filtered {
    pub task: String,
    pub note: String,
    pub kept: Kept,
}

/// The items an answer is asked about (for [`left_out`]), with their text as the data wrote
/// it, on one line: a webhook's kept items, or the records a "which" task selected
/// (`select.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Kept {
    pub values: Vec<Value>,
    pub text: Vec<String>,
}

impl Agent {
    /// The task of a webhook run with its list filtered as the module says, or `None` when it
    /// has no list of records, or the filter kept every item or none or could not run (the
    /// reason is recorded).
    pub(super) async fn filter_items(&self, task: &str, stats: &mut TurnStats) -> Option<Filtered> {
        if !self.opts.assists.allows("items_filter") {
            return None;
        }
        let (fence, list) = longest_list(task)?;
        let text = &task[fence.clone()];
        let items: Vec<&str> = list.items.iter().map(|r| &text[r.clone()]).collect();
        let own = payload::own_words(task).unwrap_or_default();
        let tokens = Some(self.opts.max_tokens.map_or(CODE_TOKENS, |m| m.min(CODE_TOKENS)));
        let mut messages = code_request(own.trim(), list.key.as_deref(), &items);
        let what = list.key.as_deref().map_or("the list".to_string(), |k| format!("`{k}`"));
        let values: Vec<Value> = items.iter().map(|i| serde_json::from_str(i).unwrap_or(Value::Null)).collect();
        // The flags of a first filter that left out a condition the task states (`select/condition.rs`).
        let mut before: Option<Vec<bool>> = None;
        let mut attempt = 0;
        let flags = loop {
            let reply = self.code_call("filter of the webhook's items", "keep", messages.clone(), tokens, stats).await;
            let code = reply.as_deref().and_then(|r| python::code_of(r, "keep"));
            if let Some(named) = code.as_deref().and_then(|c| names_an_item(c, &values)) {
                let named: String = named.chars().take(80).collect();
                self.note(
                    "items_filter",
                    &format!("the items of {what} were not filtered: the filter names an item (\"{named}\")"),
                );
                return None;
            }
            let flags = match code {
                None => Err(python::RunError::NoFunction("keep")),
                Some(code) => {
                    let data = format!("[{}]", items.join(","));
                    let harness = format!("{}{}{KEEP}", python::LIMITS, python::DEFINE);
                    python::run(&harness, &code, &data, TIMEOUT, &self.opts.shell)
                        .await
                        .and_then(|out| flags_of(&out.output, out.code, items.len()))
                }
            };
            let mut flags = match flags {
                Ok(flags) => flags,
                Err(why) => {
                    self.note("items_filter", &format!("the items of {what} were not filtered: {why}"));
                    return None;
                }
            };
            // Asked again for a condition it left out, the model writes that condition alone:
            // both must hold, as in the selection.
            if let Some(before) = before.take() {
                flags.iter_mut().zip(before).for_each(|(f, b)| *f &= b);
            }
            // A filter that keeps all or none leaves the data as sent (below): nothing is left out.
            let kept = flags.iter().filter(|f| **f).count();
            if kept == 0 || kept == flags.len() {
                break flags;
            }
            let Some(missed) = super::select::condition::missed(own.trim(), &values, &flags) else { break flags };
            let detail = format!(
                "the filter kept an item of {what} whose `{}` is `{}`, where the task names `{}`",
                missed.field, missed.other, missed.named
            );
            if attempt > 0 {
                self.note("items_filter", &format!("{detail} twice; shown as sent"));
                return None;
            }
            attempt += 1;
            self.note("items_filter", &format!("{detail}; asked again"));
            before = Some(flags);
            messages.push(Message::assistant(reply.unwrap_or_default()));
            messages.push(Message::user(super::select::condition::message(
                self.opts.language,
                &missed,
                super::select::condition::Function::Keep,
            )));
        };
        let kept = flags.iter().filter(|f| **f).count();
        if kept == 0 || kept == flags.len() {
            self.note(
                "items_filter",
                &format!("the filter kept {kept} of the {} items of {what}; shown as sent", flags.len()),
            );
            return None;
        }
        self.note("items_filter", &format!("the filter kept {kept} of the {} items of {what}", flags.len()));
        let (task, kept_items) = keep_only(task, &fence, &list, &flags);
        Some(Filtered {
            task,
            note: note(self.opts.language, list.key.as_deref(), kept, flags.len()),
            kept: Kept {
                values: kept_items.iter().map(|i| serde_json::from_str(i).unwrap_or(Value::Null)).collect(),
                text: kept_items.iter().map(|i| compact(i)).collect(),
            },
        })
    }

    /// The answer `answer` to the payload request `messages` (whose reply was `reply`), with the
    /// part about the kept items it left out added, asked once; `answer` as it is when it left
    /// none out or the request gave nothing usable.
    pub(super) async fn cover_items(
        &self,
        kept: &Kept,
        messages: &[Message],
        reply: &str,
        answer: String,
        stats: &mut TurnStats,
    ) -> String {
        if !self.opts.assists.allows("items_left_out") {
            return answer;
        }
        let missing = left_out(&kept.values, &answer);
        if missing.is_empty() {
            return answer;
        }
        // As the sender wrote them (with its keys sorted, the model copied the lines as its
        // answer), and fenced: they are the sender's words (SPEC §8).
        let lines = missing.iter().map(|i| kept.text[*i].as_str()).collect::<Vec<_>>().join("\n");
        let lines = crate::routine::template::fence(&lines);
        let (of, all) = (kept.values.len(), missing.len() == kept.values.len());
        let ask = match (self.opts.language, all) {
            (Language::En, true) => format!(
                "Your answer names none of the {of} items the task asks about:\n{lines}\nAnswer the task again, naming \
                 each of them, after a line that says ANSWER:"
            ),
            (Language::En, false) => format!(
                "Your answer leaves out {} of the {of} items the task asks about:\n{lines}\nWrite the part of the \
                 answer about them only, in the same form, after a line that says ANSWER:",
                missing.len()
            ),
            (Language::Zh, true) => format!(
                "你的回答没有提到任务所问的 {of} 项中的任何一项：\n{lines}\n重新回答任务，逐一写出它们，写在“答案：”那一行之后。"
            ),
            (Language::Zh, false) => format!(
                "你的回答漏掉了任务所问的 {of} 项中的 {} 项：\n{lines}\n只写关于它们的那部分回答，形式相同，写在“答案：”那一行之后。",
                missing.len()
            ),
        };
        let mut more = messages.to_vec();
        more.push(Message::assistant(reply.to_string()));
        more.push(Message::user(ask));
        let Some(part) = self
            .side_call("the items the answer left out", more, self.opts.temperature, self.opts.max_tokens, stats)
            .await
        else {
            return answer;
        };
        let known = |name: &str| self.tools.get(name).is_some();
        match super::hygiene::settle(&super::answer::answer_of(&part), &known) {
            super::hygiene::Verdict::Answer(text) if !text.trim().is_empty() => {
                self.record(RunEvent::Note {
                    kind: "items_left_out",
                    detail: format!(
                        "the answer left out {} of the {} kept items; asked for them",
                        missing.len(),
                        kept.values.len()
                    ),
                });
                format!("{}\n{}", answer.trim_end(), text.trim())
            }
            _ => answer,
        }
    }
}

/// `task` with only the items of `list` (in the fence `fence`) whose flag is set, joined as the
/// first two were; and those items' text.
fn keep_only<'a>(task: &'a str, fence: &Range<usize>, list: &List, flags: &[bool]) -> (String, Vec<&'a str>) {
    let text = &task[fence.clone()];
    let kept: Vec<&str> = list.items.iter().zip(flags).filter(|(_, f)| **f).map(|(r, _)| &text[r.clone()]).collect();
    let sep = list.items.get(1).map_or(",", |second| &text[list.items[0].end..second.start]);
    let task = format!(
        "{}{}{}{}{}",
        &task[..fence.start],
        &text[..=list.open],
        kept.join(sep),
        &text[list.close..],
        &task[fence.end..]
    );
    (task, kept)
}

/// The fence (byte range of `task`) and its longest list of records within the
/// limits, over every fence whose data is JSON.
fn longest_list(task: &str) -> Option<(Range<usize>, List)> {
    payload::fenced(task)
        .into_iter()
        .filter(|r| serde_json::from_str::<Value>(&task[r.clone()]).is_ok())
        .flat_map(|r| lists(&task[r.clone()]).into_iter().map(move |l| (r.clone(), l)))
        .filter(|(_, l)| {
            (MIN_ITEMS..=MAX_ITEMS).contains(&l.items.len())
                && l.items.iter().map(|i| i.len()).sum::<usize>() <= MAX_CHARS
        })
        .max_by_key(|(r, l)| (l.items.len(), std::cmp::Reverse(r.start + l.open)))
}

/// The request for the predicate. English whatever the routine's language: it asks for code.
fn code_request(own: &str, key: Option<&str>, items: &[&str]) -> Vec<Message> {
    let of = key.map_or("The items of the list".to_string(), |k| format!("The items of `{k}`"));
    // The items are the sender's words, fenced like every outside text in a prompt (SPEC §8).
    let items: Vec<String> = items.iter().map(|i| compact(i)).collect();
    let items = crate::routine::template::fence(&items.join("\n"));
    vec![
        Message::system("You write Python. Reply with one code block only."),
        Message::user(format!(
            "Task: {own}\n\n{of}:\n{items}\n\nWrite a Python function `keep(item: dict) -> bool` that returns True \
             for the items the task asks about and False for the others. Test the value of a field (a status, a \
             number); do not list items by name."
        )),
    ]
}

/// What the answer request says about the kept items.
fn note(lang: Language, key: Option<&str>, kept: usize, of: usize) -> String {
    match (lang, key) {
        (Language::En, Some(k)) => format!(
            "({kept} of the {of} items of `{k}` are the ones the task asks about; the data above shows only those {kept}.)"
        ),
        (Language::En, None) => format!(
            "({kept} of the {of} items of the list are the ones the task asks about; the data above shows only those {kept}.)"
        ),
        (Language::Zh, Some(k)) => {
            format!("（`{k}` 的 {of} 项中有 {kept} 项是任务所问的；上面的数据只列出了这 {kept} 项。）")
        }
        (Language::Zh, None) => {
            format!("（列表的 {of} 项中有 {kept} 项是任务所问的；上面的数据只列出了这 {kept} 项。）")
        }
    }
}

/// The flags in the harness's last line after a clean exit: one per item, or why not.
fn flags_of(output: &str, code: Option<i32>, items: usize) -> Result<Vec<bool>, python::RunError> {
    let last = output.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default().trim();
    if code == Some(0) {
        if let Ok(flags) = serde_json::from_str::<Vec<bool>>(last) {
            if flags.len() == items {
                return Ok(flags);
            }
        }
    }
    Err(python::failure(last, code))
}

/// The kept items (indexes) the answer names none of: an item is named when the answer holds
/// one of its own values (strings of three characters or more, numbers of three digits or
/// more, at any depth) that no other kept item has. An item without such a value cannot be told
/// apart and counts as named.
fn left_out(kept: &[Value], answer: &str) -> Vec<usize> {
    let answer = answer.to_lowercase();
    let values = leaf_values(kept);
    (0..kept.len())
        .filter(|&i| {
            let own: Vec<&String> = values[i]
                .iter()
                .filter(|v| values.iter().enumerate().all(|(j, other)| j == i || !other.contains(v)))
                .collect();
            !own.is_empty() && !own.iter().any(|v| answer.contains(v.as_str()))
        })
        .collect()
}

/// A text of one item that `code` (a `keep` predicate) compares with: a string literal of the
/// code that is a whole value of exactly one of `items` and holds a space (a commit's message, a
/// person's name; not a state such as `down` or `CrashLoopBackOff`). Such a predicate picks
/// items by what they are called rather than by a field's value, as the prompt asks: for "how
/// many commits", the 1.5B model wrote `item.get('message') == "Raise the version to 3.1.0" or ...`
/// for two of three, and the answer said 2 (bench/README.md, stop 38). `None` when it names
/// none.
pub(super) fn names_an_item(code: &str, items: &[Value]) -> Option<String> {
    let values = leaf_values(items);
    python::literals(code).into_iter().find(|literal| {
        let lower = literal.trim().to_lowercase();
        lower.contains(char::is_whitespace) && values.iter().filter(|v| v.contains(&lower)).count() == 1
    })
}

/// The values that can name each of `items` ([`leaves`]).
fn leaf_values(items: &[Value]) -> Vec<Vec<String>> {
    items
        .iter()
        .map(|item| {
            let mut out = Vec::new();
            match item {
                // A line of a text is named by its words (`Ana` for `Ana: blocked on staging`);
                // an answer seldom quotes a whole line.
                Value::String(line) => out.extend(
                    line.split(|c: char| !c.is_alphanumeric())
                        .filter(|w| w.chars().count() >= 3)
                        .map(str::to_lowercase),
                ),
                _ => leaves(item, &mut out, 0),
            }
            out
        })
        .collect()
}

/// The scalar values of `v` that can name it, lowercased.
fn leaves(v: &Value, out: &mut Vec<String>, depth: usize) {
    if depth > 20 {
        return;
    }
    match v {
        Value::Object(map) => map.values().for_each(|x| leaves(x, out, depth + 1)),
        Value::Array(items) => items.iter().for_each(|x| leaves(x, out, depth + 1)),
        Value::String(s) if s.trim().chars().count() >= 3 => out.push(s.trim().to_lowercase()),
        Value::Number(n) if n.to_string().chars().filter(char::is_ascii_digit).count() >= 3 => out.push(n.to_string()),
        _ => {}
    }
}

/// `text` (JSON) without the white space outside its strings: an item on one line.
pub(super) fn compact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !c.is_whitespace() {
            out.push(c);
        }
    }
    out
}

/// The lists of records (arrays of two or more objects) in `text`, which must be valid JSON.
pub(super) fn lists(text: &str) -> Vec<List> {
    let mut scan = Scan { b: text.as_bytes(), i: 0, out: Vec::new() };
    scan.value(None, 0);
    scan.out
}

/// A scanner over a JSON text already known to be valid, recording [`List`]s.
struct Scan<'a> {
    b: &'a [u8],
    i: usize,
    out: Vec<List>,
}

impl Scan<'_> {
    fn peek(&self) -> u8 {
        self.b.get(self.i).copied().unwrap_or(0)
    }

    fn ws(&mut self) {
        while matches!(self.peek(), b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    /// A string starting at the quote; its decoded text.
    fn string(&mut self) -> String {
        let start = self.i;
        self.i += 1;
        while self.i < self.b.len() {
            match self.b[self.i] {
                b'\\' => self.i += 2,
                b'"' => {
                    self.i += 1;
                    break;
                }
                _ => self.i += 1,
            }
        }
        let raw = &self.b[start..self.i.min(self.b.len())];
        std::str::from_utf8(raw).ok().and_then(|s| serde_json::from_str(s).ok()).unwrap_or_default()
    }

    fn value(&mut self, key: Option<String>, depth: usize) {
        self.ws();
        if depth > 128 {
            self.i = self.b.len();
            return;
        }
        match self.peek() {
            b'{' => {
                self.i += 1;
                loop {
                    self.ws();
                    match self.peek() {
                        b'}' => {
                            self.i += 1;
                            break;
                        }
                        b'"' => {
                            let k = self.string();
                            self.ws();
                            if self.peek() == b':' {
                                self.i += 1;
                            }
                            self.value(Some(k), depth + 1);
                            self.ws();
                            if self.peek() == b',' {
                                self.i += 1;
                            }
                        }
                        _ => {
                            self.i = self.b.len();
                            break;
                        }
                    }
                }
            }
            b'[' => {
                let open = self.i;
                self.i += 1;
                let mut items = Vec::new();
                let mut records = true;
                loop {
                    self.ws();
                    match self.peek() {
                        b']' => {
                            self.i += 1;
                            break;
                        }
                        0 => break,
                        c => {
                            records &= c == b'{';
                            let start = self.i;
                            self.value(None, depth + 1);
                            if self.i == start {
                                // Not JSON after all: stop rather than spin.
                                self.i = self.b.len();
                                break;
                            }
                            items.push(start..self.i);
                            self.ws();
                            if self.peek() == b',' {
                                self.i += 1;
                            }
                        }
                    }
                }
                if records && items.len() >= 2 {
                    self.out.push(List { key, open, close: self.i - 1, items });
                }
            }
            b'"' => {
                self.string();
            }
            _ => {
                while !matches!(self.peek(), b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r' | 0) {
                    self.i += 1;
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "items_tests.rs"]
mod tests;
