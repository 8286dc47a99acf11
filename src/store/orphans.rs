//! Who owns a run, and runs whose owner is gone.
//!
//! A process id alone cannot say whether a run's process still runs: pids are reused, and a
//! daemon that is PID 1 in a container is PID 1 again after a restart; a process in another
//! PID namespace sees other pids altogether. So a process that owns runs holds a lock:
//! `DATA_DIR/owners/ID.lock`, `flock`ed for as long as it lives (the kernel releases it when
//! the process dies, SIGKILL included), where ID is a random number drawn once per process
//! and written into every run it owns (`runs.owner`). A run's owner is alive exactly while
//! someone holds its lock, which any process on any machine sharing the data folder can
//! check. The file is made locked (written under a temporary name, locked, then renamed), so a
//! lock file that can be taken belongs to a dead owner; whoever takes it removes it.
//! Runs written before owners existed, and in-memory stores, fall back to the pid.
//!
//! On PostgreSQL the owner is a node of the cluster instead: its row in `nodes` and its
//! heartbeat say whether it lives, on any machine (`postgres/cluster.rs`).

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};

use super::{Store, StoreError};

impl Store {
    /// Opens the database at `path` (see [`Store::open`]) and marks runs
    /// whose owner is gone as `interrupted`.
    pub fn open_recovering(path: &Path) -> Result<Store, StoreError> {
        Store::open_recovering_at(&super::Location::Sqlite(path.to_path_buf()))
    }

    /// [`Store::open_at`], then marks runs whose owner is gone as `interrupted`.
    pub fn open_recovering_at(location: &super::Location) -> Result<Store, StoreError> {
        let store = Store::open_at(location)?;
        for id in store.interrupt_orphans()? {
            tracing::warn!(
                run_id = id,
                "Run {id} was interrupted: the process running it stopped; recorded as interrupted."
            );
        }
        Ok(store)
    }

    /// This process's owner id for runs in this database, its lock taken on first use; `None`
    /// for an in-memory database or when the lock cannot be made (then the pid decides).
    pub(super) fn owner_id(&self) -> Option<i64> {
        if let Some(pg) = self.postgres() {
            // On a shared database the owner is a node: its heartbeat, not a lock file on one
            // machine, says whether it lives.
            pg.be_present(own_id());
            return Some(own_id());
        }
        let dir = self.owners_dir()?;
        let mut held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
        if !held.iter().any(|(d, _)| *d == dir) {
            match take_own_lock(&dir) {
                Ok(file) => held.push((dir, file)),
                Err(e) => {
                    tracing::warn!(folder = %dir.display(), error = %e, "Cannot make this process's owner lock; runs are owned by pid only.");
                    return None;
                }
            }
        }
        Some(own_id())
    }

    /// Whether the owner of a run still runs: its lock is held (`owner`), or, for runs without
    /// one, its process `pid` exists.
    pub fn owner_alive(&self, owner: Option<i64>, pid: Option<u32>) -> bool {
        if let (Some(pg), Some(id)) = (self.postgres(), owner) {
            // Cannot tell: alive, rather than run its work twice.
            return id == own_id() || pg.node_alive(id, own_id()).unwrap_or(true);
        }
        match (owner, self.owners_dir()) {
            (Some(id), _) if id == own_id() => true,
            (Some(id), Some(dir)) => lock_held(&dir.join(format!("{id}.lock"))),
            _ => pid.is_some_and(|p| p == std::process::id() || process_alive(p)),
        }
    }

    /// The owners, other than this process, of runs still `running` (or manual runs `queued`)
    /// on this SQLite database whose lock is held now. A daemon started while an old one is
    /// still exiting (PID 1 of a container restarted at once) finds the old lock held and must
    /// judge those runs again once it is let go ([`Store::wait_for_owner`]). Empty on
    /// PostgreSQL, where the cluster's sweep judges nodes by their leases.
    pub fn live_foreign_owners(&self) -> Result<Vec<i64>, StoreError> {
        if self.postgres().is_some() || self.owners_dir().is_none() {
            return Ok(Vec::new());
        }
        let owners: Vec<i64> = self.with_conn(|c| {
            let mut stmt = c.prepare(
                "SELECT DISTINCT owner FROM runs WHERE kind != 'chat' AND owner IS NOT NULL
                 AND (status = 'running' OR (status = 'queued' AND trigger = 'manual'))",
            )?;
            let rows = stmt.query_map([], |r| r.get(0))?;
            rows.collect()
        })?;
        Ok(owners.into_iter().filter(|o| *o != own_id() && self.owner_alive(Some(*o), None)).collect())
    }

    /// Blocks until `owner`'s lock is let go (its process ended), then removes its file. Returns
    /// at once when there is no such lock. Meant for a thread of its own.
    pub fn wait_for_owner(&self, owner: i64) -> std::io::Result<()> {
        let Some(dir) = self.owners_dir() else { return Ok(()) };
        let path = dir.join(format!("{owner}.lock"));
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        loop {
            // SAFETY: flock on a descriptor this function owns; blocks until the holder lets go.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
                break;
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        let _ = std::fs::remove_file(&path);
        Ok(())
    }

    fn owners_dir(&self) -> Option<PathBuf> {
        (self.path != Path::new(":memory:")).then(|| self.path.with_file_name("owners"))
    }
}

/// The locks this process holds, by owners folder; kept open until the process ends.
static HELD: Mutex<Vec<(PathBuf, File)>> = Mutex::new(Vec::new());

/// This process's owner id: random, positive, drawn once.
pub(super) fn own_id() -> i64 {
    static ID: OnceLock<i64> = OnceLock::new();
    *ID.get_or_init(|| i64::try_from(rand::random::<u64>() >> 2).unwrap_or(1).max(1))
}

/// Makes `dir/ID.lock` already locked: written under a temporary name, locked, renamed.
fn take_own_lock(dir: &Path) -> std::io::Result<File> {
    std::fs::create_dir_all(dir)?;
    let id = own_id();
    let temp = dir.join(format!(".{id}.lock.new"));
    let file = OpenOptions::new().create(true).truncate(true).write(true).open(&temp)?;
    // SAFETY: flock on a descriptor this function owns.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    std::fs::rename(&temp, dir.join(format!("{id}.lock")))?;
    Ok(file)
}

/// Whether someone holds the lock at `path`. A lock that can be taken belongs to a dead owner:
/// the file is removed. A missing file is a dead owner too.
fn lock_held(path: &Path) -> bool {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return false,
        // Cannot tell: count the owner as alive rather than run its work twice.
        Err(_) => return true,
    };
    // SAFETY: flock on a descriptor this function owns.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        let _ = std::fs::remove_file(path);
        return false;
    }
    // Held by someone (EWOULDBLOCK), or it cannot be told: alive rather than run its work twice.
    true
}

/// Whether a process with this id exists (signal 0 checks without sending).
pub fn process_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else { return false };
    // SAFETY: signal 0 only checks whether the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_is_alive_while_its_lock_is_held_and_its_stale_lock_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("routines.db")).unwrap();
        let me = store.owner_id().unwrap();
        assert!(store.owner_alive(Some(me), None));
        // Another owner's lock, held by a child process that then dies.
        let other = dir.path().join("owners/77.lock");
        let hold = "import fcntl, sys, time\nf = open(sys.argv[1], 'w')\nfcntl.flock(f, fcntl.LOCK_EX)\n\
                    print('locked', flush=True)\ntime.sleep(60)";
        let mut child = std::process::Command::new("python3")
            .args(["-c", hold, other.to_str().unwrap()])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Wait for the child to say it holds the lock, however slow the machine.
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
        assert_eq!(line.trim(), "locked");
        assert!(store.owner_alive(Some(77), None), "a held lock counts as a live owner");
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!store.owner_alive(Some(77), None), "the lock of a dead owner is free");
        assert!(!other.exists(), "and its file is removed");
        assert!(!store.owner_alive(Some(78), None), "no lock file: no owner");
        // Rows without an owner: the pid decides.
        assert!(store.owner_alive(None, Some(std::process::id())));
    }
}
