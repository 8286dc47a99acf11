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

/// A port on 127.0.0.1 that nobody listens on right now.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}
