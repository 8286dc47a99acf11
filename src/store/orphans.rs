//! Runs whose process died: a run records its process id, and a run whose
//! process is gone is recorded `interrupted` when the store is opened.

use std::path::Path;

use super::{Store, StoreError};

impl Store {
    /// Opens the database at `path` (see [`Store::open`]) and marks runs
    /// whose process died as `interrupted`.
    pub fn open_recovering(path: &Path) -> Result<Store, StoreError> {
        let store = Store::open(path)?;
        for id in store.interrupt_orphans(&process_alive)? {
            tracing::warn!(
                run_id = id,
                "Run {id} was interrupted: the process running it stopped; recorded as interrupted."
            );
        }
        Ok(store)
    }
}

/// Whether a process with this id exists (signal 0 checks without sending).
pub fn process_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else { return false };
    // SAFETY: signal 0 only checks whether the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}
