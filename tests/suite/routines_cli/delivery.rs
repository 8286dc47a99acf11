//! File deliveries of a run, and `deliver --retry` for the ones that failed.

use chrono::{Datelike, Utc};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{DAILY, mock};
use crate::common::Routines;
use crate::common::mock_llm::text;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_deliveries_create_overwrite_and_append_rendered_paths() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write("templates/report.md.j2", "# {{ routine.name }} ({{ status }})\n\n{{ output }}\n");
    for (name, mode) in [("once", "create"), ("latest", "overwrite"), ("log", "append")] {
        p.write(
            &format!("routines/{name}.yaml"),
            &format!(
                "prompt: Go.\ndeliver:\n  - file: {{ path: \"reports/{{{{ routine.name }}}}/{{{{ now | date('%Y') }}}}.md\", template: report.md.j2, mode: {mode} }}\n"
            ),
        );
    }
    let year = || Utc::now().with_timezone(&chrono_tz::Asia::Shanghai).year();
    let before = year();
    for name in ["once", "latest", "log"] {
        for reply in ["first", "second"] {
            mock.push(text(reply));
            let o = p.run_async(["run", name]).await;
            o.success();
            assert_eq!(o.stdout.trim(), reply, "{o}");
        }
    }
    if before != year() {
        return; // New Year's Eve in Shanghai during the test: the paths moved on.
    }
    let file = |name: &str| p.read(&format!("reports/{name}/{before}.md"));
    assert_eq!(file("once"), "# once (succeeded)\n\nfirst\n");
    assert_eq!(file("latest"), "# latest (succeeded)\n\nsecond\n");
    assert_eq!(file("log"), "# log (succeeded)\n\nfirst\n# log (succeeded)\n\nsecond\n");
    // The second create found the file and failed, without failing the run.
    let show = p.show(2).await;
    assert_eq!(show["status"], "succeeded");
    assert_eq!(
        show["deliveries"][0]["error"],
        format!("reports/once/{before}.md already exists and mode is create; use overwrite or append")
    );
    assert_eq!(show["deliveries"][0]["status"], "failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_outside_the_workspace_fails_alone() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "workspace: ws\n");
    std::fs::create_dir_all(p.path().join("ws")).unwrap();
    p.write(
        "routines/leak.yaml",
        "prompt: Go.\ndeliver:\n  - file: { path: \"../{{ routine.name }}.md\" }\n  - file: { path: kept.md }\n  - mail: { to: [ops@example.com] }\n  - file: { path: \"{{ vars.dir }}/x.md\" }\n  - file: { path: y.md, template: broken.md.j2 }\n",
    )
    .write("templates/broken.md.j2", "{{ output }} for {{ vars.team }}\n");
    mock.push(text("Report."));
    let o = p.run_async(["run", "leak"]).await;
    o.success()
        .stdout_is("Report.\n")
        .stderr_has("  delivery to ../leak.md failed: ")
        .stderr_has("  delivered to kept.md\n")
        .stderr_has("  mail to ops@example.com queued in the outbox (no SMTP configured)\n");
    assert!(!o.stderr.contains("delivered to ops@example.com"), "{o}");
    assert!(!p.path().join("leak.md").exists());
    assert_eq!(p.read("ws/kept.md"), "Report.\n");
    p.run(["show", "1"])
        .success()
        .stdout_has("  mail ops@example.com  queued in the outbox (no SMTP configured)\n")
        .stdout_has("  file kept.md  delivered\n");
    let show = p.show(1).await;
    assert_eq!(show["status"], "succeeded");
    let d = show["deliveries"].as_array().unwrap();
    let brief: Vec<Value> = d.iter().map(|d| json!([d["target"], d["status"]])).collect();
    assert_eq!(
        brief,
        [
            json!(["../leak.md", "failed"]),
            json!(["kept.md", "delivered"]),
            json!(["ops@example.com", "delivered"]),
            json!(["{{ vars.dir }}/x.md", "failed"]),
            json!(["y.md", "failed"]),
        ]
    );
    assert!(d[0]["error"].as_str().unwrap().contains("outside the workspace"), "{}", d[0]["error"]);
    assert_eq!(d[1]["error"], Value::Null);
    // No SMTP configured: the mail is written to the outbox.
    assert_eq!(d[2]["error"], Value::Null);
    assert_eq!(d[3]["error"], "template `deliver[3].file.path` uses `vars.dir`, which is not defined; `vars` is empty");
    assert_eq!(d[4]["error"], "template `broken.md.j2` uses `vars.team`, which is not defined; `vars` is empty");
    assert!(!p.path().join("ws/y.md").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_deliver_runs_without_delivering() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write("routines/daily.yaml", &format!("{DAILY}deliver:\n  - file: {{ path: out.md }}\n"));
    mock.push(text("Quiet."));
    let o = p.run_async(["run", "daily", "--no-deliver"]).await;
    o.success().stdout_is("Quiet.\n");
    assert!(!p.path().join("out.md").exists());
    assert_eq!(p.show(1).await["deliveries"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_delivery_is_retried_alone_without_the_agent() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write("routines/note.yaml", "prompt: Go.\ndeliver:\n  - file: { path: out/note.md, mode: create }\n");
    p.write("out/note.md", "in the way\n");
    mock.push(text("the report"));
    let o = p.run_async(["run", "note"]).await;
    o.success().stderr_has("delivery to out/note.md failed: out/note.md already exists and mode is create");

    // Still in the way: the retry fails again and says so.
    let o = p.run_async(["deliver", "--retry", "--json"]).await;
    o.code(1);
    assert_eq!(o.json()[0]["status"], "failed");

    std::fs::remove_file(p.path().join("out/note.md")).unwrap();
    let o = p.run_async(["deliver", "--retry"]).await;
    o.success().stderr_is("delivered  run 1  file out/note.md\n");
    assert_eq!(p.read("out/note.md"), "the report\n");
    assert_eq!(mock.request_count(), 1, "the agent did not run again");
    let show = p.show(1).await;
    assert_eq!(show["deliveries"][0]["status"], "delivered");
    assert_eq!(show["deliveries"][0]["attempts"], 3);

    let o = p.run_async(["deliver", "--retry"]).await;
    o.success().stderr_is("nothing to deliver: every delivery has arrived\n");
}
