//! `routines run`: output, records, failures, retries, timeouts, dry runs and overlap.

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{DAILY, mock, parse_local, system, user};
use crate::common::Routines;
use crate::common::mock_llm::{error, hang, text, tool_call};
use crate::common::os::processes_with_arg;
use crate::common::wait;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_prints_the_final_output_and_records_the_run() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write("routines/daily.yaml", DAILY);
    mock.push(text("Three commits, all green.\n\n"));
    let o = p.run_async(["run", "daily", "--var", "repo=acme/web"]).await;
    o.success().stdout_is("Three commits, all green.\n");
    assert!(o.stderr.starts_with("running daily...\nrun 1: succeeded in "), "{o}");
    assert!(o.stderr.ends_with("s · 1 model call · 15 tokens\n"), "{o}");

    let reqs = mock.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(user(&reqs[0]), "Summarize acme/web for daily.");
    assert_eq!(reqs[0]["model"], "mock-model");
    assert!(system(&reqs[0]).contains("You are running the routine `daily` unattended"), "{}", system(&reqs[0]));
    assert!(system(&reqs[0]).contains("(Asia/Shanghai)"));

    let runs = p.history(&[]).await;
    assert_eq!(runs.len(), 1);
    let r = &runs[0];
    let keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "completion_tokens",
            "duration_ms",
            "error",
            "finished_at",
            "model_calls",
            "prompt_tokens",
            "routine",
            "run_id",
            "scheduled_for",
            "started_at",
            "status",
            "tokens",
            "trigger"
        ]
    );
    assert_eq!(
        (&r["run_id"], &r["routine"], &r["status"], &r["trigger"], &r["scheduled_for"], &r["error"]),
        (&json!(1), &json!("daily"), &json!("succeeded"), &json!("manual"), &Value::Null, &Value::Null)
    );
    assert!(parse_local(&r["started_at"]) <= parse_local(&r["finished_at"]));

    let show = p.show(1).await;
    assert_eq!(show["prompt"], "Summarize acme/web for daily.");
    assert_eq!(show["output"], "Three commits, all green.\n\n");
    assert_eq!(show["tokens"], json!({"prompt": 10, "completion": 5}));
    assert_eq!(show["iterations"], 1);
    let events: Vec<Value> =
        show["events"].as_array().unwrap().iter().map(|e| json!([e["kind"], e["status"]])).collect();
    assert_eq!(events, [json!(["model_call", "ok"])]);
    mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_json_has_the_documented_shape() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write("routines/daily.yaml", DAILY);
    mock.push(text("All good."));
    let o = p.run_async(["run", "daily", "--json"]).await;
    o.success();
    let v = o.json();
    assert_eq!(
        (&v["run_id"], &v["routine"], &v["status"], &v["output"], &v["error"]),
        (&json!(1), &json!("daily"), &json!("succeeded"), &json!("All good."), &Value::Null)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_prints_both_prompts_and_calls_no_model() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write("routines/daily.yaml", DAILY);
    let o = p.run_async(["run", "daily", "--dry-run", "--var", "repo=acme/api"]).await;
    o.success();
    assert!(o.stdout.starts_with("# System prompt\n\n## Identity\n"), "{o}");
    o.stdout_has("\n## Routine execution\nYou are running the routine `daily` unattended");
    assert!(o.stdout.ends_with("\n# Prompt\n\nSummarize acme/api for daily.\n"), "{o}");

    let o = p.run_async(["run", "daily", "--dry-run", "--json"]).await;
    let v = o.json();
    assert_eq!((&v["routine"], &v["prompt"]), (&json!("daily"), &json!("Summarize acme/app for daily.")));
    assert!(v["system_prompt"].as_str().unwrap().starts_with("## Identity\n"));
    assert_eq!(mock.request_count(), 0);
    assert!(p.history(&[]).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_run_exits_1_with_an_error_line() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write("routines/daily.yaml", DAILY);
    mock.push(error(400, "the model `mock-model` does not support tools"));
    let o = p.run_async(["run", "daily"]).await;
    o.code(1).stdout_is("");
    let tail: Vec<&str> = o.stderr.lines().rev().take(2).collect();
    assert_eq!(tail[0], "  details: routines show 1");
    assert!(tail[1].starts_with("error: run 1 failed: "), "{o}");
    assert!(tail[1].contains("the model `mock-model` does not support tools"), "{o}");

    mock.push(error(404, "no such model"));
    let o = p.run_async(["run", "daily", "--json"]).await;
    o.code(1);
    let v = o.json();
    assert_eq!((&v["status"], &v["output"]), (&json!("failed"), &Value::Null));
    assert!(v["error"].as_str().unwrap().contains("no such model"), "{v}");
    let runs = p.history(&["--status", "failed"]).await;
    assert_eq!(runs.iter().map(|r| r["run_id"].as_i64().unwrap()).collect::<Vec<_>>(), [2, 1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_that_cannot_be_rendered_fails_the_run_before_any_model_call() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write("routines/deploy.yaml", "prompt: Deploy {{ vars.branch }}.\n");
    let o = p.run_async(["run", "deploy"]).await;
    o.code(1).stderr_has("error: run 1 failed: template `prompt` uses `vars.branch`, which is not defined");
    mock.push(text("Deployed."));
    let o = p.run_async(["run", "deploy", "--var", "branch=main"]).await;
    o.success().stdout_is("Deployed.\n");
    assert_eq!(user(&mock.requests()[0]), "Deploy main.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_cannot_be_set_up_is_a_recorded_failure() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "workspace: no-such-folder\n");
    p.write("routines/daily.yaml", DAILY);
    let o = p.run_async(["run", "daily"]).await;
    o.code(1).stderr_has("error: run 1 failed: cannot set up the agent: ");
    let runs = p.history(&[]).await;
    assert_eq!(runs[0]["status"], "failed");
    assert_eq!(mock.request_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_reply_delivers_nothing_and_exits_0() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write(
        "routines/watch.yaml",
        "prompt: Anything new? If not, say NO_REPLY.\ndeliver:\n  - file: { path: out/watch.md }\n",
    );
    // The model says NO_REPLY after looking, and the code check of what it saw agrees.
    mock.push_all([tool_call("file_list", json!({})), text("NO_REPLY"), text(super::NOTHING_FOUND)]);
    let o = p.run_async(["run", "watch"]).await;
    o.success().stdout_is("");
    assert!(
        o.stderr.starts_with("running watch...\n  · file_list: .\n  ✓ file_list: routines/\nrun 1: silent in "),
        "{o}"
    );
    assert!(o.stderr.ends_with(" · 2 model calls · 30 tokens (nothing to report; nothing delivered)\n"), "{o}");
    assert!(!p.path().join("out").exists());
    let show = p.show(1).await;
    assert_eq!((&show["status"], &show["deliveries"]), (&json!("silent"), &json!([])));
    let sys = system(&mock.requests()[0]);
    let routine_section = sys.split("\n## Routine execution\n").nth(1).unwrap();
    assert!(routine_section.contains("NO_REPLY"), "{routine_section}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_are_retried_with_backoff_and_then_fail() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write("routines/flaky.yaml", "prompt: Go.\nretry: { attempts: 3, backoff: 100ms }\n");
    mock.push_all([error(500, "overloaded"), error(503, "still overloaded"), text("Made it.")]);
    let o = p.run_async(["run", "flaky"]).await;
    o.success().stdout_is("Made it.\n");
    assert_eq!(mock.request_count(), 3);
    assert_eq!(p.show(1).await["attempt"], 3);

    mock.push_all([error(500, "down"), error(500, "down"), error(500, "down for good")]);
    let o = p.run_async(["run", "flaky"]).await;
    o.code(1);
    assert_eq!(mock.request_count(), 6);
    o.stderr_has("down for good");
    let show = p.show(2).await;
    assert_eq!((&show["status"], &show["attempt"]), (&json!("failed"), &json!(3)));

    // A client error is not retried.
    mock.push(error(400, "bad request"));
    let o = p.run_async(["run", "flaky"]).await;
    o.code(1);
    assert_eq!(mock.request_count(), 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_failure_deliveries_are_written_when_the_run_fails() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write("templates/failure.txt.j2", "{{ routine.name }} ended {{ status }}: {{ error }}\n").write(
        "routines/nightly.yaml",
        "prompt: Go.\nretry: { attempts: 1 }\ndeliver:\n  - file: { path: reports/nightly.md }\non_failure:\n  deliver:\n    - file: { path: \"alerts/{{ routine.name }}-{{ run.id }}.txt\", template: failure.txt.j2 }\n",
    );
    mock.push(error(400, "quota exhausted"));
    let o = p.run_async(["run", "nightly"]).await;
    o.code(1).stderr_has("  delivered to alerts/nightly-1.txt\n");
    let alert = p.read("alerts/nightly-1.txt");
    assert!(alert.starts_with("nightly ended failed: "), "{alert}");
    assert!(alert.contains("quota exhausted"), "{alert}");
    assert!(!p.path().join("reports").exists());
    let show = p.show(1).await;
    assert_eq!(
        show["deliveries"],
        json!([{"target": "alerts/nightly-1.txt", "kind": "file", "status": "delivered", "error": null, "attempts": 1, "on_failure": true, "permanent": false}])
    );

    // A successful run does not use them.
    mock.push(text("ok"));
    let o = p.run_async(["run", "nightly"]).await;
    o.success();
    assert!(!p.path().join("alerts/nightly-2.txt").exists());
    assert_eq!(p.read("reports/nightly.md"), "ok\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_run_is_cancelled_and_its_processes_killed() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "security:\n  allowed_commands: [sh, sleep, echo]\n");
    // A duration no other test uses, by which the grandchild is found on the host (inside the
    // sandbox's PID namespace it has another pid).
    p.write("spawn.sh", "sleep 300.217 &\necho $! > grandchild.pid\nsleep 300\n").write(
        "routines/stuck.yaml",
        "prompt: Run spawn.sh.\ntimeout: 2s\nagent: { autonomy: full, tools: [shell] }\n",
    );
    mock.push_all([tool_call("shell", json!({"command": "sh spawn.sh"})), text("never asked")]);
    let o = p.run_async(["run", "stuck"]).await;
    o.code(1).stderr_has(
        "error: run 1 timed_out: the run did not finish within its timeout of 2s; it was cancelled and its processes killed\n",
    );
    assert_eq!(mock.request_count(), 1);
    assert!(p.path().join("grandchild.pid").exists(), "the grandchild was started");
    assert_eq!(processes_with_arg("300.217"), Vec::<i32>::new(), "the grandchild survived the timeout");
    let runs = p.history(&["stuck", "--status", "timed_out"]).await;
    assert_eq!(runs.len(), 1);
    let show = p.show(1).await;
    let events: Vec<Value> = show["events"].as_array().unwrap().iter().map(|e| json!([e["kind"], e["tool"]])).collect();
    assert_eq!(events[0], json!(["model_call", null]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_process_died_is_found_interrupted() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write("routines/daily.yaml", DAILY);
    mock.push(hang());
    let mut run = p.command(["run", "daily"]).spawn().await;
    mock.wait_for_requests(1).await;
    let status = run.kill().await;
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGKILL));

    let runs = p.history(&[]).await;
    assert_eq!(runs.len(), 1);
    assert_eq!(
        (&runs[0]["status"], &runs[0]["error"]),
        (&json!("interrupted"), &json!("the process running it stopped before it finished"))
    );
    parse_local(&runs[0]["finished_at"]);
    let o = p.run_async(["list", "--json"]).await;
    assert_eq!(o.json()[0]["last_status"], "interrupted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlap_skip_refuses_a_second_run_and_queue_waits_for_the_first() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write("routines/slow.yaml", "prompt: Go.\n").write("routines/queued.yaml", "prompt: Go.\noverlap: queue\n");
    mock.push(hang());
    let mut first = p.command(["run", "slow"]).spawn().await;
    mock.wait_for_requests(1).await;
    let o = p.run_async(["run", "slow"]).await;
    o.code(3)
        .stdout_is("")
        .stderr_is("running slow...\nerror: run 1 of `slow` is still running (overlap: skip); this run was skipped\n");
    first.kill().await;
    let runs = p.history(&["slow"]).await;
    let statuses: Vec<&str> = runs.iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["skipped", "interrupted"]);

    // queue: the second run waits until the first one's process is gone.
    mock.push_all([hang(), text("After the first.")]);
    let mut first = p.command(["run", "queued"]).spawn().await;
    mock.wait_for_requests(2).await;
    let second = p.command(["run", "queued"]).spawn().await;
    // Wait (bounded) until the second run is recorded as waiting.
    let queued = async || (p.history(&["queued", "--status", "queued"]).await.len() == 1).then_some(());
    let waiting = wait::poll(Duration::from_secs(15), Duration::from_millis(50), queued).await;
    assert!(waiting.is_some(), "the second run was never queued");
    assert_eq!(mock.request_count(), 2);
    first.kill().await;
    second.finish(Duration::from_secs(60)).await.success().stdout_is("After the first.\n");
    let statuses: Vec<String> =
        p.history(&["queued"]).await.iter().map(|r| r["status"].as_str().unwrap().to_string()).collect();
    assert_eq!(statuses, ["succeeded", "interrupted"]);
}
