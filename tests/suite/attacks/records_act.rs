//! What the engine records for people is redacted; what it acts on is not read back from that
//! record. A workspace folder whose absolute path shares 8 characters with the API key
//! (`sk-routine-reports`, key `sk-routine-secret`) once had its delivery target redacted in the
//! database, read back, and the report written to `[redacted]reports/…`, outside the
//! workspace, while the run said `delivered`. Mail recipients too.

use super::records::{assert_clean, table};
use crate::common::Routines;
use crate::common::cli::TEST_KEY;
use crate::common::mock_llm::{MockLlm, text};

/// Every file under `dir` whose name is `name`, recursively.
fn named(dir: &std::path::Path, name: &str) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(named(&path, name));
        } else if entry.file_name() == name {
            out.push(path);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_path_sharing_characters_with_a_secret_still_gets_its_deliveries() {
    let mock = MockLlm::start().await;
    let folder = "sk-routine-reports";
    assert!(TEST_KEY.1.starts_with(&folder[..11]), "the folder shares 11 characters with the key");
    let p = Routines::project(&mock.base_url(), &format!("workspace: {folder}\n"));
    std::fs::create_dir_all(p.path().join(folder)).unwrap();
    p.write(
        "routines/report.yaml",
        "prompt: Report.\ndeliver:\n  - file: { path: out/report.md }\n  - mail: { to: [sk-routine-ops@example.com] }\n",
    );
    mock.push(text("All good."));
    let out = p.run_async(["run", "report", "--json"]).await;
    out.success();
    // On disk: the report is inside the workspace, and nowhere else.
    let everywhere = named(p.path(), "report.md");
    assert_eq!(everywhere, [p.path().join(folder).join("out/report.md")], "a report was written elsewhere");
    assert_eq!(p.read(&format!("{folder}/out/report.md")), "All good.\n");
    let json = out.json();
    let statuses: Vec<&str> =
        json["deliveries"].as_array().unwrap().iter().filter_map(|d| d["status"].as_str()).collect();
    assert_eq!(statuses, ["delivered", "delivered"], "{json}");
    // At the listener (the outbox): the mail went to the address as written.
    let mails: Vec<String> = std::fs::read_dir(p.path().join(".routines/outbox"))
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert_eq!(mails.len(), 1);
    assert!(mails[0].contains("To: sk-routine-ops@example.com"), "{}", mails[0]);
    // In the database: what people read holds no piece of the key.
    for target in table(&p, "deliveries") {
        assert!(!target.contains("[redacted]reports"), "{target}");
    }
    let targets: Vec<String> = table(&p, "deliveries");
    assert!(targets.iter().any(|t| t == "out/report.md"), "{targets:?}");
    for target in targets.iter().filter(|t| !t.starts_with('{')) {
        assert_clean("deliveries.target", target, TEST_KEY.1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_rendered_with_a_whole_secret_is_refused_and_never_stored() {
    let mock = MockLlm::start().await;
    let p = Routines::project(&mock.base_url(), "");
    // A path rendered from a value that holds the key (here the routine's own `vars`; a
    // webhook body would do the same).
    p.write(
        "routines/leak.yaml",
        &format!(
            "prompt: Report.\nvars: {{ name: {} }}\ndeliver:\n  - file: {{ path: \"out/{{{{ vars.name }}}}.md\" }}\n  - file: {{ path: out/kept.md }}\n",
            TEST_KEY.1
        ),
    );
    mock.push(text("All good."));
    let out = p.run_async(["run", "leak", "--json"]).await;
    let json = out.json();
    let d = json["deliveries"].as_array().unwrap();
    assert_eq!(d[0]["status"], "failed", "{json}");
    assert!(d[0]["error"].as_str().unwrap().contains("holds a secret value"), "{json}");
    assert_eq!(d[1]["status"], "delivered", "{json}");
    assert!(!p.path().join(format!("out/{}.md", TEST_KEY.1)).exists());
    for cell in table(&p, "deliveries") {
        assert_clean("deliveries", &cell, TEST_KEY.1);
    }
}

/// A webhook route's token, learned by the process after the config, and a key in an encoded
/// form, are credentials too: a path rendered with either is refused, and neither is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_rendered_with_a_webhook_token_or_an_encoded_key_is_refused() {
    const TOKEN: &str = "whtok-5e4d3c2b1a09f8e7";
    let mock = MockLlm::start().await;
    let p = Routines::project(&mock.base_url(), "").env("HOOK_TOKEN", TOKEN);
    p.write("routines/hook.yaml", "on: [{ webhook: { path: /hooks/x, token_env: HOOK_TOKEN } }]\nprompt: Hi.\n");
    let hex_key: String = TEST_KEY.1.bytes().map(|b| format!("{b:02x}")).collect();
    p.write(
        "routines/leak.yaml",
        &format!(
            "prompt: Report.\nvars: {{ a: {TOKEN}, b: {hex_key} }}\ndeliver:\n  - file: {{ path: \"out/{{{{ vars.a }}}}.md\" }}\n  - file: {{ path: \"out/{{{{ vars.b }}}}.md\" }}\n  - file: {{ path: out/kept.md }}\n"
        ),
    );
    mock.push(text("All good."));
    let json = p.run_async(["run", "leak", "--json"]).await.json();
    let statuses: Vec<&str> =
        json["deliveries"].as_array().unwrap().iter().filter_map(|d| d["status"].as_str()).collect();
    assert_eq!(statuses, ["failed", "failed", "delivered"], "{json}");
    assert!(!p.path().join(format!("out/{TOKEN}.md")).exists());
    assert!(!p.path().join(format!("out/{hex_key}.md")).exists());
    for cell in table(&p, "deliveries") {
        assert!(!cell.contains(TOKEN) && !cell.contains(&hex_key), "a secret was stored: {cell}");
    }
}

/// A daemon's fire is run from the trigger it recorded: a webhook body that shares characters
/// with the key once reached the run as `[redacted]…`, and its delivery went to that name.
/// Only a whole secret is taken out of what a run is given.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fire_is_run_from_its_trigger_as_it_arrived_less_whole_secrets() {
    use std::time::Duration;
    let mock = MockLlm::start().await;
    let port = crate::common::os::free_port();
    let p = Routines::project(&mock.base_url(), &format!("server: {{ listen: 127.0.0.1:{port} }}\n"));
    p.write(
        "routines/hook.yaml",
        "on: [{ webhook: { path: /hooks/name, auth: none } }]\nprompt: \"Write it for {{ trigger.json.name }}.\"\n\
         agent: { tools: [] }\noverlap: queue\ndeliver:\n  - file: { path: \"out/{{ trigger.json.name }}.md\" }\n",
    );
    let daemon = p.command(["daemon"]).spawn().await;
    daemon.wait_for_http(&format!("http://127.0.0.1:{port}/healthz"), 200).await;
    let c = reqwest::Client::builder().no_proxy().build().unwrap();
    let url = format!("http://127.0.0.1:{port}/hooks/name");
    let shared = "sk-routine-reports-q3";
    assert!(TEST_KEY.1.starts_with(&shared[..11]), "the name shares 11 characters with the key");
    for (i, name) in [shared.to_string(), format!("leak-{}", TEST_KEY.1)].into_iter().enumerate() {
        mock.push(text("Written."));
        let body = serde_json::json!({ "name": name }).to_string();
        assert_eq!(c.post(&url).body(body).send().await.unwrap().status(), 202);
        crate::common::wait::poll(Duration::from_secs(20), Duration::from_millis(50), async || {
            let runs = p.history(&["hook"]).await;
            (runs.len() == i + 1 && runs.iter().all(|r| r["status"] == "succeeded")).then_some(())
        })
        .await
        .expect("the run finished");
    }
    drop(daemon);
    let reqs = mock.requests();
    let prompt = |i: usize| crate::common::content(&reqs[i], reqs[i]["messages"].as_array().unwrap().len() - 1);
    assert!(prompt(0).contains(&format!(">{shared}</untrusted_data>")), "the run was given a record: {}", prompt(0));
    assert_eq!(p.read(&format!("out/{shared}.md")), "Written.\n", "the delivery went by the name that arrived");
    // The whole key is still taken out, before it is stored and before the run sees it.
    assert!(!prompt(1).contains(TEST_KEY.1), "{}", prompt(1));
    for cell in table(&p, "runs") {
        assert!(!cell.contains(TEST_KEY.1), "the key was stored: {cell}");
    }
}
