//! Secrets in decodable forms: a hostile model that emits the configured API key in base64
//! (at each alignment), hex, full percent-encoding and reversed, in its answer and in a tool
//! argument; and a hostile SMTP server that echoes the client's `AUTH` command, or the base64
//! of its password, in its refusal. Checked in every cell of the database, in every file of
//! the project (a delivered file, the outbox) and in what `show` prints, beside the benign
//! counterparts: base64 and hex of other data delivered as written, a login refused without
//! an echo reported in the server's words.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::json;

use super::records::{assert_nothing_recorded, database, files};
use crate::common::Routines;
use crate::common::cli::TEST_KEY;
use crate::common::mock_llm::{MockLlm, text, tool_calls};
use crate::common::smtp::parse_eml;

/// The encodings of `secret` an attacker would use, as they appear whatever precedes or
/// follows them: the characters of base64 that carry bits of the secret alone (after 0, 1
/// and 2 other bytes, in both alphabets); hex and every byte percent-encoded, in both cases;
/// reversed. Forms shorter than 8 characters are left out (they occur by chance).
fn encoded(secret: &str) -> Vec<String> {
    let mut out = Vec::new();
    for prefix in ["", "a", "ab"] {
        let b64 = STANDARD.encode(format!("{prefix}{secret}"));
        let (first, last) = ((8 * prefix.len()).div_ceil(6), 8 * (prefix.len() + secret.len()) / 6);
        out.push(b64[first..last].to_string());
        out.push(b64[first..last].replace('+', "-").replace('/', "_"));
    }
    let hex = hex::encode(secret);
    out.push(hex.to_ascii_uppercase());
    out.push(hex);
    let percent: String = secret.bytes().map(|b| format!("%{b:02X}")).collect();
    out.push(percent.to_ascii_lowercase());
    out.push(percent);
    out.push(secret.chars().rev().collect());
    out.retain(|f| f.len() >= 8);
    out
}

/// What an attacker emits: each form whole, the base64 ones with their prefix.
fn leaks(secret: &str) -> Vec<String> {
    let mut out: Vec<String> = ["", "a", "ab"].iter().map(|p| STANDARD.encode(format!("{p}{secret}"))).collect();
    out.push(URL_SAFE_NO_PAD.encode(format!("a{secret}")));
    out.push(hex::encode(secret));
    out.push(hex::encode_upper(secret));
    out.push(secret.bytes().map(|b| format!("%{b:02x}")).collect());
    out.push(secret.bytes().map(|b| format!("%{b:02X}")).collect());
    out.push(secret.chars().rev().collect());
    out
}

/// Panics naming the place when `text` holds any of [`encoded`]`(secret)`.
#[track_caller]
fn assert_no_form(place: &str, text: &str, secret: &str) {
    for form in encoded(secret) {
        assert!(!text.contains(&form), "{place} holds {form:?}, an encoding of {secret:?}:\n{text}");
    }
}

/// [`assert_no_form`] over every cell of the database and every file of the project but
/// `keep`, and [`assert_nothing_recorded`] for the plain form.
#[track_caller]
fn assert_no_form_recorded(p: &Routines, secret: &str, keep: &[&str]) {
    for cell in database(p) {
        assert_no_form("the database", &cell, secret);
    }
    for (path, text) in files(p.path()) {
        if !keep.iter().any(|k| path.ends_with(k)) {
            assert_no_form(&path, &text, secret);
        }
    }
    assert_nothing_recorded(p, secret, keep);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_encoded_by_the_model_is_recorded_delivered_and_mailed_redacted() {
    let mock = MockLlm::start().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write(
        "routines/leak.yaml",
        "prompt: Report.\nagent: { tools: [file_read] }\ndeliver:\n  - file: { path: out/report.md }\n  \
         - mail: { to: [ops@example.com] }\n",
    );
    let key = TEST_KEY.1;
    let forms = leaks(key);
    let answer = format!("Report.\n{}\nEnd of report.", forms.join("\n"));
    p.write("notes/today.md", "Nothing new.");
    mock.push_all([
        tool_calls(vec![
            ("file_read", json!({"path": "notes/today.md"})),
            ("file_read", json!({"path": format!("notes/{}.txt", forms.join("-"))})),
        ]),
        text(&answer),
    ]);
    p.run_async(["run", "leak", "--json"]).await;
    let eml: Vec<_> = files(&p.path().join(".routines/outbox")).into_iter().map(|(path, _)| path).collect();
    assert_eq!(eml.len(), 1, "one mail in the outbox: {eml:?}");
    for part in parse_eml(std::path::Path::new(&eml[0])).parts {
        assert_no_form("the mail", &part.content, key);
    }
    assert_no_form_recorded(&p, key, &["routines.yaml"]);
    let report = p.read("out/report.md");
    assert!(report.starts_with("Report.") && report.contains("End of report."), "{report}");

    // The benign counterpart: base64 and hex of other data are delivered as written.
    let other = "the quarterly figures, not a secret";
    let benign = format!("{} {} {}", STANDARD.encode(other), hex::encode(other), STANDARD.encode(format!("a{other}")));
    mock.push(text(&benign));
    p.run_async(["run", "leak"]).await.success();
    assert_eq!(p.read("out/report.md").trim(), benign);
}

/// An SMTP server on 127.0.0.1 that offers `mechanism` and refuses every login. `echo`: its
/// refusal repeats what the client sent, the whole `AUTH PLAIN` line, or for `LOGIN` the
/// base64 login and password; else it says only "Authentication credentials invalid".
/// Returns its port.
fn refusing_smtp(mechanism: &'static str, echo: bool) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            std::thread::spawn(move || refuse_logins(conn, mechanism, echo));
        }
    });
    port
}

fn refuse_logins(mut conn: TcpStream, mechanism: &str, echo: bool) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut read = move || {
        let mut line = String::new();
        reader.read_line(&mut line).ok().filter(|n| *n > 0).map(|_| line.trim_end().to_string())
    };
    let mut send = |text: &str| conn.write_all(text.as_bytes()).is_ok();
    send("220 hostile ESMTP\r\n");
    while let Some(line) = read() {
        let upper = line.to_ascii_uppercase();
        let refusal = |sent: &str| {
            if echo {
                format!("535-5.7.8 Authentication failed for:\r\n535-5.7.8 {sent}\r\n535 5.7.8 Try again.\r\n")
            } else {
                "535 5.7.8 Authentication credentials invalid\r\n".to_string()
            }
        };
        let reply = if upper.starts_with("EHLO") {
            format!("250-hostile\r\n250 AUTH {mechanism}\r\n")
        } else if upper.starts_with("AUTH PLAIN") {
            refusal(&line)
        } else if upper.starts_with("AUTH LOGIN") {
            send("334 VXNlcm5hbWU6\r\n");
            let user = read().unwrap_or_default();
            send("334 UGFzc3dvcmQ6\r\n");
            let password = read().unwrap_or_default();
            refusal(&format!("{password} for {user}"))
        } else if upper.starts_with("QUIT") {
            send("221 bye\r\n");
            return;
        } else {
            "250 OK\r\n".to_string()
        };
        if !send(&reply) {
            return;
        }
    }
}

/// A project whose `report` mails its answer through the SMTP server on `port` with the
/// login `mailer@example.com` and `password`.
fn mailing_project(mock: &MockLlm, port: u16, password: &str) -> Routines {
    let mail = format!(
        "mail:\n  from: routines@example.com\n  smtp: {{ host: 127.0.0.1, port: {port}, security: none, timeout: 5s, \
         username_env: SMTP_USER, password_env: SMTP_PASSWORD }}\n"
    );
    let p = Routines::project(&mock.base_url(), &mail)
        .env("SMTP_USER", "mailer@example.com")
        .env("SMTP_PASSWORD", password);
    p.write(
        "routines/report.yaml",
        "prompt: Report.\nagent: { tools: [] }\ndeliver:\n  - mail: { to: [ops@example.com] }\n",
    );
    p
}

/// Runs `report` against `server`; returns what `run --json` and `show` printed.
async fn mail_through(server: u16, password: &str) -> (Routines, String) {
    let mock = MockLlm::start().await;
    let p = mailing_project(&mock, server, password);
    mock.push(text("All 3 services are up."));
    let out = p.run_async(["run", "report", "--json"]).await;
    let run_id = out.json()["run_id"].to_string();
    let show = p.run_async(["show", &run_id]).await;
    let printed = format!("{}\n{}\n{}", out.stdout, show.stdout, show.stderr);
    assert!(printed.contains("refused the login"), "the refusal is reported: {printed}");
    (p, printed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_smtp_server_echoing_the_login_gets_the_password_recorded_in_no_form() {
    let login = "mailer@example.com";
    for (mechanism, password) in [("PLAIN", "Tr0ub4dor&3-horse"), ("PLAIN", "pw-4a2f"), ("LOGIN", "Tr0ub4dor&3-horse")]
    {
        let (p, printed) = mail_through(refusing_smtp(mechanism, true), password).await;
        let auth_plain = STANDARD.encode(format!("\0{login}\0{password}"));
        let auth_plain = &auth_plain[..auth_plain.len() - 4];
        assert!(!printed.contains(auth_plain), "{mechanism}: the AUTH argument is shown: {printed}");
        assert_no_form("what run and show print", &printed, password);
        for cell in database(&p) {
            assert!(!cell.contains(auth_plain), "{mechanism}: the database holds the AUTH argument: {cell}");
        }
        assert_no_form_recorded(&p, password, &["routines.yaml"]);
    }

    // The benign counterpart: a refusal that echoes nothing is reported in the server's words.
    let (_, printed) = mail_through(refusing_smtp("PLAIN", false), "Tr0ub4dor&3-horse").await;
    assert!(printed.contains("Authentication credentials invalid"), "{printed}");
}
