//! The checker of one run: its status, its output and the files it left.

use std::path::Path;

use super::task::{Expect, ExpectedStatus};
use crate::store::RunStatus;

/// How a run ended, as the checker sees it.
pub(super) struct Ended<'a> {
    pub status: RunStatus,
    pub output: &'a str,
    pub error: Option<&'a str>,
}

/// Every way the run missed `expect`, in words; empty when it passed. Regexes were checked when
/// the task was loaded.
pub(super) fn failures(expect: &Expect, run: &Ended<'_>, workspace: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let want = expect.status.unwrap_or(ExpectedStatus::Succeeded);
    if run.status.as_str() != want.as_str() {
        let why = run.error.map(|e| format!(" ({})", clip(e))).unwrap_or_default();
        out.push(format!("status {}{why}, expected {}", run.status, want.as_str()));
    }
    text_failures(
        "output",
        run.output,
        &expect.contains,
        &expect.not_contains,
        &expect.matches,
        &expect.not_matches,
        &mut out,
    );
    for (rel, f) in &expect.files {
        let path = workspace.join(rel);
        match (std::fs::read_to_string(&path), f.exists) {
            (Err(_), false) => {}
            (Ok(_), false) => out.push(format!("file {rel} exists, expected none")),
            (Err(e), true) => out.push(format!("file {rel} cannot be read: {e}")),
            (Ok(text), true) => {
                if let Some(want) = &f.equals {
                    if text.trim() != want.trim() {
                        out.push(format!("file {rel} holds {:?}, expected {:?}", clip(&text), clip(want)));
                    }
                }
                text_failures(
                    &format!("file {rel}"),
                    &text,
                    &f.contains,
                    &f.not_contains,
                    &f.matches,
                    &f.not_matches,
                    &mut out,
                );
            }
        }
    }
    out
}

fn text_failures(
    what: &str,
    text: &str,
    contains: &[String],
    not_contains: &[String],
    matches: &[String],
    not_matches: &[String],
    out: &mut Vec<String>,
) {
    let lower = text.to_lowercase();
    for s in contains.iter().filter(|s| !lower.contains(&s.to_lowercase())) {
        out.push(format!("{what} lacks {s:?}"));
    }
    for s in not_contains.iter().filter(|s| lower.contains(&s.to_lowercase())) {
        out.push(format!("{what} contains {s:?}"));
    }
    for p in matches.iter().filter(|p| !regex_matches(p, text)) {
        out.push(format!("{what} does not match /{p}/"));
    }
    for p in not_matches.iter().filter(|p| regex_matches(p, text)) {
        out.push(format!("{what} matches /{p}/"));
    }
}

fn regex_matches(pattern: &str, text: &str) -> bool {
    regex::Regex::new(pattern).is_ok_and(|re| re.is_match(text))
}

/// A short, one-line excerpt for a failure message.
pub(super) fn clip(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= 120 {
        one_line
    } else {
        format!("{}…", one_line.chars().take(120).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::task::FileExpect;

    fn expect(yaml: serde_json::Value) -> Expect {
        serde_json::from_value(yaml).unwrap()
    }

    #[test]
    fn a_run_passes_when_every_check_holds() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("report.md"), "Total: 17 lines\n").unwrap();
        let e = expect(serde_json::json!({
            "contains": ["SEVENTEEN"],
            "not_contains": ["error"],
            "matches": ["\\b17\\b"],
            "files": {
                "report.md": {"contains": ["total"], "not_contains": ["error"], "matches": ["17"], "not_matches": ["\\b18\\b"]},
                "gone.md": {"exists": false}
            }
        }));
        let run = Ended { status: RunStatus::Succeeded, output: "The file has 17 (seventeen) lines.", error: None };
        assert_eq!(failures(&e, &run, dir.path()), Vec::<String>::new());
    }

    #[test]
    fn every_miss_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let mut e =
            expect(serde_json::json!({"status": "silent", "contains": ["17"], "not_matches": ["(?i)all clear"]}));
        e.files.insert(
            "report.md".into(),
            FileExpect {
                exists: true,
                equals: Some("x".into()),
                contains: vec![],
                not_contains: vec![],
                matches: vec![],
                not_matches: vec![],
            },
        );
        std::fs::write(dir.path().join("done.md"), "- [x] ship it\n- [ ] test it\n").unwrap();
        e.files.insert(
            "done.md".into(),
            FileExpect {
                exists: true,
                equals: None,
                contains: vec![],
                not_contains: vec!["SHIP".into()],
                matches: vec![],
                not_matches: vec![r"\[x\]".into()],
            },
        );
        let run = Ended { status: RunStatus::Failed, output: "ALL CLEAR", error: Some("the model gave up") };
        let found = failures(&e, &run, dir.path());
        assert_eq!(found.len(), 6, "{found:?}");
        assert_eq!(found[3], "file done.md contains \"SHIP\"");
        assert_eq!(found[4], r"file done.md matches /\[x\]/");
        assert!(found[5].starts_with("file report.md cannot be read: "), "{}", found[5]);
        assert_eq!(found[0], "status failed (the model gave up), expected silent");
        assert_eq!(found[1], "output lacks \"17\"");
        assert_eq!(found[2], "output matches /(?i)all clear/");
    }
}
