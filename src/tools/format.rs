//! How tool results read to the model (SPEC §8).

use super::ToolError;
use crate::config::Language;

/// Default cap of one tool result, in characters.
pub const MAX_RESULT_CHARS: usize = 16_000;

struct Labels {
    failed: &'static str,
    partial: &'static str,
    error: &'static str,
}

fn labels(lang: Language) -> Labels {
    match lang {
        Language::En => Labels { failed: "[failed]", partial: "[partial output]", error: "[error]" },
        Language::Zh => Labels { failed: "[失败]", partial: "[部分输出]", error: "[错误]" },
    }
}

/// Success → the output as is; failure → `[failed] <error>` then
/// `[partial output]` and what was produced; system error → `[error] <message>`.
/// Long output is truncated with a marker that says how much was cut.
pub fn format_result(result: &Result<String, ToolError>, lang: Language, max_chars: usize) -> String {
    let l = labels(lang);
    let text = match result {
        Ok(out) => out.clone(),
        Err(ToolError::Failed { message, partial } | ToolError::Transient { message, partial }) => match partial {
            Some(p) if !p.is_empty() => format!("{} {message}\n{}\n{p}", l.failed, l.partial),
            _ => format!("{} {message}", l.failed),
        },
        Err(ToolError::InvalidArgs(m) | ToolError::Refused(m)) => format!("{} {m}", l.failed),
        Err(ToolError::System(m) | ToolError::Fatal(m)) => format!("{} {m}", l.error),
    };
    truncate(&text, max_chars, lang)
}

/// Keeps the head and the tail of `text` within `max_chars`, with a marker
/// in between saying how many characters were cut.
pub fn truncate(text: &str, max_chars: usize, lang: Language) -> String {
    let total = text.chars().count();
    if total <= max_chars {
        return text.to_string();
    }
    let keep = max_chars.saturating_sub(80);
    let head_len = keep * 3 / 4;
    let tail_len = keep - head_len;
    let cut = total - head_len - tail_len;
    let head: String = text.chars().take(head_len).collect();
    let tail: String = text.chars().skip(total - tail_len).collect();
    let marker = match lang {
        Language::En => format!("\n{TRUNCATED_EN}{cut} of {total} characters cut ...]\n"),
        Language::Zh => format!("\n{TRUNCATED_ZH}共 {total} 个字符，省略 {cut} 个 ...]\n"),
    };
    format!("{head}{marker}{tail}")
}

/// How the marker of [`truncate`] begins, in each language.
const TRUNCATED_EN: &str = "[... truncated: ";
const TRUNCATED_ZH: &str = "[... 已截断：";

/// How a marker of a cut result begins in `lang`: [`was_truncated`] recognizes any text that
/// carries it (the engine's cuts to the context window use it too).
pub fn truncated_marker(lang: Language) -> &'static str {
    match lang {
        Language::En => TRUNCATED_EN,
        Language::Zh => TRUNCATED_ZH,
    }
}

/// Whether `result` was cut by [`truncate`]: the model was not given all of it.
pub fn was_truncated(result: &str) -> bool {
    result.contains(TRUNCATED_EN) || result.contains(TRUNCATED_ZH)
}

/// A byte count as people read it: `512 B`, `1.5 KB`, `2.0 MB`.
pub(super) fn human_size(n: u64) -> String {
    match n {
        0..=1023 => format!("{n} B"),
        1024..=1_048_575 => format!("{:.1} KB", n as f64 / 1024.0),
        _ => format!("{:.1} MB", n as f64 / 1_048_576.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_each_outcome_in_both_languages() {
        let ok: Result<String, ToolError> = Ok("done".into());
        assert_eq!(format_result(&ok, Language::En, 100), "done");
        let failed = Err(ToolError::Failed { message: "exit code 2".into(), partial: Some("line 1".into()) });
        assert_eq!(format_result(&failed, Language::En, 100), "[failed] exit code 2\n[partial output]\nline 1");
        assert_eq!(format_result(&failed, Language::Zh, 100), "[失败] exit code 2\n[部分输出]\nline 1");
        let sys = Err(ToolError::System("database is locked".into()));
        assert_eq!(format_result(&sys, Language::En, 100), "[error] database is locked");
        assert_eq!(format_result(&sys, Language::Zh, 100), "[错误] database is locked");
        let refused = Err(ToolError::Refused("path is outside the workspace".into()));
        assert_eq!(format_result(&refused, Language::En, 100), "[failed] path is outside the workspace");
    }

    #[test]
    fn truncates_with_a_marker_that_counts_what_was_cut() {
        let text: String = (0..1000).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
        let out = truncate(&text, 200, Language::En);
        assert!(out.contains("[... truncated: 880 of 1000 characters cut ...]"), "{out}");
        assert!(out.starts_with(&text[..90]));
        assert!(out.ends_with(&text[970..]));
        assert!(truncate(&text, 200, Language::Zh).contains("已截断"));
        assert!(was_truncated(&out) && was_truncated(&truncate(&text, 200, Language::Zh)));
        assert!(!was_truncated(&text));
        assert_eq!(truncate("short", 200, Language::En), "short");
    }

    #[test]
    fn sizes_read_as_bytes_kilobytes_and_megabytes() {
        assert_eq!(human_size(0), "0 B");
        assert_eq!(human_size(1023), "1023 B");
        assert_eq!(human_size(1536), "1.5 KB");
        assert_eq!(human_size(2 * 1024 * 1024), "2.0 MB");
    }
}
