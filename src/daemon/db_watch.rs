//! The database file under a running daemon: if it disappears or is replaced (another inode),
//! every write would go to a file nobody will read again, so acknowledged fires would be lost.
//! The daemon then stops taking work (webhooks answer 503), says why, and exits non-zero.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// How often the file is looked at.
const EVERY: Duration = Duration::from_secs(1);

/// Why the database can no longer be used, once it is known.
#[derive(Debug, Clone, Default)]
pub struct DbGone(Arc<OnceLock<String>>);

impl DbGone {
    /// The reason, when the file went away or was replaced.
    pub fn reason(&self) -> Option<&str> {
        self.0.get().map(String::as_str)
    }
}

/// Watches `path` until `stop`; on a change records why in the returned [`DbGone`] and cancels
/// `gone`.
pub fn watch(path: &Path, gone: CancellationToken, stop: CancellationToken) -> DbGone {
    let state = DbGone::default();
    let identity = |p: &Path| std::fs::metadata(p).map(|m| (m.dev(), m.ino()));
    let Ok(first) = identity(path) else { return state };
    let path: PathBuf = path.to_path_buf();
    let record = state.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(EVERY);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = stop.cancelled() => return,
            }
            let why = match identity(&path) {
                Ok(now) if now == first => continue,
                Ok(_) => format!("the database file {} was replaced by another file", path.display()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    format!("the database file {} was deleted", path.display())
                }
                Err(e) => format!("the database file {} cannot be read: {e}", path.display()),
            };
            tracing::error!("{why}; no more work is taken and the daemon stops.");
            let _ = record.0.set(why);
            gone.cancel();
            return;
        }
    });
    state
}
