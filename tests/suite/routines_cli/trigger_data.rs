//! `routines run NAME --body FILE|- --header NAME:VALUE`: a webhook or file routine tried by
//! hand gets the trigger data it would get from a request or a file event.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::{mock, user};
use crate::common::Routines;
use crate::common::mock_llm::text;

const HOOK: &str = "on: [{ webhook: { path: /hooks/deploy, auth: none } }]\nprompt: \"Deploy {{ trigger.json.ref }} ({{ trigger.headers['x-event'] }}): {{ trigger.body }}\"\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_routine_runs_by_hand_with_a_body_from_stdin_and_headers() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write("routines/deploy-hook.yaml", HOOK);

    // Without a body the template cannot render, and says what is missing.
    let o = p.run_async(["run", "deploy-hook"]).await;
    assert_ne!(o.code, 0, "{o}");
    o.stderr_has("is not defined");

    mock.push(text("Deployed."));
    let o = p
        .command([
            "run",
            "deploy-hook",
            "--body",
            "-",
            "--header",
            "X-Event: push",
            "--header",
            "Authorization:Bearer s",
        ])
        .stdin(r#"{"ref":"main"}"#)
        .run_async()
        .await;
    o.success().stdout_is("Deployed.\n");
    let prompt = user(&mock.requests()[0]);
    // The request's data is fenced as data, as a real request's is.
    let fenced = |value: &str| format!(">{value}</untrusted_data>");
    assert!(prompt.starts_with("Deploy <untrusted_data"), "{prompt}");
    for value in ["main", "push", r#"{"ref":"main"}"#] {
        assert!(prompt.contains(&fenced(value)), "{value} in {prompt}");
    }

    let show = p.show(2).await;
    assert_eq!(show["trigger"], "manual", "a run by hand stays `manual`");
    let context = &show["trigger_context"];
    assert_eq!(
        (&context["path"], &context["headers"], &context["json"]),
        (&json!("/hooks/deploy"), &json!({"x-event": "push"}), &json!({"ref": "main"})),
        "credentials are left out as the listener leaves them out"
    );
    mock.assert_clean();
}

/// `show` prints the data a run was given by hand, indented like the prompt and cut when long.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_prints_the_trigger_data_given_by_hand_cut_when_long() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write("routines/deploy-hook.yaml", HOOK);
    mock.push(text("Deployed."));
    let mut body = json!({"ref": "main"});
    for i in 0..60 {
        body[format!("k{i:02}")] = json!(i);
    }
    let o = p
        .command(["run", "deploy-hook", "--body", "-", "--header", "X-Event: push"])
        .stdin(&body.to_string())
        .run_async()
        .await;
    o.success();
    let o = p.run(["show", "1"]);
    o.success()
        .stdout_has("\ntrigger data:\n  {\n")
        .stdout_has("\"x-event\": \"push\"")
        .stdout_has(" more line(s); `routines show --json` has all of it\n");
    let data = o.stdout.split("trigger data:\n").nth(1).unwrap().split("\nprompt:").next().unwrap();
    assert_eq!(data.lines().count(), 41, "40 lines and the mark: {data}");
    assert!(data.contains("\"k00\": 0") && !data.contains("k59"), "cut after 40 lines: {data}");
    let body = data.lines().find(|l| l.starts_with("    \"body\": ")).expect("the body");
    assert!(body.ends_with('…') && body.chars().count() == 2 + 200 + 1, "a long line is cut: {body}");
    mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_routine_gets_the_file_given_as_its_path() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write(
        "routines/inbox.yaml",
        "on: [{ file: { paths: [\"inbox/*.csv\"] } }]\nprompt: \"New {{ trigger.event }} {{ trigger.path }}\"\n",
    )
    .write("inbox/a.csv", "x,y\n");
    let o = p.run_async(["run", "inbox", "--body", "inbox/a.csv", "--dry-run", "--json"]).await;
    o.success();
    let prompt = o.json()["prompt"].as_str().unwrap().to_string();
    // The fields a file event sets in the daemon (`trigger.body` is a webhook's only, and
    // `validate` refuses it in a routine with only file triggers).
    // The path is fenced as data from outside, as a file event's is.
    assert!(prompt.starts_with("New create <untrusted_data"), "{prompt}");
    assert!(prompt.contains(">inbox/a.csv</untrusted_data>"), "{prompt}");
    assert_eq!(mock.request_count(), 0);
}

#[test]
fn a_bad_header_or_an_unreadable_body_is_a_usage_error_with_a_hint() {
    let p = Routines::offline();
    p.write("routines/deploy-hook.yaml", HOOK);
    let o = p.run(["run", "deploy-hook", "--header", "no-colon"]);
    o.code(2).stdout_is("").stderr_has("`no-colon` is not NAME:VALUE; write e.g. --header 'X-Event: push'");
    let o = p.run(["run", "deploy-hook", "--body", "missing.json"]);
    o.code(2)
        .stderr_has("error: cannot read the body missing.json: ")
        .stderr_has("help: give a file that exists, or `-` to read the body from stdin");
}
