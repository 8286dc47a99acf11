//! Mail delivery: a [`MailPayload`] is everything needed to send one message again without the
//! agent (it is stored as JSON with the delivery), [`build`] turns it into a MIME message, and a
//! [`Mailer`] sends it over SMTP (pooled, rustls) or writes it to an outbox folder as `.eml`.
//!
//! The Message-ID is fixed per (run, target) by [`message_id`] and travels in the payload, so a
//! message sent again after a crash or a retry is recognisably the same message, and
//! [`write_eml`] keeps at most one file per message.

use std::fmt;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use lettre::message::header::ContentType;
use lettre::message::{Mailbox, MultiPart, SinglePart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport as _, Message, Tokio1Executor};
use serde::{Deserialize, Serialize};

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
            Self::Build(_) | Self::Rejected(_) => false,
        }
    }
}

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

/// How the connection to the SMTP server is secured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Security {
    /// Plain connection upgraded with STARTTLS, which must succeed (usually port 587).
    Starttls,
    /// TLS from the first byte (usually port 465).
    Tls,
    /// No encryption at all (a local relay on port 25, tests).
    None,
}

/// Where and how to reach the SMTP server.
#[derive(Clone)]
pub struct SmtpOptions {
    pub host: String,
    pub port: u16,
    pub security: Security,
    pub username: Option<String>,
    pub password: Option<String>,
    /// Bounds connecting and each exchange with the server.
    pub timeout: Duration,
    /// Extra root certificate (PEM) to trust, for tests with a self-signed certificate.
    pub extra_root_pem: Option<Vec<u8>>,
}

impl fmt::Debug for SmtpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmtpOptions")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("security", &self.security)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("extra_root_pem", &self.extra_root_pem.as_ref().map(Vec::len))
            .finish()
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

/// A pooled SMTP connection to one server.
#[derive(Clone)]
pub struct SmtpSender {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    /// `host:port`, for messages.
    server: String,
    username: Option<String>,
    timeout: Duration,
}

/// Sends messages through its [`Transport`]. Cheap to clone; clones share the connection pool.
#[derive(Clone)]
pub struct Mailer {
    transport: Transport,
}

impl fmt::Debug for Mailer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.transport {
            Transport::Smtp(s) => f.debug_struct("Mailer").field("smtp", &s.server).finish(),
            Transport::Outbox(dir) => f.debug_struct("Mailer").field("outbox", dir).finish(),
        }
    }
}

impl Mailer {
    /// A mailer over a pooled SMTP connection. Nothing is connected yet: the first
    /// [`send`](Self::send) connects.
    pub fn smtp(opts: SmtpOptions) -> Result<Mailer, MailError> {
        let server = format!("{}:{}", opts.host, opts.port);
        let tls_parameters = || -> Result<TlsParameters, MailError> {
            let mut params = TlsParameters::builder(opts.host.clone());
            if let Some(pem) = &opts.extra_root_pem {
                let cert = Certificate::from_pem(pem).map_err(|e| {
                    MailError::Build(format!("the extra root certificate for {server} is not valid PEM: {e}"))
                })?;
                params = params.add_root_certificate(cert);
            }
            params
                .build_rustls()
                .map_err(|e| MailError::Build(format!("TLS for the SMTP server {server} could not be set up: {e}")))
        };
        let tls = match opts.security {
            Security::Starttls => Tls::Required(tls_parameters()?),
            Security::Tls => Tls::Wrapper(tls_parameters()?),
            Security::None => Tls::None,
        };
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&opts.host)
            .port(opts.port)
            .tls(tls)
            .timeout(Some(opts.timeout));
        match (&opts.username, &opts.password) {
            (Some(user), Some(password)) => {
                builder = builder.credentials(Credentials::new(user.clone(), password.clone()));
            }
            (None, None) => {}
            _ => {
                return Err(MailError::Build(format!(
                    "the SMTP server {server} needs both a username and a password, only one is set: check \
                     mail.smtp.username_env and mail.smtp.password_env"
                )));
            }
        }
        let sender = SmtpSender { transport: builder.build(), server, username: opts.username, timeout: opts.timeout };
        Ok(Mailer { transport: Transport::Smtp(sender) })
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
            Transport::Smtp(smtp) => {
                let message = build(p)?;
                let recipients = message.envelope().to().len();
                smtp.transport.send(message).await.map_err(|e| smtp.classify(&e))?;
                tracing::debug!(server = %smtp.server, message_id = %p.message_id, recipients, "Mail sent.");
                let plural = if recipients == 1 { "" } else { "s" };
                Ok(format!("sent to {recipients} recipient{plural} via {}", smtp.server))
            }
        }
    }
}

impl SmtpSender {
    /// Turns a lettre error into a message for people, retryable or not.
    fn classify(&self, err: &lettre::transport::smtp::Error) -> MailError {
        let server = &self.server;
        if let Some(code) = err.status() {
            let code = code.to_string();
            match &self.username {
                Some(user) if matches!(code.as_str(), "535" | "534" | "538") => {
                    return MailError::Rejected(format!(
                        "the SMTP server {server} refused the login of `{user}` ({err}): check the username and \
                         password in the variables named by mail.smtp.username_env and mail.smtp.password_env"
                    ));
                }
                None if code == "530" => {
                    return MailError::Rejected(format!(
                        "the SMTP server {server} requires a login ({err}): set mail.smtp.username_env and \
                         mail.smtp.password_env"
                    ));
                }
                _ => {}
            }
            return if err.is_transient() {
                MailError::Send(format!(
                    "the SMTP server {server} refused the message for now ({err}); it will be retried"
                ))
            } else {
                MailError::Rejected(format!(
                    "the SMTP server {server} rejected the message ({err}): check the addresses and the \
                     server's rules; it is kept in the outbox and not retried"
                ))
            };
        }
        if err.is_timeout() {
            return MailError::Send(format!(
                "the SMTP server {server} did not answer within {}s ({err}); it will be retried",
                self.timeout.as_secs_f64()
            ));
        }
        if err.is_tls() || tls_failure(err) {
            return MailError::Rejected(format!(
                "TLS with the SMTP server {server} failed ({}): check mail.smtp.security (starttls for port \
                 587, tls for 465) and that the server's certificate is valid for `{}`",
                detail(err),
                server.rsplit_once(':').map_or(server.as_str(), |(host, _)| host)
            ));
        }
        if err.is_client() {
            let detail = detail(err);
            let hint = if detail.contains("STARTTLS") {
                "the server does not offer STARTTLS: use mail.smtp.security: tls for port 465, or none only for a \
                 trusted local relay"
            } else if detail.contains("authentication") {
                "the server offers no login method that routines supports (PLAIN, LOGIN) on this connection: \
                 check mail.smtp.security"
            } else {
                "check the mail.smtp settings"
            };
            return MailError::Rejected(format!("sending through the SMTP server {server} failed ({detail}): {hint}"));
        }
        if connection_refused(err) {
            return MailError::Send(format!(
                "could not connect to the SMTP server {server} ({}): check that it is running and that \
                 mail.smtp.host and mail.smtp.port are right; it will be retried",
                detail(err)
            ));
        }
        MailError::Send(format!("talking to the SMTP server {server} failed ({}); it will be retried", detail(err)))
    }
}

/// The error and its causes in one line, without the repetitions lettre's nesting produces.
fn detail(err: &lettre::transport::smtp::Error) -> String {
    let mut text = err.to_string();
    while text.contains("Connection error: Connection error: ") {
        text = text.replace("Connection error: Connection error: ", "Connection error: ");
    }
    text
}

/// Whether the TLS handshake failed (rustls reports it as an I/O error of kind `InvalidData`
/// inside a connection error, e.g. `invalid peer certificate: UnknownIssuer`).
fn tls_failure(err: &lettre::transport::smtp::Error) -> bool {
    let mut source = std::error::Error::source(err);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::InvalidData {
                return true;
            }
        }
        source = e.source();
    }
    false
}

fn connection_refused(err: &lettre::transport::smtp::Error) -> bool {
    let mut source = std::error::Error::source(err);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionRefused
                    | std::io::ErrorKind::NotFound
                    | std::io::ErrorKind::AddrNotAvailable
                    | std::io::ErrorKind::HostUnreachable
                    | std::io::ErrorKind::NetworkUnreachable
            );
        }
        source = e.source();
    }
    err.to_string().starts_with("Connection error")
}

/// The `.eml` file name of a Message-ID: `<run-42.0@example.com>` → `run-42.0@example.com.eml`.
pub fn eml_file_name(message_id: &str) -> String {
    let inner = message_id.trim().trim_start_matches('<').trim_end_matches('>');
    let safe: String = inner
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '@' | '+') { c } else { '_' })
        .collect();
    let safe = safe.trim_start_matches('.');
    if safe.is_empty() { "message.eml".to_owned() } else { format!("{safe}.eml") }
}

/// Writes the message as an `.eml` file in `dir` (created if missing), atomically: a temporary
/// file in the same folder, synced, then renamed over `eml_file_name(message_id)`. Writing the same
/// message again replaces the file, so one message is one file. Returns the path.
pub fn write_eml(dir: &Path, p: &MailPayload) -> Result<PathBuf, MailError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let bytes = build(p)?.formatted();
    fs::create_dir_all(dir).map_err(|source| MailError::Io {
        context: format!("could not create the outbox folder {}", dir.display()),
        source,
    })?;
    let path = dir.join(eml_file_name(&p.message_id));
    let tmp = dir.join(format!(
        ".{}.{}-{}.tmp",
        eml_file_name(&p.message_id),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let write = || -> std::io::Result<()> {
        let mut file = fs::File::create(&tmp)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        fs::rename(&tmp, &path)
    };
    if let Err(source) = write() {
        let _ = fs::remove_file(&tmp);
        return Err(MailError::Io { context: format!("could not write {}", path.display()), source });
    }
    Ok(path)
}
