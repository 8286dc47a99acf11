//! Whether a daemon runs on the data folder: it holds an exclusive `flock` on
//! `data_dir/daemon.lock` for its life. The lock table of the kernel (`/proc/locks`) says so
//! without touching the lock; where it cannot be read, a shared lock is tried and released at
//! once.

use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::config::DAEMON_LOCK_FILE;

/// Whether a process holds the daemon lock of `data_dir`.
pub fn daemon_running(data_dir: &Path) -> bool {
    let path = data_dir.join(DAEMON_LOCK_FILE);
    let Ok(file) = std::fs::File::open(&path) else { return false };
    let Ok(meta) = file.metadata() else { return false };
    if let Ok(locks) = std::fs::read_to_string("/proc/locks") {
        return held_in(&locks, meta.dev(), meta.ino());
    }
    // SAFETY: flock on a descriptor this function owns; it touches no memory.
    let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) };
    if r == 0 {
        // SAFETY: as above.
        unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) };
        return false;
    }
    std::io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK)
}

/// Whether `/proc/locks` lists a `flock` on the file with device `dev` and inode `ino`.
fn held_in(locks: &str, dev: u64, ino: u64) -> bool {
    let id = format!("{:02x}:{:02x}:{ino}", libc::major(dev), libc::minor(dev));
    locks.lines().any(|line| {
        let fields: Vec<&str> = line.split_whitespace().filter(|f| *f != "->").collect();
        fields.get(1) == Some(&"FLOCK") && fields.get(5) == Some(&id.as_str())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sees_a_held_lock_and_a_released_one() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!daemon_running(dir.path()));
        let file = std::fs::File::create(dir.path().join(DAEMON_LOCK_FILE)).unwrap();
        assert!(!daemon_running(dir.path()));
        // SAFETY: flock on a descriptor the test owns.
        assert_eq!(unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) }, 0);
        assert!(daemon_running(dir.path()));
        drop(file);
        assert!(!daemon_running(dir.path()));
    }

    #[test]
    fn reads_the_kernel_lock_table() {
        let table = "1: FLOCK  ADVISORY  WRITE 4242 fd:01:917 0 EOF\n2: POSIX  ADVISORY  WRITE 7 08:02:917 0 EOF\n3: -> FLOCK  ADVISORY  WRITE 9 08:02:55 0 EOF\n";
        let dev = |major: u32, minor: u32| libc::makedev(major, minor);
        assert!(held_in(table, dev(0xfd, 1), 917));
        assert!(!held_in(table, dev(8, 2), 917), "a POSIX lock is not the daemon's");
        assert!(held_in(table, dev(8, 2), 55));
        assert!(!held_in(table, dev(0xfd, 1), 918));
    }
}
