//! Changes a routine turn does not make as the model wrote them, checked on disk: an edit that
//! leaves the box of the item to mark as it was (`agent/edit_check.rs`), a list written to a
//! file that names other lines than the task asks about, and a copy written where the task asks
//! for a number (`agent/holds.rs`); and a failed call on a path that does not exist, sent back
//! with the file the task names (`agent/named.rs`). Through `routines run`, with a scripted model
//! and the real sandbox.

use serde_json::json;

use crate::common::Routines;
use crate::common::mock_llm::{MockLlm, text, tool_call};

/// A project whose routine `task` runs `prompt` with `tools` over `file` holding `body`.
fn project(mock: &MockLlm, prompt: &str, tools: &str, file: &str, body: &str) -> Routines {
    let p = super::assisted(&mock.base_url(), "");
    p.write(
        "routines/task.yaml",
        &format!("prompt: {prompt}\nagent: {{ tools: [{tools}], allow_commands: [grep] }}\n"),
    )
    .write(file, body);
    p
}

/// `Mark "Write tests" as done`: the local model replaced `Write tests` with `Done`. The edit is
/// not run; the one that ticks the box goes back as the call to make, and the file ends ticked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_that_leaves_the_box_open_is_not_run_and_the_ticking_edit_goes_back() {
    let mock = MockLlm::start().await;
    let todo = "# This week\n- [x] Fix login bug\n- [ ] Write tests\n- [ ] Update docs\n";
    let p = project(&mock, "Mark \"Write tests\" as done in todo.md.", "file_read, file_edit", "todo.md", todo);
    mock.push_all([
        tool_call("file_edit", json!({"path": "todo.md", "old_string": "Write tests", "new_string": "Done"})),
        tool_call(
            "file_edit",
            json!({"path": "todo.md", "old_string": "- [ ] Write tests", "new_string": "- [x] Write tests"}),
        ),
        text("Marked \"Write tests\" as done."),
    ]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["status"], "succeeded", "{}", o.stdout);
    assert_eq!(p.read("todo.md"), "# This week\n- [x] Fix login bug\n- [x] Write tests\n- [ ] Update docs\n");
    let reqs = mock.requests();
    assert_eq!(
        crate::common::last_message(&reqs[1])["content"],
        r#"[failed] not run: after this edit `- [ ] Write tests` would still not be ticked. Call this instead: file_edit {"new_string":"- [x] Write tests","old_string":"- [ ] Write tests","path":"todo.md"}"#
    );
    mock.assert_clean();
}

/// An edit that removes the words the task quotes, where it asks for no removal, is not run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_that_removes_the_words_the_task_names_is_not_run() {
    let mock = MockLlm::start().await;
    let notes = "Release plan\nOwner: Dana\nStatus: draft\n";
    let p = project(
        &mock,
        "Set the status of \"Release plan\" in plan.md to final.",
        "file_read, file_edit",
        "plan.md",
        notes,
    );
    mock.push_all([
        tool_call("file_edit", json!({"path": "plan.md", "old_string": "Release plan", "new_string": "final"})),
        tool_call(
            "file_edit",
            json!({"path": "plan.md", "old_string": "Status: draft", "new_string": "Status: final"}),
        ),
        text("The status is now final."),
    ]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["status"], "succeeded", "{}", o.stdout);
    assert_eq!(p.read("plan.md"), "Release plan\nOwner: Dana\nStatus: final\n", "the title is still there");
    let show = p.show(1).await;
    assert_eq!(
        super::note_details(&show, "write_held"),
        ["file_edit: it removes \"Release plan\", which the task names; not run"]
    );
    mock.assert_clean();
}

const HOSTS: &str = "host,ip,status\nweb-1,10.0.0.11,up\nweb-2,10.0.0.12,down\ndb-1,10.0.0.21,up\ncache-1,10.0.0.31,down\nqueue-1,10.0.0.41,up\n";

/// "Write the names of the hosts that are down": the local model wrote `web-2`, `db-1` and
/// `queue-1`. The list is checked against the engine's selection; it is not run, the rows asked
/// about go back, and the file ends with those.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_written_with_other_lines_than_the_task_asks_about_is_not_run() {
    let mock = MockLlm::start().await;
    let task = "Write the names of the hosts that are down in hosts.csv to down.txt, one per line.";
    let p = project(&mock, task, "file_read, file_write", "hosts.csv", HOSTS);
    mock.push_all([
        tool_call("file_read", json!({"path": "hosts.csv"})),
        tool_call("file_write", json!({"path": "down.txt", "content": "web-2\ndb-1\nqueue-1\n"})),
        text("```python\ndef keep(item: dict) -> bool:\n    return item['status'] == 'down'\n```"),
        // The local model made the same write again after the hold.
        tool_call("file_write", json!({"path": "down.txt", "content": "web-2\ndb-1\nqueue-1\n"})),
        tool_call("file_write", json!({"path": "down.txt", "content": "web-2\ncache-1\n"})),
        text("Wrote web-2 and cache-1 to down.txt."),
    ]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["status"], "succeeded", "{}", o.stdout);
    assert_eq!(p.read("down.txt"), "web-2\ncache-1\n", "the wrong list never reached the disk");
    let reqs = mock.requests();
    let held = crate::common::last_message(&reqs[3])["content"].as_str().unwrap().to_string();
    assert!(
        held.starts_with(
            "[failed] not run: this content names lines of `hosts.csv` that are not the ones the task asks about."
        ),
        "{held}"
    );
    assert!(
        held.ends_with(r#"Call this instead: file_write {"content":"web-2\ncache-1\n","path":"down.txt"}"#),
        "{held}"
    );
    assert_eq!(crate::common::last_message(&reqs[4])["content"], held, "the same write gets the same answer");
    let show = p.show(1).await;
    assert_eq!(
        super::note_details(&show, "write_held"),
        [
            "file_write: its content names other lines of hosts.csv than the task asks about; not run",
            "file_write: the list held before, made again; not run"
        ]
    );
    mock.assert_clean();
}

/// The same list, right: it runs after the check, without a hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_with_the_lines_the_task_asks_about_is_written() {
    let mock = MockLlm::start().await;
    let task = "Write the names of the hosts that are down in hosts.csv to down.txt, one per line.";
    let p = project(&mock, task, "file_read, file_write", "hosts.csv", HOSTS);
    mock.push_all([
        tool_call("file_read", json!({"path": "hosts.csv"})),
        tool_call("file_write", json!({"path": "down.txt", "content": "web-2\ncache-1\n"})),
        text("```python\ndef keep(item: dict) -> bool:\n    return item['status'] == 'down'\n```"),
        text("Wrote web-2 and cache-1 to down.txt."),
    ]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["status"], "succeeded", "{}", o.stdout);
    assert_eq!(p.read("down.txt"), "web-2\ncache-1\n");
    let show = p.show(1).await;
    assert!(super::note_details(&show, "write_held").is_empty());
    mock.assert_clean();
}

/// 数一下错误，把数字写到 count.txt：the local model wrote the log's lines, then, told the lines
/// asked about, wrote those. A copy where the task counts goes back with the number to write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_where_the_task_asks_for_a_number_goes_back_with_the_number() {
    let mock = MockLlm::start().await;
    let log = "10:01 ERROR 数据库超时\n10:05 INFO 请求完成\n10:09 ERROR 支付失败\n10:12 ERROR 缓存不可用\n10:20 INFO 请求完成\n";
    let task = "数一下 errors.log 里有多少条错误，把数字写到 count.txt 里。";
    let p = super::assisted(&mock.base_url(), "language: zh\n");
    p.write("routines/task.yaml", &format!("prompt: {task}\nagent: {{ tools: [file_read, file_write] }}\n"))
        .write("errors.log", log);
    mock.push_all([
        tool_call("file_read", json!({"path": "errors.log"})),
        tool_call("file_write", json!({"path": "count.txt", "content": log, "append": true})),
        text("```python\ndef keep(line: str) -> bool:\n    return 'ERROR' in line\n```"),
        tool_call("file_write", json!({"path": "count.txt", "content": "3"})),
        text("已写入 3。"),
        // A count: the answer is asked from the evidence, over the lines selected again.
        text("```python\ndef keep(line: str) -> bool:\n    return 'ERROR' in line\n```"),
        text("答案：errors.log 里有 3 条错误，已写入 count.txt。"),
    ]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["status"], "succeeded", "{}", o.stdout);
    assert_eq!(p.read("count.txt"), "3");
    let reqs = mock.requests();
    let held = crate::common::last_message(&reqs[3])["content"].as_str().unwrap().to_string();
    assert!(held.contains("而任务要的是一个数字，不是这些行"), "{held}");
    assert!(
        held.ends_with(
            "请写入这个数字：3。\n改为这样调用：file_write {\"append\":true,\"content\":\"3\",\"path\":\"count.txt\"}"
        ),
        "{held}"
    );
    mock.assert_clean();
}

/// Asked about `server.log`, the local model searched `logs/sync.log`, which does not exist,
/// twice. The failure goes back with the same call on the file the task names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_on_a_path_that_does_not_exist_goes_back_on_the_file_the_task_names() {
    let mock = MockLlm::start().await;
    let log = "08:12 WARN disk 81% full\n08:41 WARN cache miss\n09:02 INFO backup done\n";
    let p = project(&mock, "How many warnings are in server.log?", "shell", "server.log", log);
    mock.push_all([
        tool_call("shell", json!({"command": "grep -c WARN logs/sync.log"})),
        text("The task could not be done: logs/sync.log does not exist."),
        tool_call("shell", json!({"command": "grep -c WARN server.log"})),
        text("There are 2 warnings in server.log."),
    ]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["output"], "There are 2 warnings in server.log.", "{}", o.stdout);
    let reqs = mock.requests();
    assert_eq!(
        super::last_text(&reqs[2]),
        r#"Your last tool call failed. Call this instead: shell {"command":"grep -c WARN server.log"}"#
    );
    mock.assert_clean();
}

/// An answer to a task that asks for a change, after no write or edit succeeded, goes back once
/// (after the edit's failure went back and the model claimed the change again); the change is
/// then made, on disk. The local model answered that a file "now had" a value no edit wrote.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_claims_a_change_no_call_made_goes_back() {
    let mock = MockLlm::start().await;
    let ini = "[server]\nhost = 0.0.0.0\nport = 8080\n";
    let p = project(&mock, "Set the port in server.ini to 9090.", "file_read, file_edit", "server.ini", ini);
    mock.push_all([
        tool_call("file_edit", json!({"path": "server.ini", "old_string": "port: 8080", "new_string": "port: 9090"})),
        text("The port in server.ini is now 9090."),
        // The failure went back; the model claimed the change again.
        text("The port in server.ini is now 9090."),
        tool_call("file_edit", json!({"path": "server.ini", "old_string": "port = 8080", "new_string": "port = 9090"})),
        text("The port is now 9090."),
    ]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["output"], "The port is now 9090.", "{}", o.stdout);
    assert_eq!(p.read("server.ini"), "[server]\nhost = 0.0.0.0\nport = 9090\n");
    let show = p.show(1).await;
    assert_eq!(
        super::note_details(&show, "unchanged_reask"),
        ["the task asks for a change and no write or edit succeeded; asked to make it or say why not"]
    );
    mock.assert_clean();
}

/// "Turn off debug mode in config.yaml": the local model sent `debug mode on` as the text to
/// replace, three times. The file's one line that sets the switch is what the edit must change:
/// the edit that sets it goes back as the call to make, and the file ends with `debug: false`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_that_leaves_a_switch_as_it_was_gets_the_edit_that_turns_it() {
    let mock = MockLlm::start().await;
    let config = "app:\n  name: shop\n  debug: true\n  port: 8080\n";
    let p = project(&mock, "Turn off debug mode in config.yaml.", "file_read, file_edit", "config.yaml", config);
    mock.push_all([
        tool_call(
            "file_edit",
            json!({"path": "config.yaml", "old_string": "debug mode on", "new_string": "debug mode off"}),
        ),
        tool_call(
            "file_edit",
            json!({"path": "config.yaml", "old_string": "  debug: true", "new_string": "  debug: false"}),
        ),
        text("Debug mode is now off."),
    ]);
    let o = p.run_async(["run", "task", "--json"]).await;
    assert_eq!(o.json()["output"], "Debug mode is now off.", "{}", o.stdout);
    assert_eq!(p.read("config.yaml"), "app:\n  name: shop\n  debug: false\n  port: 8080\n");
    let reqs = mock.requests();
    assert_eq!(
        crate::common::last_message(&reqs[1])["content"],
        r#"[failed] not run: after this edit `  debug: true` would still not be as the task asks. Call this instead: file_edit {"new_string":"  debug: false","old_string":"  debug: true","path":"config.yaml"}"#
    );
    mock.assert_clean();
}
