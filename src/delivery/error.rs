//! Why a delivery could not be set up, rendered or made, and whether trying again may help.

use std::fmt;
use std::path::PathBuf;

use super::mail::MailError;
use crate::policy::PathError;
use crate::routine::template::TemplateError;

/// Why a delivery failed. [`DeliveryError::retryable`] tells a failure that may pass (a server
/// away, a disk full) from one that needs the routine or the config to change.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeliveryError {
    /// A template of the delivery (path, subject, body) did not render.
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// A file delivery's path rendered to nothing.
    #[error("the rendered path is empty")]
    EmptyPath,
    /// A file delivery's path is outside the workspace or forbidden.
    #[error(transparent)]
    Path(#[from] PathError),
    /// A rendered path or address holds a whole secret: it is not used, so the secret is
    /// neither written to disk nor stored with the delivery.
    #[error("the rendered {field} holds a secret value; it is not used (render it from something else)")]
    SecretInTarget { field: &'static str },
    /// A file delivery in mode `create` found the file there.
    #[error("{shown} already exists and mode is create; use overwrite or append")]
    FileExists { shown: String },
    /// A file delivery could not write its file.
    #[error("cannot write {shown}: {source}")]
    Write {
        shown: String,
        #[source]
        source: std::io::Error,
    },
    /// A mail could not be built, sent or written to the outbox; `kept` says where it waits.
    #[error("{source}{kept}")]
    Mail {
        #[source]
        source: MailError,
        kept: Kept,
    },
    /// A recorded delivery has no payload to attempt: its template failed when the run rendered it.
    #[error("{kind} delivery to {target} was never rendered (its template failed); fix the routine and run it again")]
    NotRendered { kind: String, target: String },
    /// `mail.smtp.ca_file` could not be read.
    #[error("mail.smtp.ca_file: cannot read {}: {source}", path.display())]
    CaFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The SMTP settings cannot work (a bad certificate, a username without a password).
    #[error("mail.smtp: {0}")]
    Smtp(#[source] MailError),
}

impl DeliveryError {
    /// Whether attempting the same delivery again later may succeed: a mail the server deferred
    /// or could not take, a file that could not be written. A template, a path, a refused
    /// message or the settings must change first.
    pub fn retryable(&self) -> bool {
        match self {
            DeliveryError::Mail { source, .. } => source.is_retryable(),
            DeliveryError::Write { .. } => true,
            DeliveryError::Template(_)
            | DeliveryError::EmptyPath
            | DeliveryError::Path(_)
            | DeliveryError::SecretInTarget { .. }
            | DeliveryError::FileExists { .. }
            | DeliveryError::NotRendered { .. }
            | DeliveryError::CaFile { .. }
            | DeliveryError::Smtp(_) => false,
        }
    }

    /// Whether the delivery may have been made although it failed: a mail whose end of data
    /// the SMTP server never answered. It is recorded `uncertain`, never attempted again
    /// unasked (`routines deliver --retry --uncertain` does).
    pub fn uncertain(&self) -> bool {
        matches!(self, DeliveryError::Mail { source: MailError::Unconfirmed(_), .. })
    }

    /// The exit code of a command stopped by it: 2 for settings that cannot work, else 1.
    pub fn exit_code(&self) -> u8 {
        match self {
            DeliveryError::CaFile { .. } | DeliveryError::Smtp(_) => 2,
            _ => 1,
        }
    }

    /// What to do about it, where the message does not say.
    pub fn hint(&self) -> Option<String> {
        match self {
            DeliveryError::CaFile { .. } => {
                Some("a relative mail.smtp.ca_file is read from the config file's folder".into())
            }
            _ => None,
        }
    }
}

/// Where a mail that could not be sent over SMTP waits: written to the outbox as `.eml`, or
/// nowhere. Shown after the error, as in `…; the message is kept in outbox/run-1.0@x.eml`.
#[derive(Debug)]
pub enum Kept {
    /// Not written there: the outbox is the transport itself.
    Nowhere,
    /// Written to this file.
    InOutbox(PathBuf),
    /// Writing it to the outbox failed too.
    NotKept(MailError),
}

impl fmt::Display for Kept {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kept::Nowhere => Ok(()),
            Kept::InOutbox(path) => write!(f, "; the message is kept in {}", path.display()),
            Kept::NotKept(e) => write!(f, "; it could not be kept in the outbox either: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mail_failure_keeps_its_classification_and_says_where_the_message_waits() {
        let deferred = DeliveryError::Mail {
            source: MailError::Send("the SMTP server mx:25 refused the message for now (451)".into()),
            kept: Kept::InOutbox(PathBuf::from("outbox/run-1.0@x.eml")),
        };
        assert!(deferred.retryable());
        assert_eq!(
            deferred.to_string(),
            "the SMTP server mx:25 refused the message for now (451); the message is kept in outbox/run-1.0@x.eml"
        );
        let rejected = DeliveryError::Mail {
            source: MailError::Rejected("the SMTP server mx:25 rejected the message (550)".into()),
            kept: Kept::NotKept(MailError::Build("no recipients".into())),
        };
        assert!(!rejected.retryable());
        assert_eq!(
            rejected.to_string(),
            "the SMTP server mx:25 rejected the message (550); it could not be kept in the outbox either: no recipients"
        );
        let outbox = DeliveryError::Mail { source: MailError::Build("bad address".into()), kept: Kept::Nowhere };
        assert_eq!((outbox.to_string().as_str(), outbox.retryable()), ("bad address", false));
    }

    #[test]
    fn settings_that_cannot_work_exit_2_and_other_failures_1() {
        let ca = DeliveryError::CaFile { path: "ca.pem".into(), source: std::io::ErrorKind::NotFound.into() };
        assert_eq!((ca.exit_code(), ca.retryable()), (2, false));
        assert!(ca.hint().is_some());
        assert_eq!(DeliveryError::Smtp(MailError::Build("x".into())).exit_code(), 2);
        assert_eq!(DeliveryError::EmptyPath.exit_code(), 1);
    }
}
