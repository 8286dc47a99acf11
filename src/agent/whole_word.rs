//! A search for a number that also finds it inside longer ones: `grep -c '10.0.0.7'` counts the
//! lines of `10.0.0.70` too, and the 1.5B model answered 4 where 3 requests came from that
//! address (bench/README.md, stop 40). An address, a code or an id is a value of its own, so
//! the answer after such a search goes back once with the same command searching whole words
//! (`-w`), as a call to make; the policy decides it like any other.
//!
//! Only a pattern that is a number written plainly is taken (digits with `.` or `:` between
//! them, `10\.0\.0\.7` too); a search that already asks for whole words or lines (`-w`, `-x`),
//! or whose pattern says where the number ends (`\b`, a space), is left alone, and so is a date
//! (`2026-11-27` begins the word `2026-11-27T10:00`, which `-w` would not find).

use std::borrow::Cow;

use super::events::{CallRecord, ToolStatus};
use crate::config::Language;

/// The search: its command as written, the number it searches, and the command with `-w`.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Partial {
    command: String,
    number: String,
    whole: String,
}

/// The turn's last successful `grep` when it searches a plain number without `-w` or `-x`.
pub(super) fn partial(calls: &[CallRecord]) -> Option<Partial> {
    let call = calls.iter().rev().find(|c| c.status == ToolStatus::Success && c.tool == "shell")?;
    let args: serde_json::Value = serde_json::from_str(&call.arguments).ok()?;
    let command = args.get("command")?.as_str()?.to_string();
    let parsed = crate::policy::command::parse(&command).ok()?;
    if !matches!(parsed.base.as_str(), "grep" | "egrep" | "fgrep") {
        return None;
    }
    let argv = parsed.argv;
    let mut pattern = None;
    let mut words = argv.iter().skip(1);
    while let Some(word) = words.next() {
        match word.as_str() {
            "-e" | "--regexp" => pattern = pattern.or(words.next().cloned()),
            "--word-regexp" | "--line-regexp" => return None,
            w if w.starts_with("--") => {}
            w if w.starts_with('-') && w.len() > 1 => {
                if w.contains(['w', 'x']) {
                    return None;
                }
                if w.ends_with('e') {
                    pattern = pattern.or(words.next().cloned());
                }
            }
            w => {
                pattern = pattern.or(Some(w.to_string()));
            }
        }
    }
    let number = pattern?.replace("\\.", ".");
    let plain = number.len() >= 2
        && number.chars().next().is_some_and(|c| c.is_ascii_digit())
        && number.chars().last().is_some_and(|c| c.is_ascii_digit())
        && number.chars().all(|c| c.is_ascii_digit() || matches!(c, '.' | ':'));
    if !plain {
        return None;
    }
    let mut whole = argv.clone();
    whole.insert(1, "-w".into());
    Some(Partial { command, number, whole: shell_words::join(&whole) })
}

/// The turn's calls without each search for a number whose whole-word search ran after it:
/// shown both, the model answers from either.
pub(super) fn without_partial<'a>(calls: Cow<'a, [CallRecord]>) -> Cow<'a, [CallRecord]> {
    let argv = |c: &CallRecord| -> Option<Vec<String>> {
        let args: serde_json::Value = serde_json::from_str(&c.arguments).ok()?;
        crate::policy::command::parse(args.get("command")?.as_str()?).ok().map(|p| p.argv)
    };
    let ran: Vec<Vec<String>> =
        calls.iter().filter(|c| c.status == ToolStatus::Success && c.tool == "shell").filter_map(argv).collect();
    let superseded = |c: &CallRecord| {
        partial(std::slice::from_ref(c))
            .and_then(|p| shell_words::split(&p.whole).ok())
            .is_some_and(|whole| ran.contains(&whole))
    };
    if !calls.iter().any(superseded) {
        return calls;
    }
    Cow::Owned(calls.iter().filter(|c| !superseded(c)).cloned().collect())
}

/// What sends the answer back with the search for whole words.
pub(super) fn message(lang: Language, partial: &Partial) -> String {
    let Partial { command, number, whole } = partial;
    let call = super::events::shell_call(whole);
    match lang {
        Language::En => format!(
            "`{command}` also finds `{number}` inside longer values (such as `{number}0` or `1{number}`). To find it as a value of its own, call this instead: {call}"
        ),
        Language::Zh => format!(
            "`{command}` 也会匹配包含 `{number}` 的更长的值（例如 `{number}0` 或 `1{number}`）。要只匹配这个值本身，请改为调用：{call}"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(command: &str) -> CallRecord {
        CallRecord::shell(
            command, "4
",
        )
    }

    #[test]
    fn a_search_for_a_plain_number_goes_back_as_a_search_for_whole_words() {
        let p = partial(&[shell("grep -c '10.0.0.7' logs/access.log")]).unwrap();
        assert_eq!(p.whole, "grep -w -c 10.0.0.7 logs/access.log");
        assert_eq!(
            message(Language::En, &p),
            r#"`grep -c '10.0.0.7' logs/access.log` also finds `10.0.0.7` inside longer values (such as `10.0.0.70` or `110.0.0.7`). To find it as a value of its own, call this instead: shell {"command":"grep -w -c 10.0.0.7 logs/access.log"}"#
        );
        assert!(partial(&[shell(r"grep -n 10\.0\.0\.7 access.log")]).is_some(), "escaped dots");
        assert!(partial(&[shell("grep -e 404 access.log")]).is_some());
    }

    #[test]
    fn once_the_whole_word_search_ran_the_first_one_leaves_the_evidence() {
        let calls = [shell("grep -c '10.0.0.7' logs/access.log"), shell("grep -w -c 10.0.0.7 logs/access.log")];
        let seen = without_partial(Cow::Borrowed(&calls[..]));
        assert_eq!(seen.len(), 1);
        assert!(seen[0].arguments.contains("-w"));
        assert_eq!(without_partial(Cow::Borrowed(&calls[..1])).len(), 1, "left as it came");
    }

    #[test]
    fn a_search_for_whole_words_or_for_words_is_left_alone() {
        for command in [
            "grep -cw 10.0.0.7 access.log",
            "grep -x 404 codes.txt",
            "grep --word-regexp 404 access.log",
            "grep -c ERROR app.log",
            r"grep -c '10\.0\.0\.7\b' access.log",
            "grep -c ' 404 ' access.log",
            "grep -c 7 access.log",
            "grep -c 2026-11-27 app.log",
            "wc -l access.log",
        ] {
            assert_eq!(partial(&[shell(command)]), None, "{command}");
        }
        let mut failed = shell("grep -c 10.0.0.7 access.log");
        failed.status = ToolStatus::Failed;
        assert_eq!(partial(&[failed]), None, "a search that matched nothing is the failure check's");
    }
}
