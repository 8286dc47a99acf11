//! Destructive commands, refused even when allowed and at `autonomy: full`,
//! also inside wrappers.
//!
//! - `rm` needs only `-r` (not `-f`) on `/`, a top-level directory (`/usr`,
//!   `/etc`, ...), a home directory (`~`, `~user`, `$HOME`, `/home/NAME`,
//!   `/Users/NAME`, `/root`), `.` or `..` (or `DIR/*` of those); `rm
//!   --no-preserve-root` always. `dd of=/dev/...` except `/dev/null`,
//!   `/dev/zero`, `/dev/stdout`, `/dev/stderr`, `/dev/tty`, `/dev/fd/*`.
//!   `kill` of pid `-1` or `0` (the engine's own process group). `find` with
//!   `-delete` from such a system path.
//! - The fork bomb and download-into-a-shell checks read the raw text of the
//!   line, and of every `sh -c` string, before it is parsed, so they give
//!   their own reason although `|` is refused anyway. The interpreter after
//!   `|` must end at a space, an operator or the end, so a quoted pattern such
//!   as `grep 'curl .* | sh' notes` passes; a fork bomb is refused even quoted.

use super::wrappers::SHELLS;
use super::{ParsedCommand, file_name};

/// Destructive commands refused even at `autonomy: full`. Returns the reason.
///
/// Checks `cmd` and, recursively, every inner command.
pub fn destructive(cmd: &ParsedCommand) -> Option<String> {
    if is_destructive(cmd) {
        return Some(format!("`{}` is destructive and always refused", shown(&cmd.argv)));
    }
    cmd.inner.iter().find_map(destructive)
}

/// argv as a command line, quoting only where the words would not split back the same.
fn shown(argv: &[String]) -> String {
    let special = |c: char| c.is_whitespace() || "'\"\\;&|<>()$`#".contains(c);
    let words: Vec<std::borrow::Cow<'_, str>> = argv
        .iter()
        .map(|w| if w.is_empty() || w.contains(special) { shell_words::quote(w) } else { w.as_str().into() })
        .collect();
    let joined = words.join(" ");
    match joined.char_indices().nth(80) {
        Some((cut, _)) => format!("{}...", &joined[..cut]),
        None => joined,
    }
}

fn is_destructive(cmd: &ParsedCommand) -> bool {
    let args = cmd.argv.get(1..).unwrap_or_default();
    match cmd.base.as_str() {
        "rm" => {
            args.iter().any(|a| a == "--no-preserve-root")
                || (recursive(args, true) && positionals(args).any(|a| system_path(a, true)))
        }
        "chmod" | "chown" | "chgrp" => recursive(args, false) && positionals(args).any(|a| system_path(a, false)),
        "dd" => args.iter().any(|a| a.strip_prefix("of=").is_some_and(device)),
        "shred" | "wipefs" => positionals(args).any(device),
        "cp" | "mv" => copy_target(args).is_some_and(block_device),
        "tee" => positionals(args).any(block_device),
        "shutdown" | "reboot" | "halt" | "poweroff" => true,
        "init" | "telinit" => positionals(args).next().is_some_and(|a| a == "0" || a == "6"),
        "systemctl" => positionals(args).next().is_some_and(|a| matches!(a, "poweroff" | "reboot" | "halt" | "kexec")),
        "kill" => kill_all(args),
        "find" => find_delete(args),
        base => base.starts_with("mkfs") || base == "mke2fs" || base == "mkswap",
    }
}

/// Arguments that are not options (all of them after `--`).
fn positionals(args: &[String]) -> impl Iterator<Item = &str> {
    let mut after_dashes = false;
    args.iter().filter_map(move |a| {
        if after_dashes {
            Some(a.as_str())
        } else if a == "--" {
            after_dashes = true;
            None
        } else if a.len() > 1 && a.starts_with('-') {
            None
        } else {
            Some(a.as_str())
        }
    })
}

/// `-r`, `-R`, `--recursive`, or a short cluster holding them (`-rf`). `lower_r`: whether `-r` counts
/// (for `chmod` it removes read permission).
fn recursive(args: &[String], lower_r: bool) -> bool {
    args.iter().take_while(|a| *a != "--").any(|a| {
        a == "--recursive"
            || (a.starts_with('-') && !a.starts_with("--") && (a.contains('R') || (lower_r && a.contains('r'))))
    })
}

/// `/`, a top-level directory, a home directory, and when `cwd` also `.` and `..`; `DIR/*` counts as `DIR`.
fn system_path(path: &str, cwd: bool) -> bool {
    let path = match path {
        "*" => ".",
        "/*" => "/",
        _ => path.strip_suffix("/*").unwrap_or(path),
    };
    let (first, _) = path.split_once('/').unwrap_or((path, ""));
    let (anchor, rest) = if path.starts_with('/') {
        ('/', path)
    } else if first.starts_with('~') || first == "$HOME" || first == "${HOME}" {
        ('~', &path[first.len()..])
    } else {
        ('.', path)
    };
    let mut comps: Vec<&str> = Vec::new();
    for c in rest.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                comps.pop();
            }
            c => comps.push(c),
        }
    }
    match anchor {
        '/' => comps.len() <= 1 || (comps.len() == 2 && matches!(comps[0], "home" | "Users")),
        '~' => comps.is_empty(),
        _ => cwd && comps.is_empty(),
    }
}

fn device(path: &str) -> bool {
    path.starts_with("/dev/")
        && !matches!(path, "/dev/null" | "/dev/zero" | "/dev/stdout" | "/dev/stderr" | "/dev/tty")
        && !path.starts_with("/dev/fd/")
}

fn block_device(path: &str) -> bool {
    path.strip_prefix("/dev/").is_some_and(|d| {
        ["sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk", "mapper/", "md", "dm-", "loop"]
            .iter()
            .any(|p| d.starts_with(p))
    })
}

/// Destination of `cp`/`mv`: `-t DIR`, `--target-directory=DIR` or the last operand.
fn copy_target(args: &[String]) -> Option<&str> {
    for (k, a) in args.iter().enumerate() {
        if a == "-t" || a == "--target-directory" {
            return args.get(k + 1).map(String::as_str);
        }
        if let Some(dir) = a.strip_prefix("--target-directory=") {
            return Some(dir);
        }
        if let Some(dir) = a.strip_prefix("-t").filter(|d| !d.is_empty() && !a.starts_with("--")) {
            return Some(dir);
        }
    }
    positionals(args).last()
}

/// `kill` of pid -1 (every process) or 0 (our own process group); `kill -1` alone too.
fn kill_all(args: &[String]) -> bool {
    match args.first().map(String::as_str) {
        Some("-l" | "-L" | "--list" | "--table") | None => return false,
        Some("-1") if args.len() == 1 => return true,
        _ => {}
    }
    let mut i = 0;
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "-s" | "-n" | "--signal" => i += 2,
            "--" => {
                i += 1;
                break;
            }
            // The signal: `-9`, `-KILL`.
            _ if i == 0 && a.starts_with('-') => i += 1,
            _ => break,
        }
    }
    args.get(i..).unwrap_or_default().iter().any(|a| a == "-1" || a == "0")
}

/// `find / -delete` and the like (`find . -delete` in the workspace is fine).
fn find_delete(args: &[String]) -> bool {
    args.iter().any(|a| a == "-delete")
        && args
            .iter()
            .skip_while(|a| matches!(a.as_str(), "-H" | "-L" | "-P"))
            .take_while(|a| !a.starts_with('-') && *a != "(" && *a != "!")
            .any(|a| system_path(a, false))
}

/// Raw-text checks made before parsing.
pub(super) fn raw_denylist(line: &str) -> Option<&'static str> {
    if fork_bomb(line) {
        return Some("a fork bomb is destructive and always refused");
    }
    if download_into_shell(line) {
        return Some(
            "piping a download into a shell (`curl ... | sh`) runs unreviewed code and is always refused; download the file, read it, and run only allowed commands",
        );
    }
    None
}

/// `:(){ :|:& };:` and renamed variants, whatever the spacing.
fn fork_bomb(line: &str) -> bool {
    if !line.contains('(') || !line.contains('{') {
        return false;
    }
    let s: String = line.chars().filter(|c| !c.is_whitespace()).collect();
    s.match_indices("(){").any(|(pos, _)| {
        let head = &s[..pos];
        let start = head.rfind(|c| ";&|(){}'\"`$".contains(c)).map_or(0, |p| p + 1);
        let name = &head[start..];
        let body = &s[pos + 3..];
        !name.is_empty() && (body.contains(&format!("{name}|{name}")) || body.contains(&format!("{name}&{name}")))
    })
}

/// `curl ... | sh`, `wget -O- ... | sudo bash`, also into `python`, `perl` ...
fn download_into_shell(line: &str) -> bool {
    /// Interpreters other than the shells.
    const INTERPRETERS: &[&str] = &["python", "python3", "perl", "ruby", "node", "php"];
    let boundary = |c: char| c.is_whitespace() || ";&|()".contains(c);
    let Some(download) = ["curl", "wget"]
        .iter()
        .flat_map(|tool| line.match_indices(tool))
        .filter(|(pos, _)| line[..*pos].chars().next_back().is_none_or(|c| boundary(c) || c == '/'))
        .map(|(pos, _)| pos)
        .min()
    else {
        return false;
    };
    let after = &line[download..];
    after.match_indices('|').any(|(pos, _)| {
        let rest = &after[pos + 1..];
        if rest.starts_with('|') || after[..pos].ends_with('|') {
            return false;
        }
        let mut rest = rest.trim_start();
        for prefix in ["sudo ", "doas ", "env "] {
            if let Some(r) = rest.strip_prefix(prefix) {
                rest = r.trim_start();
            }
        }
        let word = rest.split(boundary).next().unwrap_or_default();
        let program = file_name(word);
        SHELLS.contains(&program) || INTERPRETERS.contains(&program)
    })
}
