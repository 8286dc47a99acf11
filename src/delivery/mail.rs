//! Mail delivery: a [`MailPayload`] is everything needed to send one message again without the
//! agent (it is stored as JSON with the delivery), [`build`] turns it into a MIME message, and a
//! [`Mailer`] sends it over SMTP (pooled, rustls) or writes it to an outbox folder as `.eml`.
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
//! transport would do again.) So:
//!
//! - **Connecting**: `connect_tcp` resolves the host and connects to each address in turn, each
//!   within the timeout, and sets `TCP_NODELAY`. The stream is wrapped in a `TimedStream` and
//!   handed to lettre with [`AsyncSmtpConnection::connect_with_transport`], which reads the
//!   greeting and sends EHLO; then `starttls` (security `starttls`, which must succeed) and `auth`
//!   (PLAIN or LOGIN) when credentials are set. For implicit TLS (security `tls`) the handshake
//!   comes first: lettre's TLS (rustls, with the extra root CA) over the same stream, seen by
//!   lettre again as a plain stream through `TlsFirst`. One error classification
//!   (`SmtpClient::classify`) serves every step.
//! - **Timeouts**: `timeout` bounds the TCP connect (per address) and then every wait on the
//!   connection: a read or write that makes no progress for that long fails with `TimedOut`
//!   (`TimedStream`). So it bounds each exchange with the server, not the size of a message.
//! - **Pooling**: a [`Mailer`] and its clones share one pool of idle connections. A send takes
//!   the most recently used one, checks it with `NOOP` and uses it, or drops it and tries the next
//!   (a server that closed an idle connection, or went away); with none left it connects. After
//!   the send the connection goes back at once (so one-after-the-other sends use one connection),
//!   unless lettre marked it broken (it quits after an error inside a transaction). Concurrent
//!   sends each take their own connection; at most `MAX_IDLE` (10) are kept idle, and a task
//!   closes (`QUIT`) those idle for `IDLE_TIMEOUT` (60 s), exiting when none is left. A message
//!   is never sent again automatically: a failed send is reported, retryable or not, as before.

use std::fmt;
use std::fs;
use std::future::Future as _;
use std::io::{self, Write as _};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime};

use chrono::{DateTime, Utc};
use lettre::message::header::ContentType;
use lettre::message::{Mailbox, MultiPart, SinglePart};
use lettre::transport::smtp::authentication::{Credentials, DEFAULT_MECHANISMS};
#[allow(deprecated)] // public in 0.11 (deprecated only as "not meant to be public"); needed for implicit TLS
use lettre::transport::smtp::client::AsyncNetworkStream;
use lettre::transport::smtp::client::{AsyncSmtpConnection, AsyncTokioStream, Certificate, TlsParameters};
use lettre::transport::smtp::extension::ClientId;
use lettre::{Message, address::Envelope};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Sleep;

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

/// Connections to one SMTP server, pooled (see the module docs). Cheap to clone; clones share
/// the pool.
#[derive(Clone)]
pub struct SmtpSender {
    inner: Arc<SmtpClient>,
}

/// How to connect to the server, and the idle connections.
struct SmtpClient {
    host: String,
    port: u16,
    /// `host:port`, for messages.
    server: String,
    tls: Secure,
    credentials: Option<Credentials>,
    username: Option<String>,
    hello: ClientId,
    timeout: Duration,
    pool: Mutex<Pool>,
}

enum Secure {
    None,
    Starttls(TlsParameters),
    Implicit(TlsParameters),
}

/// The idle connections, oldest first, and the task that closes those idle too long.
#[derive(Default)]
struct Pool {
    idle: Vec<Idle>,
    reaper: Option<tokio::task::JoinHandle<()>>,
}

struct Idle {
    conn: AsyncSmtpConnection,
    since: Instant,
}

/// At most this many idle connections are kept per [`Mailer`] (and its clones); a connection
/// coming back to a full pool is closed.
const MAX_IDLE: usize = 10;

/// An idle connection is closed (`QUIT`) after this long unused.
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Sends messages through its [`Transport`]. Cheap to clone; clones share the connection pool.
#[derive(Clone)]
pub struct Mailer {
    transport: Transport,
}

impl fmt::Debug for Mailer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.transport {
            Transport::Smtp(s) => f.debug_struct("Mailer").field("smtp", &s.inner.server).finish(),
            Transport::Outbox(dir) => f.debug_struct("Mailer").field("outbox", dir).finish(),
        }
    }
}

impl Mailer {
    /// A mailer over pooled SMTP connections. Nothing is connected yet: the first
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
            Security::Starttls => Secure::Starttls(tls_parameters()?),
            Security::Tls => Secure::Implicit(tls_parameters()?),
            Security::None => Secure::None,
        };
        let credentials = match (&opts.username, &opts.password) {
            (Some(user), Some(password)) => Some(Credentials::new(user.clone(), password.clone())),
            (None, None) => None,
            _ => {
                return Err(MailError::Build(format!(
                    "the SMTP server {server} needs both a username and a password, only one is set: check \
                     mail.smtp.username_env and mail.smtp.password_env"
                )));
            }
        };
        let client = SmtpClient {
            host: opts.host,
            port: opts.port,
            server,
            tls,
            credentials,
            username: opts.username,
            hello: ClientId::default(),
            timeout: opts.timeout,
            pool: Mutex::new(Pool::default()),
        };
        Ok(Mailer { transport: Transport::Smtp(SmtpSender { inner: Arc::new(client) }) })
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
                let envelope = message.envelope();
                let recipients = envelope.to().len();
                smtp.inner.send(envelope, &message.formatted()).await?;
                tracing::debug!(server = %smtp.inner.server, message_id = %p.message_id, recipients, "Mail sent.");
                let plural = if recipients == 1 { "" } else { "s" };
                Ok(format!("sent to {recipients} recipient{plural} via {}", smtp.inner.server))
            }
        }
    }
}

impl SmtpClient {
    /// Sends one message over a pooled connection, or a new one when none is idle or every idle
    /// one fails its `NOOP`. Never sends the message twice.
    async fn send(self: &Arc<Self>, envelope: &Envelope, email: &[u8]) -> Result<(), MailError> {
        let mut conn = self.checkout().await?;
        let result = conn.send(envelope, email).await;
        // lettre quits and closes the connection after an error inside the transaction (a refused
        // recipient, a broken connection); one that errs before it (say, 8BITMIME not offered)
        // is still good.
        if !conn.has_broken() {
            self.park(conn);
        }
        result.map(drop).map_err(|e| self.classify(&e))
    }

    /// The most recently used idle connection that still answers `NOOP`, else a new one.
    async fn checkout(&self) -> Result<AsyncSmtpConnection, MailError> {
        loop {
            // (The guard must be gone before the await.)
            let Some(Idle { mut conn, .. }) = self.pool().idle.pop() else { break };
            if conn.test_connected().await {
                return Ok(conn);
            }
            // No QUIT for a connection that did not answer NOOP: dropping it closes it.
            tracing::debug!(server = %self.server, "A pooled SMTP connection is gone; dropping it.");
        }
        self.connect().await
    }

    /// Puts a connection back into the pool, and makes sure a task will close it once idle too
    /// long.
    fn park(self: &Arc<Self>, conn: AsyncSmtpConnection) {
        let mut pool = self.pool();
        if pool.idle.len() >= MAX_IDLE {
            drop(pool);
            tokio::spawn(quit(vec![conn]));
            return;
        }
        pool.idle.push(Idle { conn, since: Instant::now() });
        // A reaper that finished without clearing its handle was stopped with its runtime.
        if pool.reaper.as_ref().is_none_or(tokio::task::JoinHandle::is_finished) {
            pool.reaper = Some(tokio::spawn(reap(Arc::downgrade(self))));
        }
    }

    fn pool(&self) -> MutexGuard<'_, Pool> {
        // The pool's state is valid whenever the lock is free, even after a panic elsewhere.
        self.pool.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new connection, ready for a transaction: TCP with `TCP_NODELAY`, TLS as configured,
    /// EHLO, and the login when credentials are set.
    async fn connect(&self) -> Result<AsyncSmtpConnection, MailError> {
        let tcp = connect_tcp(&self.host, self.port, self.timeout).await.map_err(|e| self.connect_error(&e))?;
        let stream = TimedStream::new(tcp, self.timeout);
        let connected = match &self.tls {
            Secure::Implicit(params) => {
                #[allow(deprecated)]
                let mut tls = AsyncNetworkStream::use_existing_tokio1(Box::new(stream));
                tls.upgrade_tls(params.clone()).await.map_err(|e| self.classify(&e))?;
                AsyncSmtpConnection::connect_with_transport(Box::new(TlsFirst(tls)), &self.hello).await
            }
            Secure::None | Secure::Starttls(_) => {
                AsyncSmtpConnection::connect_with_transport(Box::new(stream), &self.hello).await
            }
        };
        let mut conn = connected.map_err(|e| self.classify(&e))?;
        // On an error below the connection is dropped, not quit: after a failed TLS upgrade
        // lettre's stream must not be used any more.
        if let Secure::Starttls(params) = &self.tls {
            conn.starttls(params.clone(), &self.hello).await.map_err(|e| self.classify(&e))?;
        }
        if let Some(credentials) = &self.credentials {
            conn.auth(DEFAULT_MECHANISMS, credentials).await.map_err(|e| self.classify(&e))?;
        }
        tracing::debug!(server = %self.server, "Connected to the SMTP server.");
        Ok(conn)
    }

    /// Why the TCP connection could not be made, for people; always retryable.
    fn connect_error(&self, err: &io::Error) -> MailError {
        let server = &self.server;
        if err.kind() == io::ErrorKind::TimedOut {
            MailError::Send(format!(
                "the SMTP server {server} did not answer within {}s ({err}); it will be retried",
                self.timeout.as_secs_f64()
            ))
        } else {
            MailError::Send(format!(
                "could not connect to the SMTP server {server} ({err}): check that it is running and that \
                 mail.smtp.host and mail.smtp.port are right; it will be retried"
            ))
        }
    }
}

impl Drop for SmtpClient {
    /// The last clone of the mailer is gone: says `QUIT` on the idle connections if a runtime is
    /// still there to do it; else dropping them closes them.
    fn drop(&mut self) {
        let idle = std::mem::take(&mut self.pool.get_mut().unwrap_or_else(PoisonError::into_inner).idle);
        if let (false, Ok(runtime)) = (idle.is_empty(), tokio::runtime::Handle::try_current()) {
            runtime.spawn(quit(idle.into_iter().map(|i| i.conn).collect()));
        }
    }
}

/// Closes idle connections once they have been idle for [`IDLE_TIMEOUT`]; returns when the pool
/// is empty or gone (the next connection parked starts a new one).
async fn reap(pool: Weak<SmtpClient>) {
    loop {
        let wait = {
            let Some(client) = pool.upgrade() else { return };
            let mut pool = client.pool();
            match pool.idle.first() {
                // The oldest is first: connections are pushed as they come back.
                Some(oldest) => IDLE_TIMEOUT.saturating_sub(oldest.since.elapsed()),
                None => {
                    pool.reaper = None;
                    return;
                }
            }
        };
        tokio::time::sleep(wait).await;
        let expired = {
            let Some(client) = pool.upgrade() else { return };
            let mut pool = client.pool();
            let fresh = pool.idle.partition_point(|i| i.since.elapsed() >= IDLE_TIMEOUT);
            pool.idle.drain(..fresh).map(|i| i.conn).collect::<Vec<_>>()
        };
        if !expired.is_empty() {
            tracing::debug!(count = expired.len(), "Closing idle SMTP connections.");
            quit(expired).await;
        }
    }
}

/// Says `QUIT` on each connection and closes it (each wait bounded by its timeout).
async fn quit(conns: Vec<AsyncSmtpConnection>) {
    for mut conn in conns {
        conn.abort().await;
    }
}

/// Connects to `host:port` with `TCP_NODELAY` set: each resolved address in turn, each attempt
/// (and the name lookup) within `timeout`. The error of the last address when none answers.
async fn connect_tcp(host: &str, port: u16, timeout: Duration) -> io::Result<TcpStream> {
    let timed_out = || io::Error::new(io::ErrorKind::TimedOut, "connection timed out");
    let addrs =
        tokio::time::timeout(timeout, tokio::net::lookup_host((host, port))).await.map_err(|_| timed_out())??;
    let mut last = None;
    for addr in addrs {
        match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => {
                // Without it, Nagle holds lettre's final `\r\n.\r\n` for the server's delayed ACK.
                stream.set_nodelay(true)?;
                return Ok(stream);
            }
            Ok(Err(e)) => last = Some(e),
            Err(_) => last = Some(timed_out()),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("`{host}` has no address"))))
}

/// A TCP stream whose reads, writes and flushes fail with `TimedOut` once one of them has waited
/// `timeout` without progress. Idle time between them does not count: the clock runs only
/// while an operation waits.
#[derive(Debug)]
struct TimedStream {
    tcp: TcpStream,
    timeout: Duration,
    read: Deadline,
    write: Deadline,
}

/// The timer of one direction of a [`TimedStream`], armed while an operation waits.
#[derive(Debug, Default)]
struct Deadline {
    sleep: Option<Pin<Box<Sleep>>>,
    armed: bool,
}

impl Deadline {
    /// Passes `poll` through, and disarms on progress; while it is pending, arms the timer (at
    /// the first wait) and turns its expiry into a `TimedOut` error.
    fn check<T>(&mut self, timeout: Duration, cx: &mut Context<'_>, poll: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if poll.is_ready() {
            self.armed = false;
            return poll;
        }
        let at = tokio::time::Instant::now() + timeout;
        let sleep = self.sleep.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
        if !self.armed {
            sleep.as_mut().reset(at);
            self.armed = true;
        }
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => {
                self.armed = false;
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no progress for {}s", timeout.as_secs_f64()),
                )))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl TimedStream {
    fn new(tcp: TcpStream, timeout: Duration) -> Self {
        TimedStream { tcp, timeout, read: Deadline::default(), write: Deadline::default() }
    }
}

impl AsyncRead for TimedStream {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let poll = Pin::new(&mut this.tcp).poll_read(cx, buf);
        this.read.check(this.timeout, cx, poll)
    }
}

impl AsyncWrite for TimedStream {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let poll = Pin::new(&mut this.tcp).poll_write(cx, buf);
        this.write.check(this.timeout, cx, poll)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let poll = Pin::new(&mut this.tcp).poll_flush(cx);
        this.write.check(this.timeout, cx, poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let poll = Pin::new(&mut this.tcp).poll_shutdown(cx);
        this.write.check(this.timeout, cx, poll)
    }
}

impl AsyncTokioStream for TimedStream {
    fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.tcp.peer_addr()
    }
}

/// Implicit TLS: lettre's TLS stream, already through its handshake, given back to lettre as the
/// plain stream of a new connection (lettre reads the greeting only after the stream is handed
/// over, and its own implicit-TLS connect cannot take a stream). lettre's stream speaks the
/// `futures` I/O traits; lettre takes `tokio`'s.
#[allow(deprecated)]
#[derive(Debug)]
struct TlsFirst(AsyncNetworkStream);

impl AsyncRead for TlsFirst {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let unfilled = buf.initialize_unfilled();
        match futures::io::AsyncRead::poll_read(Pin::new(&mut self.0), cx, unfilled) {
            Poll::Ready(Ok(n)) => {
                buf.advance(n);
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncWrite for TlsFirst {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        futures::io::AsyncWrite::poll_write(Pin::new(&mut self.0), cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        futures::io::AsyncWrite::poll_flush(Pin::new(&mut self.0), cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        futures::io::AsyncWrite::poll_close(Pin::new(&mut self.0), cx)
    }
}

impl AsyncTokioStream for TlsFirst {
    fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.0.peer_addr()
    }
}

impl SmtpClient {
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
    use tokio::net::TcpListener;

    use super::*;

    #[tokio::test]
    async fn connect_tcp_turns_nagle_off() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();

        for host in ["127.0.0.1", "localhost"] {
            let stream = connect_tcp(host, port, Duration::from_secs(5)).await.unwrap();
            assert!(stream.nodelay().unwrap(), "TCP_NODELAY is set on the connection to {host}");
        }
    }

    #[tokio::test]
    async fn connect_tcp_reports_a_refused_connection() {
        let port = TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap().port();
        let err = connect_tcp("127.0.0.1", port, Duration::from_secs(5)).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused, "{err}");
    }

    /// A minimal SMTP server: every command is accepted. Counts connections and messages; with
    /// `close_after_message` it hangs up after each message's `250`, as a server that closed an
    /// idle connection would look to the pool.
    struct FakeSmtp {
        port: u16,
        connections: Arc<AtomicUsize>,
        messages: Arc<AtomicUsize>,
    }

    async fn fake_smtp(close_after_message: bool) -> FakeSmtp {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let messages = Arc::new(AtomicUsize::new(0));
        let (count, received) = (Arc::clone(&connections), Arc::clone(&messages));
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(serve(socket, Arc::clone(&received), close_after_message));
            }
        });
        FakeSmtp { port, connections, messages }
    }

    async fn serve(socket: TcpStream, messages: Arc<AtomicUsize>, close_after_message: bool) {
        let (read, mut write) = socket.into_split();
        let mut read = BufReader::new(read);
        let mut line = String::new();
        let mut in_data = false;
        if write.write_all(b"220 fake ESMTP\r\n").await.is_err() {
            return;
        }
        loop {
            line.clear();
            if read.read_line(&mut line).await.unwrap_or(0) == 0 {
                return;
            }
            let reply: &[u8] = if in_data {
                if line != ".\r\n" {
                    continue;
                }
                in_data = false;
                messages.fetch_add(1, Ordering::SeqCst);
                b"250 queued\r\n"
            } else {
                match line.get(..4).map(str::to_ascii_uppercase).as_deref() {
                    Some("EHLO") => b"250-fake\r\n250 8BITMIME\r\n",
                    Some("DATA") => {
                        in_data = true;
                        b"354 go ahead\r\n"
                    }
                    Some("QUIT") => {
                        let _ = write.write_all(b"221 bye\r\n").await;
                        return;
                    }
                    _ => b"250 OK\r\n",
                }
            };
            if write.write_all(reply).await.is_err() || (reply.starts_with(b"250 queued") && close_after_message) {
                return;
            }
        }
    }

    fn mailer(port: u16, timeout: Duration) -> Mailer {
        Mailer::smtp(SmtpOptions {
            host: "127.0.0.1".into(),
            port,
            security: Security::None,
            username: None,
            password: None,
            timeout,
            extra_root_pem: None,
        })
        .unwrap()
    }

    fn payload(seq: u32) -> MailPayload {
        MailPayload {
            from: "bot@example.com".into(),
            to: vec!["ops@example.com".into()],
            cc: vec![],
            bcc: vec![],
            subject: "Report".into(),
            text: "All systems nominal.\n".into(),
            html: None,
            attachment: None,
            message_id: message_id(1, seq, "bot@example.com"),
            date: rfc2822_now(),
        }
    }

    #[tokio::test]
    async fn sends_one_after_the_other_share_one_connection() {
        let server = fake_smtp(false).await;
        let mailer = mailer(server.port, Duration::from_secs(10));

        for seq in 0..5 {
            mailer.send(&payload(seq)).await.unwrap();
        }

        assert_eq!(server.messages.load(Ordering::SeqCst), 5);
        assert_eq!(server.connections.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_pooled_connection_the_server_closed_is_replaced_without_an_error() {
        let server = fake_smtp(true).await;
        let mailer = mailer(server.port, Duration::from_secs(10));

        for seq in 0..3 {
            mailer.send(&payload(seq)).await.unwrap();
        }

        assert_eq!(server.messages.load(Ordering::SeqCst), 3);
        assert_eq!(server.connections.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn idle_time_in_the_pool_does_not_count_against_the_timeout() {
        let server = fake_smtp(false).await;
        let mailer = mailer(server.port, Duration::from_millis(200));

        mailer.send(&payload(0)).await.unwrap();
        // 500 ms idle, more than the timeout, without waiting for it: the
        // clock jumps while no operation of the connection waits.
        tokio::time::pause();
        tokio::time::advance(Duration::from_millis(500)).await;
        tokio::time::resume();
        mailer.send(&payload(1)).await.unwrap();

        assert_eq!(server.messages.load(Ordering::SeqCst), 2);
        assert_eq!(server.connections.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_server_that_accepts_but_never_answers_is_a_retryable_timeout() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                held.push(socket);
            }
        });
        let mailer = mailer(port, Duration::from_millis(200));

        let err = mailer.send(&payload(0)).await.unwrap_err();

        assert!(matches!(err, MailError::Send(_)) && err.is_retryable(), "{err:?}");
        assert!(err.to_string().contains(&format!("127.0.0.1:{port} did not answer within 0.2s")), "{err}");
    }
}
