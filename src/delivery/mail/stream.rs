//! The byte streams under an SMTP connection: TCP with `TCP_NODELAY` ([`connect_tcp`]), a
//! timeout on every wait ([`TimedStream`]), and implicit TLS handed back to lettre ([`TlsFirst`]).

use std::future::Future as _;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

#[allow(deprecated)] // public in 0.11 (deprecated only as "not meant to be public"); needed for implicit TLS
use lettre::transport::smtp::client::AsyncNetworkStream;
use lettre::transport::smtp::client::AsyncTokioStream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Sleep;

/// Connects to `host:port` with `TCP_NODELAY` set: each resolved address in turn, each attempt
/// (and the name lookup) within `timeout`. The error of the last address when none answers.
pub(super) async fn connect_tcp(host: &str, port: u16, timeout: Duration) -> io::Result<TcpStream> {
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
pub(super) struct TimedStream {
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
    pub(super) fn new(tcp: TcpStream, timeout: Duration) -> Self {
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
pub(super) struct TlsFirst(pub(super) AsyncNetworkStream);

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
