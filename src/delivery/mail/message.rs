//! A [`MailPayload`] as a MIME message: its Message-ID and date, and [`build`].

use std::time::SystemTime;

use chrono::{DateTime, Utc};
use lettre::Message;
use lettre::message::header::ContentType;
use lettre::message::{Mailbox, MultiPart, SinglePart};

use super::{MailError, MailPayload};

/// The Message-ID of the `seq`-th mail target of run `run_id`, in the domain of `from`:
/// `<run-42.0@example.com>`. Deterministic, so it is the same on every attempt.
pub fn message_id(run_id: i64, seq: u32, from: &str) -> String {
    let domain = domain_of(from).unwrap_or("localhost");
    format!("<run-{run_id}.{seq}@{domain}>")
}

/// The domain of an address written as `a@example.com` or `Name <a@example.com>`, if it has a
/// plain one (letters, digits, `.`, `-`).
fn domain_of(from: &str) -> Option<&str> {
    let addr = match (from.rfind('<'), from.rfind('>')) {
        (Some(open), Some(close)) if open < close => &from[open + 1..close],
        _ => from,
    };
    let domain = addr.trim().rsplit_once('@')?.1;
    let plain = !domain.is_empty() && domain.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
    plain.then_some(domain)
}

/// The current time as an RFC 2822 date, written exactly as the `Date` header of a built message.
pub fn rfc2822_now() -> String {
    rfc2822(Utc::now())
}

/// `t` as an RFC 2822 date in UTC, written exactly as the `Date` header of a built message:
/// `Tue, 02 Jun 2026 09:00:00 +0000`.
pub fn rfc2822(t: DateTime<Utc>) -> String {
    t.format("%a, %d %b %Y %H:%M:%S +0000").to_string()
}

/// Builds the MIME message: `text/plain`, or `multipart/alternative` (text + HTML) when `html`
/// is set, inside `multipart/mixed` with the attachment when there is one. Non-ASCII subjects,
/// display names and file names are encoded (RFC 2047 / 2231). The `Message-ID` and `Date`
/// headers come from the payload; `Bcc` recipients are in the envelope only.
pub fn build(p: &MailPayload) -> Result<Message, MailError> {
    if p.to.is_empty() && p.cc.is_empty() && p.bcc.is_empty() {
        return Err(MailError::Build("the message has no recipients: give at least one address in `to`".into()));
    }
    let date = DateTime::parse_from_rfc2822(p.date.trim()).map_err(|e| {
        MailError::Build(format!("the date `{}` is not an RFC 2822 date ({e}); this is a bug in routines", p.date))
    })?;
    check_message_id(&p.message_id)?;

    let mut builder = Message::builder()
        .from(mailbox("from", &p.from)?)
        .subject(one_line(&p.subject))
        .message_id(Some(p.message_id.clone()))
        .date(SystemTime::from(date));
    for addr in &p.to {
        builder = builder.to(mailbox("to", addr)?);
    }
    for addr in &p.cc {
        builder = builder.cc(mailbox("cc", addr)?);
    }
    for addr in &p.bcc {
        builder = builder.bcc(mailbox("bcc", addr)?);
    }

    let message = match (&p.html, &p.attachment) {
        (None, None) => builder.singlepart(SinglePart::plain(p.text.clone())),
        (Some(html), None) => builder.multipart(MultiPart::alternative_plain_html(p.text.clone(), html.clone())),
        (html, Some(attachment)) => {
            let content_type = ContentType::parse(&attachment.content_type).map_err(|e| {
                MailError::Build(format!(
                    "the attachment `{}` has an invalid content type `{}` ({e}): use a MIME type such as \
                     `text/plain; charset=utf-8`",
                    attachment.filename, attachment.content_type
                ))
            })?;
            let file = lettre::message::Attachment::new(one_line(&attachment.filename))
                .body(attachment.content.clone(), content_type);
            let mixed = match html {
                Some(html) => {
                    MultiPart::mixed().multipart(MultiPart::alternative_plain_html(p.text.clone(), html.clone()))
                }
                None => MultiPart::mixed().singlepart(SinglePart::plain(p.text.clone())),
            };
            builder.multipart(mixed.singlepart(file))
        }
    };
    message.map_err(|e| MailError::Build(format!("the message could not be built: {e}")))
}

fn mailbox(field: &str, addr: &str) -> Result<Mailbox, MailError> {
    addr.trim().parse::<Mailbox>().map_err(|e| {
        MailError::Build(format!(
            "`{addr}` in `{field}` is not a valid e-mail address ({e}): write it as `name@example.com` or \
             `Name <name@example.com>`"
        ))
    })
}

/// A header value on one line: line breaks and other control characters become spaces, so a
/// templated subject cannot add headers.
fn one_line(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect::<String>().trim().to_owned()
}

fn check_message_id(id: &str) -> Result<(), MailError> {
    let inner = id.strip_prefix('<').and_then(|s| s.strip_suffix('>'));
    let ok = inner.is_some_and(|s| {
        s.split_once('@').is_some_and(|(l, r)| !l.is_empty() && !r.is_empty())
            && s.chars().all(|c| c.is_ascii_graphic() && c != '<' && c != '>')
    });
    if ok {
        Ok(())
    } else {
        Err(MailError::Build(format!(
            "the Message-ID `{id}` is not of the form `<left@right>`; this is a bug in routines"
        )))
    }
}
