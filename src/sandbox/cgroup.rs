//! A cap on the number of processes and threads one call may have at a time, kept by the
//! kernel's `pids` cgroup controller.
//!
//! A shell command that forks without end (`:(){ :|:& };:`, or the same in a script the
//! model wrote) would otherwise fill the host's process table until the call's timeout: as
//! root `RLIMIT_NPROC` does not apply, and the PID namespace ends the processes only when the
//! call ends. So every call gets its own cgroup, `routines-<engine pid>-<n>`, under the
//! engine's own cgroup, with `pids.max` set; the child moves itself into it before `exec`,
//! and everything it starts stays there. A fork past the cap fails with `EAGAIN`.
//!
//! Where the controller is found, probed once per process ([`base`]):
//! - cgroup v1: the hierarchy mounted with the `pids` option (`/sys/fs/cgroup/pids`);
//! - cgroup v2: the unified hierarchy, when the engine's cgroup can give the `pids`
//!   controller to children: it is already in `cgroup.subtree_control`, or it can be put
//!   there. The kernel refuses that while the cgroup holds processes (the "no internal
//!   processes" rule), so when the engine is the only process of its cgroup (a systemd
//!   service with `Delegate=yes`, a container's PID 1) it first moves itself into a child
//!   cgroup `routines-engine`. It never moves other processes.
//!
//! Where neither works (a read-only `/sys/fs/cgroup`, as in most containers), calls run
//! without the cap and the engine logs why once. The timeout and the PID namespace still end
//! every process with the call.

use std::fs;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

static BASE: OnceLock<Result<PathBuf, NoCap>> = OnceLock::new();
static NEXT: AtomicU64 = AtomicU64::new(0);
/// Cgroups of ended calls that still held exiting processes when the call was dropped.
static LEFT: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Why calls run without the cap here. It fails no call, so it has no exit code of its own:
/// the engine logs it once per process.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NoCap {
    /// A file of `/proc` that says where this process's cgroups are could not be read.
    #[error("cannot read {file}: {source}")]
    Proc {
        file: &'static str,
        #[source]
        source: io::Error,
    },
    /// No hierarchy with the `pids` controller is mounted.
    #[error("no cgroup hierarchy with the `pids` controller is mounted")]
    NotMounted,
    /// Each hierarchy that has it refused: (this process's cgroup folder there, why).
    #[error("{}", .0.iter().map(|(dir, e)| format!("{}: {e}", dir.display())).collect::<Vec<_>>().join("; "))]
    Refused(Vec<(PathBuf, io::Error)>),
}

/// The folder under which calls' cgroups are made, or why there is none.
pub(crate) fn base() -> Result<&'static Path, &'static NoCap> {
    BASE.get_or_init(|| {
        let found = probe();
        if let Err(reason) = &found {
            tracing::warn!("shell commands run without a cap on their processes: {reason}");
        }
        found
    })
    .as_ref()
    .map(PathBuf::as_path)
}

/// One call's cgroup; removed when dropped (or by a later call, once its processes are gone).
#[derive(Debug)]
pub(crate) struct CallCgroup {
    dir: PathBuf,
}

impl Drop for CallCgroup {
    fn drop(&mut self) {
        if fs::remove_dir(&self.dir).is_err() && self.dir.exists() {
            if let Ok(mut left) = LEFT.lock() {
                left.push(self.dir.clone());
            }
        }
    }
}

/// Makes a cgroup that holds at most `max` processes and threads, and has `cmd` move into it
/// before it runs. `None` when no `pids` controller can be used here (see [`base`]).
pub(crate) fn limit(cmd: &mut std::process::Command, max: u32) -> io::Result<Option<CallCgroup>> {
    let Ok(base) = base() else { return Ok(None) };
    sweep(base);
    let dir = base.join(format!("routines-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
    fs::create_dir(&dir)?;
    let call = CallCgroup { dir };
    write_existing(&call.dir.join("pids.max"), &max.to_string())?;
    let procs: OwnedFd = fs::OpenOptions::new().write(true).open(call.dir.join("cgroup.procs"))?.into();
    // SAFETY: the hook only calls write(2) on a descriptor the closure owns; "0" moves the
    // writing process, which is the child between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::write(procs.as_raw_fd(), b"0".as_ptr().cast(), 1) != 1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(Some(call))
}

/// Removes the cgroups of ended calls whose processes are gone now, and those that engines
/// which are no longer running left behind.
fn sweep(base: &Path) {
    if let Ok(mut left) = LEFT.lock() {
        left.retain(|dir| fs::remove_dir(dir).is_err() && dir.exists());
    }
    let Ok(entries) = fs::read_dir(base) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("routines-")).and_then(|n| n.split_once('-')) else {
            continue;
        };
        let Ok(pid) = pid.0.parse::<i32>() else { continue };
        if pid != std::process::id() as i32 && !alive(pid) {
            let _ = fs::remove_dir(entry.path());
        }
    }
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM) }
}

fn probe() -> Result<PathBuf, NoCap> {
    let read = |file: &'static str| fs::read_to_string(file).map_err(|source| NoCap::Proc { file, source });
    let (cgroups, mounts) = (read("/proc/self/cgroup")?, read("/proc/self/mountinfo")?);
    let mut refused = Vec::new();
    for (dir, v2) in candidates(&cgroups, &mounts) {
        match usable(&dir, v2) {
            Ok(dir) => return Ok(dir),
            Err(e) => refused.push((dir, e)),
        }
    }
    Err(if refused.is_empty() { NoCap::NotMounted } else { NoCap::Refused(refused) })
}

/// The engine's own cgroup folder in each hierarchy that may have the `pids` controller:
/// v1 first (it needs nothing moved), then v2.
pub(crate) fn candidates(cgroups: &str, mountinfo: &str) -> Vec<(PathBuf, bool)> {
    let mut out = Vec::new();
    for line in cgroups.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next()) else { continue };
        let v2 = controllers.is_empty();
        if !v2 && !controllers.split(',').any(|c| c == "pids") {
            continue;
        }
        let Some((root, mount)) = mount_of(mountinfo, v2) else { continue };
        // The path is relative to the hierarchy's root; the mount shows the part below `root`.
        let Some(rel) = Path::new(path).strip_prefix(&root).ok() else { continue };
        out.push((mount.join(rel), v2));
    }
    out.sort_by_key(|(_, v2)| *v2);
    out
}

/// (root within the hierarchy, mount point) of the v2 hierarchy or of the v1 one with `pids`.
fn mount_of(mountinfo: &str, v2: bool) -> Option<(PathBuf, PathBuf)> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let fields: Vec<&str> = left.split(' ').collect();
        let tail: Vec<&str> = right.split(' ').collect();
        let (root, mount) = (fields.get(3)?, fields.get(4)?);
        let fstype = *tail.first()?;
        let wanted = if v2 {
            fstype == "cgroup2"
        } else {
            fstype == "cgroup" && tail.get(2).is_some_and(|opts| opts.split(',').any(|o| o == "pids"))
        };
        wanted.then(|| (PathBuf::from(unescape(root)), PathBuf::from(unescape(mount))))
    })
}

/// mountinfo writes space, tab, newline and backslash in paths as octal escapes.
fn unescape(s: &str) -> String {
    let mut out = Vec::with_capacity(s.len());
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 4 <= bytes.len() && bytes[i + 1..i + 4].iter().all(|b| (b'0'..=b'7').contains(b)) {
            out.push((bytes[i + 1] - b'0') * 64 + (bytes[i + 2] - b'0') * 8 + (bytes[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether calls' cgroups can be made in `dir` with a `pids.max`: the folder they go in.
fn usable(dir: &Path, v2: bool) -> io::Result<PathBuf> {
    if v2 {
        let available = fs::read_to_string(dir.join("cgroup.controllers"))?;
        if !available.split_whitespace().any(|c| c == "pids") {
            return Err(io::Error::other("the `pids` controller is not given to this cgroup"));
        }
        enable_pids(dir)?;
    }
    let test = dir.join(format!("routines-{}-probe", std::process::id()));
    fs::create_dir(&test)?;
    // The kernel makes `pids.max` in a new cgroup; in a plain folder it is missing.
    let writable = write_existing(&test.join("pids.max"), "max");
    let _ = fs::remove_dir(&test);
    writable?;
    Ok(dir.to_path_buf())
}

/// Writes `text` to the existing file `path` (a cgroup's control file), never creating it.
fn write_existing(path: &Path, text: &str) -> io::Result<()> {
    fs::OpenOptions::new().write(true).open(path)?.write_all(text.as_bytes())
}

/// Gives the `pids` controller to the children of the v2 cgroup `dir`, first moving this
/// process into `dir/routines-engine` when it is the only process of `dir`.
fn enable_pids(dir: &Path) -> io::Result<()> {
    let control = dir.join("cgroup.subtree_control");
    if fs::read_to_string(&control)?.split_whitespace().any(|c| c == "pids") {
        return Ok(());
    }
    let enable = || write_existing(&control, "+pids");
    let Err(first) = enable() else { return Ok(()) };
    let procs = fs::read_to_string(dir.join("cgroup.procs"))?;
    let me = std::process::id().to_string();
    if procs.split_whitespace().any(|p| p != me) {
        return Err(io::Error::other(format!(
            "cannot give the `pids` controller to child cgroups ({first}), and other processes share this cgroup"
        )));
    }
    let engine = dir.join("routines-engine");
    match fs::create_dir(&engine) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
        _ => {}
    }
    write_existing(&engine.join("cgroup.procs"), &me)?;
    enable()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTS_V1: &str = "\
30 25 0:26 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
37 30 0:33 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
38 30 0:34 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 30 0:35 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn the_engines_own_cgroup_is_found_in_each_hierarchy_with_pids_v1_first() {
        let cgroups = "8:pids:/svc/routines\n4:memory:/other\n0::/user.slice/x\n";
        assert_eq!(
            candidates(cgroups, MOUNTS_V1),
            vec![
                (PathBuf::from("/sys/fs/cgroup/pids/svc/routines"), false),
                (PathBuf::from("/sys/fs/cgroup/unified/user.slice/x"), true)
            ]
        );
    }

    #[test]
    fn a_mount_of_part_of_the_hierarchy_is_followed_and_a_path_outside_it_is_skipped() {
        // A container sees the hierarchy from its own cgroup down, mounted at /sys/fs/cgroup.
        let mounts = "40 30 0:40 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        assert_eq!(candidates("0::/docker/abc/app\n", mounts), vec![(PathBuf::from("/sys/fs/cgroup/app"), true)]);
        assert!(candidates("0::/elsewhere\n", mounts).is_empty());
    }

    #[test]
    fn hierarchies_without_pids_are_not_candidates() {
        let mounts = "38 30 0:34 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
        assert!(candidates("4:memory:/\n", mounts).is_empty());
        assert!(candidates("8:pids:/\n", mounts).is_empty(), "pids named but not mounted");
    }

    #[test]
    fn a_plain_folder_is_not_a_pids_cgroup() {
        let dir = tempfile::tempdir().unwrap();
        let err = usable(dir.path(), false).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0, "the probe's folder was left behind");
        assert!(usable(dir.path(), true).is_err(), "no cgroup.controllers");
    }

    #[test]
    fn why_there_is_no_cap_names_each_hierarchy_and_its_error() {
        let refused = NoCap::Refused(vec![
            (PathBuf::from("/sys/fs/cgroup/pids"), io::Error::from(io::ErrorKind::ReadOnlyFilesystem)),
            (PathBuf::from("/sys/fs/cgroup"), io::Error::other("other processes share this cgroup")),
        ]);
        assert_eq!(
            refused.to_string(),
            "/sys/fs/cgroup/pids: read-only filesystem or storage medium; /sys/fs/cgroup: other processes share this cgroup"
        );
        assert_eq!(NoCap::NotMounted.to_string(), "no cgroup hierarchy with the `pids` controller is mounted");
    }

    #[test]
    fn mountinfo_escapes_are_read() {
        assert_eq!(unescape(r"/mnt/with\040space\134x"), r"/mnt/with space\x");
        assert_eq!(unescape(r"/plain\04"), r"/plain\04");
    }
}
