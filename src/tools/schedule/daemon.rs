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
        // The daemon writes its process id into the file.
        let pid = std::fs::read_to_string(&path).ok().and_then(|t| t.trim().parse::<u32>().ok());
        return held_in(&locks, pid, meta.dev(), meta.ino());
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

/// Whether `/proc/locks` lists a `flock` on the file with inode `ino`, held by process `pid`
/// or on device `dev`. The process id covers file systems whose `stat` device differs from the
/// one the kernel's table shows (btrfs subvolumes, overlays).
fn held_in(locks: &str, pid: Option<u32>, dev: u64, ino: u64) -> bool {
    let device = format!("{:02x}:{:02x}", libc::major(dev), libc::minor(dev));
    locks.lines().any(|line| {
        let fields: Vec<&str> = line.split_whitespace().filter(|f| *f != "->").collect();
        let (Some(&"FLOCK"), Some(holder), Some(id)) = (fields.get(1), fields.get(4), fields.get(5)) else {
            return false;
        };
        let Some((on, inode)) = id.rsplit_once(':') else { return false };
        inode == ino.to_string() && (on == device || pid.is_some_and(|p| holder.parse() == Ok(p)))
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
        assert!(held_in(table, None, dev(0xfd, 1), 917));
        assert!(!held_in(table, None, dev(8, 2), 917), "a POSIX lock is not the daemon's");
        assert!(held_in(table, None, dev(8, 2), 55));
        assert!(!held_in(table, None, dev(0xfd, 1), 918));
        // Another device number for the same file: the holder's process id decides.
        assert!(held_in(table, Some(4242), dev(0, 51), 917));
        assert!(!held_in(table, Some(4243), dev(0, 51), 917));
    }
}
