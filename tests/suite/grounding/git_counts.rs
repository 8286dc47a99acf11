//! Git reports the model gets wrong: a count of commits answered in the turn without the
//! number the engine reads from the log (`agent/capped.rs`) is asked from the evidence, with
//! the count stated; an option left without its value goes back as the command without it
//! (`agent/grounding.rs`). Against real repositories.

use serde_json::json;

use super::failures::{git_agent, git_in};
use super::notes;
use crate::common::Harness;
use crate::common::mock_llm::{text, tool_call};

/// The local model, shown Ana Lima's three commits by `git log --stat '--author=Ana Lima'`,
/// answered "1" in the turn and that was delivered (bench/README.md, stop 41). Against a real
/// repository of three commits by Ana and one by Ben, the answer is asked from the evidence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_of_commits_that_is_not_the_logs_is_asked_from_the_evidence() {
    let h = Harness::new().await;
    git_in(&h, &["init", "-q", "-b", "main"]);
    for (n, who) in ["Ana Lima", "Ben Okafor", "Ana Lima", "Ana Lima"].iter().enumerate() {
        h.write(&format!("f{n}.txt"), "x\n");
        git_in(&h, &["add", "."]);
        let name = format!("user.name={who}");
        git_in(&h, &["-c", &name, "-c", "user.email=dev@example.com", "commit", "-q", "-m", &format!("Change {n}")]);
    }
    h.mock.push_all([
        tool_call("shell", json!({"command": "git log --stat '--author=Ana Lima'"})),
        text("1"),
        text("ANSWER: Ana Lima has made 3 commits."),
    ]);
    let mut agent = git_agent(&h, "ana");
    let reply = agent.process_message("How many commits has Ana Lima made in this repository?").await.unwrap();
    assert_eq!(reply, "Ana Lima has made 3 commits.");
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 3);
    let answer = crate::common::last_message(&reqs[2])["content"].as_str().unwrap().to_string();
    assert!(answer.contains("(`git log --stat '--author=Ana Lima'` shows 3 commits.)"), "{answer}");
    assert_eq!(notes(&h), ["commits_count_reask", "answer_from_evidence"]);
}

/// An answer that already says the log's count is taken as it is: no selection over the log's
/// lines either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_of_commits_that_is_the_logs_is_taken() {
    let h = Harness::new().await;
    git_in(&h, &["init", "-q", "-b", "main"]);
    for n in 0..2 {
        h.write(&format!("f{n}.txt"), "x\n");
        git_in(&h, &["add", "."]);
        git_in(&h, &["-c", "user.name=A", "-c", "user.email=a@example.com", "commit", "-q", "-m", "c"]);
    }
    h.mock.push_all([tool_call("shell", json!({"command": "git log"})), text("There are 2 commits.")]);
    let mut agent = git_agent(&h, "count");
    let reply = agent.process_message("How many commits are there in this repository?").await.unwrap();
    assert_eq!(reply, "There are 2 commits.");
    assert_eq!(h.mock.requests().len(), 2);
    assert!(notes(&h).is_empty(), "{:?}", notes(&h));
}

/// `git log -1 --oneline --author` (the local model's command for "who made the last change",
/// twice, bench/README.md, stop 41) fails for want of a value; the failure goes back with the
/// command without that option, which runs against the real repository.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_option_left_without_its_value_goes_back_as_the_command_without_it() {
    let h = Harness::new().await;
    git_in(&h, &["init", "-q", "-b", "main"]);
    h.write("a.txt", "x\n");
    git_in(&h, &["add", "."]);
    git_in(
        &h,
        &["-c", "user.name=Lukas Weber", "-c", "user.email=l@example.com", "commit", "-q", "-m", "Fix tax rounding"],
    );
    h.mock.push_all([
        tool_call("shell", json!({"command": "git log -1 --oneline --author"})),
        text("The command needs a value for --author."),
        tool_call("shell", json!({"command": "git log -1 --oneline"})),
        text("Fix tax rounding"),
    ]);
    let mut agent = git_agent(&h, "last");
    let reply = agent.process_message("What was the last change?").await.unwrap();
    assert_eq!(reply, "Fix tax rounding");
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 4);
    assert_eq!(
        super::last_text(&reqs[2]),
        r#"Your last tool call failed. Call this instead: shell {"command":"git log -1 --oneline"}"#
    );
    let shown = crate::common::last_message(&reqs[3])["content"].as_str().unwrap().to_string();
    assert!(shown.ends_with(" Fix tax rounding\n"), "the real log ran: {shown}");
    assert_eq!(notes(&h), ["failed_check_reask"]);
}

/// A turn that read a git log without the file the task names is told that file's history as
/// the call to make (the local model ran `git log -1 --oneline --author` three times for "who
/// made the last change to billing.py", bench/README.md, stop 41); against a real repository
/// whose last commit touched another file, the history names the file's own last author.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_git_log_without_the_file_the_task_names_is_followed_by_that_files_history() {
    let mock = crate::common::mock_llm::MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write(
        "routines/who.yaml",
        "prompt: Who made the last change to billing.py?\nagent: { tools: [shell], allow_commands: [git] }\n",
    );
    let git = |args: &[&str]| super::git(p.path(), args, &[]);
    git(&["init", "-q", "-b", "main"]);
    for (file, who, message) in
        [("billing.py", "Lukas Weber", "Fix tax rounding"), ("docs.md", "Tom Berg", "Typo in docs")]
    {
        p.write(file, "x\n");
        git(&["add", file]);
        git(&["-c", &format!("user.name={who}"), "-c", "user.email=dev@example.com", "commit", "-q", "-m", message]);
    }
    let last = || tool_call("shell", json!({"command": "git log -1 --oneline"}));
    mock.push_all([
        last(),
        last(),
        tool_call("shell", json!({"command": "git log -- billing.py"})),
        text("Lukas Weber"),
    ]);
    let o = p.run_async(["run", "who", "--json"]).await;
    assert_eq!(o.json()["output"], "Lukas Weber", "{}", o.stdout);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 4, "{}", o.stdout);
    assert_eq!(
        super::last_text(&reqs[2]),
        r#"The task names `billing.py`, but no tool call has used it yet. Read it (or do with it what the task says) with a tool now. Then answer from what the tools return. Its history in git: call this: shell {"command":"git log -- billing.py"}"#
    );
    let shown = crate::common::last_message(&reqs[3])["content"].as_str().unwrap().to_string();
    assert!(shown.contains("Author: Lukas Weber") && !shown.contains("Tom Berg"), "the real history: {shown}");
    mock.assert_clean();
}
