//! Connections that a handler can cut: the listener hands each accepted stream a
//! [`KillSwitch`], and dropping the server cuts every open connection.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use futures::task::AtomicWaker;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

use super::lock;

#[derive(Debug, Default)]
pub(super) struct KillSwitch {
    killed: AtomicBool,
    read: AtomicWaker,
    write: AtomicWaker,
}

impl KillSwitch {
    pub(super) fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        self.read.wake();
        self.write.wake();
    }

    fn is_killed(&self) -> bool {
        self.killed.load(Ordering::SeqCst)
    }
}

pub(super) fn aborted() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionAborted, "mock_llm: connection cut")
}

pub(super) struct KillableStream {
    inner: TcpStream,
    kill: Arc<KillSwitch>,
}

impl AsyncRead for KillableStream {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        self.kill.read.register(cx.waker());
        if self.kill.is_killed() {
            return Poll::Ready(Err(aborted()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for KillableStream {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.kill.write.register(cx.waker());
        if self.kill.is_killed() {
            return Poll::Ready(Err(aborted()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.kill.is_killed() {
            return Poll::Ready(Err(aborted()));
        }
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.kill.is_killed() {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[derive(Debug, Clone)]
pub(super) struct ConnInfo {
    pub(super) peer: SocketAddr,
    pub(super) kill: Arc<KillSwitch>,
}

pub(super) struct MockListener {
    pub(super) inner: TcpListener,
    pub(super) conns: Arc<Mutex<Vec<Weak<KillSwitch>>>>,
}

impl Listener for MockListener {
    type Io = KillableStream;
    type Addr = ConnInfo;

    async fn accept(&mut self) -> (KillableStream, ConnInfo) {
        loop {
            match self.inner.accept().await {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let kill = Arc::new(KillSwitch::default());
                    let mut conns = lock(&self.conns);
                    conns.retain(|c| c.strong_count() > 0);
                    conns.push(Arc::downgrade(&kill));
                    let info = ConnInfo { peer, kill: kill.clone() };
                    return (KillableStream { inner: stream, kill }, info);
                }
                // e.g. too many open files: back off instead of spinning
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<ConnInfo> {
        Ok(ConnInfo { peer: self.inner.local_addr()?, kill: Arc::default() })
    }
}

impl Connected<IncomingStream<'_, MockListener>> for ConnInfo {
    fn connect_info(stream: IncomingStream<'_, MockListener>) -> Self {
        stream.remote_addr().clone()
    }
}
