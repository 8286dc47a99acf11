//! Checks a `shell` tool command line before it runs.
//!
//! The engine never hands the line to a shell: it splits it into argv with
//! `shell-words` and executes argv directly in the workspace. Whatever a shell
//! would have given meaning to is therefore either refused here, with a reason
//! the model can act on, or unwrapped so that every program the line would
//! start is checked against the allowlist.
//!
//! [`check`] runs the steps in order, each in its own file:
//! 1. the raw text of the line against the fork bomb and download-into-a-shell
//!    checks (`destructive.rs`);
//! 2. lexing (`lex.rs`): shell syntax that means more than words is refused;
//! 3. splitting into argv and unwrapping wrappers (`wrappers.rs`) into
//!    [`ParsedCommand::inner`], with git's rules (`git.rs`) on every git
//!    command met;
//! 4. destructive commands (`destructive.rs`) on the command and every inner
//!    command;
//! 5. the allowlist (here), for the command and every inner command.
//!
//! The allowlist compares file names (`/usr/bin/git` allows `git`), but a
//! program named by a path (`./ls`, `/tmp/x/ls`) runs only when the allowlist
//! names that path exactly or it lies directly in a system binary directory
//! (`/usr/bin/ls`): otherwise a script the agent wrote could borrow an
//! allowed name.

mod destructive;
mod git;
mod lex;
mod programs;
mod wrappers;

pub use destructive::destructive;

/// A command line after parsing, with every command it would run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedCommand {
    pub argv: Vec<String>,
    /// File name of `argv[0]` (`/usr/bin/git` → `git`).
    pub base: String,
    /// Commands this one runs on our behalf: the inner command of `sh -c`, `bash -c`, `env`, `xargs`, `find -exec`,
    /// `nice`, `nohup`, `timeout`, `time`, `stdbuf`, `command`, `exec` (parsed recursively; an `sh -c` string is
    /// parsed with the same rules).
    pub inner: Vec<ParsedCommand>,
}

impl ParsedCommand {
    /// `base` of this command and of every inner command, outermost first, without duplicates.
    pub fn bases(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.collect_bases(&mut out);
        out
    }

    fn collect_bases(&self, out: &mut Vec<String>) {
        if !out.contains(&self.base) {
            out.push(self.base.clone());
        }
        for inner in &self.inner {
            inner.collect_bases(out);
        }
    }
}

/// Why a command line is refused. `Display` is the reason the model reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandRefusal {
    #[error("the command is empty")]
    Empty,
    /// Unclosed quote, `find -exec` without its terminator, `sh -c` without a string.
    #[error("the command line cannot be parsed: {0}")]
    Syntax(String),
    /// `;`, `&&`, `||`, `|`, `&` or `"\n"`.
    #[error("{}", operator_reason(.0))]
    Operator(&'static str),
    /// `$(...)`, `` `...` ``, `<(...)` or `>(...)`.
    #[error("{}", substitution_reason(.0))]
    Substitution(&'static str),
    /// `$HOME`, `${HOME}`, `$1`, `$((...))`, `$'...'` ... as written (long `${...}` shortened).
    #[error("`{0}` is not expanded: commands run without a shell; write the value itself")]
    Expansion(String),
    /// The operator as written, with its file descriptors: `>`, `2>`, `2>&1`, `&>`, `<<`, `<<<` ...
    #[error("{}", redirection_reason(.0))]
    Redirection(String),
    /// `(` or `)`.
    #[error("`{0}` groups commands in a subshell; run one plain command per shell call")]
    Subshell(&'static str),
    /// The variable name of a leading `NAME=value`.
    #[error("`{0}=...` sets a variable before the command; commands run without a shell: set variables in the config")]
    Assignment(String),
    /// `sudo`, `doas`, `su`, `pkexec`, `runuser`.
    #[error("`{0}`: privilege escalation is never allowed")]
    Privilege(String),
    /// An option of a wrapper that is not unwrapped (`env -S`, `xargs --foo`).
    #[error("`{command} {option}` is not supported; run the inner command directly")]
    UnsupportedOption { command: String, option: String },
    /// A variable `env` may not set.
    #[error("`env {0}=...` can make the command run another program or load code; this variable cannot be set")]
    EnvVar(String),
    /// A git setting that runs a program (the key as written).
    #[error(
        "setting git's `{0}` is not allowed: only inert settings (user.name, user.email, color.*, core.quotepath, log.date, ...) may be set by a command, since others can make git run another program or write elsewhere"
    )]
    GitConfig(String),
    /// A git option or subcommand that runs a given program (`submodule foreach`, `--upload-pack`).
    #[error("`git {0}` makes git run another program; run that program directly instead, if it is allowed")]
    GitExec(String),
    #[error("commands nested more than {0} deep are refused; run the innermost command directly")]
    TooDeep(usize),
    /// Destructive, fork bomb, download piped into a shell: the whole reason.
    #[error("{0}")]
    Destructive(String),
    /// `argv[0]` is a path that the allowlist does not name.
    #[error("`{path}` runs a program by its path, which may not be the allowed `{base}`; write `{base}` instead")]
    Path { path: String, base: String },
    #[error("{}", not_allowed_reason(.command, .via, .allowed))]
    NotAllowed {
        command: String,
        /// The wrapper that would run it (`xargs`, `sh`).
        via: Option<String>,
        allowed: Vec<String>,
    },
}

use CommandRefusal as R;

/// What a refusal says before the one command that counts.
const ONE_COMMAND: &str = "this counts in one command: ";

/// What a refusal of a chain says before its first command.
const FIRST_COMMAND: &str = "the first command on its own: ";

/// The one command a refusal of [`explain`] wrote out (the command that counts, or the first
/// command of a chain), read back from the result the model got.
pub fn one_command(result: &str) -> Option<&str> {
    let (_, rest) = result.split_once(ONE_COMMAND).or_else(|| result.split_once(FIRST_COMMAND))?;
    let (one, _) = rest.strip_prefix('`')?.split_once('`')?;
    (!one.trim().is_empty()).then_some(one)
}

/// The first command of a chain refused for `op` (`ls -l data | sort -hr | head -n 1` →
/// `ls -l data`): the shortest text before an `op` that parses as one command on its own, so
/// an `op` inside quotes (`grep 'a|b' f | wc`) is passed over. The 1.5B model, its pipe
/// refused, answered with what it meant to run (bench/README.md, stop 39); the first command
/// gives it the data to answer from. The policy decides that call like any other.
fn first_of_chain(line: &str, op: &str) -> Option<String> {
    line.match_indices(op).find_map(|(at, _)| {
        let first = line[..at].trim();
        let parsed = parse(first).ok()?;
        (!parsed.argv.is_empty() && !first.ends_with('\\')).then(|| first.to_string())
    })
}

/// Why `line` was refused, with the one-command way to do what a pipe into `wc` meant (small
/// models count with `grep X f | wc -l`, then misread the lines they get instead).
pub fn explain(line: &str, refusal: &CommandRefusal) -> String {
    let reason = refusal.to_string();
    let counts = line.rsplit_once('|').is_some_and(|(_, last)| last.trim_start().starts_with("wc"));
    match (counts, count_in_one(line)) {
        (true, Some(one)) => format!("{reason}; {ONE_COMMAND}`{one}`"),
        (true, None) => {
            format!(
                "{reason}; to count the lines that match use `grep -c PATTERN FILE`, to count a file's lines `wc -l FILE`"
            )
        }
        _ => match refusal {
            R::Operator(op) if *op != "&" => match first_of_chain(line, op) {
                Some(first) => format!("{reason}; {FIRST_COMMAND}`{first}`"),
                None => reason,
            },
            _ => reason,
        },
    }
}

/// The one command that does what `grep ARGS | wc -l` or `cat FILE | wc -l` does (shellcheck's
/// SC2126): a small model copies a command, not a pattern.
fn count_in_one(line: &str) -> Option<String> {
    let (left, right) = line.split_once('|')?;
    if right.contains('|') || right.split_whitespace().collect::<Vec<_>>() != ["wc", "-l"] {
        return None;
    }
    let words: Vec<&str> = left.split_whitespace().collect();
    match words.as_slice() {
        ["grep", rest @ ..] if !rest.is_empty() && !rest.iter().any(|w| w.starts_with("-c") || *w == "--count") => {
            Some(format!("grep -c {}", left.trim().strip_prefix("grep")?.trim_start()))
        }
        ["cat", file] => Some(format!("wc -l {file}")),
        _ => None,
    }
}

fn operator_reason(op: &str) -> String {
    match op {
        "|" => "`|` pipes into a second command; run one command per shell call".to_string(),
        "&" => "`&` runs the command in the background; run one command per shell call, in the foreground".to_string(),
        "\n" => "a line break chains a second command; run one command per shell call".to_string(),
        _ => format!("`{op}` chains a second command; run one command per shell call"),
    }
}

fn substitution_reason(form: &str) -> String {
    if form.starts_with('`') {
        "backticks (`...`) run a hidden command; run that command on its own first".to_string()
    } else {
        format!("`{form}` runs a hidden command; run that command on its own first")
    }
}

fn redirection_reason(op: &str) -> String {
    let dup = !op.starts_with('&') && op.contains('&') && op.ends_with(|c: char| c.is_ascii_digit() || c == '-');
    if op.contains("<<") {
        format!(
            "`{op}` (here-document) feeds text to the command; commands run without a shell: pass the text as an argument or write it to a file with file_write first"
        )
    } else if dup {
        format!("`{op}` redirects a stream; commands run without a shell: drop it and run the command as is")
    } else if op.contains('<') {
        format!("`{op}` redirects input; commands run without a shell: pass the file name as an argument instead")
    } else {
        format!(
            "`{op}` redirects output to a file; commands run without a shell: run the command as is and read its output, or write files with file_write"
        )
    }
}

fn not_allowed_reason(command: &str, via: &Option<String>, allowed: &[String]) -> String {
    let via = via.as_ref().map(|v| format!(" (run by `{v}`)")).unwrap_or_default();
    if allowed.is_empty() {
        format!(
            "`{command}`{via} is not an allowed command; no commands are allowed (security.allowed_commands is empty)"
        )
    } else {
        format!(
            "`{command}`{via} is not an allowed command; allowed: {} (security.allowed_commands)",
            allowed.join(", ")
        )
    }
}

/// Parses without judging allowlists: refuses shell syntax that could smuggle a second command.
pub fn parse(line: &str) -> Result<ParsedCommand, CommandRefusal> {
    parse_at(line, 0)
}

fn parse_at(line: &str, depth: usize) -> Result<ParsedCommand, CommandRefusal> {
    // `check` reads the whole line first; the string of an `sh -c` gets the same raw-text look here.
    if depth > 0 {
        if let Some(reason) = destructive::raw_denylist(line) {
            return Err(R::Destructive(reason.to_string()));
        }
    }
    lex::scan(line)?;
    let argv = shell_words::split(line).map_err(|e| R::Syntax(e.to_string()))?;
    wrappers::build(argv, depth)
}

/// File name of a command (`/usr/bin/git` → `git`).
pub(crate) fn file_name(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    let name = trimmed.rsplit('/').next().unwrap_or(trimmed);
    if name.is_empty() { path } else { name }
}

/// The whole check: raw-text denylist, parse, destructive check on the command and every inner command, then every
/// base in `bases()` must be in `allowed` (compared by file name; an entry may be a bare name like "git").
pub fn check(line: &str, allowed: &[String]) -> Result<ParsedCommand, CommandRefusal> {
    if let Some(reason) = destructive::raw_denylist(line) {
        return Err(R::Destructive(reason.to_string()));
    }
    let cmd = parse(line)?;
    if let Some(reason) = destructive(&cmd) {
        return Err(R::Destructive(reason));
    }
    check_allowed(&cmd, None, allowed)?;
    Ok(cmd)
}

const SYSTEM_BIN: &[&str] =
    &["/bin/", "/usr/bin/", "/usr/local/bin/", "/sbin/", "/usr/sbin/", "/usr/local/sbin/", "/opt/homebrew/bin/"];

fn check_allowed(cmd: &ParsedCommand, via: Option<&str>, allowed: &[String]) -> Result<(), CommandRefusal> {
    if !allowed.iter().any(|a| file_name(a) == cmd.base) {
        return Err(R::NotAllowed {
            command: cmd.base.clone(),
            via: via.map(str::to_string),
            allowed: allowed.to_vec(),
        });
    }
    let program = cmd.argv.first().map_or("", String::as_str);
    if program.contains('/')
        && !allowed.iter().any(|a| a == program)
        && !SYSTEM_BIN.iter().any(|dir| program.strip_prefix(dir) == Some(cmd.base.as_str()))
    {
        return Err(R::Path { path: program.to_string(), base: cmd.base.clone() });
    }
    for inner in &cmd.inner {
        check_allowed(inner, Some(&cmd.base), allowed)?;
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
