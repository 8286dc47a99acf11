//! Mail delivery end to end: `routines run` against a real SMTP server
//! process, a server that is down (the message kept in the outbox and sent
//! once by `deliver --retry`, or by the daemon's retries), a crash between sending and recording (never
//! sent twice), and the outbox transport of a fresh setup.

use std::sync::Arc;
use std::time::Duration;

use routines::clock::SystemClock;
use routines::config::{self, ProcessEnv};
use routines::daemon::redeliver::{self, Backoff};
use routines::engine::Engine;
use routines::llm::OpenAiProvider;
use routines::store::{DeliveryRow, DeliveryStatus};
use tokio_util::sync::CancellationToken;

use crate::common::mock_llm::{MockLlm, text};
use crate::common::os::free_port;
use crate::common::smtp::{Mode, SmtpServer, parse_eml};
use crate::common::{Routines, wait};

const ROUTINE: &str = "prompt: Write the report.\n\
deliver:\n  - mail:\n      to: [ops@example.com]\n      cc: [Lead <lead@example.com>]\n      subject: \"Bericht für {{ routine.name }} ✓\"\n      attach_output: true\n";

fn project(mock: &MockLlm, smtp_port: u16) -> Routines {
    let mail = format!(
        "mail:\n  from: \"Routines <routines@example.com>\"\n  smtp: {{ host: 127.0.0.1, port: {smtp_port}, security: none, timeout: 5s }}\n"
    );
    let p = Routines::project(&mock.base_url(), &mail);
    p.write("routines/report.yaml", ROUTINE);
    p
}

fn outbox(p: &Routines) -> Vec<std::path::PathBuf> {
    match std::fs::read_dir(p.path().join(".routines/outbox")) {
        Ok(entries) => {
            entries.map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "eml")).collect()
        }
        Err(_) => Vec::new(),
    }
}

#[tokio::test]
async fn a_run_mails_its_report_with_headers_body_and_attachment() {
    let mock = MockLlm::start().await;
    mock.push(text("All 3 services are up."));
    let smtp = SmtpServer::start_with(Mode::Plain, None, None, 0);
    let p = project(&mock, smtp.port);
    let o = p.run_async(["run", "report", "--json"]).await;
    o.success();
    let got = smtp.received();
    assert_eq!(got.len(), 1);
    let m = &got[0];
    assert_eq!(m.mail_from, "routines@example.com");
    assert_eq!(m.rcpt_tos, ["ops@example.com", "lead@example.com"]);
    let h = &m.parsed.headers;
    assert_eq!(h["subject"], "Bericht für report ✓");
    assert_eq!(h["to"], "ops@example.com");
    assert_eq!(h["cc"], "Lead <lead@example.com>");
    assert!(h["message-id"].starts_with("<run-1.0.") && h["message-id"].ends_with("@example.com>"), "{h:?}");
    assert!(h.contains_key("date"));
    let body = m.parsed.parts.iter().find(|p| p.content_type == "text/plain").unwrap();
    assert_eq!(body.content.trim_end(), "All 3 services are up.");
    let attached = m.parsed.parts.iter().find(|p| p.filename.as_deref() == Some("report.md")).unwrap();
    assert_eq!(attached.content.trim_end(), "All 3 services are up.");
    let show = p.run(["show", "1", "--json"]).json();
    assert_eq!(show["deliveries"][0]["status"], "delivered");
    assert_eq!(show["deliveries"][0]["target"], "ops@example.com, Lead <lead@example.com>");
    assert!(outbox(&p).is_empty());
}

/// Runs `report` (its output "Disk at 91%.") while nothing listens on the
/// SMTP port: the run succeeds, its mail fails and is kept.
async fn run_with_the_server_down(mock: &MockLlm) -> (Routines, u16) {
    mock.push(text("Disk at 91%."));
    let port = free_port();
    let p = project(mock, port);
    let o = p.run_async(["run", "report"]).await;
    o.success();
    (p, port)
}

#[tokio::test]
async fn a_message_the_server_could_not_take_waits_in_the_outbox_and_is_sent_once() {
    let mock = MockLlm::start().await;
    let (p, port) = run_with_the_server_down(&mock).await;
    let show = p.run(["show", "1", "--json"]).json();
    assert_eq!(show["deliveries"][0]["status"], "failed");
    let error = show["deliveries"][0]["error"].as_str().unwrap();
    assert!(error.contains(&format!("127.0.0.1:{port}")) && error.contains("is kept in"), "{error}");
    let kept = outbox(&p);
    assert_eq!(kept.len(), 1);
    assert_eq!(parse_eml(&kept[0]).headers["subject"], "Bericht für report ✓");

    // The server comes up: one retry sends it, a second finds nothing to do.
    let smtp = SmtpServer::start_with(Mode::Plain, None, None, port);
    let o = p.run(["deliver", "--retry"]);
    o.success();
    assert!(o.stderr.starts_with("delivered  run 1  mail ops@example.com"), "{o}");
    let o = p.run(["deliver", "--retry"]);
    o.success().stderr_is("nothing to deliver: every delivery has arrived\n");
    let got = smtp.received();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].parsed.parts[0].content.trim_end(), "Disk at 91%.");
    assert!(outbox(&p).is_empty(), "sent messages leave the outbox");
}

/// A kept message retried after the SMTP settings were taken out goes to the outbox folder only,
/// and `deliver --retry` says so rather than "delivered".
#[tokio::test]
async fn a_retry_without_smtp_says_the_mail_was_queued_in_the_outbox() {
    let mock = MockLlm::start().await;
    let (p, _port) = run_with_the_server_down(&mock).await;
    let config = p.read("routines.yaml");
    let without_smtp: String = config.lines().filter(|l| !l.contains("smtp:")).map(|l| format!("{l}\n")).collect();
    assert_ne!(config, without_smtp, "the project's SMTP line was not found");
    p.write("routines.yaml", &without_smtp);
    let o = p.run(["deliver", "--retry"]);
    o.success().stderr_is(
        "queued     run 1  mail ops@example.com, Lead <lead@example.com> in the outbox (no SMTP configured)\n",
    );
    assert_eq!(outbox(&p).len(), 1);
}

/// Waits (up to 30 s) until run 1's first delivery satisfies `done`.
async fn wait_for_delivery(engine: &Engine, what: &str, done: impl Fn(&DeliveryRow) -> bool) -> DeliveryRow {
    let row = || engine.store.deliveries(1).unwrap().remove(0);
    let found =
        wait::poll(Duration::from_secs(30), Duration::from_millis(10), async || Some(row()).filter(&done)).await;
    found.unwrap_or_else(|| panic!("timed out waiting until {what}: {:?}", row()))
}

#[tokio::test]
async fn the_daemons_retries_send_a_kept_message_once_the_server_is_up() {
    let mock = MockLlm::start().await;
    let (p, port) = run_with_the_server_down(&mock).await;
    assert_eq!(outbox(&p).len(), 1);

    // The daemon's retry loop, with waits short enough for a test.
    let config = config::load(Some(&p.path().join("routines.yaml")), p.path(), &ProcessEnv).unwrap();
    let provider = OpenAiProvider::new(crate::common::provider_options(&mock)).unwrap();
    let engine = Arc::new(Engine::open(config, Arc::new(provider), "m").unwrap());
    let backoff = Backoff {
        tick: Duration::from_millis(20),
        first: Duration::from_millis(50),
        max: Duration::from_millis(100),
        max_attempts: 1000,
    };
    let stop = CancellationToken::new();
    let task = tokio::spawn(redeliver::run_loop(engine.clone(), Arc::new(SystemClock), backoff, stop.clone()));
    // While the server is down, each attempt fails and the message stays kept.
    let row = wait_for_delivery(&engine, "two more attempts failed", |d| d.attempts >= 3).await;
    assert_eq!(row.status, DeliveryStatus::Failed);
    assert_eq!(outbox(&p).len(), 1);

    let smtp = SmtpServer::start_with(Mode::Plain, None, None, port);
    let row = wait_for_delivery(&engine, "it was delivered", |d| d.status == DeliveryStatus::Delivered).await;
    assert_eq!(row.error, None);
    // Later passes leave a delivered message alone.
    let attempts = row.attempts;
    mock.push(text("Disk at 92%."));
    let o = p.run_async(["run", "report"]).await;
    o.success();
    stop.cancel();
    task.await.unwrap();
    assert_eq!(engine.store.deliveries(1).unwrap()[0].attempts, attempts);
    let got = smtp.received();
    assert_eq!(got.len(), 2, "the kept message once, and the second run's");
    assert_eq!(got[0].parsed.parts[0].content.trim_end(), "Disk at 91%.");
    assert!(outbox(&p).is_empty(), "sent messages leave the outbox");
}

#[tokio::test]
async fn a_crash_between_sending_and_recording_never_sends_twice() {
    let mock = MockLlm::start().await;
    mock.push(text("Weekly numbers."));
    let smtp = SmtpServer::start_with(Mode::Plain, None, None, 0);
    let p = project(&mock, smtp.port);
    p.run_async(["run", "report"]).await.success();
    assert_eq!(smtp.received().len(), 1);
    // What a process that died after the server took the message, but
    // before recording it, leaves behind: the delivery `sending`.
    let db = rusqlite::Connection::open(p.path().join(".routines/routines.db")).unwrap();
    db.execute("UPDATE deliveries SET status = 'sending'", []).unwrap();
    drop(db);
    let o = p.run(["deliver", "--retry"]);
    o.code(1);
    assert!(o.stderr.starts_with("uncertain  run 1  mail"), "{o}");
    o.stderr_has("never delivered twice");
    assert_eq!(smtp.received().len(), 1, "the report was sent again");
    let show = p.run(["show", "1", "--json"]).json();
    assert_eq!(show["deliveries"][0]["status"], "uncertain");
    // Kept for a person to check, and not attempted again.
    assert_eq!(outbox(&p).len(), 1);
    let o = p.run(["deliver", "--retry"]);
    o.success().stderr_is(
        "1 uncertain delivery left alone: an attempt was cut off or never answered and may have arrived; \
         check, then run `routines deliver --retry --uncertain` to send again\n",
    );
    assert_eq!(smtp.received().len(), 1);
}

/// A server that takes a message and never answers its end: the attempt times out after the
/// whole message was sent, so the server may have it (it does). Recorded `uncertain` and kept in
/// the outbox, not `failed`: a retry would send it a second time.
#[tokio::test]
async fn a_mail_whose_end_is_never_answered_is_uncertain_and_not_sent_again_unasked() {
    let mock = MockLlm::start().await;
    mock.push(text("Weekly numbers."));
    let smtp = SmtpServer::start_hanging(1);
    let mail = format!(
        "mail:\n  from: routines@example.com\n  smtp: {{ host: 127.0.0.1, port: {}, security: none, timeout: 1s }}\n",
        smtp.port
    );
    let p = Routines::project(&mock.base_url(), &mail);
    p.write("routines/report.yaml", "prompt: Write the report.\ndeliver:\n  - mail: { to: [ops@example.com] }\n");
    let o = p.run_async(["run", "report"]).await;
    o.success()
        .stderr_has("delivery to ops@example.com uncertain: the SMTP server 127.0.0.1:")
        .stderr_has("gave no answer to its end")
        .stderr_has("routines deliver --retry --uncertain");
    assert_eq!(smtp.received().len(), 1);
    let show = p.run(["show", "1", "--json"]).json();
    assert_eq!(
        (show["deliveries"][0]["status"].as_str(), show["deliveries"][0]["attempts"].as_u64()),
        (Some("uncertain"), Some(1)),
        "{show}"
    );
    assert_eq!(outbox(&p).len(), 1, "kept for a person to check");

    p.run_async(["deliver", "--retry"]).await.success().stderr_has("1 uncertain delivery left alone");
    assert_eq!(smtp.received().len(), 1, "an unanswered mail was sent again unasked");

    // A person who checked asks for it; the server answers this time.
    p.run_async(["deliver", "--retry", "--uncertain"]).await.success().stderr_has("delivered  run 1  mail");
    let got = smtp.received();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].header("Message-ID"), got[1].header("Message-ID"));
    assert!(outbox(&p).is_empty(), "a sent message leaves the outbox");
}

/// The same end of data refused with a reply (451): the server said it did not take it, so the
/// delivery is `failed` and retried, not `uncertain`.
#[tokio::test]
async fn a_mail_refused_at_its_end_is_failed_and_retried() {
    let mock = MockLlm::start().await;
    mock.push(text("Weekly numbers."));
    let smtp = SmtpServer::start();
    let p = project(&mock, smtp.port);
    p.write("routines/report.yaml", "prompt: Write the report.\ndeliver:\n  - mail: { to: [datafail@example.com] }\n");
    p.run_async(["run", "report"])
        .await
        .success()
        .stderr_has("delivery to datafail@example.com failed:")
        .stderr_has("451");
    let show = p.run(["show", "1", "--json"]).json();
    assert_eq!(show["deliveries"][0]["status"], "failed", "{show}");
    p.run_async(["deliver", "--retry"]).await.code(1).stderr_has("failed     run 1  mail datafail@example.com");
    let show = p.run(["show", "1", "--json"]).json();
    assert_eq!(
        (show["deliveries"][0]["status"].as_str(), show["deliveries"][0]["attempts"].as_u64()),
        (Some("failed"), Some(2)),
        "{show}"
    );
    assert!(smtp.received().is_empty());
}

#[tokio::test]
async fn without_smtp_mail_goes_to_the_outbox_as_eml_files() {
    let mock = MockLlm::start().await;
    mock.push(text("Hello from the outbox."));
    let p = Routines::project(&mock.base_url(), "");
    p.write("routines/report.yaml", ROUTINE);
    let o = p.run_async(["run", "report"]).await;
    o.success();
    let files = outbox(&p);
    assert_eq!(files.len(), 1);
    let m = parse_eml(&files[0]);
    assert_eq!(m.headers["from"], "Routines <routines@localhost>");
    assert_eq!(m.headers["subject"], "Bericht für report ✓");
    let show = p.run(["show", "1", "--json"]).json();
    assert_eq!(show["deliveries"][0]["status"], "delivered");
}
