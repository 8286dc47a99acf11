//! The delivery stage: where results go. After a run, each target is rendered into a
//! [`Payload`] (`render.rs`, `plan.rs`) and recorded with the run's end; each is then claimed,
//! attempted and finished with its own status; deliveries that failed, or whose attempt a dying
//! process cut off, are attempted again later from the recorded payload, without the agent
//! (`attempts.rs`). The [`Deliverer`] holding it all is built from the config
//! (`setup.rs`); failures are [`DeliveryError`]s that say whether trying again may help.

mod attempts;
mod error;
pub mod file;
pub mod mail;
mod plan;
mod render;
mod setup;

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::policy::Redactor;
use crate::routine::template::Templates;
use crate::store::Store;

pub use attempts::{DeliveryReport, Retried};
pub use error::{DeliveryError, Kept};
pub use plan::Planned;
pub use setup::configured_smtp;

/// A delivery rendered and ready to attempt (stored as the row's payload).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Payload {
    File(file::FilePayload),
    Mail(Box<mail::MailPayload>),
}

/// The delivery stage: the mail transport, the outbox folder where a message that could not be
/// sent is kept, what rendering needs (templates, the workspace and its forbidden paths, the
/// sender), the secrets kept out of what is delivered, and the store deliveries are recorded
/// in. Cheap to clone.
#[derive(Clone)]
pub struct Deliverer {
    mailer: mail::Mailer,
    redactor: Redactor,
    outbox: PathBuf,
    store: Store,
    templates: Arc<Templates>,
    workspace: PathBuf,
    forbidden: Vec<PathBuf>,
    /// The engine's own files ([`crate::config::Config::engine_files`]), with canonical forms:
    /// file deliveries never write them.
    protected: Vec<PathBuf>,
    /// `mail.from`, or `Routines <routines@localhost>`.
    from: String,
}

/// The fields of a mail's payload that are sent as they are: the sender, the recipients and
/// the Message-ID (the outbox's file name and the idempotency key).
const MAIL_ACTED_ON: &[&str] = &["kind", "from", "to", "cc", "bcc", "message_id", "date"];

impl Deliverer {
    /// The workspace, opened now, with its forbidden paths and the engine's own files.
    fn confinement(&self) -> Result<crate::policy::Confinement, DeliveryError> {
        let root = self
            .workspace
            .canonicalize()
            .map_err(|e| crate::policy::PathError::Workspace { path: self.workspace.clone(), reason: e.to_string() })?;
        Ok(crate::policy::Confinement::open(&root, self.forbidden.clone(), self.protected.clone())?)
    }
}

impl Payload {
    pub fn kind(&self) -> &'static str {
        match self {
            Payload::File(_) => "file",
            Payload::Mail(_) => "mail",
        }
    }

    /// The top-level fields of its JSON that the engine acts on (the path and mode of a file,
    /// the addresses and Message-ID of a mail): stored as they are, never redacted, so what
    /// is done later is what was rendered. The rest (what a person reads) is redacted.
    pub fn acted_on(&self) -> &'static [&'static str] {
        match self {
            Payload::File(_) => file::ACTED_ON,
            Payload::Mail(_) => MAIL_ACTED_ON,
        }
    }

    /// What a person reads in history: the path, the addresses.
    pub fn target(&self) -> String {
        match self {
            Payload::File(f) => f.shown.clone(),
            Payload::Mail(m) => m.to.iter().chain(&m.cc).chain(&m.bcc).cloned().collect::<Vec<_>>().join(", "),
        }
    }

    /// Whether it may be attempted again after an attempt that was cut off (its process died
    /// during it) without ever arriving twice: a file in `overwrite` or `create` mode
    /// ([`file::repeatable`]), a mail written to the outbox folder (one file per Message-ID).
    /// Not a file in `append` mode, and not a mail over SMTP, which the server may have taken.
    pub fn repeatable(&self, d: &Deliverer) -> bool {
        match self {
            Payload::File(f) => file::repeatable(f),
            Payload::Mail(_) => matches!(d.mailer.transport(), mail::Transport::Outbox(_)),
        }
    }

    /// One attempt after an attempt that was cut off; only for a [`Payload::repeatable`] one.
    pub async fn deliver_again(&self, d: &Deliverer) -> Result<String, DeliveryError> {
        match self {
            Payload::File(f) => file::deliver_again(f, &d.confinement()?),
            Payload::Mail(_) => self.deliver(d).await,
        }
    }

    /// One attempt. A mail that cannot be sent over SMTP is kept as an `.eml` file in the
    /// outbox until an attempt succeeds. Returns a description for the history.
    pub async fn deliver(&self, d: &Deliverer) -> Result<String, DeliveryError> {
        match self {
            Payload::File(f) => file::deliver(f, &d.confinement()?),
            Payload::Mail(m) => {
                let smtp = matches!(d.mailer.transport(), mail::Transport::Smtp(_));
                match d.mailer.send(m).await {
                    Ok(done) => {
                        if smtp {
                            let _ = std::fs::remove_file(d.outbox.join(mail::eml_file_name(&m.message_id)));
                        }
                        Ok(done)
                    }
                    Err(source) => {
                        let kept = if !smtp {
                            Kept::Nowhere
                        } else {
                            match mail::write_eml(&d.outbox, m) {
                                Ok(path) => Kept::InOutbox(path),
                                Err(keep) => Kept::NotKept(keep),
                            }
                        };
                        Err(DeliveryError::Mail { source, kept })
                    }
                }
            }
        }
    }
}
