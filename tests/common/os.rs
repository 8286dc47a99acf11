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

/// A port on 127.0.0.1 that nobody listens on right now.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}
