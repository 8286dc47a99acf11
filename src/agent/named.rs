//! Files a routine's task names that no tool call has used (routine turns).
//!
//! "Compare rates/q1.csv with rates/q2.csv": a 1.5B model lists `rates/`, sees two
//! files of 77 bytes, and answers that the price went from "77 B" to "77 B". The answer rests on
//! a look, just not on the look the task asked for. Before such an answer is taken, the engine
//! says once which named files no call has used, and asks for a tool call. Only files that exist
//! in the workspace and that the policy lets the agent read count, so a task that names a file
//! it will create, or a path outside the workspace, asks nothing.
//!
//! A file the task names that does not exist yet, in a folder that does, counts too when the
//! agent can write files: "put the to-dos of the meeting into todo.md", and the model echoed the
//! notes instead. The request then says it does not exist yet and asks for the write if the
//! task asks for one. Only the routine's own words can name such a file: a name inside
//! untrusted data (`<untrusted_data>`: a webhook body, a file's text) is never proposed for a
//! write, so a payload cannot steer the engine into inviting one. Data may still name a file
//! that exists to be read (a file event's path): a read stays a look the policy decides.

use std::path::Path;

use super::events::{CallRecord, ToolStatus};
use crate::config::Language;
use crate::routine::template::FENCE_TAG;
use crate::tools::ToolContext;

/// Most words of the task looked up on disk.
const MAX_CANDIDATES: usize = 24;
/// Most files named in one request.
const MAX_NAMED: usize = 3;

/// What the task names that no call has used.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Unused {
    /// Files that exist, may be read, and no successful call named.
    pub(super) existing: Vec<String>,
    /// Files that do not exist yet, in a folder that does, that a write could create
    /// (only when `writes`): "put the to-dos of the meeting into todo.md".
    pub(super) missing: Vec<String>,
}

impl Unused {
    pub(super) fn is_empty(&self) -> bool {
        self.existing.is_empty() && self.missing.is_empty()
    }
}

/// Workspace files the task names (relative or absolute paths) that no successful call of the
/// turn names in its arguments: those that exist and may be read, and, when the agent can
/// write files (`writes`), those it could create; at most three in all, in the task's order,
/// as the task writes them.
pub(super) fn unused(task: &str, calls: &[CallRecord], ctx: &ToolContext, writes: bool) -> Unused {
    let workspace = std::fs::canonicalize(&ctx.workspace).unwrap_or_else(|_| ctx.workspace.clone());
    // A memory call's arguments name no file it used: a recall queried "ERROR lines in
    // app.log", and the count came from the memory of the run before, not from the file.
    let used: Vec<&str> = calls
        .iter()
        .filter(|c| c.status == ToolStatus::Success && !c.tool.starts_with("memory_"))
        .map(|c| c.arguments.as_str())
        .collect();
    let own = path_words(&outside_data(task));
    let mut named = Unused::default();
    for word in path_words(task).into_iter().take(MAX_CANDIDATES) {
        let (path, exists) = match ctx.resolve_read_path(&word) {
            Ok(path) if path.is_file() => (path, true),
            _ if writes && own.contains(&word) => match ctx.policy.resolve_write_path(&word) {
                Ok(path) if creatable(&path) || (makes_folder(&path) && write_target(&outside_data(task), &word)) => {
                    (path, false)
                }
                _ => continue,
            },
            _ => continue,
        };
        let relative = path.strip_prefix(&workspace).ok().map(|p| p.to_string_lossy().into_owned());
        let mentioned = |args: &&str| args.contains(&word) || relative.as_deref().is_some_and(|r| args.contains(r));
        if used.iter().any(mentioned) || named.existing.contains(&word) || named.missing.contains(&word) {
            continue;
        }
        if exists { &mut named.existing } else { &mut named.missing }.push(word);
        if named.existing.len() + named.missing.len() == MAX_NAMED {
            break;
        }
    }
    named
}

/// For a last call that failed because a path it names does not exist, while the task names a
/// file that exists and no call has used: that call with the task's file in place of the
/// missing path, written as the model writes a call (`shell {"command":...}`). The 1.5B model,
/// asked about `server.log`, ran `grep -c 'WARNING' logs/sync.log` twice and answered that
/// the task could not be done (bench/README.md, stop 43). `None` otherwise.
pub(super) fn repath(task: &str, calls: &[CallRecord], ctx: &ToolContext) -> Option<String> {
    let last = calls.iter().rev().find(|c| c.status != ToolStatus::Duplicate)?;
    let missing = ["does not exist", "No such file", "not found", "不存在"].iter().any(|m| last.result.contains(m));
    if !matches!(last.status, ToolStatus::Failed | ToolStatus::Error) || !missing {
        return None;
    }
    let named = unused(task, calls, ctx, false).existing.into_iter().next()?;
    let absent = path_words(&last.arguments)
        .into_iter()
        .find(|w| *w != named && !ctx.resolve_read_path(w).is_ok_and(|p| p.exists()))?;
    let arguments = last.arguments.replace(&absent, &named);
    (arguments != last.arguments && serde_json::from_str::<serde_json::Value>(&arguments).is_ok())
        .then(|| format!("{} {arguments}", last.tool))
}

/// Whether the turn's successful calls have used everything the task names: the task names at
/// least one workspace file that exists and may be read, or a web address, and a successful
/// call named each of them in its arguments (a web address: an `http_request`), as it did
/// each workspace folder the task names with a slash (`data/raw/`, `logs/2026`). Then the
/// model has what the task asked it to look at, and the answer comes from the evidence.
pub(super) fn all_used(task: &str, calls: &[CallRecord], ctx: &ToolContext) -> bool {
    let words: Vec<String> = path_words(task).into_iter().take(MAX_CANDIDATES).collect();
    let files = words.iter().filter(|w| ctx.resolve_read_path(w).is_ok_and(|p| p.is_file())).count();
    let folders: Vec<&String> = words.iter().filter(|w| ctx.resolve_read_path(w).is_ok_and(|p| p.is_dir())).collect();
    let urls = web_addresses(task);
    if files == 0 && urls.is_empty() {
        return false;
    }
    let succeeded = || calls.iter().filter(|c| c.status == ToolStatus::Success);
    let fetched = |url: &String| succeeded().any(|c| c.tool == "http_request" && c.arguments.contains(url.as_str()));
    // A folder the task names ("the reports in archive/2026/") is a source too: some call
    // must have used it.
    let listed = |dir: &&String| succeeded().any(|c| c.arguments.contains(dir.as_str()));
    unused(task, calls, ctx, false).existing.is_empty() && urls.iter().all(fetched) && folders.iter().all(listed)
}

/// The `http://` and `https://` addresses in `text`: printable ASCII up to a quote, a bracket
/// of `<>`, a space or other text (Chinese runs on without one), without the punctuation that
/// ends a sentence or closes a bracket. Each once, in order.
fn web_addresses(text: &str) -> Vec<String> {
    let mut urls: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        let Some(start) = word.find("http://").or_else(|| word.find("https://")) else { continue };
        let end = word[start..]
            .find(|c: char| !c.is_ascii_graphic() || "\"'<>`".contains(c))
            .map_or(word.len(), |e| start + e);
        let url = word[start..end].trim_end_matches(|c: char| ".,;:!?)]}".contains(c));
        if url.len() > "https://".len() && !urls.iter().any(|u| u == url) {
            urls.push(url.to_string());
        }
    }
    urls
}

/// Files the task names that exist, may be read, and no successful call used, but for those
/// `arguments` name: what a call with those arguments that writes would come before. Writing or
/// editing a file the task names is that file's use; storing "100 widgets" in memory before
/// reading the `stock.txt` the task names is a made-up fact recorded (the 1.5B model's first
/// call, held to a tool, did that, and the next run compared with it).
pub(super) fn unread_before(task: &str, calls: &[CallRecord], ctx: &ToolContext, arguments: &str) -> Vec<String> {
    // The file a write or an edit names by its `path`, not a content that mentions it ("The
    // version in VERSION is 1.2.3", stored before VERSION was read).
    let args: serde_json::Value = serde_json::from_str(arguments).unwrap_or_default();
    let path = args.get("path").and_then(|p| p.as_str()).unwrap_or_default();
    let target = path.trim_start_matches("./");
    unused(task, calls, ctx, false)
        .existing
        .into_iter()
        .filter(|f| target.is_empty() || (target != f.trim_start_matches("./") && !path.ends_with(&format!("/{f}"))))
        .collect()
}

/// The paths the routine's own words name (outside any fenced data), as [`path_words`] finds
/// them: what a write may be told to use instead of a path of the model's.
pub(super) fn own_paths(task: &str) -> Vec<String> {
    path_words(&outside_data(task))
}

/// What a held write gets back: not run, read the files first.
pub(super) fn held_message(lang: Language, files: &[String]) -> String {
    let list = files.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ");
    match lang {
        Language::En => format!(
            "not run yet: the task names {list}, which no tool call has read. Read it first, then write from what it says."
        ),
        Language::Zh => {
            format!("尚未执行：任务提到了 {list}，但还没有任何工具调用读取它。先读取它，再根据其内容写入。")
        }
    }
}

/// `task` without the untrusted data fenced in it (`<untrusted_data ...>...</untrusted_data>`;
/// the renderer defuses any copy of the tag inside the data, so the fences cannot be forged).
/// An opening tag without its end hides the rest of the text.
fn outside_data(task: &str) -> String {
    let open = format!("<{FENCE_TAG}");
    let close = format!("</{FENCE_TAG}>");
    let mut own = String::with_capacity(task.len());
    let mut rest = task;
    while let Some(start) = rest.find(&open) {
        own.push_str(&rest[..start]);
        own.push(' ');
        rest = match rest[start..].find(&close) {
            Some(end) => &rest[start + end + close.len()..],
            None => "",
        };
    }
    own.push_str(rest);
    own
}

/// A file that does not exist, with an extension, in a folder that does.
fn creatable(path: &Path) -> bool {
    !path.exists() && path.extension().is_some() && path.parent().is_some_and(Path::is_dir)
}

/// A file that does not exist, with an extension, whose folder does not exist either but would
/// be made by the write (`file_write` makes the folders of its path): its nearest existing
/// ancestor is a folder.
fn makes_folder(path: &Path) -> bool {
    let nearest = path.ancestors().skip(1).find(|a| a.exists());
    !path.exists() && path.extension().is_some() && nearest.is_some_and(Path::is_dir)
}

/// Whether `text` names `word` as where something is written: right after "to", "into" or "as"
/// (写入, 写到, 保存到) in a sentence with a verb of writing. "Save only the count to
/// out/errors.txt" with no `out/` yet was answered "3" and nothing was written (bench/README.md,
/// stop 42); "skip drafts/old.md" names no target.
fn write_target(text: &str, word: &str) -> bool {
    const VERBS: [&str; 12] =
        ["write", "save", "store", "put", "record", "append", "export", "output", "dump", "copy", "log", "add"];
    const ZH: [&str; 5] = ["写入", "写到", "保存到", "存到", "输出到"];
    // Sentences end at a full stop before a space (a path's own dots stay), `;` or a line's end.
    let text = text.replace(". ", "\n");
    text.split([';', '\n', '。', '；']).filter(|s| s.contains(word)).any(|sentence| {
        let lower = sentence.to_lowercase();
        let words: Vec<&str> = lower
            .split_whitespace()
            .map(|w| w.trim_matches(|c: char| "`'\"(),:".contains(c)).trim_end_matches('.'))
            .collect();
        let verb = words.iter().any(|w| VERBS.contains(w) || VERBS.iter().any(|v| w.strip_suffix('s') == Some(*v)));
        let after =
            words.windows(2).any(|p| ["to", "into", "as"].contains(&p[0]) && p[1].trim_start_matches("./") == word);
        (verb && after)
            || ZH.iter().any(|z| sentence.contains(&format!("{z}{word}")) || sentence.contains(&format!("{z} {word}")))
    })
}

/// Words of `text` shaped like a file path (`a.txt`, `logs/app.log`, `/srv/x/y`, `docs/`): runs
/// of path characters with a dot or a slash, without the punctuation that ends a sentence or
/// the slash that ends a folder; web addresses are left out. Each once, in order.
fn path_words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for chunk in text.split_whitespace().filter(|w| !w.contains("://")) {
        for raw in chunk.split(|c: char| !(c.is_ascii_alphanumeric() || "._-/~".contains(c))) {
            // `docs/`: a folder, written as one.
            let folder = raw.trim_end_matches('.').ends_with('/');
            let word = raw.trim_end_matches(['.', '/']);
            let word = word.strip_prefix("./").unwrap_or(word);
            let shaped =
                (folder || word.contains('.') || word.contains('/')) && word.chars().any(|c| c.is_ascii_alphabetic());
            if shaped
                && word.len() <= 255
                && !Path::new(word).as_os_str().is_empty()
                && !words.iter().any(|w| w == word)
            {
                words.push(word.to_string());
            }
        }
    }
    for word in bare_names(text) {
        if !words.contains(&word) {
            words.push(word);
        }
    }
    words
}

/// Words of `text` that name a file without a dot or a slash: one right before or after the
/// word "file" ("the VERSION file", "file Makefile", "VERSION 文件"), or one in capitals of three
/// letters or more (`VERSION`, `LICENSE`). Only a file of that name that exists is ever used
/// ([`unused`]); the 1.5B model stored "1.2.3" in memory before reading "the VERSION file".
fn bare_names(text: &str) -> Vec<String> {
    // Split where a path could not go on, so `TODO.md` stays one word (a path, not this one's).
    let tokens: Vec<&str> = text
        .split(|c: char| !(c.is_alphanumeric() || "_-./".contains(c)))
        .map(|t| t.trim_end_matches('.'))
        .filter(|t| !t.is_empty())
        .collect();
    let name = |t: &str| {
        t.len() <= 64
            && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            && t.chars().any(|c| c.is_ascii_alphabetic())
    };
    let file_word = |t: &str| ["file", "文件"].contains(&t.to_lowercase().as_str());
    let mut out: Vec<String> = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        let beside = (i > 0 && file_word(tokens[i - 1])) || tokens.get(i + 1).is_some_and(|n| file_word(n));
        let capitals =
            t.chars().filter(char::is_ascii_uppercase).count() >= 3 && !t.chars().any(|c| c.is_ascii_lowercase());
        if name(t) && !file_word(t) && (beside || capitals) && !out.iter().any(|o| o == t) {
            out.push((*t).to_string());
        }
    }
    out
}

/// The message that names the files and asks for the call that uses them.
pub(super) fn message(lang: Language, files: &Unused) -> String {
    let list = |files: &[String]| files.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ");
    let mut parts = Vec::new();
    if !files.existing.is_empty() {
        parts.push(match lang {
            Language::En => format!(
                "The task names {}, but no tool call has used it yet. Read it (or do with it what the task says) with a tool now.",
                list(&files.existing)
            ),
            Language::Zh => {
                format!("任务提到了 {}，但还没有任何工具调用用到它。现在用工具读取它（或按任务要求处理它）。", list(&files.existing))
            }
        });
    }
    if !files.missing.is_empty() {
        parts.push(match lang {
            Language::En => format!(
                "The task names {}, which does not exist yet and no tool call has written it. If the task asks for it, write it with a tool now.",
                list(&files.missing)
            ),
            Language::Zh => format!(
                "任务提到了 {}，它还不存在，也没有任何工具调用写过它。如果任务要求写它，现在就用工具写入。",
                list(&files.missing)
            ),
        });
    }
    parts.push(
        match lang {
            Language::En => "Then answer from what the tools return.",
            Language::Zh => "然后根据工具返回的结果作答。",
        }
        .to_string(),
    );
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_target_is_a_path_after_to_in_a_sentence_that_writes() {
        let task = "Count the WARN lines of logs/worker.log and write only the number to out/warns.txt.";
        assert!(write_target(task, "out/warns.txt"));
        assert!(!write_target(task, "logs/worker.log"), "read from, not written to");
        assert!(!write_target("Put the to-dos into todo.md; skip drafts/old.md.", "drafts/old.md"));
        assert!(write_target("Save the summary as reports/2026/summary.md.", "reports/2026/summary.md"));
        assert!(write_target("把结果写入 out/count.txt。", "out/count.txt"));
        assert!(!write_target("Compare a/x.csv to b/y.csv.", "b/y.csv"), "no verb of writing");
    }

    #[test]
    fn path_words_are_found_in_prose_and_in_chinese() {
        assert_eq!(
            path_words("Compare rates/q1.csv with rates/q2.csv. Which changed?"),
            ["rates/q1.csv", "rates/q2.csv"]
        );
        assert_eq!(path_words("读取notes/sprint.md，列出这周做完的事情。"), ["notes/sprint.md"]);
        assert_eq!(path_words("See `./TODO.md` and (config/app.toml)."), ["TODO.md", "config/app.toml"]);
        assert_eq!(
            path_words("Fetch http://127.0.0.1:8080/pricing.html and version 2.4.0 e.g. now"),
            ["e.g"],
            "addresses and numbers are not paths; words that are not files drop out on disk"
        );
        assert_eq!(path_words("a.txt a.txt"), ["a.txt"]);
        assert_eq!(
            path_words("Open the VERSION file, then file Makefile; see LICENSE. NO_REPLY"),
            ["VERSION", "then", "Makefile", "LICENSE", "NO_REPLY"],
            "bare names beside `file` or in capitals; only those on disk count"
        );
        assert_eq!(path_words("Count the files in docs/ and in data/raw."), ["docs", "data/raw"]);
    }

    #[test]
    fn web_addresses_are_found_without_the_sentence_around_them() {
        assert_eq!(
            web_addresses(
                "Open http://127.0.0.1:58123/health.json. Then (https://example.org/a?b=1), and \"http://x.test/\"."
            ),
            ["http://127.0.0.1:58123/health.json", "https://example.org/a?b=1", "http://x.test/"]
        );
        assert_eq!(web_addresses("价格在http://127.0.0.1:8080/p.html上"), ["http://127.0.0.1:8080/p.html"]);
        assert!(web_addresses("no address, just http:// alone").is_empty());
    }

    #[test]
    fn untrusted_data_is_cut_out_of_the_routines_own_words() {
        let task = "Event:\n<untrusted_data note=\"x\">{\"by\": \"ana.lima\", \"out\": \"evil.sh\"}</untrusted_data>\nWrite a note to notes/deploy.md.";
        assert_eq!(path_words(&outside_data(task)), ["notes/deploy.md"]);
        assert_eq!(
            path_words(&outside_data("Read a.txt <untrusted_data>b.txt")),
            ["a.txt"],
            "an unclosed fence hides the rest"
        );
        assert_eq!(outside_data("no data here"), "no data here");
    }

    #[test]
    fn the_held_message_says_what_to_read_first() {
        let en = held_message(Language::En, &["stock.txt".into()]);
        assert_eq!(
            en,
            "not run yet: the task names `stock.txt`, which no tool call has read. Read it first, then write from what it says."
        );
        assert!(held_message(Language::Zh, &["a.csv".into()]).contains("`a.csv`"));
    }

    #[test]
    fn the_message_names_every_file() {
        let files = Unused { existing: vec!["a.csv".into(), "b.csv".into()], missing: vec!["out.md".into()] };
        let en = message(Language::En, &files);
        assert!(en.starts_with("The task names `a.csv`, `b.csv`, but no tool call has used it yet."), "{en}");
        assert!(en.contains(" The task names `out.md`, which does not exist yet"), "{en}");
        assert!(en.ends_with(" Then answer from what the tools return."), "{en}");
        assert!(message(Language::Zh, &files).contains("`a.csv`, `b.csv`"));
        let only_read = Unused { existing: vec!["a.csv".into()], missing: vec![] };
        assert!(!message(Language::En, &only_read).contains("does not exist"));
    }
}
