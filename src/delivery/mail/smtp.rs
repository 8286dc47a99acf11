//! SMTP over connections this module opens and pools itself (see the [module docs](super) for
//! why not lettre's own pooled transport).
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
//! - **Pooling**: a [`super::Mailer`] and its clones share one pool of idle connections. A send
//!   takes the most recently used one, checks it with `NOOP` and uses it, or drops it and tries
//!   the next (a server that closed an idle connection, or went away); with none left it
//!   connects. After the send the connection goes back at once (so one-after-the-other sends use
//!   one connection), unless lettre marked it broken (it quits after an error inside a
//!   transaction). Concurrent sends each take their own connection; at most `MAX_IDLE` (10) are
//!   kept idle, and a task closes (`QUIT`) those idle for `IDLE_TIMEOUT` (60 s), exiting when
//!   none is left. A message is never sent again automatically: a failed send is reported,
//!   retryable or not, as before.
//! - **The end of the data**: a message whose end (`\r\n.\r\n`) was sent and never answered
//!   (a timeout, a closed connection) may have been taken; it is reported
//!   [`MailError::Unconfirmed`], not retryable, where every earlier failure is judged by its
//!   reply. That is why the transaction is driven step by step here (`transaction`).

use std::fmt;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use lettre::address::Envelope;
use lettre::transport::smtp::authentication::{Credentials, DEFAULT_MECHANISMS};
#[allow(deprecated)] // public in 0.11 (deprecated only as "not meant to be public"); needed for implicit TLS
use lettre::transport::smtp::client::AsyncNetworkStream;
use lettre::transport::smtp::client::{AsyncSmtpConnection, Certificate, TlsParameters};
use lettre::transport::smtp::commands::{Data, Mail, Rcpt};
use lettre::transport::smtp::extension::{ClientId, Extension, MailBodyParameter, MailParameter};
use serde::{Deserialize, Serialize};

use super::auth_echo::without_auth_echo;
use super::stream::{TimedStream, TlsFirst, connect_tcp};
use super::{MailError, MailPayload, build};

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
    /// The login and the password, cut out of what a server says ([`auth_echo`]).
    logins: Vec<String>,
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

/// At most this many idle connections are kept per [`super::Mailer`] (and its clones); a connection
/// coming back to a full pool is closed.
const MAX_IDLE: usize = 10;

/// An idle connection is closed (`QUIT`) after this long unused.
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

impl SmtpSender {
    /// Connections to the server of `opts`. Nothing is connected yet: the first
    /// [`send`](Self::send) connects.
    pub(super) fn new(opts: SmtpOptions) -> Result<SmtpSender, MailError> {
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
            logins: opts.username.iter().chain(&opts.password).cloned().collect(),
            username: opts.username,
            hello: ClientId::default(),
            timeout: opts.timeout,
            pool: Mutex::new(Pool::default()),
        };
        Ok(SmtpSender { inner: Arc::new(client) })
    }

    /// `host:port` of the server.
    pub(super) fn server(&self) -> &str {
        &self.inner.server
    }

    /// Builds and sends the message. Returns a description for the history, such as `sent to 2
    /// recipients via smtp.example.com:587`.
    pub(super) async fn send(&self, p: &MailPayload) -> Result<String, MailError> {
        let message = build(p)?;
        let envelope = message.envelope();
        let recipients = envelope.to().len();
        self.inner.send(envelope, &message.formatted()).await?;
        tracing::debug!(server = %self.inner.server, message_id = %p.message_id, recipients, "Mail sent.");
        let plural = if recipients == 1 { "" } else { "s" };
        Ok(format!("sent to {recipients} recipient{plural} via {}", self.inner.server))
    }
}

impl SmtpClient {
    /// Sends one message over a pooled connection, or a new one when none is idle or every idle
    /// one fails its `NOOP`. Never sends the message twice.
    async fn send(self: &Arc<Self>, envelope: &Envelope, email: &[u8]) -> Result<(), MailError> {
        let mut conn = self.checkout().await?;
        let result = transaction(&mut conn, envelope, email).await;
        // The connection is quit and closed after an error inside the transaction (a refused
        // recipient, a broken connection); one that errs before it (say, 8BITMIME not offered)
        // is still good.
        if result.is_err() && !matches!(result, Err(Failed::Unsupported(_))) {
            conn.abort().await;
        }
        if !conn.has_broken() {
            self.park(conn);
        }
        result.map_err(|failed| match failed {
            Failed::Unsupported(why) => {
                MailError::Rejected(format!("the SMTP server {} cannot take it: {why}", self.server))
            }
            Failed::Before(e) => self.classify(&e),
            Failed::Unconfirmed(e) => MailError::Unconfirmed(format!(
                "the SMTP server {} was sent the whole message but gave no answer to its end ({}); it may have \
                 taken it, so it is not sent again automatically",
                self.server,
                self.detail(&e)
            )),
        })
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

impl SmtpClient {
    /// Turns a lettre error into a message for people, retryable or not.
    fn classify(&self, err: &lettre::transport::smtp::Error) -> MailError {
        let server = &self.server;
        let shown = self.detail(err);
        if let Some(code) = err.status() {
            let code = code.to_string();
            match &self.username {
                Some(user) if matches!(code.as_str(), "535" | "534" | "538") => {
                    return MailError::Rejected(format!(
                        "the SMTP server {server} refused the login of `{user}` ({shown}): check the username and \
                         password in the variables named by mail.smtp.username_env and mail.smtp.password_env"
                    ));
                }
                None if code == "530" => {
                    return MailError::Rejected(format!(
                        "the SMTP server {server} requires a login ({shown}): set mail.smtp.username_env and \
                         mail.smtp.password_env"
                    ));
                }
                _ => {}
            }
            return if err.is_transient() {
                MailError::Send(format!(
                    "the SMTP server {server} refused the message for now ({shown}); it will be retried"
                ))
            } else {
                MailError::Rejected(format!(
                    "the SMTP server {server} rejected the message ({shown}): check the addresses and the \
                     server's rules; it is kept in the outbox and not retried"
                ))
            };
        }
        if err.is_timeout() {
            return MailError::Send(format!(
                "the SMTP server {server} did not answer within {}s ({shown}); it will be retried",
                self.timeout.as_secs_f64()
            ));
        }
        if err.is_tls() || tls_failure(err) {
            return MailError::Rejected(format!(
                "TLS with the SMTP server {server} failed ({}): check mail.smtp.security (starttls for port \
                 587, tls for 465) and that the server's certificate is valid for `{}`",
                shown,
                server.rsplit_once(':').map_or(server.as_str(), |(host, _)| host)
            ));
        }
        if err.is_client() {
            let hint = if shown.contains("STARTTLS") {
                "the server does not offer STARTTLS: use mail.smtp.security: tls for port 465, or none only for a \
                 trusted local relay"
            } else if shown.contains("authentication") {
                "the server offers no login method that routines supports (PLAIN, LOGIN) on this connection: \
                 check mail.smtp.security"
            } else {
                "check the mail.smtp settings"
            };
            return MailError::Rejected(format!("sending through the SMTP server {server} failed ({shown}): {hint}"));
        }
        if connection_refused(err) {
            return MailError::Send(format!(
                "could not connect to the SMTP server {server} ({shown}): check that it is running and that \
                 mail.smtp.host and mail.smtp.port are right; it will be retried"
            ));
        }
        MailError::Send(format!("talking to the SMTP server {server} failed ({shown}); it will be retried"))
    }

    /// The error and its causes in one line, as it may be recorded: without the repetitions
    /// lettre's nesting produces, nor a server's echo of the login ([`without_auth_echo`]).
    fn detail(&self, err: &lettre::transport::smtp::Error) -> String {
        let mut text = err.to_string();
        while text.contains("Connection error: Connection error: ") {
            text = text.replace("Connection error: Connection error: ", "Connection error: ");
        }
        let logins: Vec<&str> = self.logins.iter().map(String::as_str).collect();
        without_auth_echo(&text, &logins)
    }
}

/// Where in a transaction it failed.
enum Failed {
    /// The server lacks an extension the message needs (lettre's checks before `MAIL`).
    Unsupported(&'static str),
    /// Before the end of the data was sent, or with the server's refusal of it (a status
    /// reply): the server has not taken the message.
    Before(lettre::transport::smtp::Error),
    /// No answer to the end of the data (a timeout, a closed connection, a reply that does not
    /// parse): the server may have taken the message.
    Unconfirmed(lettre::transport::smtp::Error),
}

/// One mail transaction: `MAIL`, `RCPT` for each recipient, `DATA` and the content, as lettre's
/// `AsyncSmtpConnection::send` does it, but telling where it failed. lettre's own send cannot say
/// whether an error came before or after the server was sent the end of the data, which is
/// where a message that was never answered may have been taken (RFC 1047): such a one must not
/// be sent again blindly.
async fn transaction(conn: &mut AsyncSmtpConnection, envelope: &Envelope, email: &[u8]) -> Result<(), Failed> {
    let mut options = Vec::new();
    let addresses = envelope.from().into_iter().chain(envelope.to());
    if addresses.map(|a| a.as_ref()).any(|a: &str| !a.is_ascii()) {
        if !conn.server_info().supports_feature(Extension::SmtpUtfEight) {
            return Err(Failed::Unsupported("an address is not ASCII and the server does not offer SMTPUTF8"));
        }
        options.push(MailParameter::SmtpUtfEight);
    }
    if !email.is_ascii() {
        if !conn.server_info().supports_feature(Extension::EightBitMime) {
            return Err(Failed::Unsupported("the message is not ASCII and the server does not offer 8BITMIME"));
        }
        options.push(MailParameter::Body(MailBodyParameter::EightBitMime));
    }
    conn.command(Mail::new(envelope.from().cloned(), options)).await.map_err(Failed::Before)?;
    for to in envelope.to() {
        conn.command(Rcpt::new(to.clone(), Vec::new())).await.map_err(Failed::Before)?;
    }
    conn.command(Data).await.map_err(Failed::Before)?;
    match conn.message(email).await {
        Ok(_) => Ok(()),
        // The server answered, and refused: it has not taken it.
        Err(e) if e.status().is_some() => Err(Failed::Before(e)),
        Err(e) => Err(Failed::Unconfirmed(e)),
    }
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
