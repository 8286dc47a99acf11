//! Searches that do not match the task: a time window the task names that the turn's `git log`
//! was not cut to (`agent/window.rs`), and a number searched inside longer ones
//! (`whole_word.rs`). The answer goes back once with the command that does match it, which
//! runs for real (a repository, `grep`) in the sandbox.

use serde_json::json;

use super::{last_text, notes};
use crate::common::Harness;
use crate::common::mock_llm::{text, tool_call};

/// A repository whose commits were made `ago` (seconds before now) with the given messages.
fn repo(h: &Harness, commits: &[(i64, &str)]) {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let dir = h.workspace();
    super::git(&dir, &["init", "-q", "-b", "main"], &[]);
    for (n, (ago, message)) in commits.iter().enumerate() {
        h.write(&format!("f{n}.txt"), "x\n");
        super::git(&dir, &["add", "."], &[]);
        let at = format!("@{} +0000", now - ago);
        let env = [("GIT_AUTHOR_DATE", at.as_str()), ("GIT_COMMITTER_DATE", at.as_str())];
        let commit = ["-c", "user.name=A", "-c", "user.email=a@example.com", "commit", "-q", "-m", message];
        super::git(&dir, &commit, &env);
    }
}

const HOUR: i64 = 3600;

/// "The last 24 hours" answered from `git log -3` (the local model listed a commit of three
/// days before, bench/README.md, stop 40): the answer goes back with `--since`, the limit left
/// out, and the answer request holds only the cut log's commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_git_log_not_cut_to_the_window_the_task_names_goes_back_cut_to_it() {
    let h = Harness::new().await;
    repo(
        &h,
        &[
            (6 * 24 * HOUR, "Initial import"),
            (3 * 24 * HOUR, "Bump version to 2.3"),
            (5 * HOUR, "Fix login redirect loop"),
            (2 * HOUR, "Add rate limit to API"),
        ],
    );
    let cut = "git log --since=24.hours.ago --oneline";
    h.mock.push_all([
        tool_call("shell", json!({"command": "git log -3 --oneline"})),
        text("Bump version to 2.3, Fix login redirect loop, Add rate limit to API"),
        tool_call("shell", json!({"command": cut})),
        text("Fix login redirect loop; Add rate limit to API"),
    ]);
    let mut agent = super::failures::git_agent(&h, "today");
    let reply = agent.process_message("List the commit messages from the last 24 hours.").await.unwrap();
    assert_eq!(reply, "Fix login redirect loop; Add rate limit to API");
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 4);
    assert_eq!(
        last_text(&reqs[2]),
        r#"The task asks about the last 24 hours, and `git log -3 --oneline` is not cut to that time. Call this instead: shell {"command":"git log --since=24.hours.ago --oneline"}"#
    );
    assert_eq!(reqs[2]["tool_choice"], "required");
    let shown = crate::common::content(&reqs[3], 5);
    assert!(shown.contains("Fix login redirect loop") && shown.contains("Add rate limit to API"), "{shown}");
    assert!(!shown.contains("Bump version"), "the real repository's log was cut: {shown}");
    assert_eq!(notes(&h), ["window_reask"]);
}

/// A log already cut by date, or a task that names no window, is answered as it came.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_cut_by_date_or_a_task_without_a_window_is_answered_as_it_came() {
    for (task, command) in [
        ("List the commit messages from the last 24 hours.", "git log --since=yesterday --oneline"),
        ("Who made the last commit?", "git log -1"),
    ] {
        let h = Harness::new().await;
        repo(&h, &[(3 * 24 * HOUR, "Bump version"), (2 * HOUR, "Add rate limit")]);
        h.mock.push_all([tool_call("shell", json!({"command": command})), text("Add rate limit")]);
        let mut agent = super::failures::git_agent(&h, "today");
        assert_eq!(agent.process_message(task).await.unwrap(), "Add rate limit");
        assert_eq!(h.mock.requests().len(), 2, "{task}");
        assert!(notes(&h).is_empty(), "{task}: {:?}", notes(&h));
    }
}

const ACCESS: &str = "10.0.0.5 - GET / 200\n10.0.0.7 - GET /login 200\n10.0.0.7 - POST /login 302\n10.0.0.9 - GET /about 200\n10.0.0.7 - GET /account 200\n10.0.0.70 - GET / 200\n";

/// `grep -c '10.0.0.7'` also counts the line of `10.0.0.70` (the local model answered 4 of 3,
/// bench/README.md, stop 40): the answer goes back once with the search for whole words, which
/// the real `grep` runs in the sandbox, and the answer request holds its count alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_for_a_number_inside_longer_ones_goes_back_as_a_whole_word_search() {
    let mock = crate::common::mock_llm::MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write(
        "routines/ip.yaml",
        "prompt: How many requests in logs/access.log came from 10.0.0.7?\nagent: { tools: [shell], allow_commands: [grep] }\n",
    )
    .write("logs/access.log", ACCESS);
    mock.push_all([
        tool_call("shell", json!({"command": "grep -c '10.0.0.7' logs/access.log"})),
        text("4"),
        tool_call("shell", json!({"command": "grep -w -c 10.0.0.7 logs/access.log"})),
        text("3"),
    ]);
    let o = p.run_async(["run", "ip", "--json"]).await;
    let reqs = mock.requests();
    assert_eq!(o.json()["output"], "3", "{}", o.stdout);
    assert_eq!(reqs.len(), 4, "{}", o.stdout);
    assert_eq!(
        last_text(&reqs[2]),
        r#"`grep -c '10.0.0.7' logs/access.log` also finds `10.0.0.7` inside longer values (such as `10.0.0.70` or `110.0.0.7`). To find it as a value of its own, call this instead: shell {"command":"grep -w -c 10.0.0.7 logs/access.log"}"#
    );
    assert_eq!(reqs[2]["tool_choice"], "required");
    assert_eq!(crate::common::last_message(&reqs[3])["content"], "3\n", "the real grep counted whole words");
    let kinds = super::note_kinds(&p.show(1).await);
    assert!(kinds.contains(&"whole_word_reask".to_string()), "{kinds:?}");
    mock.assert_clean();
}
