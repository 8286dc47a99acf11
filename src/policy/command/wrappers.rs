//! Wrappers: commands that run another command on our behalf, unwrapped
//! into [`ParsedCommand::inner`] so that every program the line would start
//! is checked.
//!
//! - `sh|bash|dash|zsh|ksh|mksh|ash|fish|csh|tcsh -c STRING`: the string is
//!   parsed with the same rules, recursively, at most 8 levels. `env`,
//!   `xargs`, `find -exec|-execdir|-ok|-okdir`, `nice`, `nohup`, `timeout`,
//!   `time`, `stdbuf`, `command`, `exec`. The wrapper itself must be allowed
//!   too. `sudo`, `doas`, `su`, `pkexec`, `runuser` are refused at any depth.
//! - `FOO=bar cmd` is refused; `env FOO=bar cmd` is unwrapped (the variable is
//!   explicit), but variables that make a program run another program or load
//!   code (`PATH`, `LD_*`, `DYLD_*`, `BASH_ENV`, `BASH_FUNC_*`, `GIT_SSH_COMMAND`,
//!   `PAGER`, `EDITOR`, ...) are refused. `env -S`/`-C` and any option a
//!   wrapper does not list are refused rather than guessed at.

use super::git::git;
use super::programs;
use super::{CommandRefusal, CommandRefusal as R, ParsedCommand, file_name, parse_at};

/// How deep wrappers may nest (`bash -c "sh -c '...'"`).
pub(super) const MAX_DEPTH: usize = 8;

/// Shells whose `-c` string is parsed as a command line.
pub(super) const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh"];
/// Commands that run another as a different user, refused at any depth.
const PRIVILEGE: &[&str] =
    &["sudo", "doas", "su", "pkexec", "runuser", "chroot", "nsenter", "unshare", "setpriv", "capsh", "setarch"];

/// The command `argv` runs, with every command it runs on our behalf; refuses privilege escalation, leading
/// assignments, and nesting deeper than [`MAX_DEPTH`].
pub(super) fn build(argv: Vec<String>, depth: usize) -> Result<ParsedCommand, CommandRefusal> {
    if depth > MAX_DEPTH {
        return Err(R::TooDeep(MAX_DEPTH));
    }
    let Some(first) = argv.first() else { return Err(R::Empty) };
    if first.is_empty() {
        return Err(R::Empty);
    }
    if let Some(name) = assignment(first) {
        return Err(R::Assignment(name.to_string()));
    }
    let base = file_name(first).to_string();
    if PRIVILEGE.contains(&base.as_str()) {
        return Err(R::Privilege(base));
    }
    let sub = |i: usize| -> Result<Vec<ParsedCommand>, CommandRefusal> {
        match argv.get(i..) {
            Some(rest) if !rest.is_empty() => Ok(vec![build(rest.to_vec(), depth + 1)?]),
            _ => Ok(Vec::new()),
        }
    };
    let inner = match base.as_str() {
        b if SHELLS.contains(&b) => match shell_string(&argv, b)? {
            Some(script) => vec![parse_at(script, depth + 1)?],
            None => Vec::new(),
        },
        "env" => sub(env_command(&argv)?)?,
        "xargs" => sub(options("xargs", &argv, &XARGS)?)?,
        "nice" => sub(options("nice", &argv, &NICE)?)?,
        "nohup" => sub(options("nohup", &argv, &NOHUP)?)?,
        // The first word after the options is the duration.
        "timeout" => sub(options("timeout", &argv, &TIMEOUT)? + 1)?,
        "time" => sub(options("time", &argv, &TIME)?)?,
        "stdbuf" => sub(options("stdbuf", &argv, &STDBUF)?)?,
        "exec" => sub(options("exec", &argv, &EXEC)?)?,
        "command" => {
            let i = options("command", &argv, &COMMAND)?;
            // `command -v NAME` only looks NAME up.
            if argv[1..i].iter().any(|a| a.starts_with('-') && a.contains(['v', 'V'])) { Vec::new() } else { sub(i)? }
        }
        "setsid" => sub(options("setsid", &argv, &SETSID)?)?,
        "ionice" => sub(options("ionice", &argv, &IONICE)?)?,
        // The first word after the options is the priority, the mask or the lock file.
        "chrt" => sub(options("chrt", &argv, &CHRT)? + 1)?,
        "taskset" => sub(options("taskset", &argv, &TASKSET)? + 1)?,
        "flock" => sub(options("flock", &argv, &FLOCK)? + 1)?,
        "find" => {
            programs::find(&argv)?;
            find_exec(&argv, depth)?
        }
        "git" => {
            git(&argv)?;
            programs::git_extra(&argv)?;
            Vec::new()
        }
        "sed" => {
            programs::sed(&argv)?;
            Vec::new()
        }
        "awk" | "gawk" | "mawk" | "nawk" | "busybox" => {
            programs::awk(&argv)?;
            Vec::new()
        }
        "tar" | "bsdtar" => {
            programs::tar(&argv)?;
            Vec::new()
        }
        _ => Vec::new(),
    };
    Ok(ParsedCommand { argv, base, inner })
}

/// The variable name of a `NAME=value` word.
fn assignment(word: &str) -> Option<&str> {
    let (name, _) = word.split_once('=')?;
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    ok.then_some(name)
}

/// The command string of `sh -c STRING` (with options such as `-e`, `-lc`, `-o pipefail` before it).
fn shell_string<'a>(argv: &'a [String], shell: &str) -> Result<Option<&'a str>, CommandRefusal> {
    let mut c_mode = false;
    let mut i = 1;
    while let Some(a) = argv.get(i) {
        if a == "--" || a == "-" {
            i += 1;
            break;
        }
        if let Some(long) = a.strip_prefix("--") {
            if let Some(script) = long.strip_prefix("command=") {
                return Ok(Some(script));
            }
            match long {
                "command" => return argv.get(i + 1).map(|s| Some(s.as_str())).ok_or_else(|| missing_string(shell)),
                "rcfile" | "init-file" => i += 2,
                _ => i += 1,
            }
            continue;
        }
        if a.len() > 1 && (a.starts_with('-') || a.starts_with('+')) {
            if a.starts_with('-') && a.contains('c') {
                c_mode = true;
            }
            i += if a[1..].contains(['o', 'O']) { 2 } else { 1 };
            continue;
        }
        break;
    }
    if !c_mode {
        // `sh script.sh` runs a file, `sh` alone reads its input: no inner command to check.
        return Ok(None);
    }
    argv.get(i).map(|s| Some(s.as_str())).ok_or_else(|| missing_string(shell))
}

fn missing_string(shell: &str) -> CommandRefusal {
    R::Syntax(format!("`{shell} -c` needs a command string"))
}

/// Options a wrapper takes before its command.
struct Opts {
    /// Short options without an argument.
    flags: &'static str,
    /// Short options with a required argument (attached or the next word).
    with_arg: &'static str,
    /// Short options with an optional attached argument.
    opt_arg: &'static str,
    long_flags: &'static [&'static str],
    long_with_arg: &'static [&'static str],
    long_opt_arg: &'static [&'static str],
    /// `-N` (`nice -10`).
    numeric: bool,
}

const NO_OPTS: Opts = Opts {
    flags: "",
    with_arg: "",
    opt_arg: "",
    long_flags: &[],
    long_with_arg: &[],
    long_opt_arg: &[],
    numeric: false,
};
const HELP: &[&str] = &["help", "version"];

const XARGS: Opts = Opts {
    flags: "0oprtx",
    with_arg: "adEILnPs",
    opt_arg: "eil",
    long_flags: &[
        "null",
        "open-tty",
        "interactive",
        "no-run-if-empty",
        "verbose",
        "exit",
        "show-limits",
        "help",
        "version",
    ],
    long_with_arg: &["arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"],
    long_opt_arg: &["eof", "replace", "max-lines"],
    numeric: false,
};
const NICE: Opts = Opts { with_arg: "n", long_flags: HELP, long_with_arg: &["adjustment"], numeric: true, ..NO_OPTS };
const NOHUP: Opts = Opts { long_flags: HELP, ..NO_OPTS };
const TIMEOUT: Opts = Opts {
    flags: "fpv",
    with_arg: "ks",
    long_flags: &["foreground", "preserve-status", "verbose", "help", "version"],
    long_with_arg: &["kill-after", "signal"],
    ..NO_OPTS
};
const TIME: Opts = Opts {
    flags: "apqv",
    with_arg: "fo",
    long_flags: &["append", "portability", "quiet", "verbose", "help", "version"],
    long_with_arg: &["format", "output"],
    ..NO_OPTS
};
const STDBUF: Opts =
    Opts { with_arg: "ioe", long_flags: HELP, long_with_arg: &["input", "output", "error"], ..NO_OPTS };
const EXEC: Opts = Opts { flags: "cl", with_arg: "a", ..NO_OPTS };
const SETSID: Opts = Opts { flags: "cfw", long_flags: &["ctty", "fork", "wait", "help", "version"], ..NO_OPTS };
const IONICE: Opts = Opts {
    flags: "t",
    with_arg: "cn",
    long_flags: &["ignore", "help", "version"],
    long_with_arg: &["class", "classdata"],
    ..NO_OPTS
};
const CHRT: Opts = Opts {
    flags: "abdefiorRv",
    with_arg: "TPD",
    long_flags: &[
        "all-tasks",
        "batch",
        "deadline",
        "fifo",
        "idle",
        "other",
        "rr",
        "reset-on-fork",
        "verbose",
        "help",
        "version",
    ],
    long_with_arg: &["sched-runtime", "sched-period", "sched-deadline"],
    ..NO_OPTS
};
const TASKSET: Opts = Opts { flags: "a", long_flags: &["all-tasks", "help", "version"], ..NO_OPTS };
/// Without `-c`/`--command`, which takes a shell string.
const FLOCK: Opts = Opts {
    flags: "sxunoFe",
    with_arg: "wE",
    long_flags: &["shared", "exclusive", "unlock", "nonblock", "close", "no-fork", "verbose", "help", "version"],
    long_with_arg: &["timeout", "conflict-exit-code"],
    ..NO_OPTS
};
const COMMAND: Opts = Opts { flags: "pvV", ..NO_OPTS };
const ENV: Opts = Opts {
    flags: "i0v",
    with_arg: "u",
    long_flags: &["ignore-environment", "null", "debug", "help", "version"],
    long_with_arg: &["unset"],
    ..NO_OPTS
};

/// Index in `argv` of the wrapped command (`argv.len()` when there is none); unknown options are refused.
fn options(name: &str, argv: &[String], o: &Opts) -> Result<usize, CommandRefusal> {
    let unsupported = |a: &str| R::UnsupportedOption { command: name.to_string(), option: a.to_string() };
    let mut i = 1;
    while let Some(a) = argv.get(i) {
        if a == "--" {
            return Ok(i + 1);
        }
        if let Some(long) = a.strip_prefix("--") {
            match long.split_once('=') {
                Some((n, _)) if o.long_with_arg.contains(&n) || o.long_opt_arg.contains(&n) => i += 1,
                Some(_) => return Err(unsupported(a)),
                None if o.long_flags.contains(&long) || o.long_opt_arg.contains(&long) => i += 1,
                None if o.long_with_arg.contains(&long) => i += 2,
                None => return Err(unsupported(a)),
            }
            continue;
        }
        let Some(short) = a.strip_prefix('-').filter(|s| !s.is_empty()) else { return Ok(i) };
        if o.numeric && short.trim_start_matches(['+', '-']).bytes().all(|c| c.is_ascii_digit()) {
            i += 1;
            continue;
        }
        let mut next = i + 1;
        for (k, c) in short.char_indices() {
            if o.flags.contains(c) {
                continue;
            }
            if o.with_arg.contains(c) {
                if k + 1 == short.len() {
                    next += 1;
                }
                break;
            }
            if o.opt_arg.contains(c) {
                break;
            }
            return Err(unsupported(a));
        }
        i = next;
    }
    Ok(argv.len())
}

/// Environment variables that make a program run another program or load code.
const ENV_DENIED: &[&str] = &[
    "PATH",
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "IFS",
    "PAGER",
    "MANPAGER",
    "EDITOR",
    "VISUAL",
    "BROWSER",
    "SSH_ASKPASS",
    "SUDO_ASKPASS",
    "LESSOPEN",
    "LESSCLOSE",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "PYTHONHOME",
    "NODE_OPTIONS",
    "RUBYOPT",
    "RUBYLIB",
    "GCONV_PATH",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_EXTERNAL_DIFF",
    "GIT_ASKPASS",
    "GIT_PROXY_COMMAND",
    "GIT_EXEC_PATH",
    "GIT_TEMPLATE_DIR",
];
const ENV_DENIED_PREFIXES: &[&str] = &["LD_", "DYLD_", "BASH_FUNC_", "GIT_CONFIG"];

/// Index of the command `env` runs, after its options and `NAME=value` words.
fn env_command(argv: &[String]) -> Result<usize, CommandRefusal> {
    let mut i = 1;
    // `env -` is `env -i`; `options` would take it for the command.
    while argv.get(i).is_some_and(|a| a == "-") {
        i += 1;
    }
    let mut i = i.max(options("env", argv, &ENV)?);
    while let Some((name, _)) = argv.get(i).and_then(|a| a.split_once('=')) {
        if ENV_DENIED.contains(&name) || ENV_DENIED_PREFIXES.iter().any(|p| name.starts_with(p)) {
            return Err(R::EnvVar(name.to_string()));
        }
        i += 1;
    }
    Ok(i)
}

/// The commands of every `-exec`, `-execdir`, `-ok` and `-okdir` of a `find`.
fn find_exec(argv: &[String], depth: usize) -> Result<Vec<ParsedCommand>, CommandRefusal> {
    let mut inner = Vec::new();
    let mut i = 1;
    while let Some(a) = argv.get(i) {
        if !matches!(a.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            i += 1;
            continue;
        }
        let start = i + 1;
        let end = (start..argv.len())
            .find(|&j| argv[j] == ";" || (argv[j] == "+" && argv[j - 1] == "{}"))
            .ok_or_else(|| R::Syntax(format!("`find {a}` has no terminating `\\;` or `+`")))?;
        if end == start {
            return Err(R::Syntax(format!("`find {a}` has no command")));
        }
        inner.push(build(argv[start..end].to_vec(), depth + 1)?);
        i = end + 1;
    }
    Ok(inner)
}
