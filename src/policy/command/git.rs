//! git's rules: settings, options and subcommands that make git run another
//! program.
//!
//! - `-c KEY=VALUE`, `--config-env`, `clone -c/--config` and `git config`
//!   writes set only inert keys (identity, display: `user.name`, `color.*`,
//!   ...), and never a value with `!`; every other key is refused.
//! - Options and subcommands that run a given program are refused:
//!   `--upload-pack`, `--receive-pack`, `--exec`, `--exec-path=`, `clone|init
//!   --template`, `--extcmd`, `grep -O`, `clone -u`, `rebase -x`, `submodule
//!   foreach`, `bisect run`, `filter-branch`, `ext::`/`fd::` remotes.
//! - Hooks and config files already in a repository are the path policy's
//!   business (keep `.git/` writable only by git).

use super::programs::GIT_EXEC_OPTIONS;
use super::{CommandRefusal, CommandRefusal as R};

/// Refuses git settings, options and subcommands that run another program.
pub(super) fn git(argv: &[String]) -> Result<(), CommandRefusal> {
    let args = argv.get(1..).unwrap_or_default();
    for a in args {
        if a == "--exec-path" {
            continue;
        }
        if let Some(opt) = GIT_EXEC_OPTIONS
            .iter()
            .find(|o| a.strip_prefix(**o).is_some_and(|rest| rest.is_empty() || rest.starts_with('=')))
        {
            return Err(R::GitExec(opt.to_string()));
        }
        if a.starts_with("ext::") || a.starts_with("fd::") {
            return Err(R::GitExec(format!("{}:: remotes", a.split("::").next().unwrap_or_default())));
        }
    }
    let mut i = 0;
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "-c" => {
                git_setting(args.get(i + 1).map_or("", String::as_str))?;
                i += 2;
            }
            "--config-env" => {
                git_key(args.get(i + 1).map_or("", |kv| kv.split('=').next().unwrap_or_default()))?;
                i += 2;
            }
            "-C" | "--git-dir" | "--work-tree" | "--namespace" | "--super-prefix" | "--attr-source" => i += 2,
            _ if a.starts_with("--config-env=") => {
                git_key(a["--config-env=".len()..].split('=').next().unwrap_or_default())?;
                i += 1;
            }
            _ if a.starts_with('-') => i += 1,
            _ => break,
        }
    }
    let Some(sub) = args.get(i) else { return Ok(()) };
    let rest = &args[i + 1..];
    let short = |c: char| rest.iter().any(|r| r.starts_with('-') && !r.starts_with("--") && r.contains(c));
    match sub.as_str() {
        "config" => git_config_write(rest),
        "submodule" if rest.iter().any(|r| r == "foreach") => Err(R::GitExec("submodule foreach".to_string())),
        "bisect" if rest.first().is_some_and(|r| r == "run") => Err(R::GitExec("bisect run".to_string())),
        "rebase" if short('x') => Err(R::GitExec("rebase -x".to_string())),
        "difftool" | "mergetool" if short('x') => Err(R::GitExec(format!("{sub} -x"))),
        "grep" if short('O') => Err(R::GitExec("grep -O".to_string())),
        "filter-branch" => Err(R::GitExec("filter-branch".to_string())),
        // A template directory brings its hooks along.
        "clone" | "init" if rest.iter().any(|r| r == "--template" || r.starts_with("--template=")) => {
            Err(R::GitExec(format!("{sub} --template")))
        }
        "clone" => {
            if short('u') {
                return Err(R::GitExec("clone -u".to_string()));
            }
            for (k, r) in rest.iter().enumerate() {
                if r == "-c" || r == "--config" {
                    git_setting(rest.get(k + 1).map_or("", String::as_str))?;
                } else if let Some(kv) = r.strip_prefix("--config=") {
                    git_setting(kv)?;
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// `KEY=VALUE` of `git -c`.
fn git_setting(kv: &str) -> Result<(), CommandRefusal> {
    let (key, value) = kv.split_once('=').unwrap_or((kv, ""));
    git_value(key, value)
}

/// A setting of `key` to `value`: refused when the key runs a program or the value is a shell command (`!...`).
fn git_value(key: &str, value: &str) -> Result<(), CommandRefusal> {
    git_key(key)?;
    if value.contains('!') {
        return Err(R::GitConfig(key.to_string()));
    }
    Ok(())
}

/// Refuses every git configuration key but the inert ones (identity, display): a denylist of
/// keys that run programs would miss the next one git adds (`gpg.ssh.defaultKeyCommand`,
/// `difftool.<tool>.path`, `trace2.eventTarget`, ...).
fn git_key(key: &str) -> Result<(), CommandRefusal> {
    if super::programs::git_inert_key(key) { Ok(()) } else { Err(R::GitConfig(key.to_string())) }
}

/// `git config KEY VALUE` / `git config set KEY VALUE` (and `--add`, `--replace-all`): the same keys as `git -c`.
fn git_config_write(rest: &[String]) -> Result<(), CommandRefusal> {
    let mut positional: Vec<&str> = Vec::new();
    let mut k = 0;
    while let Some(r) = rest.get(k) {
        match r.as_str() {
            "-f" | "--file" | "--blob" | "--type" | "--default" | "--comment" | "--value" => k += 2,
            _ if r.starts_with('-') => k += 1,
            _ => {
                positional.push(r);
                k += 1;
            }
        }
    }
    let (key, value) = match positional.as_slice() {
        ["set", key, value, ..] => (*key, *value),
        [verb, ..] if matches!(*verb, "get" | "unset" | "list" | "edit" | "rename-section" | "remove-section") => {
            return Ok(());
        }
        [key, value, ..] => (*key, *value),
        _ => return Ok(()),
    };
    git_value(key, value)
}
