//! A `file_edit` that would not make the change the task asks for, which a routine turn does
//! not run. Asked to mark a quoted item of a to-do list as done, the 1.5B model replaced the
//! item's text with `Done`: the item was gone and its box still open, and the answer repeated the
//! task (bench/README.md, stop 43). Two kinds are held:
//!
//! - **A box not ticked.** The task asks to mark an item done (or open again) and the file
//!   holds one task-list line for it (`- [ ] Write tests`); an edit after which that line is not
//!   ticked (`- [x] Write tests`) is not run, and the model gets the edit that ticks it, as a
//!   call to make.
//! - **Words the task names, removed.** An edit whose `old_string` holds words the task quotes
//!   (`"Write tests"`) and whose `new_string` does not, where the task does not ask to remove,
//!   rename or replace anything.
//!
//! - **A switch not turned.** The task turns something on or off ("Turn off debug mode",
//!   disable, 关闭) and the file holds one line that sets it (`  debug: true`: a key with a word
//!   of the task, a value of two states); an edit after which that line does not say so is not
//!   run, and the model gets the edit that sets it. The model sent `debug mode on` twice.
//!
//! The edit proposed is built from the file's own line and the task's words, outside any
//! fenced data; the policy still decides the call.

use crate::config::Language;
use crate::tools::ToolContext;

/// Why an edit is not run.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum EditHeld {
    /// The task-list line `line` stays unticked (or ticked, `done: false`); `call` is the edit
    /// that sets its box, written as the model writes a call.
    Box { line: String, done: bool, call: String },
    /// The edit removes `words`, which the task names.
    Removes { words: String },
    /// The task turns a setting on or off, and after this edit its one line (`line`) still
    /// does not say so; `call` is the edit that does.
    Setting { line: String, call: String },
}

/// Why the `file_edit` with `arguments` is not run, for `task`; `None` when it may run.
pub(super) fn held(task: &str, tool: &str, arguments: &str, ctx: &ToolContext) -> Option<EditHeld> {
    if tool != "file_edit" {
        return None;
    }
    let args: serde_json::Value = serde_json::from_str(arguments).ok()?;
    let path = args.get("path")?.as_str()?;
    let old = args.get("old_string")?.as_str()?;
    let new = args.get("new_string")?.as_str()?;
    if old.is_empty() {
        return None;
    }
    let content = std::io::read_to_string(ctx.open_read(path).ok()?.file).ok()?;
    let quoted = quoted(task);
    if let Some(on) = switches(task)
        && let Some((line, wanted)) = setting_line(&content, task, on)
    {
        let after = content.replacen(old, new, 1);
        if after.lines().any(|l| l == wanted) {
            return None;
        }
        let call = serde_json::json!({ "path": path, "old_string": line, "new_string": wanted });
        return Some(EditHeld::Setting { line, call: format!("file_edit {call}") });
    }
    if let Some(done) = marks(task)
        && let Some(line) = item_line(&content, &quoted, old)
    {
        let after = content.replacen(old, new, 1);
        let wanted = set_box(&line, done);
        if after.lines().any(|l| l.trim_end() == wanted.trim_end()) {
            return None;
        }
        let call = serde_json::json!({ "path": path, "old_string": line, "new_string": wanted });
        return Some(EditHeld::Box { line, done, call: format!("file_edit {call}") });
    }
    let words = quoted.into_iter().find(|q| old.contains(q.as_str()) && !new.contains(q.as_str()))?;
    (!removes(task)).then_some(EditHeld::Removes { words })
}

/// Whether the task asks to mark an item done (`Some(true)`) or open again (`Some(false)`).
fn marks(task: &str) -> Option<bool> {
    let lower = task.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let has = |w: &str| words.contains(&w);
    let open = ["undone", "reopen", "uncheck", "untick", "unchecked", "open", "incomplete"].iter().any(|w| has(w))
        || lower.contains("not done")
        || ["未完成", "重新打开"].iter().any(|w| task.contains(w));
    let done =
        ["done", "complete", "completed", "finished", "checked", "ticked", "tick", "check"].iter().any(|w| has(w))
            || ["完成", "勾选", "打勾"].iter().any(|w| task.contains(w));
    let marking = ["mark", "tick", "check", "set", "flag", "uncheck", "untick", "reopen"].iter().any(|w| has(w))
        || ["标记", "标为", "勾选", "打勾"].iter().any(|w| task.contains(w));
    if !marking {
        return None;
    }
    if open { Some(false) } else { done.then_some(true) }
}

/// The one task-list line (`- [ ] ...`, `* [x] ...`) of `content` that holds a text the task
/// quotes, or else the edit's `old_string` without its box.
fn item_line(content: &str, quoted: &[String], old: &str) -> Option<String> {
    let items: Vec<&str> = content.lines().filter(|l| box_of(l).is_some()).collect();
    let old_text = old.trim().trim_start_matches(['-', '*']).trim_start();
    let old_text = old_text.get(3..).filter(|_| old_text.starts_with('[')).unwrap_or(old_text).trim();
    let one = |needle: &str| {
        let needle = needle.to_lowercase();
        let found: Vec<&&str> = items.iter().filter(|l| l.to_lowercase().contains(&needle)).collect();
        (found.len() == 1).then(|| found[0].to_string())
    };
    quoted.iter().find_map(|q| one(q)).or_else(|| (old_text.len() >= 3).then(|| one(old_text)).flatten())
}

/// Whether the task turns something on (`Some(true)`) or off (`Some(false)`).
fn switches(task: &str) -> Option<bool> {
    let lower = task.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let has = |w: &str| words.contains(&w);
    let turn = ["turn", "switch", "set", "put"].iter().any(|w| has(w));
    let off = (turn && has("off"))
        || ["disable", "deactivate"].iter().any(|w| has(w))
        || ["关闭", "禁用", "关掉"].iter().any(|w| task.contains(w));
    let on = (turn && has("on"))
        || ["enable", "activate"].iter().any(|w| has(w))
        || ["打开", "开启", "启用"].iter().any(|w| task.contains(w));
    match (on, off) {
        (true, false) => Some(true),
        (false, true) => Some(false),
        _ => None,
    }
}

/// The one line of `content` that sets a switch the task names (`  debug: true`, `CACHE=on`:
/// a key whose word the task holds, and a value of two states), with that line as it reads when
/// the switch is `on`; `None` when there is not exactly one, or it already says so.
fn setting_line(content: &str, task: &str, on: bool) -> Option<(String, String)> {
    const STATES: [(&str, &str); 5] =
        [("true", "false"), ("on", "off"), ("yes", "no"), ("enabled", "disabled"), ("1", "0")];
    let lower = task.to_lowercase();
    let task_words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| w.len() >= 3).collect();
    let found: Vec<(String, String)> = content
        .lines()
        .filter_map(|line| {
            let at = line.find([':', '='])?;
            let (key, value) = (line[..at].trim(), line[at + 1..].trim());
            let named = key
                .to_lowercase()
                .split(|c: char| !c.is_alphanumeric())
                .any(|w| w.len() >= 3 && task_words.contains(&w));
            let (yes, no) =
                STATES.iter().find(|(y, n)| value.eq_ignore_ascii_case(y) || value.eq_ignore_ascii_case(n))?;
            let wanted = if on { yes } else { no };
            let value_at = at + 1 + (line[at + 1..].len() - line[at + 1..].trim_start().len());
            let set = format!("{}{wanted}{}", &line[..value_at], &line[value_at + value.len()..]);
            named.then(|| (line.to_string(), set))
        })
        .collect();
    match &found[..] {
        [(line, set)] if line != set => Some((line.clone(), set.clone())),
        _ => None,
    }
}

/// Where a task-list line's box is: the index of its `[`.
fn box_of(line: &str) -> Option<usize> {
    let start = line.len() - line.trim_start().len();
    let rest = &line[start..];
    let mark = rest.strip_prefix("- ").or_else(|| rest.strip_prefix("* ")).or_else(|| rest.strip_prefix("+ "))?;
    let at = start + (rest.len() - mark.len());
    [" ]", "x]", "X]"].iter().any(|b| mark.get(1..3) == Some(*b) && mark.starts_with('[')).then_some(at)
}

/// `line` with its box ticked (`done`) or open.
fn set_box(line: &str, done: bool) -> String {
    match box_of(line) {
        Some(at) => format!("{}[{}]{}", &line[..at], if done { 'x' } else { ' ' }, &line[at + 3..]),
        None => line.to_string(),
    }
}

/// The texts the task puts in quotes: `"Write tests"`, `“...”`, `'...'`, `「...」`. A single
/// quote opens only after a space or a bracket and closes only before one: "Ana's task" has none.
fn quoted(task: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let chars: Vec<(usize, char)> = task.char_indices().collect();
    let word = |i: Option<&(usize, char)>| i.is_some_and(|(_, c)| c.is_alphanumeric());
    for (open, close) in [('"', '"'), ('“', '”'), ('「', '」'), ('\'', '\'')] {
        let mut i = 0;
        while i < chars.len() {
            let opens = chars[i].1 == open && (open != '\'' || (i == 0 || !word(chars.get(i - 1))));
            if !opens {
                i += 1;
                continue;
            }
            let closes = |j: usize| chars[j].1 == close && (close != '\'' || !word(chars.get(j + 1)));
            let Some(end) = (i + 1..chars.len()).find(|&j| closes(j)) else { break };
            let text = task[chars[i].0 + open.len_utf8()..chars[end].0].trim();
            if (2..=80).contains(&text.chars().count()) && !found.iter().any(|f| f == text) {
                found.push(text.to_string());
            }
            i = end + 1;
        }
    }
    found
}

/// Whether the task asks to remove, rename or replace something.
fn removes(task: &str) -> bool {
    let lower = task.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).collect();
    const EN: [&str; 13] = [
        "remove", "delete", "drop", "rename", "replace", "change", "reword", "rewrite", "strike", "erase", "cut",
        "clear", "edit",
    ];
    EN.iter().any(|w| words.contains(w))
        || ["删除", "删掉", "改名", "替换", "改成", "改为", "去掉"].iter().any(|w| task.contains(w))
}

/// What the model gets back for an edit not run.
pub(super) fn message(lang: Language, held: &EditHeld) -> String {
    match (lang, held) {
        (Language::En, EditHeld::Box { line, done: true, call }) => {
            format!("not run: after this edit `{line}` would still not be ticked. Call this instead: {call}")
        }
        (Language::En, EditHeld::Box { line, done: false, call }) => {
            format!("not run: after this edit `{line}` would still be ticked. Call this instead: {call}")
        }
        (Language::Zh, EditHeld::Box { line, call, .. }) => {
            format!("未执行：这次编辑之后 `{line}` 的勾选框仍然没有按任务改过来。改为这样调用：{call}")
        }
        (Language::En, EditHeld::Setting { line, call }) => {
            format!("not run: after this edit `{line}` would still not be as the task asks. Call this instead: {call}")
        }
        (Language::Zh, EditHeld::Setting { line, call }) => {
            format!("未执行：这次编辑之后 `{line}` 仍然不是任务要求的值。改为这样调用：{call}")
        }
        (Language::En, EditHeld::Removes { words }) => format!(
            "not run: this edit removes \"{words}\", which the task names and does not ask to remove. Change only what the task asks to change, and keep \"{words}\"."
        ),
        (Language::Zh, EditHeld::Removes { words }) => {
            format!(
                "未执行：这次编辑删掉了任务提到的 \"{words}\"，而任务并没有要求删除它。只修改任务要求修改的部分，保留 \"{words}\"。"
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_box_of_the_item_the_task_names_is_what_a_mark_done_changes() {
        let todo = "# This week\n- [x] Fix login bug\n- [ ] Write tests\n- [ ] Update docs\n";
        assert_eq!(marks("Mark \"Write tests\" as finished in tasks.md."), Some(true));
        assert_eq!(marks("Tick off the docs item."), Some(true));
        assert_eq!(marks("Mark the login bug as not done."), Some(false));
        assert_eq!(marks("What is done in todo.md?"), None, "no marking");
        let q = quoted("Mark \"Write tests\" as finished in tasks.md.");
        assert_eq!(q, ["Write tests"]);
        assert_eq!(item_line(todo, &q, "Write tests").as_deref(), Some("- [ ] Write tests"));
        assert_eq!(item_line(todo, &[], "- [ ] Update docs").as_deref(), Some("- [ ] Update docs"), "by the edit");
        assert_eq!(set_box("- [ ] Write tests", true), "- [x] Write tests");
        assert_eq!(set_box("  * [X] Ship", false), "  * [ ] Ship");
        assert_eq!(box_of("- Write tests"), None);
    }

    #[test]
    fn the_one_line_of_a_switch_the_task_turns_is_set_by_the_engine() {
        let config = "app:\n  name: shop\n  debug: true\n  port: 8080\n";
        assert_eq!(switches("Switch debug mode off in settings.yaml."), Some(false));
        assert_eq!(switches("Enable the cache."), Some(true));
        assert_eq!(switches("关闭 debug 模式"), Some(false));
        assert_eq!(switches("Set the port to 9090."), None);
        assert_eq!(
            setting_line(config, "Switch debug mode off in settings.yaml.", false),
            Some(("  debug: true".into(), "  debug: false".into()))
        );
        assert_eq!(setting_line(config, "Turn on debug mode.", true), None, "it already is");
        assert_eq!(
            setting_line("CACHE=on\nLOG=on\n", "Disable the cache", false),
            Some(("CACHE=on".into(), "CACHE=off".into()))
        );
        assert_eq!(setting_line("a_debug: true\nb_debug: true\n", "Turn off debug", false), None, "two lines");
    }

    #[test]
    fn quotes_are_read_and_an_apostrophe_is_none() {
        assert_eq!(quoted("Set “debug” to 'false' in 「config」"), ["debug", "config", "false"]);
        assert_eq!(quoted("Close Ana's task and Ben's"), Vec::<String>::new(), "apostrophes");
        assert!(removes("Remove \"Write tests\" from todo.md."));
        assert!(!removes("Mark \"Write tests\" as done."));
    }

    #[test]
    fn the_messages_give_the_call_that_ticks_the_box() {
        let call = r#"file_edit {"new_string":"- [x] Write tests","old_string":"- [ ] Write tests","path":"todo.md"}"#;
        let held = EditHeld::Box { line: "- [ ] Write tests".into(), done: true, call: call.into() };
        assert_eq!(
            message(Language::En, &held),
            format!(
                "not run: after this edit `- [ ] Write tests` would still not be ticked. Call this instead: {call}"
            )
        );
    }
}
