//! A `shell` call that runs `git log`, as the engine reads it back: its command, its words,
//! and its limit (`-3`, `-n 3`, `--max-count=3`). Shared by the checks of a count capped by a
//! limit (`capped.rs`), of a time window the log was not cut to (`window.rs`) and of the
//! newest commit (`git_log.rs`).

use super::events::CallRecord;

/// A `shell` call that runs `git log` (options may stand between `git` and `log`, other words
/// may not): its command as written, its words, and where `log` stands among them.
pub(super) struct GitLog {
    pub command: String,
    pub argv: Vec<String>,
    pub log: usize,
}

/// The call as a `git log`, or `None` when it is another tool or another command.
pub(super) fn git_log(call: &CallRecord) -> Option<GitLog> {
    if call.tool != "shell" {
        return None;
    }
    let args: serde_json::Value = serde_json::from_str(&call.arguments).ok()?;
    let command = args.get("command")?.as_str()?.to_string();
    let argv = crate::policy::command::parse(&command).ok()?.argv;
    let log = argv.iter().position(|a| a == "log")?;
    if argv.first().map(String::as_str) != Some("git") || argv[1..log].iter().any(|a| !a.starts_with('-')) {
        return None;
    }
    Some(GitLog { command, argv, log })
}

impl GitLog {
    /// The limit of the command line and its words without it.
    pub(super) fn limit(&self) -> Option<(usize, Vec<String>)> {
        let (argv, log) = (&self.argv, self.log);
        let mut limit = None;
        let mut rest = Vec::new();
        let mut words = argv.iter().enumerate();
        while let Some((k, word)) = words.next() {
            if k <= log || word == "--" {
                rest.push(word.clone());
                continue;
            }
            let value = if let Some(n) = word.strip_prefix("--max-count=") {
                Some(n.to_string())
            } else if word == "-n" || word == "--max-count" {
                words.next().map(|(_, n)| n.clone())
            } else if let Some(n) = word.strip_prefix("-n").filter(|n| !n.is_empty()) {
                Some(n.to_string())
            } else {
                word.strip_prefix('-')
                    .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
                    .map(str::to_string)
            };
            match value.and_then(|n| n.parse::<usize>().ok()) {
                Some(n) => limit = Some(n),
                None => rest.push(word.clone()),
            }
        }
        limit.filter(|n| *n > 0).map(|n| (n, rest))
    }
}

/// The `commit <hash>` lines of a `git log` output in its default format.
pub(super) fn commit_headers(output: &str) -> usize {
    output.lines().filter(|l| l.strip_prefix("commit ").is_some_and(|h| h.len() >= 7)).count()
}
