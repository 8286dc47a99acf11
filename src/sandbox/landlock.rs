//! The policy as a Landlock ruleset (the fallback where bubblewrap cannot run).
//!
//! Landlock only grants: a right given on a folder holds for everything
//! beneath it, and nothing can be taken back deeper down. Exceptions are
//! therefore made by *splitting*: a folder that holds an exception gets no
//! right of its own, each of its entries gets the right instead, except the
//! exception, recursively along the exception's path. So:
//! - reads: `/` and the writable roots, split around the hidden paths (split
//!   folders keep only the right to list their entries);
//! - writes: the writable roots and the call's scratch folder, split around
//!   the carve-outs and hidden paths: a folder on the way to a carve-out
//!   cannot get new entries or lose any, so a carve-out can neither be
//!   replaced nor, when missing, created;
//! - symlinks get no rule (their targets are reached under their own rules);
//! - without network, TCP `connect`/`bind` are refused (ABI 4) and the
//!   seccomp filter refuses other sockets; with or without, it refuses UNIX
//!   sockets (connecting to a host service's socket file needs no write
//!   right, and Landlock cannot restrict it); signals and abstract UNIX
//!   sockets are scoped to the sandbox (ABI 6).
//!
//! The ruleset is built in the parent; the child only makes two syscalls
//! (`landlock_restrict_self`, `seccomp`) between fork and exec.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope,
};

use super::SandboxError;
use super::policy::Resolved;
use super::seccomp;

/// The oldest ABI accepted: ABI 3 is the first that controls truncation.
pub(crate) const MIN_ABI: i32 = 3;

/// The Landlock ABI of the running kernel, or why there is none.
pub(crate) fn kernel_abi() -> Result<i32, String> {
    // SAFETY: with a null attribute and the VERSION flag the syscall only reports the ABI.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32, /* LANDLOCK_CREATE_RULESET_VERSION */
        )
    };
    if v < 0 {
        let e = io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::ENOSYS) => "this kernel has no Landlock".to_string(),
            Some(libc::EOPNOTSUPP) => "Landlock is disabled on this kernel (boot option `lsm=`)".to_string(),
            _ => format!("the Landlock probe failed: {e}"),
        });
    }
    let v = i32::try_from(v).unwrap_or(i32::MAX);
    if v < MIN_ABI {
        return Err(format!("this kernel has Landlock ABI {v}; at least {MIN_ABI} (Linux 6.2) is needed"));
    }
    Ok(v)
}

/// What the child applies before exec.
pub(crate) struct Restriction {
    ruleset: OwnedFd,
    seccomp: Option<seccompiler::BpfProgram>,
}

/// Builds the ruleset (and the seccomp filter) for `resolved` plus `scratch`.
pub(crate) fn prepare(
    resolved: &Resolved,
    abi_version: i32,
    network: bool,
    processes: bool,
    scratch: Option<&Path>,
) -> Result<Restriction, SandboxError> {
    let abi = ABI::from(abi_version);
    let all = AccessFs::from_all(abi);
    let read = AccessFs::from_read(abi);
    let write = all & !read;

    let mut ruleset = Ruleset::default().set_compatibility(CompatLevel::HardRequirement).handle_access(all)?;
    if abi_version >= 4 && !network {
        ruleset = ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?;
    }
    if abi_version >= 6 {
        ruleset = ruleset.scope(Scope::from_all(abi))?;
    }
    let mut created = ruleset.create()?;

    let mut writable: Vec<PathBuf> = resolved.writable.clone();
    writable.extend(scratch.map(Path::to_path_buf));
    let mut readable = vec![PathBuf::from("/")];
    readable.extend(writable.iter().cloned());

    let mut rules: Vec<(PathBuf, BitFlags<AccessFs>)> = Vec::new();
    for root in &readable {
        split(root, read, AccessFs::ReadDir.into(), &resolved.hidden, &mut rules);
    }
    let write_exceptions = resolved.write_exceptions();
    for root in &writable {
        split(root, write, BitFlags::empty(), &write_exceptions, &mut rules);
    }
    rules.push(("/dev/null".into(), AccessFs::ReadFile | AccessFs::WriteFile));

    let file_rights = AccessFs::from_file(abi);
    for (path, access) in rules {
        let Some((fd, is_dir)) = open_path(&path) else { continue };
        let access = if is_dir { access } else { access & file_rights };
        if access.is_empty() {
            continue;
        }
        created = created.add_rule(PathBeneath::new(fd, access))?;
    }
    let ruleset: Option<OwnedFd> = created.into();
    let ruleset = ruleset.ok_or_else(|| {
        SandboxError::io("landlock", io::Error::new(io::ErrorKind::Unsupported, "the kernel refused the ruleset"))
    })?;
    let seccomp = seccomp::filter(network, false, processes)?;
    Ok(Restriction { ruleset, seccomp })
}

/// `SECBIT_NOROOT`, `SECBIT_NO_SETUID_FIXUP`, `SECBIT_NO_CAP_AMBIENT_RAISE`, each locked:
/// a root process keeps no capability across exec and cannot regain any.
const SECUREBITS_NO_ROOT: libc::c_ulong = 0x01 | 0x02 | 0x04 | 0x08 | 0x40 | 0x80;

/// The highest capability number tried when emptying the bounding set.
const LAST_CAP: libc::c_ulong = 63;

/// Installs `restriction` on `cmd`: the child restricts itself before exec.
///
/// Landlock does not hold back root: a root process keeps `CAP_SYS_PTRACE`
/// and could read other processes' environments through `/proc`. So when the
/// engine runs as root the child first gives up every capability for good.
pub(crate) fn install(cmd: &mut std::process::Command, restriction: Restriction) {
    use std::os::unix::process::CommandExt;
    let Restriction { ruleset, seccomp } = restriction;
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    // SAFETY: the hook runs between fork and exec and only makes syscalls
    // (prctl, landlock_restrict_self, seccomp); it does not allocate or lock.
    unsafe {
        cmd.pre_exec(move || {
            if root {
                if libc::prctl(libc::PR_SET_SECUREBITS, SECUREBITS_NO_ROOT, 0, 0, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                for cap in 0..=LAST_CAP {
                    // EINVAL past the kernel's last capability is expected.
                    libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
                }
                libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
            }
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32) != 0 {
                return Err(io::Error::last_os_error());
            }
            if let Some(program) = &seccomp {
                if seccompiler::apply_filter(program).is_err() {
                    return Err(io::Error::from_raw_os_error(libc::EPERM));
                }
            }
            Ok(())
        });
    }
}

/// Grants `access` on `root`, except on the `exceptions` beneath it (and on
/// `root` itself if it is one): folders on the way to an exception get only
/// `on_split`, their other entries get `access`.
fn split(
    root: &Path,
    access: BitFlags<AccessFs>,
    on_split: BitFlags<AccessFs>,
    exceptions: &[PathBuf],
    rules: &mut Vec<(PathBuf, BitFlags<AccessFs>)>,
) {
    if exceptions.iter().any(|e| e == root) {
        return;
    }
    let below: Vec<PathBuf> = exceptions.iter().filter(|e| e.starts_with(root) && *e != root).cloned().collect();
    if below.is_empty() {
        rules.push((root.to_path_buf(), access));
        return;
    }
    if !on_split.is_empty() {
        rules.push((root.to_path_buf(), on_split));
    }
    let Ok(entries) = std::fs::read_dir(root) else { return };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_symlink() {
            continue;
        }
        let path = entry.path();
        if below.iter().any(|e| e.starts_with(&path)) {
            split(&path, access, on_split, &below, rules);
        } else {
            rules.push((path, access));
        }
    }
}

/// Opens `path` for a rule without following a final symlink; tells whether it is a folder.
fn open_path(path: &Path) -> Option<(OwnedFd, bool)> {
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: a valid C string; the returned descriptor is owned below.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat fills `st` for a valid descriptor.
    if unsafe { libc::fstat(fd.as_raw_fd(), st.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: fstat succeeded, so `st` is initialized.
    let mode = unsafe { st.assume_init() }.st_mode & libc::S_IFMT;
    if mode == libc::S_IFLNK {
        return None;
    }
    Some((fd, mode == libc::S_IFDIR))
}
