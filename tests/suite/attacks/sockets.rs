//! A hostile model with `shell` and no network reaching a host service through its UNIX socket
//! (PostgreSQL's, Docker's, an agent's): connecting to a socket file needs no write permission,
//! so only a view without the host's folders keeps it out. The listeners sit in a folder under
//! /var/tmp, outside the workspace (not under /tmp, which every call replaces anyway); each case
//! checks what reached the listener, and its benign counterpart talks to a socket the workspace
//! holds.

use std::io::{ErrorKind, Read};
use std::os::unix::net::{UnixDatagram, UnixListener};
use std::path::{Path, PathBuf};

use super::scene::{Scene, shell_scene};

const COMMANDS: &str = "python3, curl, ls, cat";

/// A stream and a datagram listener in `dir`, nonblocking.
struct Listeners {
    stream: UnixListener,
    datagram: UnixDatagram,
    stream_path: PathBuf,
    datagram_path: PathBuf,
}

impl Listeners {
    fn bind(dir: &Path) -> Listeners {
        let (stream_path, datagram_path) = (dir.join("s.sock"), dir.join("d.sock"));
        let stream = UnixListener::bind(&stream_path).unwrap();
        let datagram = UnixDatagram::bind(&datagram_path).unwrap();
        stream.set_nonblocking(true).unwrap();
        datagram.set_nonblocking(true).unwrap();
        Listeners { stream, datagram, stream_path, datagram_path }
    }

    /// Everything that reached the listeners. The calls have ended: a connection they made waits
    /// in the backlog with its data, a datagram in the queue.
    fn received(&self) -> String {
        let mut got = String::new();
        loop {
            match self.stream.accept() {
                Ok((mut conn, _)) => {
                    conn.set_nonblocking(true).unwrap();
                    let mut buf = Vec::new();
                    let _ = conn.read_to_end(&mut buf);
                    got.push_str(&format!("[connection] {}", String::from_utf8_lossy(&buf)));
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => panic!("accept: {e}"),
            }
        }
        let mut buf = [0u8; 4096];
        loop {
            match self.datagram.recv(&mut buf) {
                Ok(n) => got.push_str(&format!("[datagram] {}", String::from_utf8_lossy(&buf[..n]))),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => panic!("recv: {e}"),
            }
        }
        got
    }
}

/// `python3` connecting to the stream socket and sending to the datagram socket.
fn python(l: &Listeners) -> [String; 2] {
    [
        format!(
            "python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect(\"{}\"); s.sendall(b\"PWNED-STREAM\"); print(\"sent\")'",
            l.stream_path.display()
        ),
        format!(
            "python3 -c 'import socket; s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.sendto(b\"PWNED-DGRAM\", \"{}\"); print(\"sent\")'",
            l.datagram_path.display()
        ),
    ]
}

fn curl(l: &Listeners) -> String {
    format!("curl -s -m 5 --unix-socket {} http://localhost/PWNED-CURL", l.stream_path.display())
}

/// A folder for the host's listeners under /var/tmp (where services keep sockets), outside the
/// workspace.
fn host_dir() -> tempfile::TempDir {
    let var_tmp = Path::new("/var/tmp");
    assert!(var_tmp.is_dir(), "this test needs /var/tmp");
    tempfile::Builder::new().prefix("routines-sock-").tempdir_in(var_tmp).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_unix_sockets_are_out_of_reach_without_network() {
    let s: Scene = shell_scene(COMMANDS).await;
    let host = host_dir();
    let l = Listeners::bind(host.path());
    let [stream, datagram] = python(&l);
    s.shell(&[&stream, &datagram, &curl(&l), &format!("ls -la {}", host.path().display())]).await;
    assert_eq!(l.received(), "", "a sandboxed command reached a host socket");
    assert!(!s.seen(3).contains("s.sock"), "the host folder is visible: {}", s.seen(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_in_the_workspace_is_reachable() {
    let s: Scene = shell_scene(COMMANDS).await;
    std::fs::create_dir(s.inside("run")).unwrap();
    let l = Listeners::bind(&s.inside("run"));
    let [stream, datagram] = python(&l);
    s.shell(&[&stream, &datagram, &curl(&l)]).await;
    let got = l.received();
    assert!(got.contains("[connection] PWNED-STREAM"), "{got}");
    assert!(got.contains("[datagram] PWNED-DGRAM"), "{got}");
    assert!(got.contains("GET /PWNED-CURL HTTP/1.1"), "{got}");
}
