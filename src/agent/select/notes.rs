//! What the answer request says about the records selected: the sentence after the data.

use super::records::Shape;
use super::{Ask, noun};
use crate::config::Language;

/// What the answer request says about the newest section of a document (`sections.rs`).
pub(super) fn newest_note(lang: Language, source: &str, of: usize, by: super::sections::By) -> String {
    use super::sections::By;
    match (lang, by) {
        (Language::En, By::Date) => format!(
            "(The data above shows only the newest of the {of} sections of `{source}`: the one whose heading has the latest date.)"
        ),
        (Language::En, By::Version) => format!(
            "(The data above shows only the newest of the {of} sections of `{source}`: the one whose heading has the highest version.)"
        ),
        (Language::Zh, By::Date) => {
            format!("（上面的数据只列出了 `{source}` 的 {of} 个部分中最新的一个：标题日期最晚的那个。）")
        }
        (Language::Zh, By::Version) => {
            format!("（上面的数据只列出了 `{source}` 的 {of} 个部分中最新的一个：标题版本号最高的那个。）")
        }
    }
}

/// What the answer request says about the lines that hold the task's words.
pub(super) fn phrase_note(lang: Language, source: &str, phrase: &str, kept: usize, of: usize) -> String {
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

/// What the answer request says about the records the engine kept by the task's date
/// (`dates.rs`, `clock.rs`): `phrase` is what they have (`a date before 2026-12-01`, `a time
/// after 14:00`).
pub(super) fn dated_note(lang: Language, shape: Shape, source: &str, phrase: &str, kept: usize, of: usize) -> String {
    let noun = match shape {
        Shape::Json => "items",
        Shape::Csv => "rows",
        Shape::Lines => "lines",
    };
    match (lang, kept) {
        (Language::En, 0) => format!("(None of the {of} {noun} of `{source}` has {phrase}.)"),
        (Language::En, _) => {
            format!("({kept} of the {of} {noun} of `{source}` have {phrase}; the data above shows only those {kept}.)")
        }
        (Language::Zh, 0) => format!("（`{source}` 的 {of} 条记录中没有符合条件 \"{phrase}\" 的。）"),
        (Language::Zh, _) => {
            format!(
                "（`{source}` 的 {of} 条记录中有 {kept} 条符合条件 \"{phrase}\"；上面的数据只列出了这 {kept} 条。）"
            )
        }
    }
}

/// What the answer request says about the task-list items the engine kept by their box
/// (`checklist.rs`): `phrase` names the box (`ticked [x]`).
/// With `holding`, the items also hold that word of the task ("open tasks assigned to @maria").
pub(super) fn boxes_note(
    lang: Language,
    source: &str,
    phrase: &str,
    holding: Option<&str>,
    kept: usize,
    of: usize,
) -> String {
    let (en, zh) = match holding {
        Some(word) => (format!(" that hold \"{word}\""), format!("且含有“{word}”")),
        None => (String::new(), String::new()),
    };
    match (lang, kept) {
        (Language::En, 0) => {
            format!("(None of the {of} lines of `{source}` is a task-list item with a {phrase} box{en}.)")
        }
        (Language::En, _) => format!(
            "({kept} of the {of} lines of `{source}` are task-list items with a {phrase} box{en}; the data above shows only those {kept}.)"
        ),
        (Language::Zh, 0) => format!("（`{source}` 的 {of} 行中没有方框为 {phrase}{zh} 的任务项。）"),
        (Language::Zh, _) => {
            format!(
                "（`{source}` 的 {of} 行中有 {kept} 行是方框为 {phrase}{zh} 的任务项；上面的数据只列出了这 {kept} 行。）"
            )
        }
    }
}

/// What the answer request says about the records the engine kept by a class of HTTP statuses
/// (`status_class.rs`): `class` as the task writes it (`5xx`).
pub(super) fn status_note(lang: Language, shape: Shape, source: &str, class: &str, kept: usize, of: usize) -> String {
    let noun = noun(shape);
    match (lang, kept) {
        (Language::En, 0) => format!("(None of the {of} {noun} of `{source}` has a {class} status.)"),
        (Language::En, _) => format!(
            "({kept} of the {of} {noun} of `{source}` have a {class} status; the data above shows only those {kept}.)"
        ),
        (Language::Zh, 0) => format!("（`{source}` 的 {of} 条记录中没有状态码为 {class} 的。）"),
        (Language::Zh, _) => {
            format!("（`{source}` 的 {of} 条记录中有 {kept} 条的状态码为 {class}；上面的数据只列出了这 {kept} 条。）")
        }
    }
}

/// What the answer request says about the lines a command printed.
pub(super) fn printed_note(lang: Language, command: &str, lines: usize) -> String {
    match lang {
        Language::En => format!("(The command `{command}` printed {lines} lines.)"),
        Language::Zh => format!("（命令 `{command}` 输出了 {lines} 行。）"),
    }
}

/// What the answer request says about the kept records.
///
/// For a "which" task the note says only that they are the ones asked about, and to name each:
/// told "2 of the 4 items ... are the ones the task asks about", the 1.5B model answered that
/// no user had 2FA switched off beside the two that had (and again when
/// asked to name them); told this, "Ben and Dara" (bench/README.md, stop 38). A count keeps
/// the numbers, which it answers from.
pub(super) fn kept_note(lang: Language, ask: Ask, shape: Shape, source: &str, kept: usize, of: usize) -> String {
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

/// What the answer request says about a total.
///
/// The sum is written with as many decimals as the data's numbers have (at most two): an amount
/// of money as `12.50`, hours as `16.5` (the 1.5B model copies the number as written).
pub(super) fn total_note(
    lang: Language,
    shape: Shape,
    source: &str,
    sum: f64,
    (counted, of): (usize, usize),
    data: &str,
) -> String {
    let noun = noun(shape);
    let sum = if sum.fract() == 0.0 && sum.abs() < 1e15 {
        format!("{}", sum as i64)
    } else {
        let places = decimals_in(data).max(1);
        let text = format!("{sum:.places$}");
        // A sum finer than the data's numbers (0.25 + 0.5 written with one decimal) keeps two.
        if (text.parse::<f64>().unwrap_or(sum) - sum).abs() > 1e-9 { format!("{sum:.2}") } else { text }
    };
    let over = if counted == of { format!("the {of} {noun}") } else { format!("{counted} of the {of} {noun}") };
    match lang {
        Language::En => format!("(Added up over {over} of `{source}`, what the task adds up comes to {sum}.)"),
        Language::Zh => format!("（按任务所加总的数值，`{source}` 的 {of} 行合计为 {sum}。）"),
    }
}

/// What the answer request says about the mean the engine worked out: rounded to two decimals,
/// or to the data's own when they are finer, without trailing zeros.
pub(super) fn average_note(
    lang: Language,
    shape: Shape,
    source: &str,
    mean: f64,
    (counted, of): (usize, usize),
    data: &str,
) -> String {
    let noun = noun(shape);
    let places = decimals_in(data).max(2);
    let mean = format!("{mean:.places$}");
    let mean = if mean.contains('.') { mean.trim_end_matches('0').trim_end_matches('.').to_string() } else { mean };
    let over = if counted == of { format!("the {of} {noun}") } else { format!("{counted} of the {of} {noun}") };
    match lang {
        Language::En => format!("(Averaged over {over} of `{source}`, what the task averages comes to {mean}.)"),
        Language::Zh => format!("（按任务所求平均的数值，`{source}` 中 {counted} 行的平均值为 {mean}。）"),
    }
}

/// What the answer request says about the record with the least or the most.
pub(super) fn extreme_note(
    lang: Language,
    shape: Shape,
    source: &str,
    ask: Ask,
    value: Option<f64>,
    line: &str,
    of: usize,
) -> String {
    let noun = noun(shape);
    let most = ask == Ask::Most;
    let Some(value) = value else {
        // The values were dates: the earliest or the latest, without the engine's number for it.
        return match lang {
            Language::En => format!(
                "(Of the {of} {noun} of `{source}`, the {} by the date the task compares is: {line})",
                if most { "latest" } else { "earliest" }
            ),
            Language::Zh => format!(
                "（`{source}` 的 {of} 行中，按任务所比较的日期{}的是：{line}）",
                if most { "最晚" } else { "最早" }
            ),
        };
    };
    let value =
        if value.fract() == 0.0 && value.abs() < 1e15 { format!("{}", value as i64) } else { value.to_string() };
    match lang {
        Language::En => format!(
            "(Of the {of} {noun} of `{source}`, the one with the {} by what the task compares ({value}) is: {line})",
            if most { "most" } else { "least" }
        ),
        Language::Zh => format!(
            "（`{source}` 的 {of} 行中，按任务所比较的数值{}的是（{value}）：{line}）",
            if most { "最大" } else { "最小" }
        ),
    }
}

/// What the answer request says about the share of the records the task asks about: the
/// percentage, worked out by the engine (rounded to one decimal).
pub(super) fn share_note(lang: Language, shape: Shape, source: &str, kept: usize, of: usize) -> String {
    let noun = noun(shape);
    let share = (kept as f64 * 1000.0 / of.max(1) as f64).round() / 10.0;
    let share = if share.fract() == 0.0 { format!("{}", share as i64) } else { format!("{share:.1}") };
    match lang {
        Language::En => format!(
            "({kept} of the {of} {noun} of `{source}` are the ones the task asks about: {share}% of them. The data above shows only those {kept}.)"
        ),
        Language::Zh => format!(
            "（`{source}` 的 {of} 行中有 {kept} 行是任务所问的，占 {share}%；上面的数据只列出了这 {kept} 行。）"
        ),
    }
}

/// What the answer request says about the different values the records hold (at most 30 named).
/// Told "The 6 lines of `access.log` that have one hold 3 different values ...: 10.0.0.5,
/// 10.0.0.7, 10.0.0.9.", the 1.5B model answered 4; told this, 3 (bench/README.md, stop 39).
pub(super) fn distinct_note(lang: Language, source: &str, different: &[String]) -> String {
    let n = different.len();
    let mut named: Vec<String> = different.iter().take(30).map(|d| d.chars().take(80).collect()).collect();
    if n > 30 {
        named.push("...".into());
    }
    let named = named.join(", ");
    match lang {
        Language::En => format!("(`{source}` holds {n} different values of what the task counts: {named}.)"),
        Language::Zh => format!("（`{source}` 含有 {n} 个不同的任务所数的值：{named}。）"),
    }
}

/// The most decimals a number in `text` is written with (`7.5` one, `350.50` two), at most two;
/// the dots of dates and versions (`1.2.3`) count as none.
fn decimals_in(text: &str) -> usize {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|token| {
            let (whole, fraction) = token.split_once('.')?;
            let number = !whole.is_empty() && !fraction.is_empty() && !fraction.contains('.');
            number.then(|| fraction.len().min(2))
        })
        .max()
        .unwrap_or(0)
}

/// What the answer request says about the last of the kept records.
pub(super) fn last_note(lang: Language, shape: Shape, source: &str, kept: usize, line: &str) -> String {
    let noun = noun(shape);
    match lang {
        Language::En => format!(
            "(The data above shows only the {kept} {noun} of `{source}` that the task asks about. The last of them is: {line})"
        ),
        Language::Zh => format!("（上面的数据只列出了 `{source}` 中任务所问的 {kept} 行。其中最后一行是：{line}）"),
    }
}
