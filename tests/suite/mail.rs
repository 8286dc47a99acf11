//! Mail delivery against a real SMTP server process (aiosmtpd): headers, bodies, attachments,
//! STARTTLS and implicit TLS with a self-signed CA, AUTH, and how failures are classified.

use std::path::Path;
use std::time::Duration;

use routines::delivery::mail::{
    Attachment, MailError, MailPayload, Mailer, Security, SmtpOptions, build, eml_file_name, message_id, rfc2822,
    rfc2822_now, write_eml,
};

use crate::common::smtp::{Mode, SmtpServer, TestCert, parse_eml};

const FROM: &str = "Routines Bot <bot@example.com>";

fn payload(to: &[&str]) -> MailPayload {
    MailPayload {
        from: FROM.into(),
        to: to.iter().map(|s| (*s).to_owned()).collect(),
        cc: vec![],
        bcc: vec![],
        subject: "Daily report".into(),
        text: "All systems nominal.\n".into(),
        html: None,
        attachment: None,
        message_id: message_id(42, 0, FROM),
        date: rfc2822_now(),
    }
}

fn options(server: &SmtpServer, security: Security) -> SmtpOptions {
    SmtpOptions {
        host: "127.0.0.1".into(),
        port: server.port,
        security,
        username: None,
        password: None,
        timeout: Duration::from_secs(10),
        extra_root_pem: None,
    }
}

/// Text parts travel with CRLF line ends (MIME's canonical form) and may end in blank lines.
fn lf(content: &str) -> String {
    format!("{}\n", content.replace("\r\n", "\n").trim_end_matches('\n'))
}

fn smtp(opts: SmtpOptions) -> Mailer {
    Mailer::smtp(opts).unwrap()
}

#[tokio::test]
async fn a_plain_message_arrives_with_its_headers_and_bcc_only_in_the_envelope() {
    let server = SmtpServer::start();
    let mailer = smtp(options(&server, Security::None));
    let p = MailPayload {
        to: vec!["ops@example.com".into(), "Jürgen Groß <juergen@example.com>".into()],
        cc: vec!["Lead <lead@example.com>".into()],
        bcc: vec!["archive@example.com".into()],
        subject: "Bericht für Dienstag ✓".into(),
        text: "Grüße — alles läuft.\nZweite Zeile.\n".into(),
        ..payload(&[])
    };

    let description = mailer.send(&p).await.unwrap();

    assert_eq!(description, format!("sent to 4 recipients via 127.0.0.1:{}", server.port));
    let got = server.received();
    assert_eq!(got.len(), 1);
    let m = &got[0];
    assert_eq!(m.mail_from, "bot@example.com");
    let mut rcpt = m.rcpt_tos.clone();
    rcpt.sort();
    assert_eq!(rcpt, ["archive@example.com", "juergen@example.com", "lead@example.com", "ops@example.com"]);
    assert!(m.raw.is_ascii(), "headers and body are 7-bit encoded:\n{}", m.raw);
    let h = &m.parsed.headers;
    assert_eq!(h["from"], "Routines Bot <bot@example.com>");
    assert_eq!(h["to"], "ops@example.com, Jürgen Groß <juergen@example.com>");
    assert_eq!(h["cc"], "Lead <lead@example.com>");
    assert!(!h.contains_key("bcc"), "no Bcc header: {h:?}");
    assert_eq!(h["subject"], "Bericht für Dienstag ✓");
    assert_eq!(h["message-id"], "<run-42.0@example.com>");
    assert_eq!(m.header("Date").unwrap(), p.date);
    assert_eq!(m.parsed.content_type, "text/plain");
    assert_eq!(m.parsed.parts.len(), 1);
    assert_eq!(lf(&m.parsed.parts[0].content), p.text);
    assert!(m.parsed.defects.is_empty(), "{:?}", m.parsed.defects);
}

#[tokio::test]
async fn html_arrives_as_a_multipart_alternative_of_the_text() {
    let server = SmtpServer::start();
    let p = MailPayload { html: Some("<p>All systems <b>nominal</b>.</p>\n".into()), ..payload(&["ops@example.com"]) };

    smtp(options(&server, Security::None)).send(&p).await.unwrap();

    let m = &server.received()[0].parsed;
    assert_eq!(m.content_type, "multipart/alternative");
    let parts: Vec<(&str, String)> = m.parts.iter().map(|p| (p.content_type.as_str(), lf(&p.content))).collect();
    assert_eq!(
        parts,
        [
            ("text/plain", "All systems nominal.\n".to_owned()),
            ("text/html", "<p>All systems <b>nominal</b>.</p>\n".to_owned())
        ]
    );
}

#[tokio::test]
async fn an_attachment_arrives_with_its_file_name_next_to_the_bodies() {
    let server = SmtpServer::start();
    let output = "# Report ✓\n\n- 3 commits\n".repeat(200);
    let p = MailPayload {
        html: Some("<p>See the attachment.</p>".into()),
        attachment: Some(Attachment {
            filename: "Bericht 2026-06-02 ✓.md".into(),
            content_type: "text/markdown; charset=utf-8".into(),
            content: output.clone(),
        }),
        ..payload(&["ops@example.com"])
    };

    smtp(options(&server, Security::None)).send(&p).await.unwrap();

    let m = &server.received()[0].parsed;
    assert_eq!(m.content_type, "multipart/mixed");
    let kinds: Vec<&str> = m.parts.iter().map(|p| p.content_type.as_str()).collect();
    assert_eq!(kinds, ["text/plain", "text/html", "text/markdown"]);
    let file = &m.parts[2];
    assert_eq!(file.filename.as_deref(), Some("Bericht 2026-06-02 ✓.md"));
    assert_eq!(file.disposition.as_deref(), Some("attachment"));
    assert_eq!(lf(&file.content), output);
    assert!(m.defects.is_empty(), "{:?}", m.defects);
}

#[tokio::test]
async fn starttls_with_a_private_ca_and_a_login_delivers() {
    let cert = TestCert::generate();
    let server = SmtpServer::start_with(Mode::Starttls, Some(&cert), Some(("reporter", "s3cret pass")), 0);
    let mailer = smtp(SmtpOptions {
        username: Some("reporter".into()),
        password: Some("s3cret pass".into()),
        extra_root_pem: Some(cert.ca_pem.clone()),
        ..options(&server, Security::Starttls)
    });

    mailer.send(&payload(&["ops@example.com"])).await.unwrap();

    let got = server.received();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].login.as_deref(), Some("reporter"));
}

#[tokio::test]
async fn a_wrong_password_is_a_clear_error_that_is_not_retried_and_never_shows_the_password() {
    let cert = TestCert::generate();
    let server = SmtpServer::start_with(Mode::Starttls, Some(&cert), Some(("reporter", "s3cret")), 0);
    let mailer = smtp(SmtpOptions {
        username: Some("reporter".into()),
        password: Some("wrong-Pa55word".into()),
        extra_root_pem: Some(cert.ca_pem.clone()),
        ..options(&server, Security::Starttls)
    });

    let err = mailer.send(&payload(&["ops@example.com"])).await.unwrap_err();

    assert!(!err.is_retryable(), "{err:?}");
    let text = err.to_string();
    assert!(text.contains(&format!("127.0.0.1:{} refused the login of `reporter`", server.port)), "{text}");
    assert!(text.contains("password_env"), "{text}");
    assert!(!text.contains("wrong-Pa55word") && !format!("{err:?}").contains("wrong-Pa55word"), "{text}");
    assert!(server.received().is_empty());
}

#[tokio::test]
async fn a_login_required_but_not_configured_says_to_configure_it() {
    let cert = TestCert::generate();
    let server = SmtpServer::start_with(Mode::Starttls, Some(&cert), Some(("reporter", "s3cret")), 0);
    let mailer =
        smtp(SmtpOptions { extra_root_pem: Some(cert.ca_pem.clone()), ..options(&server, Security::Starttls) });

    let err = mailer.send(&payload(&["ops@example.com"])).await.unwrap_err();

    assert!(!err.is_retryable(), "{err:?}");
    assert!(err.to_string().contains("requires a login"), "{err}");
}

#[tokio::test]
async fn implicit_tls_delivers() {
    let cert = TestCert::generate();
    let server = SmtpServer::start_with(Mode::Tls, Some(&cert), None, 0);
    let mailer = smtp(SmtpOptions { extra_root_pem: Some(cert.ca_pem.clone()), ..options(&server, Security::Tls) });

    mailer.send(&payload(&["ops@example.com"])).await.unwrap();

    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn an_untrusted_certificate_is_refused_and_not_retried() {
    let cert = TestCert::generate();
    let server = SmtpServer::start_with(Mode::Starttls, Some(&cert), None, 0);
    let mailer = smtp(options(&server, Security::Starttls));

    let err = mailer.send(&payload(&["ops@example.com"])).await.unwrap_err();

    assert!(!err.is_retryable(), "{err:?}");
    assert!(err.to_string().starts_with("TLS with the SMTP server 127.0.0.1:"), "{err}");
    assert!(err.to_string().contains("certificate"), "{err}");
    assert!(server.received().is_empty());
}

#[tokio::test]
async fn starttls_required_but_not_offered_is_refused() {
    let server = SmtpServer::start();
    let cert = TestCert::generate();
    let mailer =
        smtp(SmtpOptions { extra_root_pem: Some(cert.ca_pem.clone()), ..options(&server, Security::Starttls) });

    let err = mailer.send(&payload(&["ops@example.com"])).await.unwrap_err();

    assert!(!err.is_retryable(), "{err:?}");
    assert!(err.to_string().contains("does not offer STARTTLS"), "{err}");
    assert!(server.received().is_empty(), "nothing is sent in clear text");
}

#[tokio::test]
async fn a_server_that_is_down_is_a_retryable_error_naming_host_and_port() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mailer = smtp(SmtpOptions {
        host: "127.0.0.1".into(),
        port,
        security: Security::None,
        username: None,
        password: None,
        timeout: Duration::from_secs(10),
        extra_root_pem: None,
    });

    let err = mailer.send(&payload(&["ops@example.com"])).await.unwrap_err();

    assert!(err.is_retryable(), "{err:?}");
    assert!(matches!(err, MailError::Send(_)), "{err:?}");
    assert!(err.to_string().contains(&format!("could not connect to the SMTP server 127.0.0.1:{port}")), "{err}");
}

#[tokio::test]
async fn after_the_server_went_down_and_came_back_the_same_mailer_delivers() {
    let first = SmtpServer::start();
    let port = first.port;
    let mailer = smtp(options(&first, Security::None));
    mailer.send(&payload(&["ops@example.com"])).await.unwrap();
    first.stop();

    let err = mailer.send(&payload(&["ops@example.com"])).await.unwrap_err();
    assert!(err.is_retryable(), "{err:?}");

    let second = SmtpServer::start_with(Mode::Plain, None, None, port);
    mailer.send(&payload(&["ops@example.com"])).await.unwrap();
    assert_eq!(second.received().len(), 1);
}

#[tokio::test]
async fn a_permanent_refusal_is_not_retried_and_a_temporary_one_is() {
    let server = SmtpServer::start();
    let mailer = smtp(options(&server, Security::None));

    let rejected = mailer.send(&payload(&["reject-me@example.com"])).await.unwrap_err();
    let deferred = mailer.send(&payload(&["tempfail@example.com"])).await.unwrap_err();

    assert!(matches!(rejected, MailError::Rejected(_)) && !rejected.is_retryable(), "{rejected:?}");
    assert!(rejected.to_string().contains("550"), "{rejected}");
    assert!(matches!(deferred, MailError::Send(_)) && deferred.is_retryable(), "{deferred:?}");
    assert!(deferred.to_string().contains("451"), "{deferred}");
    // The pooled connection is still usable after refused recipients.
    mailer.send(&payload(&["ops@example.com"])).await.unwrap();
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn concurrent_sends_share_the_pool_and_all_arrive() {
    let server = SmtpServer::start();
    let mailer = smtp(options(&server, Security::None));

    let sends = (0..20u32).map(|i| {
        let mailer = mailer.clone();
        let p = MailPayload { message_id: message_id(7, i, FROM), ..payload(&["ops@example.com"]) };
        async move { mailer.send(&p).await }
    });
    for result in futures_join_all(sends).await {
        result.unwrap();
    }

    let mut ids: Vec<String> = server.received().iter().map(|m| m.parsed.headers["message-id"].clone()).collect();
    ids.sort();
    let mut want: Vec<String> = (0..20).map(|i| message_id(7, i, FROM)).collect();
    want.sort();
    assert_eq!(ids, want);
}

async fn futures_join_all<F: std::future::Future + Send + 'static>(futures: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}

#[tokio::test]
async fn the_outbox_transport_writes_a_parseable_eml_file() {
    let dir = tempfile::tempdir().unwrap();
    let outbox = dir.path().join("outbox");
    let p = MailPayload {
        subject: "Bericht für Dienstag ✓".into(),
        html: Some("<p>hi</p>".into()),
        ..payload(&["ops@example.com"])
    };

    let description = Mailer::outbox(outbox.clone()).send(&p).await.unwrap();

    let path = outbox.join("run-42.0@example.com.eml");
    assert_eq!(description, format!("written to {}", path.display()));
    let m = parse_eml(&path);
    assert_eq!(m.headers["subject"], "Bericht für Dienstag ✓");
    assert_eq!(m.headers["message-id"], "<run-42.0@example.com>");
    assert_eq!(m.headers["to"], "ops@example.com");
    assert_eq!(m.content_type, "multipart/alternative");
    assert!(m.defects.is_empty(), "{:?}", m.defects);
}

#[test]
fn write_eml_replaces_the_file_of_the_same_message_and_leaves_no_temporary_files() {
    let dir = tempfile::tempdir().unwrap();
    let p = payload(&["ops@example.com"]);

    let first = write_eml(dir.path(), &p).unwrap();
    let second = write_eml(dir.path(), &MailPayload { text: "second attempt".into(), ..p.clone() }).unwrap();
    let other = write_eml(dir.path(), &MailPayload { message_id: message_id(42, 1, FROM), ..p }).unwrap();

    assert_eq!(first, second);
    assert_eq!(first, dir.path().join("run-42.0@example.com.eml"));
    assert_ne!(first, other);
    assert_eq!(files(dir.path()), ["run-42.0@example.com.eml", "run-42.1@example.com.eml"]);
    assert!(std::fs::read_to_string(&first).unwrap().contains("second attempt"));
}

fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

#[test]
fn message_ids_are_fixed_per_run_and_target_in_the_senders_domain() {
    assert_eq!(message_id(42, 0, "Routines <routines@example.com>"), "<run-42.0@example.com>");
    assert_eq!(message_id(42, 3, "bot@mail.example.org"), "<run-42.3@mail.example.org>");
    assert_eq!(message_id(42, 0, "no domain"), "<run-42.0@localhost>");
    assert_eq!(message_id(-1, 0, "x@bad domain>"), "<run--1.0@localhost>");
    assert_eq!(eml_file_name("<run-42.0@example.com>"), "run-42.0@example.com.eml");
    assert_eq!(eml_file_name("<../../etc/passwd@x>"), "_.._etc_passwd@x.eml");
}

#[test]
fn an_address_that_does_not_parse_is_named_in_the_error() {
    let err = build(&MailPayload { cc: vec!["ops at example".into()], ..payload(&["ops@example.com"]) }).unwrap_err();
    assert!(matches!(err, MailError::Build(_)) && !err.is_retryable(), "{err:?}");
    assert!(err.to_string().starts_with("`ops at example` in `cc` is not a valid e-mail address"), "{err}");

    let err = build(&payload(&[])).unwrap_err();
    assert!(err.to_string().contains("no recipients"), "{err}");

    let bad_type = Attachment { filename: "a.md".into(), content_type: "not a type".into(), content: String::new() };
    let err = build(&MailPayload { attachment: Some(bad_type), ..payload(&["ops@example.com"]) }).unwrap_err();
    assert!(err.to_string().contains("invalid content type `not a type`"), "{err}");
}

#[test]
fn the_date_header_is_the_payloads_date_whatever_its_zone() {
    let p = MailPayload { date: "Tue, 2 Jun 2026 11:00:00 +0200".into(), ..payload(&["ops@example.com"]) };
    let raw = String::from_utf8(build(&p).unwrap().formatted()).unwrap();
    assert!(raw.contains("\r\nDate: Tue, 02 Jun 2026 09:00:00 +0000\r\n"), "{raw}");

    let at = chrono::DateTime::parse_from_rfc3339("2026-06-02T09:00:00Z").unwrap().to_utc();
    let p = MailPayload { date: rfc2822(at), ..p };
    let raw = String::from_utf8(build(&p).unwrap().formatted()).unwrap();
    assert!(raw.contains(&format!("\r\nDate: {}\r\n", p.date)), "{raw}");
}

#[test]
fn a_subject_with_line_breaks_cannot_add_headers() {
    let p = MailPayload { subject: "Report\r\nBcc: victim@example.com".into(), ..payload(&["ops@example.com"]) };
    let raw = String::from_utf8(build(&p).unwrap().formatted()).unwrap();
    assert!(!raw.contains("\r\nBcc:"), "{raw}");
    assert!(raw.contains("Subject: Report  Bcc: victim@example.com\r\n"), "{raw}");
}

#[test]
fn the_payload_round_trips_through_json() {
    let p = MailPayload {
        attachment: Some(Attachment {
            filename: "out.md".into(),
            content_type: "text/markdown".into(),
            content: "x".into(),
        }),
        ..payload(&["ops@example.com"])
    };
    let json = serde_json::to_string(&p).unwrap();
    assert_eq!(serde_json::from_str::<MailPayload>(&json).unwrap(), p);
}
