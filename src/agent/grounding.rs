//! The first call of a grounded turn (SPEC §4 `agent.first_call`, §8 Grounding): with
//! `first_call: tool` the model's first reply must call a tool, so that what the routine
//! delivers rests on what a tool returned rather than on a guess.
//!
//! Where the provider takes `tool_choice: "required"`, it enforces the rule. Where it cannot
//! (`tool_calls: json`, or a server that refused the field), the task carries an instruction,
//! and a first reply that calls no tool is asked once more.

use super::events::{CallRecord, ToolStatus};
use crate::config::routine_file::FirstCall;
use crate::config::{Language, ToolCallMode};
use crate::llm::{ChatRequest, Message, Role};

/// How the first model call of one turn is made to call a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FirstCallRule {
    /// No rule: the model decides (chat, `first_call: auto`, an agent without tools).
    Free,
    /// `tool_choice: "required"`: the provider enforces it.
    Required,
    /// An instruction with the task, and one more request when the first reply calls no tool.
    Instructed {
        /// The one more request was made.
        reasked: bool,
    },
}

impl FirstCallRule {
    /// The rule of a turn of an agent set to `first_call`, with or without tools.
    pub(super) fn for_turn(first_call: FirstCall, has_tools: bool, mode: ToolCallMode, accepts_choice: bool) -> Self {
        match (first_call, has_tools, mode) {
            (FirstCall::Auto, _, _) | (_, false, _) => FirstCallRule::Free,
            (FirstCall::Tool, true, ToolCallMode::Native) if accepts_choice => FirstCallRule::Required,
            (FirstCall::Tool, true, _) => FirstCallRule::Instructed { reasked: false },
        }
    }

    /// Shapes the first request of the turn: `tool_choice`, or the instruction. A request
    /// without tools (they were withheld) is left alone.
    pub(super) fn shape(self, request: &mut ChatRequest, mode: ToolCallMode, lang: Language) {
        let offers_tools = !request.tools.is_empty() || mode == ToolCallMode::Json;
        match self {
            FirstCallRule::Required if offers_tools => request.require_tool = true,
            FirstCallRule::Instructed { .. } if offers_tools => append_user(&mut request.messages, instruction(lang)),
            _ => {}
        }
    }

    /// The rule after the provider refused `tool_choice`: the same request goes again with the
    /// instruction instead.
    pub(super) fn refused(request: &mut ChatRequest, lang: Language) -> Self {
        request.require_tool = false;
        append_user(&mut request.messages, instruction(lang));
        FirstCallRule::Instructed { reasked: false }
    }

    /// Whether a first reply that called no tool is asked again (once); the rule remembers it.
    pub(super) fn reask(&mut self) -> bool {
        match self {
            FirstCallRule::Instructed { reasked } if !*reasked => {
                *reasked = true;
                true
            }
            _ => false,
        }
    }
}

/// What the first request of an instructed turn adds to the task.
pub(super) fn instruction(lang: Language) -> &'static str {
    match lang {
        Language::En => {
            "Start by calling a tool to get the facts this task needs; do not answer before you have a tool result."
        }
        Language::Zh => "请先调用工具获取本任务所需的事实；在拿到工具结果之前不要作答。",
    }
}

/// What asks again when the first reply of an instructed turn called no tool.
pub(super) fn reask_message(lang: Language, mode: ToolCallMode) -> &'static str {
    match (lang, mode) {
        (Language::En, ToolCallMode::Json) => {
            "Do not answer from memory or by guessing. Call a tool now: reply with only the JSON of the call."
        }
        (Language::En, ToolCallMode::Native) => {
            "Do not answer from memory or by guessing. Call a tool now to get the facts."
        }
        (Language::Zh, ToolCallMode::Json) => "不要凭记忆或猜测作答。现在调用工具：只回复该调用的 JSON。",
        (Language::Zh, ToolCallMode::Native) => "不要凭记忆或猜测作答。现在调用工具获取事实。",
    }
}

/// The most different failed calls a turn sends back.
const MAX_FAILURES_SENT: usize = 3;

/// What a turn has sent back once instead of an answer, each kind once per turn.
#[derive(Debug, Default)]
pub(super) struct SentBack {
    /// A failed look (after an answer, or repeated with nothing in hand).
    pub(super) failure: bool,
    /// The failed calls sent back (tool and arguments), at most [`MAX_FAILURES_SENT`] different
    /// ones per turn: a refused pipe's one command can fail on its path in turn, and that one
    /// match no line (errors-after, bench/README.md, stop 42).
    pub(super) failed: Vec<String>,
    /// A file read only in part, after a silent answer.
    pub(super) part: bool,
    /// A count over a `git log` whose limit cut its output (`capped.rs`).
    pub(super) capped: bool,
    /// A `git log` not cut to the time window the task names (`window.rs`).
    pub(super) window: bool,
    /// A search for a number that also finds it inside longer ones (`whole_word.rs`).
    pub(super) whole_word: bool,
    /// A `grep` that only counted where the task needs the lines (`count_only.rs`).
    pub(super) count_only: bool,
    /// The routine may write or edit files (`unchanged.rs` applies).
    pub(super) writes: bool,
    /// An answer to a task that asks for a change, after no write or edit succeeded.
    pub(super) unchanged: bool,
    /// The turn offers `file_read`: a search that matched no line is followed by reading the
    /// file with it; without it, with the search's command printing every line.
    pub(super) file_read: bool,
    /// The last failed call with the task's file in place of a path that does not exist
    /// (`named::repath`), set by the turn before it asks for a send-back: its fix when the
    /// failure names none.
    pub(super) repath: Option<String>,
}

impl SentBack {
    /// Whether the last of `calls` is a failed call not sent back yet, while fewer than
    /// [`MAX_FAILURES_SENT`] have been this turn.
    fn fresh_failure(&self, calls: &[CallRecord]) -> bool {
        self.failed.len() < MAX_FAILURES_SENT && !self.failed.contains(&failed_key(calls))
    }

    /// Whether the last of `calls` failed in a way that goes back ([`last_failure`]) and was
    /// not sent back yet ([`SentBack::fresh_failure`]).
    pub(super) fn failure_pending(&self, calls: &[CallRecord]) -> bool {
        last_failure(calls, false).is_some() && self.fresh_failure(calls)
    }

    /// The last failed call ([`SentBack::failure_pending`]) as what a reply that was no answer
    /// gets back: the note's kind and text, and the message; marks it sent.
    pub(super) fn failure_back(
        &mut self,
        task: &str,
        calls: &[CallRecord],
        lang: Language,
    ) -> Option<(&'static str, &'static str, String)> {
        let mut failure = last_failure(calls, false).filter(|_| self.fresh_failure(calls))?;
        failure.fix = failure.fix.or_else(|| self.repath.take()).map(|f| super::count_only::fix_for(task, f));
        self.failure = true;
        self.failed.push(failed_key(calls));
        if self.file_read {
            failure.print_all = failure.print_all.as_deref().and_then(read_instead);
        }
        Some(("failed_check_reask", "sent the failure back", failure_message(lang, &failure)))
    }

    /// Whether an answer of a routine turn (`silent`: the silent token) goes back to the model
    /// once, with the tools, because it may rest on a look that did not show the task's facts:
    /// after a failed look, when the failure says which path was meant or that the command was
    /// called wrong, or the answer is the silent token ([`last_failure`]); and any answer after
    /// a file was read only in part ("all is well" is not known from part of a file, nor is the
    /// port of a config file whose first line the model read: it answered 8080 for the 8420 of
    /// line 6, [`part_read`]). The note's kind and text, and the message to send; marks it
    /// sent.
    pub(super) fn back(
        &mut self,
        task: &str,
        calls: &[CallRecord],
        silent: bool,
        lang: Language,
    ) -> Option<(&'static str, &'static str, String)> {
        if let Some(mut failure) = last_failure(calls, silent).filter(|_| self.fresh_failure(calls)) {
            failure.fix = failure.fix.or_else(|| self.repath.take()).map(|f| super::count_only::fix_for(task, f));
            self.failure = true;
            self.failed.push(failed_key(calls));
            if self.file_read {
                failure.print_all = failure.print_all.as_deref().and_then(read_instead);
            }
            return Some((
                "failed_check_reask",
                "the reply came after a failed tool call; sent the failure back",
                failure_message(lang, &failure),
            ));
        }
        if let Some(capped) = (!self.capped).then(|| super::capped::capped(task, calls)).flatten() {
            self.capped = true;
            return Some((
                "capped_count_reask",
                "the count came from a command whose limit cut its output; sent the command without it",
                super::capped::message(lang, &capped),
            ));
        }
        if let Some(uncut) = (!self.window).then(|| super::window::uncut(task, calls)).flatten() {
            self.window = true;
            return Some((
                "window_reask",
                "the answer came from a git log not cut to the time the task names; sent the command cut to it",
                super::window::message(lang, &uncut),
            ));
        }
        if let Some(counted) = (!self.count_only).then(|| super::count_only::count_only(task, calls)).flatten() {
            self.count_only = true;
            return Some((
                "count_only_reask",
                "the answer came from a search that only counted, and the task needs the lines; sent the search printing them",
                super::count_only::message(lang, &counted),
            ));
        }
        if let Some(partial) = (!self.whole_word).then(|| super::whole_word::partial(calls)).flatten() {
            self.whole_word = true;
            return Some((
                "whole_word_reask",
                "the answer came from a search for a number that also finds it inside longer ones; sent the search for whole words",
                super::whole_word::message(lang, &partial),
            ));
        }
        if self.part {
            return None;
        }
        let part = part_read(calls).filter(|part| !part.asked_for(task))?;
        self.part = true;
        Some((
            "part_read_reask",
            "the reply came after a file was read only in part; asked for the rest",
            part_read_message(lang, &part),
        ))
    }
}

/// The failure of the turn's last tool call (repeats aside), to send back before an answer is
/// taken: when it failed in a way a better call may fix (it failed, erred, had bad arguments or
/// named no tool; a refusal is final) and either the answer is `silent`, or the failure names
/// the path that was meant, or a command said it was called wrong (an option it does not know:
/// the call, not the world, was at fault, and the model tends to answer with advice on how to
/// call it), or a search matched no line (the model searched for a word of the task, `timeout`
/// or `open`, where the file says `timed out` or `- [ ]`, and answered that the search failed).
/// The failure as the model read it, and the exact call its hint names, if any.
///
/// Also whenever no call of the turn succeeded: such an answer rests on nothing the tools
/// returned. The 1.5B model, its `git log -1 --pretty=format:%an %s` failed, answered with how
/// the command should be written and the engine delivered that as the author of the last commit
/// (bench/README.md, stop 38). It goes back once per turn ([`SentBack`]); an answer after the
/// second failure stands, as the decision principles ask ("report exactly what failed").
///
/// A refusal goes back too when the engine's refusal names the one command that does the job
/// (a pipe into `wc`, [`fix`]): the policy still decides that call, and the model that answered
/// "I will try again." after `grep -n 'open' TODO.md | wc -l` was refused delivered that as
/// the routine's output (bench/README.md, stop 37).
pub(super) fn last_failure(calls: &[CallRecord], silent: bool) -> Option<Failure> {
    let last = calls.iter().rev().find(|c| c.status != ToolStatus::Duplicate)?;
    let refused_with_fix = last.status == ToolStatus::Refused && fix(last).is_some();
    if !refused_with_fix
        && !matches!(
            last.status,
            ToolStatus::Failed | ToolStatus::Error | ToolStatus::InvalidArgs | ToolStatus::UnknownTool
        )
    {
        return None;
    }
    let misused = last.tool == "shell" && misused(&last.result);
    let looked = calls.iter().any(|c| c.status == ToolStatus::Success);
    (silent
        || !looked
        || misused
        || fix(last).is_some()
        || no_match(last)
        || crate::tools::names_a_near_path(&last.result))
    .then(|| Failure::of(last))
}

/// A file the turn read only in part: its path, the first and last line shown, and its lines.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct PartRead {
    path: String,
    first: usize,
    last: usize,
    lines: usize,
}

impl PartRead {
    /// Whether the part is the one `task` asks about: the first lines of a task that says
    /// "first", "head", "top", "beginning" (开头, 第一, 前几; not 前 alone, which is in 当前,
    /// "current"), or the last lines of one that says
    /// "last", "latest", "tail", "end", "bottom" (最后, 最新, 末尾). "And its first line?" read
    /// with `limit: 1` is answered.
    fn asked_for(&self, task: &str) -> bool {
        let lower = task.to_lowercase();
        let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).collect();
        let says = |english: &[&str], chinese: &[&str]| {
            english.iter().any(|w| words.contains(w)) || chinese.iter().any(|w| lower.contains(w))
        };
        (self.first == 1 && says(&["first", "head", "top", "beginning"], &["开头", "第一", "前几", "头几"]))
            || (self.last == self.lines
                && says(&["last", "latest", "tail", "end", "bottom"], &["最后", "最新", "末尾"]))
    }
}

/// The first file that the turn's successful `file_read` calls showed only in part (their
/// results end with `(lines A-B of N)` short of the whole file) and no call showed whole.
/// Asked before an answer is taken: "all is well" is not known from part of a file (the 1.5B
/// model read the first line of a three-line log with `limit: 1` where the task asked about the
/// last, and answered all is well), nor a value of the lines it did not read.
pub(super) fn part_read(calls: &[CallRecord]) -> Option<PartRead> {
    let reads = calls.iter().filter(|c| c.tool == "file_read" && c.status == ToolStatus::Success);
    // A read's range: first and last line shown, and the file's lines (`None`: the whole file).
    type Range = Option<(usize, usize, usize)>;
    let shown = |c: &CallRecord| -> Option<(String, Range)> {
        let args: serde_json::Value = serde_json::from_str(&c.arguments).ok()?;
        let path = args.get("path")?.as_str()?.to_string();
        Some((path, crate::tools::read_range(&c.result)))
    };
    let seen: Vec<(String, Range)> = reads.filter_map(shown).collect();
    seen.iter().find_map(|(path, range)| {
        let &(first, last, lines) = range.as_ref()?;
        let whole = |r: &Range| r.is_none_or(|(a, b, n)| a <= 1 && b >= n);
        let part = (first > 1 || last < lines) && !seen.iter().any(|(p, r)| p == path && whole(r));
        part.then(|| PartRead { path: path.clone(), first, last, lines })
    })
}

/// What asks for the rest of a file read in part before a silent answer is taken.
pub(super) fn part_read_message(lang: Language, part: &PartRead) -> String {
    let PartRead { path, first, last, lines } = part;
    match lang {
        Language::En => format!(
            "You read only lines {first}-{last} of the {lines} lines of `{path}`. Read the lines the task asks about, then answer."
        ),
        Language::Zh => {
            format!("你只读了 `{path}` 共 {lines} 行中的第 {first}-{last} 行。请读取任务所问的那些行，然后作答。")
        }
    }
}

/// Whether `call` was a search that matched no line: the engine's own first line of the result
/// says so (`[failed] exit code 1; no line matched ...`, `tools/exit_status.rs`); what the
/// command printed after it is not read.
fn no_match(call: &CallRecord) -> bool {
    call.tool == "shell" && call.result.lines().next().is_some_and(|l| l.contains("; no line matched"))
}

/// Whether a command's error output says it was called wrong, as common tools word it.
fn misused(output: &str) -> bool {
    const SAYS: [&str; 7] = [
        "unrecognized argument",
        "unrecognized option",
        "unknown option",
        "invalid option",
        "illegal option",
        "usage: ",
        "is not a git command",
    ];
    let lower = output.to_lowercase();
    SAYS.iter().any(|s| lower.contains(s))
}

/// The failure to send back when a reply only repeats a call that did not succeed, either
/// before any call of the turn succeeded or when that call changes something (`acts`: the
/// write the task asked for, with arguments that did not work). The model is stuck on the
/// failure (a pipe refused with the command that does the job named, a wrong argument), and
/// whatever it answered next would rest on nothing or skip the write. A refusal counts only
/// while nothing succeeded: the model is told again why, and the policy still decides.
pub(super) fn repeated_failure(calls: &[CallRecord], acts: &dyn Fn(&str) -> bool) -> Option<Failure> {
    let last = calls.iter().rev().find(|c| c.status != ToolStatus::Duplicate)?;
    let looked = calls.iter().any(|c| c.status == ToolStatus::Success);
    let failed_write = last.status != ToolStatus::Refused && acts(&last.tool);
    (last.status != ToolStatus::Success && (!looked || failed_write)).then(|| Failure::of(last))
}

/// A failed call to send back.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Failure {
    /// The call, then its result's first lines.
    lines: String,
    /// The call to make instead, written as the model writes one (`shell {"command":...}`),
    /// when the result names exactly what would work: the one path that exists, the one
    /// command that counts.
    fix: Option<String>,
    /// It was a search that matched no line ([`no_match`]).
    no_match: bool,
    /// For such a search where `file_read` is not offered: the call that prints every line of
    /// the files it searched ([`print_all`]).
    print_all: Option<String>,
}

impl Failure {
    fn of(call: &CallRecord) -> Failure {
        let lines: Vec<&str> = call.result.lines().filter(|l| !l.trim().is_empty()).take(4).collect();
        let text: String = lines.join("\n").chars().take(600).collect();
        let no_match = no_match(call);
        Failure {
            lines: format!("{} {}\n{text}", call.tool, call.arguments),
            fix: fix(call),
            no_match,
            print_all: no_match.then(|| print_all(call)).flatten(),
        }
    }
}

/// The `grep` call that prints every line of the files a `grep` searched (`grep -n '' FILE`),
/// the way to read them with the command the routine allows when `file_read` is not offered.
/// Told "Read the file itself" without it, the 1.5B model that searched `warning` in a log of
/// `WARN` lines made the same search again and answered there were none (bench/README.md, stop
/// 38); given this call, it made it. `None` for other commands, a recursive search, or no file
/// named.
fn print_all(call: &CallRecord) -> Option<String> {
    let args: serde_json::Value = serde_json::from_str(&call.arguments).ok()?;
    let parsed = crate::policy::command::parse(args.get("command")?.as_str()?).ok()?;
    if !matches!(parsed.base.as_str(), "grep" | "egrep" | "fgrep") || !parsed.inner.is_empty() {
        return None;
    }
    // Options that take the next word as their value, and those that give the pattern.
    const VALUE: &[&str] = &["-e", "-f", "-m", "-A", "-B", "-C", "-d", "-D", "--regexp", "--file", "--max-count"];
    let mut positional = Vec::new();
    let mut pattern_given = false;
    let mut words = parsed.argv[1..].iter();
    while let Some(word) = words.next() {
        let w = word.as_str();
        if w.starts_with('-') && w.len() > 1 {
            // A recursive search (`-r`, `-R`, alone or in a cluster such as `-rn`) names folders.
            let cluster = !w.starts_with("--") && w[1..].contains(['r', 'R']);
            if cluster || ["--recursive", "--dereference-recursive", "-d", "--directories"].contains(&w) {
                return None;
            }
            pattern_given |= ["-e", "-f", "--regexp", "--file"].contains(&w) || w.starts_with("--regexp=");
            if VALUE.contains(&w) {
                words.next();
            }
        } else {
            positional.push(w);
        }
    }
    let files = if pattern_given { &positional[..] } else { positional.get(1..)? };
    if files.is_empty() {
        return None;
    }
    let quoted: Option<Vec<String>> = files
        .iter()
        .map(|f| {
            let plain = f.chars().all(|c| c.is_ascii_alphanumeric() || "_./-".contains(c));
            if plain { Some(f.to_string()) } else { (!f.contains('\'')).then(|| format!("'{f}'")) }
        })
        .collect();
    let command = format!("grep -n '' {}", quoted?.join(" "));
    Some(super::events::shell_call(&command))
}

/// Where `file_read` is offered, the read of the one file a [`print_all`] call prints: told
/// "Read the file itself" without a path, the 1.5B model read the wrong path it had searched
/// before (bench/README.md, stop 43). `None` for a search of several files.
fn read_instead(print_all: &str) -> Option<String> {
    let args: serde_json::Value = serde_json::from_str(print_all.strip_prefix("shell ")?).ok()?;
    let argv = crate::policy::command::parse(args.get("command")?.as_str()?).ok()?.argv;
    let [_, _, _, file] = &argv[..] else { return None };
    Some(format!("file_read {}", serde_json::json!({ "path": file })))
}

/// The call the engine's own hint in `call`'s result makes exact: the command a refused pipe
/// into `wc` meant, or the call again with the one path that exists for the one it named. Only
/// the result's first line is read, the line the engine writes (`[failed] exit code 2; ...`):
/// what a command printed comes after it, and text that mimics a hint there is never sent back
/// as the engine's advice. The command is taken only from a refusal, where nothing ran.
fn fix(call: &CallRecord) -> Option<String> {
    let head = call.result.lines().next().unwrap_or_default();
    if call.tool == "shell"
        && call.status == ToolStatus::Refused
        && let Some(one) = crate::policy::command::one_command(head)
    {
        return Some(super::events::shell_call(one));
    }
    // A format split into words: the command with it joined, computed again from the call's
    // own command (not read back from its result, which a file name could imitate), when the
    // engine's line named it.
    if call.tool == "shell"
        && call.status == ToolStatus::Failed
        && head.contains("became an argument of its own")
        && let Some(joined) = shell_argv(call).and_then(|argv| crate::tools::joined_format(&argv))
    {
        return Some(super::events::shell_call(&joined));
    }
    // An option left without its value at the end of the command (`git log -1 --author`, which
    // the 1.5B model wrote twice for a question on who last edited a file, bench/README.md, stop 41): the
    // command without it, from the call's own words, when the command said it needs a value.
    if call.tool == "shell"
        && call.status == ToolStatus::Failed
        && (call.result.contains("requires a value") || call.result.contains("requires an argument"))
        && let Some(argv) = shell_argv(call)
        && let [rest @ .., last] = &argv[..]
        && last.starts_with('-')
        && !last.contains('=')
        && rest.len() >= 2
    {
        return Some(super::events::shell_call(&shell_words::join(rest)));
    }
    // A read whose range starts past the end of the file (the 1.5B model asked for offset
    // 1001000000000000 of a six-line log, and, told to fix the call, sent it again): the file
    // whole, its path from the call's own arguments.
    if call.tool == "file_read"
        && call.status == ToolStatus::Failed
        && head.contains("is past the end")
        && let Ok(args) = serde_json::from_str::<serde_json::Value>(&call.arguments)
        && let Some(path) = args.get("path").and_then(serde_json::Value::as_str)
    {
        return Some(format!("file_read {}", serde_json::json!({ "path": path })));
    }
    let (wanted, instead) = crate::tools::near_path(head)?;
    call.arguments.contains(wanted).then(|| format!("{} {}", call.tool, call.arguments.replace(wanted, instead)))
}

/// The words of a `shell` call's command, as the policy parses them.
fn shell_argv(call: &CallRecord) -> Option<Vec<String>> {
    let args: serde_json::Value = serde_json::from_str(&call.arguments).ok()?;
    crate::policy::command::parse(args.get("command")?.as_str()?).ok().map(|p| p.argv)
}

/// The last call of `calls` as the turn remembers a failure it sent back: tool and arguments.
fn failed_key(calls: &[CallRecord]) -> String {
    let last = calls.iter().rev().find(|c| c.status != ToolStatus::Duplicate);
    last.map(|c| format!("{} {}", c.tool, c.arguments)).unwrap_or_default()
}

/// What sends a failed last call back before its answer is taken. With a fix, only the fix:
/// repeating the failed call in the message made the 1.5B model repeat it (a refused pipe, three
/// times, with the one command in the refusal), where "call this instead" made it call the fix.
pub(super) fn failure_message(lang: Language, failure: &Failure) -> String {
    let lines = &failure.lines;
    match (lang, &failure.fix) {
        (Language::En, None) if failure.no_match => {
            let with = failure
                .print_all
                .as_ref()
                .map_or(String::new(), |c| format!(": call this, which prints all of its lines: {c}"));
            format!(
                "Your search matched no line:\n{lines}\nThe file may word it differently from your search. The task is not done yet. Read the file itself and answer from its lines{with}."
            )
        }
        (Language::Zh, None) if failure.no_match => {
            let with =
                failure.print_all.as_ref().map_or(String::new(), |c| format!("：调用这个，它会打印文件的每一行：{c}"));
            format!(
                "你的搜索没有匹配到任何一行：\n{lines}\n文件里的写法可能和你搜索的词不同。任务还没有完成。请直接读取这个文件，根据它的内容作答{with}。"
            )
        }
        (Language::En, Some(fix)) => format!("Your last tool call failed. Call this instead: {fix}"),
        (Language::Zh, Some(fix)) => format!("你上一次的工具调用失败了。改为这样调用：{fix}"),
        (Language::En, None) => format!(
            "Your last tool call failed:\n{lines}\nThe task is not done yet. Fix the call (the path, the command, the arguments) or get the facts another way, then answer from what the tools return."
        ),
        (Language::Zh, None) => format!(
            "你上一次的工具调用失败了：\n{lines}\n任务还没有完成。请修正调用（路径、命令、参数）或换一种方式获取事实，然后根据工具返回的结果作答。"
        ),
    }
}

/// What follows calls that only repeated calls already answered: go on with another tool, or
/// (`answer`: no tool is left to offer) answer; with every call of the turn failed
/// (`failed_all`), the one line that fails the run (`outcome::TASK_FAILED`). Told to answer "based on the
/// tool results above" after `git log --author=Ana Lima` failed twice, the 1.5B model answered
/// "Ana Lima has made 0 commits" (bench/README.md, stop 40).
pub(super) fn repeat_message(lang: Language, answer: bool, failed_all: bool) -> &'static str {
    match (lang, answer) {
        (Language::En, true) if failed_all => {
            "Every tool call above failed, so no result answers the task. Reply with one line: TASK_FAILED: and what failed. Do not state a result. Do not call tools."
        }
        (Language::Zh, true) if failed_all => {
            "上面的工具调用全部失败，没有任何结果能回答这个任务。请只回复一行：TASK_FAILED: 加上失败的原因。不要给出结果，也不要再调用工具。"
        }
        (Language::En, false) if failed_all => {
            "You already have the result of that call above; do not make it again. Every tool call so far failed: if another tool can get the facts, call it; otherwise reply with one line: TASK_FAILED: and what failed, without stating a result."
        }
        (Language::Zh, false) if failed_all => {
            "上面已经有那次调用的结果，不要再调用一次。到目前为止所有工具调用都失败了：如果其他工具能拿到所需信息，就调用它；否则请只回复一行：TASK_FAILED: 加上失败的原因，不要给出结果。"
        }
        (Language::En, false) => {
            "You already have the result of that call above; do not make it again. If the task needs another step, take it with another tool; otherwise give your final answer in plain words."
        }
        (Language::En, true) => {
            "You already have the result of that call above. Now give your final answer in plain words, based on the tool results above. Do not call tools."
        }
        (Language::Zh, false) => {
            "上面已经有那次调用的结果，不要再调用一次。如果任务还需要下一步，请用其他工具完成；否则请用平实的文字给出最终答案。"
        }
        (Language::Zh, true) => {
            "上面已经有那次调用的结果。请根据上面的工具结果，用平实的文字给出最终答案，不要再调用工具。"
        }
    }
}

/// Adds `text` to the last message when it is the user's (one user message reads best to small
/// models), else as a user message of its own. Only the request changes, never the history.
pub(super) fn append_user(messages: &mut Vec<Message>, text: &str) {
    match messages.last_mut() {
        Some(m) if m.role == Role::User => {
            let content = m.content.get_or_insert_with(String::new);
            content.push_str("\n\n");
            content.push_str(text);
        }
        _ => messages.push(Message::user(text)),
    }
}

#[cfg(test)]
#[path = "grounding_tests.rs"]
mod tests;
