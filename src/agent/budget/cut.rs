//! A tool result cut to a number of bytes, with a note of what was left out and how to read it.
//!
//! The head and the tail stay, whole lines, two thirds to the head: the head shows what the
//! text is (a table's header, a file's first entries), the tail what came last (a log's newest
//! lines), and the note sits where the lines are missing, naming them. A task about one line in
//! a long file is then one search or one range away, which is the call the note names: a
//! `file_read` with `offset` and `limit`, or a narrower command (`grep`).

use crate::config::Language;
use crate::llm::ToolCall;
use crate::tools::{read_range, truncated_marker, was_truncated};

/// Bytes kept aside for the note before lines are chosen; the lines are trimmed further when
/// the note turns out longer.
const NOTE_BYTES: usize = 360;

/// How the rest of a cut result can be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::agent) enum Reading {
    /// A `file_read` of `path`; its first line is line `first` of the file.
    File { path: String, first: usize },
    /// Any other output: a narrower command finds what is needed.
    Output,
}

impl Reading {
    /// How the rest of the result of `call` is read.
    pub(in crate::agent) fn of(call: Option<&ToolCall>) -> Reading {
        let Some(call) = call.filter(|c| c.name == "file_read") else { return Reading::Output };
        let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_default();
        match args.get("path").and_then(|p| p.as_str()) {
            Some(path) => {
                let first = args.get("offset").and_then(serde_json::Value::as_u64).filter(|o| *o > 0).unwrap_or(1);
                Reading::File { path: path.to_string(), first: usize::try_from(first).unwrap_or(1) }
            }
            None => Reading::Output,
        }
    }
}

/// What a cut left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::agent) struct Cut {
    pub lines: usize,
    pub bytes: usize,
}

/// `text` in at most `max_bytes` (or the note alone, where even that does not fit), with the
/// note in place of the lines left out; `None` when it fits whole.
pub(in crate::agent) fn cut(text: &str, max_bytes: usize, reading: &Reading, lang: Language) -> Option<(String, Cut)> {
    if text.len() <= max_bytes {
        return None;
    }
    // A range read ends with `(lines A-B of N)`: it stays the last line.
    let (body, range) = match text.trim_end().rsplit_once('\n') {
        Some((body, last)) if read_range(text).is_some() => (body, format!("\n{last}")),
        _ => (text, String::new()),
    };
    let lines: Vec<&str> = body.split_inclusive('\n').collect();
    let room = max_bytes.saturating_sub(NOTE_BYTES + range.len());
    let (mut head, mut tail) = (0, lines.len());
    let mut used = 0;
    while head < tail && used + lines[head].len() <= room * 2 / 3 {
        used += lines[head].len();
        head += 1;
    }
    while tail > head && used + lines[tail - 1].len() <= room {
        used += lines[tail - 1].len();
        tail -= 1;
    }
    // One line longer than the room (minified JSON, a long log line): its start is shown.
    let partial = (head == 0).then(|| prefix(lines.first().copied().unwrap_or_default(), room * 2 / 3));
    loop {
        let out = compose(&lines, head, tail, partial, &range, reading, lang);
        let shown_lines = head + (lines.len() - tail);
        if out.0.len() <= max_bytes || shown_lines == 0 {
            return Some(out);
        }
        // The note came out longer than set aside: one line less, from the larger side.
        let head_bytes: usize = lines[..head].iter().map(|l| l.len()).sum();
        let tail_bytes: usize = lines[tail..].iter().map(|l| l.len()).sum();
        if head > 0 && head_bytes >= tail_bytes {
            head -= 1;
        } else {
            tail += 1;
        }
    }
}

fn compose(
    lines: &[&str],
    head: usize,
    tail: usize,
    partial: Option<&str>,
    range: &str,
    reading: &Reading,
    lang: Language,
) -> (String, Cut) {
    let left: &[&str] = lines.get(head..tail).unwrap_or_default();
    let partial = partial.filter(|_| head == 0).unwrap_or_default();
    // A result the tool's own cap already cut (`tools::truncate`) has a gap of its own: line
    // numbers hold up to it. Left out here, lines are named up to the lines shown after; shown
    // before, they are not named at all.
    let gap = |ls: &[&str]| ls.iter().any(|l| was_truncated(l));
    let numbers = match (gap(&lines[..head]), gap(left)) {
        (true, _) => Numbers::Unknown,
        (false, true) => Numbers::From,
        (false, false) => Numbers::Exact,
    };
    let cut = Cut { lines: left.len(), bytes: left.iter().map(|l| l.len()).sum::<usize>() - partial.len() };
    let mut out = String::new();
    for l in &lines[..head] {
        out.push_str(l);
    }
    out.push_str(partial);
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    let reading = match (numbers, reading) {
        (Numbers::Unknown, _) => &Reading::Output,
        _ => reading,
    };
    out.push_str(&note(head + 1, cut, numbers, reading, lang));
    out.push('\n');
    for l in &lines[tail..] {
        out.push_str(l);
    }
    out.push_str(range);
    (out, cut)
}

/// What the line numbers of a cut result say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Numbers {
    /// The lines left out are lines A-B of the file.
    Exact,
    /// They start at line A and run to the lines shown after them.
    From,
    /// Not known.
    Unknown,
}

/// The note in place of the lines left out: lines `from` on of the result (`cut.lines` of
/// them), what they hold and how to read them.
fn note(from: usize, cut: Cut, numbers: Numbers, reading: &Reading, lang: Language) -> String {
    let marker = truncated_marker(lang);
    let Cut { lines, bytes } = cut;
    match (reading, lang) {
        (Reading::File { path, first }, Language::En) if numbers == Numbers::From => {
            let a = first + from - 1;
            let call = serde_json::json!({"path": path, "offset": a, "limit": 50});
            format!(
                "{marker}the file from line {a} to the last lines below is left out here to fit the model's context window. Search the file for what the task needs (e.g. grep -n PATTERN {path}) or read on from there in parts: file_read {call} ...]"
            )
        }
        (Reading::File { path, first }, Language::Zh) if numbers == Numbers::From => {
            let a = first + from - 1;
            let call = serde_json::json!({"path": path, "offset": a, "limit": 50});
            format!(
                "{marker}为适应模型的上下文窗口，此处省略了文件从第 {a} 行到下面最后几行之间的内容。请在文件中搜索任务需要的内容（例如 grep -n 模式 {path}），或从那里分段读取：file_read {call} ...]"
            )
        }
        (Reading::File { path, first }, Language::En) => {
            let (a, b) = (first + from - 1, first + from + lines.saturating_sub(2));
            let call = serde_json::json!({"path": path, "offset": a, "limit": lines.min(50)});
            format!(
                "{marker}lines {a}-{b} of the file ({lines} lines, {bytes} bytes) are left out here to fit the model's context window. Search the file for what the task needs (e.g. grep -n PATTERN {path}) or read those lines in parts: file_read {call} ...]"
            )
        }
        (Reading::File { path, first }, Language::Zh) => {
            let (a, b) = (first + from - 1, first + from + lines.saturating_sub(2));
            let call = serde_json::json!({"path": path, "offset": a, "limit": lines.min(50)});
            format!(
                "{marker}为适应模型的上下文窗口，此处省略了文件的第 {a}-{b} 行（{lines} 行，{bytes} 字节）。请在文件中搜索任务需要的内容（例如 grep -n 模式 {path}），或分段读取这些行：file_read {call} ...]"
            )
        }
        (Reading::Output, Language::En) => format!(
            "{marker}{lines} lines ({bytes} bytes) of this output are left out here to fit the model's context window. To find what the task needs, run a narrower command (e.g. a search with grep -n PATTERN) ...]"
        ),
        (Reading::Output, Language::Zh) => format!(
            "{marker}为适应模型的上下文窗口，此处省略了这段输出的 {lines} 行（{bytes} 字节）。要找到任务需要的内容，请运行范围更小的命令（例如用 grep -n 模式 搜索）...]"
        ),
    }
}

/// The longest start of `line` in `max` bytes, ending on a character boundary.
fn prefix(line: &str, max: usize) -> &str {
    let mut end = max.min(line.len());
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    &line[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(n: usize) -> String {
        (1..=n).map(|i| format!("2026-05-01 10:{:02}:{:02} INFO request {i} served\n", i / 60, i % 60)).collect()
    }

    #[test]
    fn keeps_the_head_and_the_tail_and_names_the_lines_left_out() {
        let text = log(600);
        let reading = Reading::File { path: "logs/app.log".into(), first: 1 };
        let (out, cut) = cut(&text, 3_000, &reading, Language::En).unwrap();
        assert!(out.len() <= 3_000, "{}", out.len());
        assert!(out.starts_with("2026-05-01 10:00:01 INFO request 1 served\n"));
        assert!(out.ends_with("request 600 served\n"));
        let shown = out.lines().filter(|l| l.contains("INFO")).count();
        assert_eq!(shown + cut.lines, 600);
        let head = out.lines().take_while(|l| l.contains("INFO")).count();
        let want = format!("lines {}-{} of the file ({} lines", head + 1, head + cut.lines, cut.lines);
        assert!(out.contains(&want), "{out}");
        assert!(
            out.contains(&format!("\"offset\":{}", head + 1)) && out.contains("grep -n PATTERN logs/app.log"),
            "{out}"
        );
        assert!(crate::tools::needs_range(&out), "the turn offers the range after it");
        assert_eq!(
            cut.bytes,
            text.len() - out.lines().filter(|l| l.contains("INFO")).map(|l| l.len() + 1).sum::<usize>()
        );
    }

    #[test]
    fn a_range_read_keeps_its_range_line_and_counts_from_its_offset() {
        let body: String = (101..=400).map(|i| format!("line {i} of the file\n")).collect();
        let text = format!("{}\n(lines 101-400 of 900)", body.trim_end());
        let reading = Reading::File { path: "big.txt".into(), first: 101 };
        let (out, _) = cut(&text, 2_000, &reading, Language::En).unwrap();
        assert!(out.ends_with("\n(lines 101-400 of 900)"), "{out}");
        assert!(out.starts_with("line 101 of the file\n"));
        let next = out.lines().take_while(|l| l.starts_with("line ")).count() + 101;
        assert!(out.contains(&format!("lines {next}-")), "{out}");
    }

    #[test]
    fn a_result_the_tool_cap_cut_names_only_the_line_it_knows() {
        let capped = crate::tools::truncate(&log(600), 16_000, Language::En);
        let reading = Reading::File { path: "app.log".into(), first: 1 };
        let (out, _) = cut(&capped, 3_000, &reading, Language::En).unwrap();
        let head = out.lines().take_while(|l| l.contains("INFO")).count();
        assert!(out.contains(&format!("the file from line {} to the last lines below is left out", head + 1)), "{out}");
        assert!(!out.contains("of the file ("), "no count it cannot know: {out}");
    }

    #[test]
    fn one_long_line_shows_its_start_and_output_names_a_search() {
        let text = "x".repeat(10_000);
        let (out, cut) = cut(&text, 1_000, &Reading::Output, Language::En).unwrap();
        assert!(out.len() <= 1_000 && out.starts_with("xxx"));
        assert!(out.contains("grep -n PATTERN"), "{out}");
        assert_eq!(cut.lines, 1);
        let (zh, _) = super::cut(&"中文".repeat(2_000), 1_000, &Reading::Output, Language::Zh).unwrap();
        assert!(zh.len() <= 1_000 && zh.contains("已截断"));
    }

    #[test]
    fn a_text_that_fits_is_left_alone_and_no_room_leaves_the_note() {
        assert_eq!(cut("short\n", 100, &Reading::Output, Language::En), None);
        let (out, cut) = cut(&log(50), 10, &Reading::Output, Language::En).unwrap();
        assert_eq!(cut.lines, 50);
        assert!(out.starts_with("[... truncated: 50 lines"), "{out}");
    }
}
