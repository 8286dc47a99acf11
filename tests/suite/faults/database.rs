//! The database deleted under a running daemon: no fire is acknowledged into a file nobody
//! reads again; the daemon says why and exits non-zero.

use std::time::Duration;

use crate::common::Routines;
use crate::common::os::free_port;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_database_stops_the_daemon_with_the_reason() {
    let port = free_port();
    let p = Routines::project("http://127.0.0.1:9/v1", &format!("server: {{ listen: 127.0.0.1:{port} }}\n"));
    p.write("routines/hook.yaml", "on: [{ webhook: { path: /hooks/x, auth: none } }]\nprompt: hi\n");
    let mut daemon = p.command(["daemon"]).spawn().await;
    daemon.wait_for_http(&format!("http://127.0.0.1:{port}/healthz"), 200).await;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(p.path().join(format!(".routines/routines.db{suffix}")));
    }
    let code = daemon.exit_code(Duration::from_secs(20)).await;
    assert_eq!(code, 1, "{}", daemon.stderr());
    assert!(daemon.stderr().contains("was deleted"), "{}", daemon.stderr());
}
