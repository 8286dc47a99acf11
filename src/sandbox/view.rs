//! What a bubblewrap call sees of the host besides its writable roots: an
//! allowlist, not the whole file system.
//!
//! Connecting to a UNIX socket needs no write permission, so a read-only view
//! of `/` would hand a command every service that listens on a socket file
//! (PostgreSQL's, Docker's, an agent's) whatever the network setting. The
//! view therefore holds only:
//! - the system's program and library folders, read-only: `/usr` (with
//!   `/usr/local`), `/opt` (add-on programs, which `/usr/local/bin` often links
//!   into), and `/bin`, `/sbin`, `/lib*` as they are on the host: folders, or on
//!   merged-usr systems symlinks into `/usr`, made as the same symlinks;
//! - the `/etc` entries in [`ETC`], each for a reason given there;
//! - the workspace and the call's private `/tmp`, `/dev` and `/proc` (built in
//!   `bwrap.rs`).
//!
//! Nothing else exists inside: no `/home`, `/root`, `/var`, `/run`, `/srv`,
//! `/mnt`, `/media` or `/sys`, so no socket, home folder or service folder of
//! the host. An `/etc` entry that is a symlink stays a symlink where its target
//! is inside the view (`/etc/localtime` into `/usr/share/zoneinfo`, whose name
//! tools read); otherwise the file it points at is bound in its place
//! (`/etc/resolv.conf` into `/run/systemd/resolve`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The system's program and library folders.
const PROGRAMS: [&str; 9] = ["/usr", "/opt", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/libexec"];

/// The `/etc` entries a command needs at run time, and why:
/// - `ld.so.cache`: the dynamic loader finds libraries;
/// - `passwd`, `group`, `nsswitch.conf`: user and group names (`id`, `ls -l`, git's default
///   identity, Python's `pwd`), and how glibc looks them up;
/// - `hosts`, `resolv.conf`, `services`, `protocols`: name and service lookup (curl, Python's
///   `socket`; of use only with `shell_network`);
/// - `ssl/certs`, `ssl/openssl.cnf`, `pki/tls/certs`, `pki/tls/cert.pem`, `pki/tls/openssl.cnf`,
///   `pki/ca-trust`: the TLS trust stores of Debian-like and Red Hat-like systems (curl, git,
///   Python); not `ssl/private` or `pki/tls/private`;
/// - `localtime`: the local time zone (`date`, Python);
/// - `alternatives`: Debian's alternatives (`awk`, `editor`, `java`) are symlinks through it;
/// - `gitconfig`: git's system settings (such as `safe.directory`);
/// - `mime.types`: file types by name (Python's `mimetypes`);
/// - `os-release`: what system this is (Python's `platform`);
/// - `mtab`: the mounts (`df`), a symlink into `/proc`.
///
/// Not: secrets (`shadow`, `gshadow`, `ssh`, `ssl/private`, `sudoers`), settings that may hold
/// credentials (`pip.conf`, `npmrc`, `wgetrc`), `machine-id`, service configuration, and what
/// programs run well without (`ld.so.conf`, which only `ldconfig` reads, `locale.alias`,
/// `gai.conf`, `perl`, `fonts`, Debian's `python3*`): every entry is one more mount, and each
/// costs the call about 0.2 ms, 0.5 ms on a busy machine (bench/README.md).
const ETC: [&str; 20] = [
    "ld.so.cache",
    "passwd",
    "group",
    "nsswitch.conf",
    "hosts",
    "resolv.conf",
    "services",
    "protocols",
    "ssl/certs",
    "ssl/openssl.cnf",
    "pki/tls/certs",
    "pki/tls/cert.pem",
    "pki/tls/openssl.cnf",
    "pki/ca-trust",
    "localtime",
    "alternatives",
    "gitconfig",
    "mime.types",
    "os-release",
    "mtab",
];

/// One part of the host in the view.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Part {
    /// A symlink at this path with this target, as on the host.
    Link(OsString),
    /// The host's `source` bound read-only at this path (the path itself, or a symlink's target).
    Bind(PathBuf),
}

/// The host's parts of the view as (path in the view, part), as the host is now.
pub(crate) fn system() -> Vec<(PathBuf, Part)> {
    let mut out = Vec::with_capacity(PROGRAMS.len() + ETC.len());
    for dir in PROGRAMS {
        let path = Path::new(dir);
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                if let Ok(target) = std::fs::read_link(path) {
                    out.push((path.to_path_buf(), Part::Link(target.into_os_string())));
                }
            }
            Ok(meta) if meta.is_dir() => out.push((path.to_path_buf(), Part::Bind(path.to_path_buf()))),
            _ => {}
        }
    }
    for path in ETC.iter().map(|name| Path::new("/etc").join(name)) {
        if let Some(part) = etc_part(&path) {
            out.push((path, part));
        }
    }
    out
}

/// How the `/etc` entry `path` appears, if it exists.
fn etc_part(path: &Path) -> Option<Part> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.file_type().is_symlink() {
        return Some(Part::Bind(path.to_path_buf()));
    }
    let target = std::fs::canonicalize(path).ok()?;
    if in_view(&target) {
        Some(Part::Link(std::fs::read_link(path).ok()?.into_os_string()))
    } else {
        Some(Part::Bind(target))
    }
}

/// Whether a canonical host path shows in the view as itself: under a program folder or `/proc`.
fn in_view(path: &Path) -> bool {
    path.starts_with("/proc") || PROGRAMS.iter().any(|dir| path.starts_with(dir))
}
