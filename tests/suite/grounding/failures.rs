//! Answers that come right after a failed look, and calls repeated word for word: the engine
//! sends a failure back once when the answer may rest on nothing, and moves a stuck model on.

use routines::agent::ToolStatus;
use routines::config::Autonomy;
use serde_json::json;

use super::{last_text, notes, routine_agent, tool_events, tool_names};
use crate::common::Harness;
use crate::common::mock_llm::{text, tool_call};

/// The local model read a six-line log from offset 1001000000000000 and, told to fix the call,
/// sent it again: the read past the end goes back as the read of the whole file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_past_the_end_of_a_file_is_sent_back_as_the_read_of_the_whole_file() {
    let h = Harness::new().await;
    h.write("metrics.log", "10:05 cpu=40\n10:20 cpu=50\n");
    h.mock.push_all([
        tool_call("file_read", json!({"path": "metrics.log", "offset": 1001000000000000u64})),
        text("I will try again with a different offset."),
        tool_call("file_read", json!({"path": "metrics.log"})),
        text("The CPU was at 40 and 50."),
    ]);
    let mut agent = routine_agent(&h, Autonomy::ReadOnly);
    let reply = agent.process_message("What were the CPU readings in metrics.log?").await.unwrap();
    assert_eq!(reply, "The CPU was at 40 and 50.");
    let reqs = h.mock.requests();
    assert_eq!(
        last_text(&reqs[2]),
        "Your last tool call failed. Call this instead: file_read {\"path\":\"metrics.log\"}"
    );
    assert_eq!(notes(&h), ["failed_check_reask"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_named_without_its_folder_is_sent_back_with_the_one_that_exists() {
    let h = Harness::new().await;
    h.write("logs/app.log", "06:17 ERROR payment provider unreachable\n");
    h.mock.push_all([
        tool_call("file_read", json!({"path": "app.log"})),
        text("The log has no errors."),
        tool_call("file_read", json!({"path": "logs/app.log"})),
        text("06:17 ERROR payment provider unreachable"),
    ]);
    let mut agent = routine_agent(&h, Autonomy::ReadOnly);
    let reply = agent.process_message("Check app.log for errors.").await.unwrap();
    assert_eq!(reply, "06:17 ERROR payment provider unreachable");
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 4);
    assert_eq!(
        crate::common::content(&reqs[1], 3),
        "[failed] `app.log` is not there, but `logs/app.log` exists: use that path"
    );
    assert_eq!(
        last_text(&reqs[2]),
        "Your last tool call failed. Call this instead: file_read {\"path\":\"logs/app.log\"}",
        "the one path that exists makes the call exact; the failed call is not repeated to be copied"
    );
    assert!(!tool_names(&reqs[2]).is_empty(), "the tools are offered to correct the call");
    assert_eq!(reqs[2]["tool_choice"], "required", "a failed look is looked at again");
    assert!(reqs[3].get("tool_choice").is_none());
    assert!(!reqs[2].to_string().contains("The log has no errors."), "the guess is not in the conversation");
    assert_eq!(notes(&h), ["failed_check_reask"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_reply_after_a_failed_check_is_sent_back_once() {
    let h = Harness::new().await;
    h.mock.push_all([tool_call("file_read", json!({"path": "status.json"})), text("NO_REPLY"), text("NO_REPLY")]);
    let mut agent = routine_agent(&h, Autonomy::ReadOnly);
    // Asked once; the silence again, over a check that failed, is no answer (`outcome.rs`).
    let e = agent.process_message("Check status.json; reply NO_REPLY if all is up.").await.unwrap_err();
    assert!(e.to_string().starts_with("every tool call failed: file_read status.json: "), "{e}");
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 3, "asked once, then the turn ends");
    assert!(last_text(&reqs[2]).contains("`status.json` does not exist"), "{}", last_text(&reqs[2]));
    h.mock.assert_clean();
}

/// An answer after a turn in which no call succeeded rests on nothing: the failure goes back
/// once, and the answer after it fails the turn naming the failure (SPEC §13: a report that
/// the task could not be done is not delivered as a success).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_with_nothing_to_correct_is_sent_back_once_then_fails_the_turn() {
    let h = Harness::new().await;
    h.mock.push_all([
        tool_call("file_read", json!({"path": "status.json"})),
        text("status.json is missing."),
        text("status.json does not exist, so there is nothing to summarize."),
    ]);
    let mut agent = routine_agent(&h, Autonomy::ReadOnly);
    let e = agent.process_message("Summarize status.json.").await.unwrap_err().to_string();
    assert!(e.starts_with("every tool call failed: file_read status.json: "), "{e}");
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 3);
    assert!(last_text(&reqs[2]).starts_with("Your last tool call failed:\nfile_read {\"path\":\"status.json\"}"));
    assert_eq!(notes(&h), ["failed_check_reask", "calls_failed"]);
    h.mock.assert_clean();
}

/// After a call that succeeded, an answer after a later failure stands: the model has facts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_after_a_look_that_worked_is_reported_as_the_model_answered() {
    let h = Harness::new().await;
    h.write("notes.txt", "status.json is written by the nightly job\n");
    h.mock.push_all([
        tool_call("file_read", json!({"path": "notes.txt"})),
        tool_call("file_read", json!({"path": "status.json"})),
        text("status.json is missing; the nightly job writes it."),
    ]);
    let mut agent = routine_agent(&h, Autonomy::ReadOnly);
    assert_eq!(
        agent.process_message("Read notes.txt, then summarize status.json.").await.unwrap(),
        "status.json is missing; the nightly job writes it."
    );
    assert_eq!(h.mock.request_count(), 3);
    assert!(notes(&h).is_empty());
}

/// `git log -1 --pretty=format:%an %s` (the 1.5B model's command, word for word) splits the
/// format; the result names the split word and the command with the format quoted, the answer
/// after it goes back as that call, and the call runs against a real repository.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_format_split_into_words_goes_back_as_the_command_with_it_joined() {
    let h = dara_repo().await;
    h.mock.push_all([
        tool_call("shell", json!({"command": "git log -1 --pretty=format:%an %s"})),
        text("The command failed. You should use the format as one argument."),
        tool_call("shell", json!({"command": "git log -1 '--pretty=format:%an %s'"})),
        text("Dara Singh made the last commit: Add CSV export."),
    ]);
    let mut agent = git_agent(&h, "last-commit");
    assert_eq!(
        agent.process_message("Who made the last commit in this repository?").await.unwrap(),
        "Dara Singh made the last commit: Add CSV export."
    );
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 4);
    let failed = crate::common::content(&reqs[1], 3);
    assert!(
        failed.starts_with("[failed] exit code 128; `%s` became an argument of its own; with the format as one argument: `git log -1 '--pretty=format:%an %s'`"),
        "{failed}"
    );
    assert_eq!(
        last_text(&reqs[2]),
        r#"Your last tool call failed. Call this instead: shell {"command":"git log -1 '--pretty=format:%an %s'"}"#
    );
    assert_eq!(crate::common::content(&reqs[3], 5), "Dara Singh Add CSV export", "the quoted format ran as one");
    assert_eq!(tool_events(&h), [("shell".into(), ToolStatus::Failed), ("shell".into(), ToolStatus::Success)]);
    assert_eq!(notes(&h), ["failed_check_reask"]);
}

/// A pipe refused, the model answered with what it meant to run (the probe's largest-file task,
/// bench/README.md, stop 39): the refusal names the pipe's first command, the answer goes back
/// as that call, and it runs, in the sandbox, with the glob expanded by the engine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_pipe_goes_back_as_its_first_command() {
    let h = Harness::new().await;
    h.write("data/big.bin", &"b".repeat(9000));
    h.write("data/small.txt", "a");
    h.mock.push_all([
        tool_call("shell", json!({"command": "du -s data/* | sort -n | tail -1"})),
        text("I will run the command `du -s data/*` to find the largest file."),
        tool_call("shell", json!({"command": "du -s data/*"})),
        text("data/big.bin is the largest."),
    ]);
    let mut agent = h.agent_with(
        Autonomy::Full,
        |o, _| o.first_call = routines::config::routine_file::FirstCall::Tool,
        |p| p.allowed_commands = vec!["du".into(), "sort".into(), "tail".into()],
    );
    agent.set_routine_name("largest");
    let reply = agent.process_message("Which file in the data folder is the largest?").await.unwrap();
    assert_eq!(reply, "data/big.bin is the largest.");
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 4);
    assert_eq!(
        crate::common::content(&reqs[1], 3),
        "[failed] `|` pipes into a second command; run one command per shell call; the first command on its own: `du -s data/*`"
    );
    assert_eq!(
        last_text(&reqs[2]),
        r#"Your last tool call failed. Call this instead: shell {"command":"du -s data/*"}"#
    );
    let listed = crate::common::content(&reqs[3], 5);
    assert!(listed.contains("data/big.bin") && listed.contains("data/small.txt"), "{listed}");
    assert_eq!(tool_events(&h), [("shell".into(), ToolStatus::Refused), ("shell".into(), ToolStatus::Success)]);
}

/// "How many commits" counted over `git log -3`: the answer goes back once with the command
/// without its limit (the probe's git-count task, bench/README.md, stop 39), and that runs
/// against a real repository of five commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_over_a_git_log_its_limit_cut_goes_back_with_the_limit_dropped() {
    let h = Harness::new().await;
    let git = |args: &[&str]| git_in(&h, args);
    git(&["init", "-q", "-b", "main"]);
    for n in 1..=5 {
        h.write(&format!("f{n}.txt"), "x\n");
        git(&["add", "."]);
        git(&["-c", "user.name=A", "-c", "user.email=a@example.com", "commit", "-q", "-m", &format!("Change {n}")]);
    }
    h.mock.push_all([
        tool_call("shell", json!({"command": "git log -3 --oneline"})),
        text("3"),
        tool_call("shell", json!({"command": "git log --oneline"})),
        text("There are 5 commits."),
    ]);
    let mut agent = git_agent(&h, "commits");
    let reply = agent.process_message("How many commits are there in this repository?").await.unwrap();
    assert_eq!(reply, "There are 5 commits.");
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 4);
    assert_eq!(
        last_text(&reqs[2]),
        r#"`git log -3 --oneline` shows at most 3 commits, and the task counts them all. Call this instead: shell {"command":"git log --oneline"}"#
    );
    assert_eq!(reqs[2]["tool_choice"], "required");
    assert_eq!(crate::common::content(&reqs[3], 5).lines().count(), 5, "all five commits listed");
    assert_eq!(notes(&h), ["capped_count_reask"]);
}

/// A search that matched no line where `file_read` is not offered goes back with the `grep`
/// that prints every line of the file: the routine's own command reads it, and the count is
/// taken from those lines (the probe's count-warnings task, bench/README.md, stop 38).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_that_matched_nothing_without_file_read_goes_back_with_a_grep_that_prints_the_file() {
    let mock = crate::common::mock_llm::MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write(
        "routines/warnings.yaml",
        "prompt: How many warnings are in logs/worker.log?\nagent: { tools: [shell], allow_commands: [grep] }\n",
    )
    .write(
        "logs/worker.log",
        "10:00 INFO started\n10:01 WARN slow\n10:02 INFO ok\n10:03 WARN retrying\n10:04 ERROR failed\n10:05 INFO done\n",
    );
    mock.push_all([
        tool_call("shell", json!({"command": "grep -n 'warning' logs/worker.log"})),
        text("There are no warnings."),
        tool_call("shell", json!({"command": "grep -n '' logs/worker.log"})),
        text("1"),
        text("```python\ndef keep(line: str) -> bool:\n    return 'WARN' in line\n```"),
        text("ANSWER: 2"),
    ]);
    let o = p.run_async(["run", "warnings", "--json"]).await;
    assert_eq!(o.json()["output"], "2", "{}", o.stdout);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 6, "the search, the send-back, the grep, the code, the answer: {}", o.stdout);
    let back = crate::common::last_message(&reqs[2])["content"].as_str().unwrap().to_string();
    assert!(
        back.ends_with(r#"Read the file itself and answer from its lines: call this, which prints all of its lines: shell {"command":"grep -n '' logs/worker.log"}."#),
        "{back}"
    );
    assert_eq!(reqs[2]["tool_choice"], "required");
    let answer = crate::common::content(&reqs[5], 1);
    assert!(answer.contains("4:10:03 WARN retrying") && !answer.contains("INFO"), "{answer}");
    mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_asking_again_fails_the_earlier_answer_stands() {
    let h = Harness::new().await;
    h.mock.push_all([tool_call("file_read", json!({"path": "status.json"})), text("NO_REPLY")]);
    let mut agent = routine_agent(&h, Autonomy::ReadOnly);
    // The earlier answer stands, and is a silence over a failed check: the turn fails.
    let e = agent.process_message("Check status.json; reply NO_REPLY if all is up.").await.unwrap_err();
    assert!(e.to_string().starts_with("every tool call failed: "), "{e}");
    assert_eq!(notes(&h), ["failed_check_reask", "failed_check_reask", "calls_failed"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_call_moves_the_model_on_to_the_other_tools() {
    let h = Harness::new().await;
    h.write("notes/meeting.md", "- Ben will send the invoice.\n");
    let read = || tool_call("file_read", json!({"path": "notes/meeting.md"}));
    h.mock.push_all([
        read(),
        read(),
        tool_call("file_write", json!({"path": "actions.md", "content": "Ben: send the invoice\n"})),
        text("Wrote actions.md."),
    ]);
    let mut agent = routine_agent(&h, Autonomy::Full);
    let reply = agent.process_message("Write the action items of notes/meeting.md to actions.md.").await.unwrap();
    assert_eq!(reply, "Wrote actions.md.");
    assert_eq!(std::fs::read_to_string(h.workspace().join("actions.md")).unwrap(), "Ben: send the invoice\n");
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 4);
    let third = tool_names(&reqs[2]);
    assert!(third.contains(&"file_write".to_string()) && !third.contains(&"file_read".to_string()), "{third:?}");
    assert!(last_text(&reqs[2]).starts_with("You already have the result of that call above"));
    // The repeat is recorded, but the conversation holds the call once.
    assert_eq!(reqs[2]["messages"].to_string().matches("notes/meeting.md\\\"}").count(), 1, "{}", reqs[2]);
    let statuses: Vec<ToolStatus> = tool_events(&h).into_iter().map(|(_, status)| status).collect();
    assert_eq!(statuses, [ToolStatus::Success, ToolStatus::Duplicate, ToolStatus::Success]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_call_repeated_with_nothing_in_hand_is_sent_back_with_a_call_required() {
    let h = Harness::new().await;
    h.write("logs/access.log", "GET /a 404\nGET /b 200\nGET /c 404\nGET /d 404\n");
    let piped = || tool_call("shell", json!({"command": "grep -w 404 logs/access.log | wc -l"}));
    h.mock.push_all([
        piped(),
        piped(),
        tool_call("shell", json!({"command": "grep -c -w 404 logs/access.log"})),
        text("3"),
    ]);
    let mut agent = h.agent_with(
        Autonomy::Full,
        |o, _| o.first_call = routines::config::routine_file::FirstCall::Tool,
        |p| p.allowed_commands = vec!["grep".into(), "wc".into()],
    );
    agent.set_routine_name("count");
    assert_eq!(agent.process_message("How many requests in logs/access.log returned 404?").await.unwrap(), "3");
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 4);
    assert_eq!(
        last_text(&reqs[2]),
        "Your last tool call failed. Call this instead: shell {\"command\":\"grep -c -w 404 logs/access.log\"}",
        "the refusal's one command goes back as the call to make, without the pipe to copy"
    );
    assert_eq!(reqs[2]["tool_choice"], "required");
    assert!(tool_names(&reqs[2]).contains(&"shell".to_string()), "the repeated tool is offered again");
    // What the count rests on is the command that ran; the refused one never did.
    assert_eq!(crate::common::content(&reqs[3], reqs[3]["messages"].as_array().unwrap().len() - 1), "3\n");
    let statuses: Vec<ToolStatus> = tool_events(&h).into_iter().map(|(_, s)| s).collect();
    assert_eq!(statuses, [ToolStatus::Refused, ToolStatus::Duplicate, ToolStatus::Success]);
    assert_eq!(notes(&h), ["failed_check_reask"]);
}

/// An answer right after a refusal whose message names the one command that does the job ("I
/// will try again.", delivered as the output before) goes back once with that command; the
/// policy still decides the call, and the count rests on the command that ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_after_a_refused_pipe_is_sent_back_with_the_one_command() {
    let h = Harness::new().await;
    h.write("TODO.md", "- [ ] open one\n- [x] done\n- [ ] open two\n");
    h.mock.push_all([
        tool_call("shell", json!({"command": "grep -n 'open' TODO.md | wc -l"})),
        text("I will try again."),
        tool_call("shell", json!({"command": "grep -c -n 'open' TODO.md"})),
        text("2"),
    ]);
    let mut agent = h.agent_with(
        Autonomy::Full,
        |o, _| o.first_call = routines::config::routine_file::FirstCall::Tool,
        |p| p.allowed_commands = vec!["grep".into()],
    );
    agent.set_routine_name("todos");
    assert_eq!(agent.process_message("How many tasks are still open?").await.unwrap(), "2");
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 4);
    assert_eq!(
        last_text(&reqs[2]),
        "Your last tool call failed. Call this instead: shell {\"command\":\"grep -c -n 'open' TODO.md\"}"
    );
    assert_eq!(reqs[2]["tool_choice"], "required");
    let statuses: Vec<ToolStatus> = tool_events(&h).into_iter().map(|(_, s)| s).collect();
    assert_eq!(statuses, [ToolStatus::Refused, ToolStatus::Success]);
    assert_eq!(notes(&h), ["failed_check_reask"]);
}

/// Any answer after part of a file (the first line of a config file, and the port "8080" made
/// up for the 8420 of line 6) asks once for the lines the task asks about, with a call
/// required; a task that asks for the first line is answered from it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_after_part_of_a_file_asks_for_the_rest_unless_the_task_asked_for_that_part() {
    let h = Harness::new().await;
    h.write("config/app.toml", "[app]\nname = \"inventory\"\n\n[server]\nhost = \"0.0.0.0\"\nport = 8420\n");
    let first_line = || tool_call("file_read", json!({"path": "config/app.toml", "limit": 1}));
    h.mock.push_all([
        first_line(),
        text("The app listens on port 8080."),
        tool_call("file_read", json!({"path": "config/app.toml"})),
        text("8420"),
    ]);
    let mut agent = routine_agent(&h, Autonomy::ReadOnly);
    let answer = agent.process_message("Which port does the app listen on, according to config/app.toml?").await;
    assert_eq!(answer.unwrap(), "8420");
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 4);
    assert_eq!(
        last_text(&reqs[2]),
        "You read only lines 1-1 of the 6 lines of `config/app.toml`. Read the lines the task asks about, then answer."
    );
    assert_eq!(reqs[2]["tool_choice"], "required");
    assert_eq!(notes(&h), ["part_read_reask"]);
    h.mock.assert_clean();

    h.mock.push_all([first_line(), text("[app]")]);
    assert_eq!(agent.process_message("What is the first line of config/app.toml?").await.unwrap(), "[app]");
    assert_eq!(h.mock.requests().len(), 6, "the part the task asked for: no request more");
    h.mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_call_repeated_after_a_look_that_worked_goes_to_the_answer() {
    let h = Harness::new().await;
    h.write("a.txt", "alpha\n");
    h.mock.push_all([
        tool_call("file_read", json!({"path": "a.txt"})),
        tool_call("file_read", json!({"path": "b.txt"})),
        tool_call("file_read", json!({"path": "b.txt"})),
        text("a.txt says alpha; b.txt is missing."),
    ]);
    let mut agent = routine_agent(&h, Autonomy::ReadOnly);
    let reply = agent.process_message("Summarize the notes.").await.unwrap();
    assert_eq!(reply, "a.txt says alpha; b.txt is missing.");
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 4);
    assert!(reqs[3].get("tool_choice").is_none(), "nothing is required: the model has a result to answer from");
    assert!(!notes(&h).contains(&"failed_check_reask"), "{:?}", notes(&h));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advice_after_a_command_called_wrong_is_sent_back_with_the_failure() {
    let h = Harness::new().await;
    h.write("app.log", "INFO up\nERROR disk full\n");
    h.mock.push_all([
        tool_call("shell", json!({"command": "grep --errors-only ERROR app.log"})),
        text("The option --errors-only is not recognized; try grep ERROR app.log instead."),
        tool_call("shell", json!({"command": "grep ERROR app.log"})),
        text("ERROR disk full"),
    ]);
    let mut agent = h.agent_with(
        Autonomy::Full,
        |o, _| o.first_call = routines::config::routine_file::FirstCall::Tool,
        |p| p.allowed_commands = vec!["grep".into()],
    );
    agent.set_routine_name("errors");
    assert_eq!(agent.process_message("Quote the errors in app.log.").await.unwrap(), "ERROR disk full");
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 4);
    let sent_back = last_text(&reqs[2]);
    assert!(
        sent_back.starts_with("Your last tool call failed:\nshell {\"command\":\"grep --errors-only"),
        "{sent_back}"
    );
    assert!(sent_back.to_lowercase().contains("unrecognized option"), "grep's own words go back: {sent_back}");
    assert_eq!(reqs[2]["tool_choice"], "required");
    assert!(!reqs[2].to_string().contains("try grep ERROR"), "the advice is not in the conversation");
    assert_eq!(notes(&h), ["failed_check_reask"]);
}

/// Runs `git args` in the harness's workspace, as the runner makes a repository (never the agent).
/// A routine agent held to a first tool call that may run `git`.
pub(super) fn git_agent(h: &Harness, routine: &str) -> routines::agent::Agent {
    let mut agent = h.agent_with(
        Autonomy::Full,
        |o, _| {
            o.first_call = routines::config::routine_file::FirstCall::Tool;
            o.assists.level = routines::config::AssistLevel::Full;
        },
        |p| p.allowed_commands = vec!["git".into()],
    );
    agent.set_routine_name(routine);
    agent
}

/// A harness whose workspace is a git repository of one commit, "Add CSV export" by Dara Singh.
async fn dara_repo() -> Harness {
    let h = Harness::new().await;
    h.write("export.py", "x = 1\n");
    let git = |args: &[&str]| git_in(&h, args);
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "export.py"]);
    git(&["-c", "user.name=Dara Singh", "-c", "user.email=dara@example.com", "commit", "-q", "-m", "Add CSV export"]);
    h
}

pub(super) fn git_in(h: &Harness, args: &[&str]) {
    super::git(&h.workspace(), args, &[]);
}

/// `git log --author=Dara Singh` (the local model's command for "how many commits has Ana Lima
/// made") splits the name; the failure names the split word and the command with the value
/// quoted, and that command goes back as the call to make and runs against a real repository.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_option_value_split_into_words_goes_back_as_the_command_with_it_joined() {
    let h = dara_repo().await;
    h.mock.push_all([
        tool_call("shell", json!({"command": "git log --author=Dara Singh --oneline"})),
        text("Dara Singh has made 0 commits."),
        tool_call("shell", json!({"command": "git log '--author=Dara Singh' --oneline"})),
        text("Dara Singh has made 1 commit."),
    ]);
    let mut agent = git_agent(&h, "by-author");
    let reply = agent.process_message("How many commits has Dara Singh made in this repository?").await.unwrap();
    assert_eq!(reply, "Dara Singh has made 1 commit.");
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 4);
    let failed = crate::common::content(&reqs[1], 3);
    assert!(
        failed.starts_with("[failed] exit code 128; `Singh` became an argument of its own; with the value as one argument: `git log '--author=Dara Singh' --oneline`"),
        "{failed}"
    );
    assert_eq!(
        last_text(&reqs[2]),
        r#"Your last tool call failed. Call this instead: shell {"command":"git log '--author=Dara Singh' --oneline"}"#
    );
    assert!(crate::common::content(&reqs[3], 5).ends_with("Add CSV export\n"), "the quoted value ran as one");
    assert_eq!(tool_events(&h), [("shell".into(), ToolStatus::Failed), ("shell".into(), ToolStatus::Success)]);
}

/// When every call failed and the model repeats the failed call, the answer is asked for as the
/// line that fails the run: told to answer "based on the tool results above", the local model
/// answered "Ana Lima has made 0 commits" after two failed calls (bench/README.md, stop 40).
/// Whatever the model then says, in any words, the turn fails naming the failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_after_every_call_failed_is_asked_as_a_report_of_the_failure() {
    let h = Harness::new().await;
    let log = || tool_call("shell", json!({"command": "git log --oneline"}));
    h.mock.push_all([
        log(),
        text("There are 0 commits."),
        log(),
        text("The task could not be done: git says this folder is not a repository."),
    ]);
    let mut agent = git_agent(&h, "commits");
    let e = agent.process_message("How many commits are there in this repository?").await.unwrap_err();
    assert_eq!(e.to_string(), "every tool call failed: shell git log --oneline: exit code 128");
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 4);
    assert_eq!(
        last_text(&reqs[3]),
        "You already have the result of that call above; do not make it again. Every tool call so far failed: if another tool can get the facts, call it; otherwise reply with one line: TASK_FAILED: and what failed, without stating a result."
    );
    let statuses: Vec<ToolStatus> = tool_events(&h).into_iter().map(|(_, s)| s).collect();
    assert_eq!(statuses, [ToolStatus::Failed, ToolStatus::Duplicate]);
}
