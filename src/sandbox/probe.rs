//! Which mechanisms work on this machine, probed once per process.
//!
//! bubblewrap may be installed yet not permitted (no user namespaces for an
//! unprivileged user, an AppArmor restriction), so the probe runs it with the
//! namespaces and mounts every command gets, around `true`. Landlock is probed
//! by its ABI version, then by restricting a real `true` with a ruleset and
//! the network filter.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use super::policy::Resolved;
use super::{bwrap, landlock};

/// PATH used to find and run the probe's `true`.
const PROBE_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

static BWRAP: OnceLock<Result<PathBuf, String>> = OnceLock::new();
static LANDLOCK: OnceLock<Result<i32, String>> = OnceLock::new();

/// The bubblewrap program if it works here, or why not.
pub(crate) fn bwrap() -> Result<PathBuf, String> {
    BWRAP.get_or_init(probe_bwrap).clone()
}

/// The Landlock ABI version if Landlock works here, or why not.
pub(crate) fn landlock() -> Result<i32, String> {
    LANDLOCK.get_or_init(probe_landlock).clone()
}

fn probe_bwrap() -> Result<PathBuf, String> {
    let program = find_program("bwrap").ok_or_else(|| "`bwrap` was not found on PATH".to_string())?;
    let out = Command::new(&program)
        .args(bwrap::probe_args())
        .env_clear()
        .env("PATH", PROBE_PATH)
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("cannot run `{}`: {e}", program.display()))?;
    if out.status.success() {
        return Ok(program);
    }
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    Err(format!(
        "`{}` is installed but cannot create a sandbox here ({}); user namespaces may be disabled",
        program.display(),
        if stderr.is_empty() { out.status.to_string() } else { stderr }
    ))
}

fn probe_landlock() -> Result<i32, String> {
    let abi = landlock::kernel_abi()?;
    let resolved = Resolved { writable: Vec::new(), steps: Vec::new(), hidden: Vec::new(), cwd: "/".into() };
    let restriction = landlock::prepare(&resolved, abi, false, true, None).map_err(|e| e.to_string())?;
    let mut cmd = Command::new("true");
    cmd.env_clear().env("PATH", PROBE_PATH).current_dir("/").stdin(Stdio::null()).stdout(Stdio::null());
    landlock::install(&mut cmd, restriction);
    let status = cmd.status().map_err(|e| format!("a Landlock-restricted `true` did not start: {e}"))?;
    if status.success() { Ok(abi) } else { Err(format!("a Landlock-restricted `true` failed ({status})")) }
}

/// Finds `name` on the engine's PATH (or the usual folders).
fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| PROBE_PATH.into());
    std::env::split_paths(&path)
        .chain(std::env::split_paths(PROBE_PATH))
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
