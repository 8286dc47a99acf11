//! Heartbeat check-ins (SPEC §7): `routines heartbeat` through the binary,
//! and beats at chosen instants through the library (active hours decided
//! by the injected time, not the wall clock).

use chrono::{DateTime, Utc};
use routines::config::{self, ProcessEnv};
use routines::engine::Engine;
use routines::heartbeat;
use routines::llm::{OpenAiProvider, ProviderOptions};
use routines::store::RunStatus;

use crate::common::Routines;
use crate::common::mock_llm::{MockLlm, text, tool_call};

/// Beats with every assist (`agent.assist: full`): the review of an all-is-well after checks is
/// one of them.
const CONFIG: &str =
    "agent:\n  assist: full\nheartbeat:\n  enabled: true\n  deliver: [ { file: { path: checkin.md } } ]\n";

#[tokio::test]
async fn a_missing_or_empty_checklist_makes_no_model_call() {
    let mock = MockLlm::start().await;
    let p = Routines::project(&mock.base_url(), CONFIG);
    let o = p.run_async(["heartbeat"]).await;
    o.success();
    assert!(o.stderr.starts_with("skipped: the checklist "), "{o}");
    assert!(o.stderr.ends_with("HEARTBEAT.md does not exist: no model call\n"), "{o}");
    p.write("HEARTBEAT.md", "  \n\n");
    let o = p.run_async(["heartbeat", "--json"]).await;
    assert_eq!(o.json()["status"], "skipped");
    assert!(o.json()["error"].as_str().unwrap().ends_with("HEARTBEAT.md is empty: no model call"));
    assert_eq!(mock.request_count(), 0);
    let history = p.run_async(["history", "--json"]).await.json();
    assert_eq!(history.as_array().unwrap().len(), 2);
    assert_eq!(history[0]["routine"], "heartbeat");
    assert_eq!(history[0]["status"], "skipped");
}

#[tokio::test]
async fn an_ok_reply_delivers_nothing_and_anything_else_is_delivered() {
    let mock = MockLlm::start().await;
    let p = Routines::project(&mock.base_url(), CONFIG);
    p.write("HEARTBEAT.md", "- Is the disk below 90%?\n- Any failed backups?\n");
    mock.push_all([
        tool_call("file_list", serde_json::json!({})),
        text("**HEARTBEAT_OK** — all good."),
        text("HEARTBEAT_OK"),
    ]);
    let o = p.run_async(["heartbeat", "--json"]).await;
    o.success();
    assert_eq!(o.json()["status"], "silent");
    assert!(!p.path().join("checkin.md").exists());
    // The beat's prompt carries the checklist and the token; its tokens are recorded.
    let request = &mock.requests()[0];
    let user = crate::common::last_message(request)["content"].as_str().unwrap().to_string();
    assert!(user.ends_with("If nothing does, reply with exactly HEARTBEAT_OK."), "{user}");
    assert!(user.contains("next check.\n\n- Is the disk below 90%?\n- Any failed backups?\n\n"), "{user}");
    let show = p.show(1).await;
    assert_eq!(show["status"], "silent");
    assert!(show["tokens"]["prompt"].as_u64().unwrap() > 0, "{show}");

    mock.push(text("The backup of /srv failed at 02:00."));
    let o = p.run_async(["heartbeat"]).await;
    o.success().stdout_is("The backup of /srv failed at 02:00.\n");
    assert_eq!(p.read("checkin.md"), "The backup of /srv failed at 02:00.\n");
    mock.assert_clean();
}

/// An engine over a project whose active hours are 08:00–22:00 in Berlin.
fn engine(p: &Routines, base_url: &str) -> Engine {
    p.write(
        "routines.yaml",
        &format!(
            "timezone: Europe/Berlin\nprovider: {{ base_url: \"{base_url}\", model: m, max_retries: 0 }}\n\
             agent:\n  assist: full\n\
             heartbeat:\n  enabled: true\n  active_hours: {{ start: \"08:00\", end: \"22:00\" }}\n"
        ),
    );
    p.write("HEARTBEAT.md", "- Anything due today?\n");
    let config = config::load(Some(&p.path().join("routines.yaml")), p.path(), &ProcessEnv).unwrap();
    let provider = OpenAiProvider::new(ProviderOptions::from_config(&config.provider).unwrap()).unwrap();
    Engine::open(config, std::sync::Arc::new(provider), "m").unwrap()
}

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

#[tokio::test]
async fn outside_active_hours_a_beat_is_quiet_unless_forced() {
    let mock = MockLlm::start().await;
    let p = Routines::project(&mock.base_url(), "");
    let engine = engine(&p, &mock.base_url());
    // 23:30 in Berlin (CET): quiet, recorded, no model call.
    let r = heartbeat::beat(&engine, t("2026-11-22T22:30:00Z"), false, "heartbeat").await.unwrap();
    assert_eq!(r.status, RunStatus::Skipped);
    assert_eq!(
        r.error.as_deref(),
        Some("outside active hours (08:00–22:00 Europe/Berlin); it is 23:30 CET: no model call")
    );
    // 07:59 is still quiet; 08:00 beats.
    let r = heartbeat::beat(&engine, t("2026-11-23T06:59:00Z"), false, "heartbeat").await.unwrap();
    assert_eq!(r.status, RunStatus::Skipped);
    assert_eq!(mock.request_count(), 0);
    mock.push_all([tool_call("file_list", serde_json::json!({})), text("HEARTBEAT_OK"), text("HEARTBEAT_OK")]);
    let r = heartbeat::beat(&engine, t("2026-11-23T07:00:00Z"), false, "heartbeat").await.unwrap();
    assert_eq!(r.status, RunStatus::Silent);
    // --force ignores the hours.
    mock.push_all([tool_call("file_list", serde_json::json!({})), text("HEARTBEAT_OK."), text("HEARTBEAT_OK")]);
    let r = heartbeat::beat(&engine, t("2026-11-22T22:30:00Z"), true, "manual").await.unwrap();
    assert_eq!(r.status, RunStatus::Silent);
    assert_eq!(mock.request_count(), 6);
}

#[tokio::test]
async fn an_all_is_well_that_checked_nothing_is_not_believed() {
    let mock = MockLlm::start().await;
    let p = Routines::project(&mock.base_url(), CONFIG);
    p.write("HEARTBEAT.md", "- Read backup.log and report failures.\n");
    p.write("backup.log", "02:00 backup of /srv FAILED\n");
    mock.push_all([
        text("HEARTBEAT_OK"),
        tool_call("file_read", serde_json::json!({"path": "backup.log"})),
        text("The backup of /srv failed at 02:00."),
    ]);
    let o = p.run_async(["heartbeat", "--json"]).await;
    assert_eq!(o.json()["status"], "succeeded", "{o}");
    assert_eq!(o.json()["output"], "The backup of /srv failed at 02:00.");
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    let nudge = crate::common::last_message(&requests[1])["content"].as_str().unwrap().to_string();
    assert!(nudge.starts_with("You answered HEARTBEAT_OK without running any check."), "{nudge}");
    // Both turns' tokens are counted.
    let show = p.show(1).await;
    assert_eq!(show["iterations"], 3, "{show}");
    mock.assert_clean();
}

#[tokio::test]
async fn a_greeting_by_hand_mentions_the_users_work_and_counts_toward_min_gap() {
    let mock = MockLlm::start().await;
    let p = Routines::project(
        &mock.base_url(),
        "heartbeat:\n  active_hours: { start: \"00:00\", end: \"00:00\" }\n  \
         greeting: { enabled: true, max_per_day: 3, min_gap: 4h }\n  \
         deliver: [ { file: { path: greeting.md } } ]\n",
    );
    {
        let store = routines::store::Store::open(&p.path().join(".routines/routines.db")).unwrap();
        let memory = routines::memory::Memory::new(store);
        memory.store("project", "The user is rewriting the YAML parser of routines in Rust.", "core").unwrap();
        memory.store("routine:report:approach", "APPROACH-NOTE of a routine", "core").unwrap();
        memory.store("turn:routine:report:20261122T000000Z", "ROUTINE-TURN summary", "conversation").unwrap();
    }
    mock.push(text("Morning! How is the YAML parser rewrite coming along?"));
    let o = p.run_async(["heartbeat", "--greeting", "--json"]).await;
    o.success();
    assert_eq!(o.json()["status"], "succeeded", "{o}");
    assert_eq!(p.read("greeting.md"), "Morning! How is the YAML parser rewrite coming along?\n");
    let request = &mock.requests()[0];
    let user = crate::common::last_message(request)["content"].as_str().unwrap().to_string();
    assert!(user.starts_with("It is "), "{user}");
    assert!(user.contains("Write a short, warm greeting for the "), "{user}");
    assert!(user.contains("- The user is rewriting the YAML parser of routines in Rust."), "{user}");
    assert!(!user.contains("APPROACH-NOTE") && !user.contains("ROUTINE-TURN"), "{user}");
    assert!(request.get("tools").is_none(), "a greeting gets no tools: {request}");

    // A second one within min_gap is refused without a model call.
    let o = p.run_async(["heartbeat", "--greeting"]).await;
    o.success();
    assert!(o.stderr.starts_with("skipped: the last greeting was sent at "), "{o}");
    assert!(o.stderr.ends_with(", less than min_gap (4h) before\n"), "{o}");
    assert_eq!(mock.request_count(), 1);
    // --force sends it anyway, and tells the model the previous greeting.
    mock.push(text("Hello again."));
    let o = p.run_async(["heartbeat", "--greeting", "--force"]).await;
    o.success().stdout_is("Hello again.\n");
    let user = crate::common::last_message(&mock.requests()[1])["content"].as_str().unwrap().to_string();
    assert!(
        user.contains(
            "Do not repeat your previous greeting: \"Morning! How is the YAML parser rewrite coming along?\""
        )
    );
    let history = p.run_async(["history", "greeting", "--json"]).await.json();
    let statuses: Vec<&str> = history.as_array().unwrap().iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["succeeded", "skipped", "succeeded"]);
    mock.assert_clean();
}

#[tokio::test]
async fn an_all_is_well_after_checks_is_reviewed_against_what_they_returned() {
    let mock = MockLlm::start().await;
    let p = Routines::project(&mock.base_url(), CONFIG);
    p.write("HEARTBEAT.md", "- Read app.log and report any ERROR line.\n");
    p.write("app.log", "08:00 INFO started\n08:03 ERROR could not connect to db:5432\n");
    mock.push_all([
        tool_call("file_read", serde_json::json!({"path": "app.log"})),
        // The same call again: its result is the agent's own note, not a check.
        tool_call("file_read", serde_json::json!({"path": "app.log"})),
        text("HEARTBEAT_OK"),
        text("08:03 ERROR could not connect to db:5432"),
    ]);
    let o = p.run_async(["heartbeat", "--json"]).await;
    assert_eq!(o.json()["status"], "succeeded", "{o}");
    assert_eq!(o.json()["output"], "08:03 ERROR could not connect to db:5432");
    assert_eq!(p.read("checkin.md"), "08:03 ERROR could not connect to db:5432\n");

    // The review sees the checklist and each distinct result, with no tools and a one-line system prompt.
    let review = &mock.requests()[3];
    assert!(review.get("tools").is_none(), "{review}");
    let messages = review["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{review}");
    assert_eq!(messages[0]["content"], "You review the results of checks against a checklist.");
    let review_prompt = messages[1]["content"].as_str().unwrap();
    assert_eq!(
        review_prompt,
        "Checklist:\n- Read app.log and report any ERROR line.\n\nResults of the checks:\n\
         --- file_read {\"path\":\"app.log\"} ---\n08:00 INFO started\n08:03 ERROR could not connect to db:5432\n---\n\n\
         Quote every line of the results that the checklist says to report, or that shows a problem it asks about, \
         one per line, and nothing else. If there is no such line, reply with exactly HEARTBEAT_OK."
    );
    let show = p.show(1).await;
    assert_eq!(show["iterations"], 4, "{show}");
    let events = show["events"].as_array().unwrap();
    let last = events.last().unwrap();
    assert_eq!((last["kind"].as_str(), last["status"].as_str()), (Some("model_call"), Some("ok")), "{show}");
    mock.assert_clean();

    // A review that agrees keeps the beat silent.
    mock.push_all([
        tool_call("file_read", serde_json::json!({"path": "app.log"})),
        text("HEARTBEAT_OK"),
        text("HEARTBEAT_OK"),
    ]);
    let o = p.run_async(["heartbeat", "--json"]).await;
    assert_eq!(o.json()["status"], "silent", "{o}");
    mock.assert_clean();
}
