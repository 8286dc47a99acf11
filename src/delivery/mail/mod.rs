//! Mail delivery: a [`MailPayload`] is everything needed to send one message again without the
//! agent (it is stored as JSON with the delivery), [`build`] turns it into a MIME message
//! (`message.rs`), and a [`Mailer`] sends it over SMTP (`smtp.rs`: pooled connections, rustls,
//! over the streams of `stream.rs`) or writes it to an outbox folder as `.eml` (`outbox.rs`).
//!
//! The Message-ID is fixed per (run, target) by [`message_id`] and travels in the payload, so a
//! message sent again after a crash or a retry is recognisably the same message, and
//! [`write_eml`] keeps at most one file per message.
//!
//! # SMTP connections
//!
//! lettre speaks SMTP, but this module opens the connections and pools them itself rather than
//! use lettre's `AsyncSmtpTransport`. lettre 0.11.23 writes a message's content and the final
//! `\r\n.\r\n` in two writes on a socket without `TCP_NODELAY`, and offers no way to set it:
//! Nagle holds the five-byte write until the server acknowledges the content, which a server
//! with nothing to answer yet delays (40 ms on Linux), so every message waited 40 ms and a
//! sequential `deliver --retry` sent about 22 messages a second (`bench/mail_bench.py`).
//! (lettre's pull request #1159 sets it upstream; once a release has it, lettre's own pooled
//! transport would do again.) How connections are made, timed and pooled is described in
//! `smtp.rs`.

mod auth_echo;
mod message;
mod outbox;
mod smtp;
mod stream;
#[cfg(test)]
mod tests;

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use message::{build, message_id, rfc2822, rfc2822_now};
pub use outbox::{eml_file_name, write_eml};
pub use smtp::{Security, SmtpOptions, SmtpSender};

/// Everything needed to send one message again without the agent; stored as JSON in the delivery
/// row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MailPayload {
    /// `routines@example.com` or `Routines <routines@example.com>`.
    pub from: String,
    pub to: Vec<String>,
    #[serde(default)]
    pub cc: Vec<String>,
    /// Receive the message without appearing in its headers.
    #[serde(default)]
    pub bcc: Vec<String>,
    pub subject: String,
    /// The plain-text body (always present).
    pub text: String,
    /// An HTML alternative of `text`.
    #[serde(default)]
    pub html: Option<String>,
    #[serde(default)]
    pub attachment: Option<Attachment>,
    /// `<...@...>`, fixed per (run, target): the idempotency key.
    pub message_id: String,
    /// RFC 2822 date of the first attempt (see [`rfc2822_now`]).
    pub date: String,
}

/// A file attached to a message (the run's output for `attach_output`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Attachment {
    pub filename: String,
    /// A MIME type such as `text/markdown; charset=utf-8`.
    pub content_type: String,
    pub content: String,
}

/// Why a message could not be built, sent or kept.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MailError {
    /// The message itself is wrong (an address that does not parse, no recipients, a bad
    /// content type): sending it again cannot help.
    #[error("{0}")]
    Build(String),
    /// Sending failed in a way that may pass: the server was unreachable, timed out, broke the
    /// connection or answered 4xx. Retry later.
    #[error("{0}")]
    Send(String),
    /// The server refused for good: a 5xx reply, a refused login, a TLS setup that cannot work.
    /// Retrying without changing the configuration or the message does not help.
    #[error("{0}")]
    Rejected(String),
    /// The server was sent the whole message and gave no answer to its end: it may have taken
    /// it. Sending it again could deliver it twice, so it is left to a person who checked.
    #[error("{0}")]
    Unconfirmed(String),
    /// The outbox could not be written.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl MailError {
    /// Whether sending the same message again later may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Send(_) | Self::Io { .. } => true,
            Self::Build(_) | Self::Rejected(_) | Self::Unconfirmed(_) => false,
        }
    }
}

/// Where messages go.
#[derive(Clone)]
#[non_exhaustive]
pub enum Transport {
    Smtp(SmtpSender),
    /// Each message becomes an `.eml` file in this folder.
    Outbox(PathBuf),
}

/// Sends messages through its [`Transport`]. Cheap to clone; clones share the connection pool.
#[derive(Clone)]
pub struct Mailer {
    transport: Transport,
}

impl fmt::Debug for Mailer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.transport {
            Transport::Smtp(s) => f.debug_struct("Mailer").field("smtp", &s.server()).finish(),
            Transport::Outbox(dir) => f.debug_struct("Mailer").field("outbox", dir).finish(),
        }
    }
}

impl Mailer {
    /// A mailer over pooled SMTP connections. Nothing is connected yet: the first
    /// [`send`](Self::send) connects.
    pub fn smtp(opts: SmtpOptions) -> Result<Mailer, MailError> {
        Ok(Mailer { transport: Transport::Smtp(SmtpSender::new(opts)?) })
    }

    /// A mailer that writes each message to `dir` as an `.eml` file (see [`write_eml`]).
    pub fn outbox(dir: PathBuf) -> Mailer {
        Mailer { transport: Transport::Outbox(dir) }
    }

    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// Sends the message (or writes it to the outbox). Returns a description for the history,
    /// such as `sent to 2 recipients via smtp.example.com:587`.
    pub async fn send(&self, p: &MailPayload) -> Result<String, MailError> {
        match &self.transport {
            Transport::Outbox(dir) => {
                let dir = dir.clone();
                let payload = p.clone();
                let path = tokio::task::spawn_blocking(move || write_eml(&dir, &payload)).await.map_err(|e| {
                    MailError::Io { context: "writing to the outbox".into(), source: std::io::Error::other(e) }
                })??;
                Ok(format!("written to {}", path.display()))
            }
            Transport::Smtp(smtp) => smtp.send(p).await,
        }
    }
}
