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

/// Between the file going and the daemon noticing it on its own, a webhook must not be
/// acknowledged: the fire would be written into the unlinked file and lost. The file's identity
/// is asked before each batch of fires is claimed, so the first request after the deletion, or
/// after the file is replaced by a copy (another inode), gets 503.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_webhook_is_acknowledged_into_a_deleted_or_replaced_database() {
    for replace in [false, true] {
        let port = free_port();
        let p = Routines::project("http://127.0.0.1:9/v1", &format!("server: {{ listen: 127.0.0.1:{port} }}\n"));
        p.write("routines/hook.yaml", "on: [{ webhook: { path: /hooks/x, auth: none } }]\nprompt: hi\n");
        let mut daemon = p.command(["daemon"]).spawn().await;
        daemon.wait_for_http(&format!("http://127.0.0.1:{port}/healthz"), 200).await;
        let db = p.path().join(".routines/routines.db");
        if replace {
            let copy = p.path().join(".routines/copy.db");
            std::fs::copy(&db, &copy).unwrap();
            std::fs::rename(&copy, &db).unwrap();
        } else {
            std::fs::remove_file(&db).unwrap();
        }
        let c = reqwest::Client::builder().no_proxy().build().unwrap();
        let answer = c.post(format!("http://127.0.0.1:{port}/hooks/x")).body("{}").send().await.unwrap();
        assert_eq!(answer.status(), 503, "replaced: {replace}");
        assert_eq!(daemon.exit_code(Duration::from_secs(20)).await, 1, "{}", daemon.stderr());
        let why = if replace { "was replaced by another file" } else { "was deleted" };
        assert!(daemon.stderr().contains(why), "{}", daemon.stderr());
    }
}
