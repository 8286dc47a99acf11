//! The boxes of a Markdown task list, told apart by the engine. Asked how many items of a
//! to-do list were already done, over `- [x] ...` and `- [ ] ...` lines, the 1.5B model tested for the
//! word `done`, twice, and then counted every line (6 for 3; bench/README.md, stop 42). Whether a
//! box is ticked is the list's own syntax, not a judgement: where most of a text's lines are
//! task-list items and the task asks for the ticked or the open ones, the engine keeps those,
//! without a model call.

/// Which boxes a task asks about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Boxes {
    Ticked,
    Open,
}

/// Words that ask for the open items, looked for first ("not done" holds "done").
const OPEN: [&str; 16] = [
    "not done",
    "not yet done",
    "not completed",
    "not finished",
    "undone",
    "open",
    "pending",
    "remaining",
    "remain",
    "left",
    "outstanding",
    "unchecked",
    "incomplete",
    "unfinished",
    "still to do",
    "to do",
];
const TICKED: [&str; 9] =
    ["done", "completed", "complete", "finished", "checked", "ticked", "closed", "resolved", "crossed off"];
const ZH_OPEN: [&str; 7] = ["未完成", "没完成", "没有完成", "待完成", "剩下", "剩余", "待办"];
const ZH_TICKED: [&str; 4] = ["已完成", "完成了", "做完", "已经完成"];

/// Whether `phrase` holds a word that says which boxes (`done`, `open`): no other condition.
pub(super) fn names_boxes(phrase: &str) -> bool {
    let words: Vec<&str> = phrase.split(' ').collect();
    OPEN.iter().chain(TICKED.iter()).any(|p| {
        let p: Vec<&str> = p.split(' ').collect();
        words.windows(p.len()).any(|w| w == p.as_slice())
    })
}

/// Which boxes `task` asks about, from its words; `None` when it names neither.
pub(super) fn asked(task: &str) -> Option<Boxes> {
    let lower = task.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let has = |p: &str| {
        let p: Vec<&str> = p.split(' ').collect();
        words.windows(p.len()).any(|w| w == p.as_slice())
    };
    if OPEN.iter().any(|p| has(p)) || ZH_OPEN.iter().any(|p| task.contains(p)) {
        return Some(Boxes::Open);
    }
    if TICKED.iter().any(|p| has(p)) || ZH_TICKED.iter().any(|p| task.contains(p)) || task.contains("完成") {
        return Some(Boxes::Ticked);
    }
    None
}

/// The box of a task-list line (`- [x] text`, `* [ ] text`, `1. [X] text`), if it is one.
fn box_of(line: &str) -> Option<Boxes> {
    let rest = line.trim_start();
    let rest = rest
        .strip_prefix(['-', '*', '+'])
        .or_else(|| rest.split_once(". ").filter(|(n, _)| n.chars().all(|c| c.is_ascii_digit())).map(|(_, r)| r))?;
    let rest = rest.trim_start();
    if rest.starts_with("[x]") || rest.starts_with("[X]") {
        Some(Boxes::Ticked)
    } else if rest.starts_with("[ ]") {
        Some(Boxes::Open)
    } else {
        None
    }
}

/// For a task that asks about the ticked or the open items of a task list, when at least two
/// of `lines` and at least half of them are items: the words that say which, and which lines
/// are items with that box.
pub(super) fn by_box(task: &str, lines: &[String]) -> Option<(&'static str, Vec<bool>)> {
    let boxes: Vec<Option<Boxes>> = lines.iter().map(|l| box_of(l)).collect();
    let items = boxes.iter().flatten().count();
    if items < 2 || items * 2 < lines.len() {
        return None;
    }
    let want = asked(task)?;
    let phrase = match want {
        Boxes::Ticked => "ticked `[x]`",
        Boxes::Open => "open `[ ]`",
    };
    Some((phrase, boxes.iter().map(|b| *b == Some(want)).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    const LIST: &str = "# Sprint 14\n- [x] Rename the cron jobs\n- [ ] Draft the upgrade guide\n\
                        - [X] Patch the search ranking\n* [ ] Review the alert rules\n1. [x] Remove the flags";

    #[test]
    fn the_ticked_or_the_open_boxes_are_kept_by_the_task_words() {
        let (phrase, flags) = by_box("How many items in plan.md are done already?", &lines(LIST)).unwrap();
        assert_eq!((phrase, flags), ("ticked `[x]`", vec![false, true, false, true, false, true]));
        let (_, flags) = by_box("Which tasks are not done yet?", &lines(LIST)).unwrap();
        assert_eq!(flags, vec![false, false, true, false, true, false]);
        for task in ["What is still open?", "List the remaining items", "TODO.md 里还有几项没有完成？"] {
            assert_eq!(by_box(task, &lines(LIST)).map(|(p, _)| p), Some("open `[ ]`"), "{task}");
        }
        assert_eq!(by_box("TODO.md 里已完成了几项？", &lines(LIST)).map(|(p, _)| p), Some("ticked `[x]`"));
    }

    #[test]
    fn a_word_that_says_which_boxes_is_no_further_condition() {
        assert!(names_boxes("done"));
        assert!(names_boxes("not done"));
        assert!(names_boxes("open tasks"));
        assert!(!names_boxes("maria"));
    }

    #[test]
    fn a_text_that_is_no_task_list_or_a_task_without_a_state_is_left_alone() {
        assert_eq!(by_box("How many tasks are done?", &lines("a done\nb open\n- [x] c")), None, "one item");
        assert_eq!(by_box("How many tasks are in TODO.md?", &lines(LIST)), None, "no state asked");
        assert_eq!(by_box("How many are done?", &lines("- [x] a\nb\nc\nd\ne")), None, "mostly not items");
    }
}
