//! Where results go. Each delivery is recorded with its own status before it
//! is attempted, with everything needed to retry it without the agent.

pub mod file;
pub mod mail;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A delivery rendered and ready to attempt (stored as the row's payload).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Payload {
    File(file::FilePayload),
    Mail(Box<mail::MailPayload>),
}

/// Where deliveries go: the mail transport, and the outbox folder where a
/// message that could not be sent is kept.
#[derive(Clone)]
pub struct Deliverer {
    pub mailer: mail::Mailer,
    pub outbox: PathBuf,
}

impl Payload {
    pub fn kind(&self) -> &'static str {
        match self {
            Payload::File(_) => "file",
            Payload::Mail(_) => "mail",
        }
    }

    /// What a person reads in history: the path, the addresses.
    pub fn target(&self) -> String {
        match self {
            Payload::File(f) => f.shown.clone(),
            Payload::Mail(m) => m.to.iter().chain(&m.cc).chain(&m.bcc).cloned().collect::<Vec<_>>().join(", "),
        }
    }

    /// One attempt. A mail that cannot be sent over SMTP is kept as an
    /// `.eml` file in the outbox until an attempt succeeds.
    pub async fn deliver(&self, d: &Deliverer) -> Result<String, String> {
        match self {
            Payload::File(f) => file::deliver(f),
            Payload::Mail(m) => {
                let smtp = matches!(d.mailer.transport(), mail::Transport::Smtp(_));
                match d.mailer.send(m).await {
                    Ok(done) => {
                        if smtp {
                            let _ = std::fs::remove_file(d.outbox.join(mail::eml_file_name(&m.message_id)));
                        }
                        Ok(done)
                    }
                    Err(e) if smtp => match mail::write_eml(&d.outbox, m) {
                        Ok(path) => Err(format!("{e}; the message is kept in {}", path.display())),
                        Err(keep) => Err(format!("{e}; it could not be kept in the outbox either: {keep}")),
                    },
                    Err(e) => Err(e.to_string()),
                }
            }
        }
    }
}
