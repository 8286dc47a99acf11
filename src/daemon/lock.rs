//! One daemon per data folder: an exclusive `flock` on
//! `data_dir/daemon.lock`, held for the daemon's life and released by the
//! kernel when the process ends, however it ends.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// Why the lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("another routines daemon{pid} is already running on the data folder {}", dir.display())]
    Held { dir: PathBuf, pid: String },
    #[error("cannot create the lock file {path}: {cause}")]
    Io { path: PathBuf, cause: std::io::Error },
}

/// The held lock; dropping it releases the lock.
#[derive(Debug)]
pub struct DaemonLock {
    _file: File,
    pub path: PathBuf,
}

impl DaemonLock {
    /// Takes the lock of `data_dir` without waiting, and writes this
    /// process's id into the file.
    pub fn acquire(data_dir: &Path) -> Result<DaemonLock, LockError> {
        let path = data_dir.join(crate::config::DAEMON_LOCK_FILE);
        let io = |cause| LockError::Io { path: path.clone(), cause };
        std::fs::create_dir_all(data_dir).map_err(io)?;
        let mut file =
            OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).map_err(io)?;
        // SAFETY: flock on a file descriptor we own; it does not touch memory.
        let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if r != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                let pid = text.trim();
                let pid = if pid.is_empty() { String::new() } else { format!(" (pid {pid})") };
                return Err(LockError::Held { dir: data_dir.to_path_buf(), pid });
            }
            return Err(io(err));
        }
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        writeln!(file, "{}", std::process::id()).map_err(io)?;
        Ok(DaemonLock { _file: file, path })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_the_same_folder_is_refused_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let first = DaemonLock::acquire(dir.path()).unwrap();
        let err = DaemonLock::acquire(dir.path()).unwrap_err().to_string();
        assert!(err.contains(&format!("already running on the data folder {}", dir.path().display())), "{err}");
        assert!(err.contains(&format!("(pid {})", std::process::id())), "{err}");
        drop(first);
        DaemonLock::acquire(dir.path()).unwrap();
    }
}
