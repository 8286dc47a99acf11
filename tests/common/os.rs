//! What the operating system says about processes and ports.

/// Whether process `pid` runs: one that is gone, or a zombie waiting to be reaped, does not.
pub fn process_is_running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start().chars().next();
            state != Some('Z') && state != Some('X')
        }
    }
}

/// The host pids of running processes whose command line holds `arg` as one argument. A
/// process inside a PID namespace (the shell sandbox) has another pid there; it is found by
/// what it runs.
pub fn processes_with_arg(arg: &str) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|a| a == arg.as_bytes()))
        })
        .filter(|pid| process_is_running(*pid))
        .collect()
}

/// A port on 127.0.0.1 that nobody listens on right now, for a process under test to bind.
///
/// Taken below the kernel's ephemeral range (32768-60999 by default), where every bind to
/// port 0 (the tests' mock servers) and every outgoing connection gets its port: a port from
/// that range could be taken by one of them between this check and the bind of the process
/// under test (a daemon once failed with "Address already in use" so). Each call of this
/// process takes the next port of its own sequence, so two calls never hand out the same one.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    const LOW: u32 = 20_000;
    const SPAN: u32 = 12_000;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let start = std::process::id().wrapping_mul(7919) % SPAN;
    for _ in 0..SPAN {
        let port = (LOW + (start + NEXT.fetch_add(1, Ordering::Relaxed)) % SPAN) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port on 127.0.0.1 between {LOW} and {}", LOW + SPAN)
}
