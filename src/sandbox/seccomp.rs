//! The network filter of Landlock calls without network.
//!
//! Landlock (ABI 4 and later) restricts TCP `connect` and `bind` only; UDP,
//! raw sockets, netlink and UNIX sockets on the host (a Docker or D-Bus
//! socket) stay open to it. Without network, this filter refuses `socket(2)`
//! of every family with `EACCES`, allows `socketpair(2)` only for `AF_UNIX`
//! (local pipes between a command's own processes), and refuses `io_uring`,
//! which can create sockets without `socket(2)`. A syscall of another
//! architecture's table kills the process.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};

use super::SandboxError;

/// The filter for a call without network.
pub(crate) fn no_network() -> Result<BpfProgram, SandboxError> {
    // An architecture seccompiler does not know is an error, reported like any other.
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    // An empty rule list matches every call of that syscall.
    rules.insert(libc::SYS_socket, Vec::new());
    rules.insert(libc::SYS_io_uring_setup, Vec::new());
    let not_unix = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?;
    let rule = SeccompRule::new(vec![not_unix])?;
    rules.insert(libc::SYS_socketpair, vec![rule]);
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EACCES as u32), arch)?;
    Ok(BpfProgram::try_from(filter)?)
}
