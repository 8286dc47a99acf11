//! The seccomp filter of a call: no network and no host UNIX sockets for Landlock calls, and
//! no new processes for calls that must stay one process.
//!
//! Landlock (ABI 4 and later) restricts TCP `connect` and `bind` only; UDP,
//! raw sockets, netlink and UNIX sockets on the host (a Docker or D-Bus
//! socket) stay open to it. Without network, this filter refuses `socket(2)`
//! of every family with `EACCES`, allows `socketpair(2)` only for `AF_UNIX`
//! (local pipes between a command's own processes), and refuses `io_uring`,
//! which can create sockets without `socket(2)`. With network but without
//! UNIX sockets it refuses `socket(2)` of `AF_UNIX` only: Landlock sees all of
//! `/` and cannot tell a socket file inside the workspace from one outside,
//! and connecting to one needs no write permission. (bubblewrap calls get a
//! network namespace and a view without the host's sockets instead.)
//!
//! Without processes, `fork`, `vfork`, `clone` and `clone3` are refused with `EACCES`
//! (threads too): the limits of a call (CPU time, memory) are per process, so a program that
//! forks without end would otherwise use the host's process table until its timeout. Both
//! mechanisms apply it: Landlock calls in the child before exec, bubblewrap calls through
//! `--seccomp`.
//!
//! A syscall of another architecture's table kills the process.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};

use super::SandboxError;

/// The filter for a call with or without `network`, `AF_UNIX` sockets (`unix`) and new
/// `processes`; `None` when it may have all three.
pub(crate) fn filter(network: bool, unix: bool, processes: bool) -> Result<Option<BpfProgram>, SandboxError> {
    if network && unix && processes {
        return Ok(None);
    }
    // An architecture seccompiler does not know is an error, reported like any other.
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    // An empty rule list matches every call of that syscall.
    if !network {
        rules.insert(libc::SYS_socket, Vec::new());
        rules.insert(libc::SYS_io_uring_setup, Vec::new());
        let not_unix = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?;
        let rule = SeccompRule::new(vec![not_unix])?;
        rules.insert(libc::SYS_socketpair, vec![rule]);
    } else if !unix {
        let unix = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, libc::AF_UNIX as u64)?;
        rules.insert(libc::SYS_socket, vec![SeccompRule::new(vec![unix])?]);
    }
    if !processes {
        rules.insert(libc::SYS_clone, Vec::new());
        rules.insert(libc::SYS_clone3, Vec::new());
        #[cfg(target_arch = "x86_64")]
        {
            rules.insert(libc::SYS_fork, Vec::new());
            rules.insert(libc::SYS_vfork, Vec::new());
        }
    }
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EACCES as u32), arch)?;
    Ok(Some(BpfProgram::try_from(filter)?))
}

/// `program` as bubblewrap's `--seccomp` reads it: the instructions in this machine's byte
/// order, as `seccomp_export_bpf` writes them.
pub(crate) fn bytes(program: &BpfProgram) -> Vec<u8> {
    let mut out = Vec::with_capacity(program.len() * 8);
    for i in program {
        out.extend_from_slice(&i.code.to_ne_bytes());
        out.push(i.jt);
        out.push(i.jf);
        out.extend_from_slice(&i.k.to_ne_bytes());
    }
    out
}
