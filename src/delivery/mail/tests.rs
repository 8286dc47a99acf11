use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{TcpListener, TcpStream};

use super::stream::connect_tcp;
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
