//! Why the daemon could not start or stopped with an error, with the exit code and hint of each.

use super::lock::LockError;
use super::watch::WatchError;
use crate::store::StoreError;

/// Why the daemon could not start, or stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DaemonError {
    /// Another daemon holds the data folder, or its lock file cannot be made.
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The file watcher could not start.
    #[error(transparent)]
    Watch(#[from] WatchError),
    /// `server.token_env` names an unset variable.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// The status page could not be set up.
    #[error(transparent)]
    Status(#[from] crate::status::StatusError),
    /// The database file went away or was replaced under the running daemon.
    #[error("{0}")]
    DatabaseGone(String),
    /// The webhook listener could not bind `server.listen`.
    #[error("cannot listen on {address} (server.listen): {source}")]
    Listen {
        address: String,
        #[source]
        source: std::io::Error,
    },
}

impl DaemonError {
    /// The exit code of `routines daemon` stopped by it: 2 for a file glob that cannot work,
    /// else 1 (the data folder is in use by another daemon, the address is in use, the store failed).
    pub fn exit_code(&self) -> u8 {
        match self {
            DaemonError::Watch(WatchError::Pattern { .. }) => 2,
            DaemonError::Config(e) => e.exit_code(),
            _ => 1,
        }
    }

    /// What to do about it, where the message does not say.
    pub fn hint(&self) -> Option<String> {
        match self {
            DaemonError::Lock(LockError::Held { .. }) => {
                Some("stop it first, or give this one its own `data_dir` in routines.yaml".into())
            }
            DaemonError::Config(e) => e.hint(),
            DaemonError::DatabaseGone(_) => Some(
                "the fires taken since are in the old file; restore it or start the daemon again on a new one".into(),
            ),
            DaemonError::Listen { .. } => {
                Some("choose a free address in routines.yaml, e.g. server: { listen: 127.0.0.1:8788 }".into())
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_data_folder_or_address_exits_1_with_a_hint() {
        let held = DaemonError::Lock(LockError::Held { dir: ".routines".into(), pid: " (pid 7)".into() });
        assert_eq!(held.to_string(), "another routines daemon (pid 7) is already running on the data folder .routines");
        assert_eq!(held.exit_code(), 1);
        assert!(held.hint().is_some_and(|h| h.contains("data_dir")));
        let listen =
            DaemonError::Listen { address: "127.0.0.1:80".into(), source: std::io::ErrorKind::AddrInUse.into() };
        assert_eq!(listen.exit_code(), 1);
        assert!(listen.hint().is_some_and(|h| h.contains("server: { listen:")));
    }
}
