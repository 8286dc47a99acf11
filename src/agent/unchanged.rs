//! An answer that says a change was made when none was. Asked to switch a setting off in a
//! config file, the 1.5B model's edits failed (its `old_string` was not in the file) and it
//! answered that the file now had `debug: false`; the run succeeded with no change on disk
//! (bench/README.md, stop 42). Where the task asks to change a file (it begins with a verb of
//! changing: set, turn off, mark, write, 修改, 把…改为) in a file its words name as the place of
//! the change ("in config.yaml", "to down.txt"), and the routine may write or edit files,
//! an answer of a turn in which no write or edit succeeded goes back once: make the change, or
//! say that the file already is as asked or why it could not be done.

use super::events::{CallRecord, ToolStatus};
use crate::config::Language;

/// Verbs that open a request to change something.
const VERBS: [&str; 27] = [
    "turn",
    "set",
    "change",
    "update",
    "mark",
    "replace",
    "add",
    "remove",
    "delete",
    "rename",
    "enable",
    "disable",
    "edit",
    "write",
    "append",
    "save",
    "create",
    "tick",
    "check",
    "uncheck",
    "bump",
    "increase",
    "decrease",
    "comment",
    "uncomment",
    "switch",
    "fix",
];

/// Chinese openings of a request to change something.
const ZH: [&str; 14] =
    ["把", "将", "修改", "设置", "写入", "添加", "删除", "标记", "关闭", "打开", "开启", "禁用", "启用", "更新"];

/// Whether a sentence of `task` opens with a verb of changing ("Turn off debug mode", "Please
/// set the port to 9090", 把端口改为 9090). "Check" opens one only with a box to tick ("check off").
pub(super) fn asks_change(task: &str) -> bool {
    task.split(['.', '!', '?', '\n', '。', '！', '？', ';', '；']).any(|sentence| {
        let sentence = sentence.trim();
        let lower = sentence.to_lowercase();
        let mut words = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty());
        let first = match words.next() {
            Some("please") => words.next(),
            other => other,
        };
        let opens = first.is_some_and(|w| VERBS.contains(&w) && (w != "check" || lower.starts_with("check off")));
        opens || ZH.iter().any(|z| sentence.starts_with(z))
    })
}

/// Whether the task's own words put a file as the place of a change: a path right after "in",
/// "to", "into", "inside" ("verbose logging in app.toml", "to offline.txt"), or, in Chinese, right
/// before 里/中 or after 到/入 (config.yaml 里的端口, 写到 count.txt). "A summary of app.log" has none.
fn names_target(task: &str) -> bool {
    let own = super::named::own_paths(task);
    let lower = task.to_lowercase();
    own.iter().any(|path| {
        let path = path.to_lowercase();
        lower.match_indices(&path).any(|(at, _)| {
            let before = lower[..at].trim_end();
            let after = lower[at + path.len()..].trim_start();
            ["in", "to", "into", "inside"].iter().any(|w| {
                before.ends_with(w)
                    && before[..before.len() - w.len()].chars().next_back().is_none_or(|c| !c.is_alphanumeric())
            }) || ["里", "中", "内"].iter().any(|w| after.starts_with(w))
                || ["到", "入"].iter().any(|w| before.ends_with(w))
        })
    })
}

/// Whether `task` asks for a change to a file it names and none of `calls` wrote or edited one.
pub(super) fn unchanged(task: &str, calls: &[CallRecord]) -> bool {
    let changed =
        calls.iter().any(|c| c.status == ToolStatus::Success && ["file_write", "file_edit"].contains(&c.tool.as_str()));
    !changed && asks_change(task) && names_target(task)
}

impl super::grounding::SentBack {
    /// For an answer (`silent`: the silent token) to a task that asks for a change, after no
    /// write or edit of the turn succeeded, where the routine may write: the note's kind and
    /// text, and the message to send; once per turn, after the other checks of an answer.
    pub(super) fn unchanged_back(
        &mut self,
        task: &str,
        calls: &[CallRecord],
        silent: bool,
        lang: Language,
    ) -> Option<(&'static str, &'static str, String)> {
        if !self.writes || self.unchanged || silent || !unchanged(task, calls) {
            return None;
        }
        self.unchanged = true;
        Some((
            "unchanged_reask",
            "the task asks for a change and no write or edit succeeded; asked to make it or say why not",
            message(lang).to_string(),
        ))
    }
}

/// What goes back with such an answer.
pub(super) fn message(lang: Language) -> &'static str {
    match lang {
        Language::En => {
            "No file was changed in this run: no file_write or file_edit succeeded. The task asks for a change. Make it with a tool call now. If the file already is as the task asks, or the change cannot be made, say so in plain words instead of describing a change."
        }
        Language::Zh => {
            "这次运行没有修改任何文件：没有一次 file_write 或 file_edit 成功。任务要求做出修改。现在用工具调用完成它。如果文件已经是任务要求的样子，或者无法修改，请直接说明，不要描述一个没有发生的修改。"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_to_change_is_a_sentence_that_opens_with_a_verb_of_changing() {
        for task in [
            "Switch off verbose logging in app.toml.",
            "Please change the timeout in client.ini to 45.",
            "Read fleet.csv. Write the machines that are offline to offline.txt.",
            "Mark \"Update docs\" as finished in plan.md.",
            "把 config.yaml 里的端口改为 9090。",
            "Check off the docs item in todo.md.",
        ] {
            assert!(asks_change(task), "{task}");
        }
        for task in [
            "Which timeout is set in client.ini?",
            "Check whether debug mode is on.",
            "How many tasks are marked done?",
            "Tell me if the config changed.",
        ] {
            assert!(!asks_change(task), "{task}");
        }
    }

    #[test]
    fn the_file_to_change_is_named_as_the_place_of_the_change() {
        assert!(names_target("Switch off verbose logging in app.toml."));
        assert!(names_target("Write the machines that are offline in fleet.csv to offline.txt."));
        assert!(names_target("把 config.yaml 里的端口改为 9090。"));
        assert!(names_target("统计一下警告，把数字写到 total.txt 里。"));
        assert!(!names_target("Write a short summary of app.log."));
        assert!(!names_target("Write a short summary of today."));
    }

    #[test]
    fn a_turn_that_wrote_or_edited_made_a_change() {
        let task = "Switch off verbose logging in app.toml.";
        let read = CallRecord::shell("cat app.toml", "verbose = true");
        assert!(unchanged(task, std::slice::from_ref(&read)));
        let edit = CallRecord {
            tool: "file_edit".into(),
            arguments: "{}".into(),
            status: ToolStatus::Success,
            result: "Edited app.toml".into(),
        };
        assert!(!unchanged(task, &[read, edit]));
    }
}
