//! A task about the latest of something: the newest section of a document of dated or
//! versioned sections (`agent/select/sections.rs`), and the newest commit of a `git log`
//! (`agent/git_log.rs`), which the local model took to be the one listed last. Through
//! `routines run` with a scripted model, and a real repository for the log.

use serde_json::json;

use crate::common::Routines;
use crate::common::mock_llm::{MockLlm, text, tool_call};

const CHANGELOG: &str = "# Changelog\n## Unreleased\n- Work in progress\n## 3.4.0 - 2026-11-18\n- Add dark mode\n- Fix CSV export\n## 3.3.2 - 2026-10-30\n- Fix login timeout\n## 3.3.1 - 2026-10-12\n- Security fix for session cookies\n";

/// "What changed in the latest release": the answer request shows the section of 3.4.0 alone,
/// and says why, without a model call to choose it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_latest_release_of_a_changelog_is_its_newest_dated_section() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write(
        "routines/latest.yaml",
        "prompt: What changed in the latest release according to CHANGELOG.md?\nagent: { tools: [file_read] }\n",
    )
    .write("CHANGELOG.md", CHANGELOG);
    mock.push_all([
        tool_call("file_read", json!({"path": "CHANGELOG.md"})),
        text("ANSWER: 3.4.0 added dark mode and fixed the CSV export."),
    ]);
    let o = p.run_async(["run", "latest", "--json"]).await;
    assert_eq!(o.json()["output"], "3.4.0 added dark mode and fixed the CSV export.", "{}", o.stdout);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2, "no model call chose the section");
    let answer = crate::common::last_message(&reqs[1])["content"].as_str().unwrap().to_string();
    assert!(answer.contains("## 3.4.0 - 2026-11-18\n- Add dark mode\n- Fix CSV export\n"), "{answer}");
    assert!(!answer.contains("3.3.2") && !answer.contains("Unreleased"), "{answer}");
    assert!(
        answer.contains("(The data above shows only the newest of the 3 sections of `CHANGELOG.md`: the one whose heading has the latest date.)"),
        "{answer}"
    );
    mock.assert_clean();
}

/// A project whose routine `who` runs `prompt` with `git`, in a repository where Priya Shah
/// added billing.py and Lukas Weber changed it three days later.
fn billing_repo(mock: &MockLlm, prompt: &str) -> Routines {
    let p = super::assisted(&mock.base_url(), "");
    p.write("routines/who.yaml", &format!("prompt: {prompt}\nagent: {{ tools: [shell], allow_commands: [git] }}\n"));
    let git = |args: &[&str], author: &str, date: &str| {
        let env = [
            ("GIT_AUTHOR_NAME", author),
            ("GIT_AUTHOR_EMAIL", "dev@example.com"),
            ("GIT_COMMITTER_NAME", author),
            ("GIT_COMMITTER_EMAIL", "dev@example.com"),
            ("GIT_AUTHOR_DATE", date),
            ("GIT_COMMITTER_DATE", date),
        ];
        super::git(p.path(), args, &env);
    };
    git(&["init", "-q", "-b", "main"], "x", "2026-11-20T10:00:00Z");
    for (author, date, content, message) in [
        ("Priya Shah", "2026-11-24T09:00:00Z", "a\n", "Add billing module"),
        ("Lukas Weber", "2026-11-27T09:00:00Z", "b\n", "Fix tax rounding"),
    ] {
        p.write("billing.py", content);
        git(&["add", "billing.py"], author, date);
        git(&["commit", "-q", "-m", message], author, date);
    }
    p
}

/// "Who made the last change to billing.py" over `git log --stat billing.py` run against a
/// real repository: the model's own answer names the older commit's author (as the local model
/// did), so the answer is asked from the evidence, which names the newest commit, listed first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_change_in_a_git_log_is_named_as_the_newest_commit() {
    let mock = MockLlm::start().await;
    let p = billing_repo(&mock, "Who made the last change to billing.py?");
    mock.push_all([
        tool_call("shell", json!({"command": "git log --stat billing.py"})),
        text("Priya Shah"),
        text("ANSWER: Lukas Weber"),
    ]);
    let o = p.run_async(["run", "who", "--json"]).await;
    assert_eq!(o.json()["output"], "Lukas Weber", "{}", o.stdout);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3, "the call, the answer in the turn, the answer from the evidence");
    let answer = crate::common::last_message(&reqs[2])["content"].as_str().unwrap().to_string();
    let note = answer.lines().find(|l| l.contains("lists the newest commit first")).unwrap_or_default().to_string();
    assert!(note.starts_with("(`git log --stat billing.py` lists the newest commit first: "), "{answer}");
    assert!(note.contains(" by Lukas Weber, ") && note.ends_with(": Fix tax rounding.)"), "{note}");
    let kinds = super::note_kinds(&p.show(1).await);
    assert!(kinds.contains(&"newest_commit_reask".to_string()), "{kinds:?}");
    mock.assert_clean();
}

/// "The most recent change" is a superlative, but the engine names the newest commit itself:
/// no worked comparison comes before the answer request (the local model, shown them, listed
/// the files of both commits as the newest one's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_newest_commit_named_by_the_engine_needs_no_worked_comparison() {
    let mock = MockLlm::start().await;
    let p = billing_repo(&mock, "Who made the most recent change to billing.py?");
    mock.push_all([
        tool_call("shell", json!({"command": "git log --stat billing.py"})),
        text("Priya Shah"),
        text("ANSWER: Lukas Weber"),
    ]);
    let o = p.run_async(["run", "who", "--json"]).await;
    assert_eq!(o.json()["output"], "Lukas Weber", "{}", o.stdout);
    let reqs = mock.requests();
    assert_eq!(reqs[2]["messages"].as_array().unwrap().len(), 2, "the system prompt and the request only");
    mock.assert_clean();
}

/// The repository's last commit first, then the log of the file the task names (as the local
/// model ran them): the note names the newest commit of the file's log, the one the task means.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_two_logs_the_one_of_the_named_file_gives_the_newest_commit() {
    let mock = MockLlm::start().await;
    let p = billing_repo(&mock, "Who made the last change to billing.py?");
    p.write("docs.md", "a\n");
    super::git(p.path(), &["add", "docs.md"], &[]);
    super::git(
        p.path(),
        &["-c", "user.name=Tom Berg", "-c", "user.email=tom@example.com", "commit", "-q", "-m", "Add docs"],
        &[],
    );
    mock.push_all([
        tool_call("shell", json!({"command": "git log -1 --oneline"})),
        tool_call("shell", json!({"command": "git log -- billing.py"})),
        text("Priya Shah"),
        text("ANSWER: Lukas Weber"),
    ]);
    let o = p.run_async(["run", "who", "--json"]).await;
    assert_eq!(o.json()["output"], "Lukas Weber", "{}", o.stdout);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 4, "two calls, the answer in the turn, the answer from the evidence");
    let answer = crate::common::last_message(&reqs[3])["content"].as_str().unwrap().to_string();
    assert!(answer.contains("Add docs"), "the repository's last commit is still in the data: {answer}");
    let note = answer.lines().find(|l| l.contains("lists the newest commit first")).unwrap_or_default().to_string();
    assert!(note.starts_with("(`git log -- billing.py` lists the newest commit first: "), "{answer}");
    assert!(note.contains(" by Lukas Weber, ") && note.ends_with(": Fix tax rounding.)"), "{note}");
    mock.assert_clean();
}
