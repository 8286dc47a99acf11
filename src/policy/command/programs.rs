//! Ordinary programs whose own options run another program, write where the
//! command line does not show, or reach a private address: `sed`, `awk`,
//! `tar`, `find`, and git's long options, settings and remotes.
//!
//! The OS sandbox is the boundary (SPEC §8); these rules are the first
//! filter, and the only one with `security.sandbox: none`. Long options are
//! matched by unique prefix as getopt does (`--upload-pa=` is
//! `--upload-pack=`), so each dangerous long option is refused in every
//! abbreviation of at least three characters after `--`.

use std::net::IpAddr;

use super::{CommandRefusal, CommandRefusal as R};
use crate::policy::net::blocked_reason;

/// Whether `arg` (a `--long[=value]` word) names `option` or a prefix of it, as getopt
/// accepts. At least `--` and three characters, so `--e` alone is not taken for `--exec`.
pub(super) fn long_option(arg: &str, option: &str) -> bool {
    let name = arg.split_once('=').map_or(arg, |(n, _)| n);
    name.len() >= 5 && name.starts_with("--") && option.starts_with(name)
}

fn refuse(command: &str, what: &str, why: &str) -> CommandRefusal {
    R::Destructive(format!("`{command} {what}` {why}; it is refused"))
}

/// `sed`: the `e` command and the `e` flag run programs; `w`, `W`, `r`, `R` read or write
/// other files; `-f` takes a script that cannot be checked here.
pub(super) fn sed(argv: &[String]) -> Result<(), CommandRefusal> {
    let args = argv.get(1..).unwrap_or_default();
    let mut scripts = Vec::new();
    let mut explicit = false;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a == "-f" || long_option(a, "--file") || (a.starts_with("-f") && !a.starts_with("--")) {
            return Err(refuse("sed", a, "reads its script from a file, which cannot be checked"));
        }
        if a == "-e" || a == "--expression" {
            explicit = true;
            scripts.extend(args.get(i + 1).cloned());
            i += 2;
            continue;
        }
        if let Some(s) = a.strip_prefix("--expression=") {
            explicit = true;
            scripts.push(s.to_string());
        } else if let Some(s) = a.strip_prefix("-e").filter(|_| !a.starts_with("--")) {
            explicit = true;
            scripts.push(s.to_string());
        } else if !a.starts_with('-') && !explicit && scripts.is_empty() {
            scripts.push(a.clone());
        }
        i += 1;
    }
    for script in &scripts {
        if let Some(what) = sed_script_danger(script) {
            return Err(refuse("sed", &format!("'{script}'"), what));
        }
    }
    Ok(())
}

/// The first command of a sed script that runs a program or touches another file.
fn sed_script_danger(script: &str) -> Option<&'static str> {
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        // Skip separators and the address: numbers, `$`, `,`, `~`, `+`, `!`, `/regex/`, `\cregexc`.
        while i < chars.len() && (chars[i].is_whitespace() || ";{}".contains(chars[i])) {
            i += 1;
        }
        loop {
            match chars.get(i) {
                Some(c) if c.is_ascii_digit() || "$,~+! ".contains(*c) => i += 1,
                Some('/') => i = skip_delimited(&chars, i, '/'),
                Some('\\') if i + 1 < chars.len() => {
                    let d = chars[i + 1];
                    i = skip_delimited(&chars, i + 1, d);
                }
                _ => break,
            }
        }
        let Some(&command) = chars.get(i) else { break };
        i += 1;
        match command {
            'e' => return Some("runs a program (the `e` command)"),
            'w' | 'W' => return Some("writes another file (the `w` command)"),
            'r' | 'R' => return Some("reads another file (the `r` command)"),
            's' | 'y' => {
                let Some(&d) = chars.get(i) else { break };
                i = skip_delimited(&chars, i, d);
                i = skip_delimited(&chars, i - 1, d);
                if command == 's' {
                    while let Some(&f) = chars.get(i) {
                        match f {
                            'e' => return Some("runs the replacement as a program (the `e` flag)"),
                            'w' => return Some("writes another file (the `w` flag)"),
                            c if c.is_ascii_alphanumeric() => i += 1,
                            _ => break,
                        }
                    }
                }
            }
            // A label runs to `;` or the end of the line; text to insert to the end of the line.
            ':' | 'b' | 't' | 'T' => {
                while i < chars.len() && !matches!(chars[i], '\n' | ';') {
                    i += 1;
                }
            }
            'a' | 'i' | 'c' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            _ => {}
        }
    }
    None
}

/// The index after the closing `d` of a part that starts at `open` (the opening `d`), with
/// backslash escapes; the end of the text when it does not close.
fn skip_delimited(chars: &[char], open: usize, d: char) -> usize {
    let mut i = open + 1;
    while i < chars.len() {
        if chars[i] == '\\' {
            i += 2;
            continue;
        }
        if chars[i] == d {
            return i + 1;
        }
        i += 1;
    }
    chars.len()
}

/// `awk` and its kin: `system()`, pipes to and from commands (`|`, `|&`, `| getline`) run
/// programs; `-f` takes a program that cannot be checked; `--load`/`-l` loads code.
pub(super) fn awk(argv: &[String]) -> Result<(), CommandRefusal> {
    let base = argv.first().map_or("awk", String::as_str);
    let args = argv.get(1..).unwrap_or_default();
    let mut program_seen = false;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a == "-f" || a == "-l" || long_option(a, "--file") || long_option(a, "--load") || long_option(a, "--include")
        {
            return Err(refuse(base, a, "reads a program or loads code from a file, which cannot be checked"));
        }
        if a == "-v" || a == "-F" {
            i += 2;
            continue;
        }
        if a.starts_with('-') {
            i += 1;
            continue;
        }
        if !program_seen {
            program_seen = true;
            if a.contains("system") {
                return Err(refuse(base, &format!("'{a}'"), "runs a program (`system`)"));
            }
            let pipes = a.replace("||", "");
            if pipes.contains('|') {
                return Err(refuse(base, &format!("'{a}'"), "runs a program through a pipe"));
            }
        }
        i += 1;
    }
    Ok(())
}

/// tar options that run a program.
const TAR_EXEC: &[&str] = &[
    "--checkpoint-action",
    "--to-command",
    "--use-compress-program",
    "--info-script",
    "--new-volume-script",
    "--rmt-command",
    "--rsh-command",
];

/// `tar`: options that run a program (`--checkpoint-action=exec=`, `--to-command`,
/// `-I`/`--use-compress-program`, `-F`/`--info-script`, remote commands).
pub(super) fn tar(argv: &[String]) -> Result<(), CommandRefusal> {
    for (k, a) in argv.iter().enumerate().skip(1) {
        if let Some(opt) = TAR_EXEC.iter().find(|o| long_option(a, o)) {
            return Err(refuse("tar", opt, "runs another program"));
        }
        // Short options: bundled in the first word (`tar xIf`) or after a dash.
        let short = if a.starts_with('-') && !a.starts_with("--") {
            Some(&a[1..])
        } else if k == 1 && !a.starts_with('-') {
            Some(a.as_str())
        } else {
            None
        };
        if short.is_some_and(|s| s.contains(['I', 'F'])) {
            return Err(refuse("tar", a, "runs another program (`-I` or `-F`)"));
        }
    }
    Ok(())
}

/// `find` actions that write files the command line does not show as operands.
pub(super) fn find(argv: &[String]) -> Result<(), CommandRefusal> {
    match argv.iter().find(|a| matches!(a.as_str(), "-fprint" | "-fprint0" | "-fprintf" | "-fls")) {
        Some(action) => Err(refuse("find", action, "writes to a file")),
        None => Ok(()),
    }
}

/// git long options that make diff run a program or set config, beyond git.rs's list of
/// options that run a given program.
const GIT_LONG_MORE: &[&str] = &["--ext-diff", "--textconv", "--config-env"];

/// git settings that `-c` may set: display and identity only.
const GIT_INERT_KEYS: &[&str] = &[
    "user.name",
    "user.email",
    "core.quotepath",
    "core.autocrlf",
    "log.date",
    "log.showsignature",
    "i18n.logoutputencoding",
    "init.defaultbranch",
    "core.abbrev",
    "diff.renames",
    "diff.noprefix",
    "diff.algorithm",
    "log.decorate",
    "log.abbrevcommit",
    "status.short",
    "status.branch",
    "column.ui",
    "pull.rebase",
    "pull.ff",
    "merge.conflictstyle",
    "tag.sort",
    "branch.sort",
    "safe.directory",
];

/// git options that run a given program. `--exec-path` alone only prints.
pub(super) const GIT_EXEC_OPTIONS: &[&str] = &[
    "--upload-pack",
    "--receive-pack",
    "--exec",
    "--exec-path",
    "--extcmd",
    "--open-files-in-pager",
    "--to-cmd",
    "--cc-cmd",
    "--header-cmd",
    "--sendmail-cmd",
    "--smtp-server",
];

/// Whether git's setting `key` is inert: it changes identity or display, never which
/// program git runs, what it includes or where it writes. Everything else is refused.
pub(super) fn git_inert_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    GIT_INERT_KEYS.contains(&key.as_str()) || key.starts_with("color.") || key.starts_with("advice.")
}

/// More git rules: every abbreviation of a long option that runs a program, `-c` only for
/// inert keys, `daemon`, `--output` and other paths outside the workspace, and remotes on
/// private, loopback or link-local addresses (which `http_request` refuses too).
pub(super) fn git_extra(argv: &[String]) -> Result<(), CommandRefusal> {
    let args = argv.get(1..).unwrap_or_default();
    for (k, a) in args.iter().enumerate() {
        if a.starts_with("--") && !a.starts_with("--exec-path") || a == "--exec-path" {
            let dangerous = GIT_EXEC_OPTIONS.iter().chain(GIT_LONG_MORE).filter(|o| **o != "--exec-path");
            if let Some(opt) = dangerous.into_iter().find(|o| long_option(a, o)) {
                return Err(R::GitExec(opt.to_string()));
            }
        }
        if a.starts_with("--exec-path=") {
            return Err(R::GitExec("--exec-path".to_string()));
        }
        if a == "-c" || a == "--config" {
            let kv = args.get(k + 1).map_or("", String::as_str);
            let key = kv.split_once('=').map_or(kv, |(key, _)| key);
            if !git_inert_key(key) {
                return Err(R::GitConfig(key.to_string()));
            }
        }
        if let Some(path) = path_value(a, args.get(k + 1)) {
            if leaves(path) {
                return Err(refuse("git", a, "names a path outside the workspace"));
            }
        }
        if let Some(reason) = private_remote(a) {
            return Err(refuse("git", a, &format!("reaches {reason}")));
        }
    }
    let sub = args.iter().find(|a| !a.starts_with('-')).map(String::as_str);
    match sub {
        Some("daemon" | "instaweb" | "http-backend" | "shell" | "upload-pack" | "receive-pack" | "credential") => {
            Err(R::GitExec(sub.unwrap_or_default().to_string()))
        }
        Some("init" | "clone") => {
            let operands = args.iter().skip_while(|a| Some(a.as_str()) != sub).skip(1).filter(|a| !a.starts_with('-'));
            match operands.filter(|a| !a.contains("://")).find(|a| leaves(a)) {
                Some(dir) => Err(refuse("git", dir, "makes a repository outside the workspace")),
                None => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

/// The path an option of git takes: `--output=P`, `--output P`, `-o P` after `archive`,
/// `--prefix=P` (`checkout-index`), `-C P`, `--git-dir`, `--work-tree`, `--template`.
fn path_value<'a>(arg: &'a str, next: Option<&'a String>) -> Option<&'a str> {
    const WITH_PATH: &[&str] = &["--output", "--git-dir", "--work-tree", "--template", "--separate-git-dir"];
    if let Some((name, value)) = arg.split_once('=') {
        if WITH_PATH.iter().any(|o| long_option(name, o)) || name == "--prefix" {
            return Some(value);
        }
        return None;
    }
    if arg == "-C" || arg == "-o" || WITH_PATH.iter().any(|o| long_option(arg, o)) {
        return next.map(String::as_str);
    }
    None
}

/// Whether a path leaves the workspace: absolute, `~`, or climbing with `..`.
fn leaves(path: &str) -> bool {
    path.starts_with('/') || path.starts_with('~') || path.split('/').any(|c| c == "..")
}

/// A remote URL whose host is a private, loopback or link-local address (or `localhost`).
fn private_remote(arg: &str) -> Option<&'static str> {
    let rest = arg.split_once("://").map(|(_, r)| r)?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next().unwrap_or_default()
    } else {
        host_port.rsplit_once(':').map_or(host_port, |(h, _)| h)
    };
    let host = host.to_ascii_lowercase();
    if host == "localhost" || host.ends_with(".localhost") {
        return Some("a loopback address");
    }
    host.parse::<IpAddr>().ok().and_then(blocked_reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn long_options_match_by_unique_prefix() {
        assert!(long_option("--upload-pa=x", "--upload-pack"));
        assert!(long_option("--exe=sh", "--exec"));
        assert!(!long_option("--e", "--exec"));
        assert!(!long_option("--exit-code", "--exec"));
    }

    #[test]
    fn sed_scripts_that_run_or_write_are_refused_and_ordinary_ones_pass() {
        for bad in [
            "sed -n 1e\tid",
            "sed s/a/b/e f",
            "sed s/a/b/w\t/tmp/x f",
            "sed -e 1r\t/etc/passwd f",
            "sed -f s.sed f",
            "sed --expression=$w\tout f",
        ] {
            let a: Vec<String> = bad.split(' ').map(|w| w.replace('\t', " ")).collect();
            assert!(sed(&a).is_err(), "{bad}");
        }
        for good in [
            "sed -n 1,5p f",
            "sed s/error/ERROR/g f",
            "sed -e /^#/d f",
            "sed s|a|b|2 f",
            "sed y/abc/xyz/ f",
            "sed -n /x/{p;q} f",
        ] {
            assert_eq!(sed(&argv(good)), Ok(()), "{good}");
        }
    }

    #[test]
    fn awk_tar_and_find_forms_that_run_programs_are_refused() {
        assert!(awk(&argv("awk BEGIN{system(\"id\")}")).is_err());
        assert!(awk(&argv("awk {print|\"sh\"}")).is_err());
        assert!(awk(&argv("awk -f prog.awk f")).is_err());
        assert_eq!(awk(&argv("awk {if(a||b)print} f")), Ok(()));
        assert_eq!(awk(&argv("awk -F: {print $1} f")), Ok(()));
        assert!(tar(&argv("tar --checkpoint=1 --checkpoint-action=exec=sh -cf a.tar .")).is_err());
        assert!(tar(&argv("tar --to-comm=sh -xf a.tar")).is_err());
        assert!(tar(&argv("tar xIf sh a.tar")).is_err());
        assert_eq!(tar(&argv("tar -czf out.tar.gz src")), Ok(()));
        assert!(find(&argv("find . -fprintf /outside/x %p")).is_err());
        assert_eq!(find(&argv("find . -name *.md")), Ok(()));
    }

    #[test]
    fn git_abbreviations_settings_paths_and_private_remotes_are_refused() {
        for bad in [
            "git fetch --upload-pa=sh origin",
            "git rebase --exe=sh",
            "git -c core.fsmonitor=x status",
            "git -c gpg.ssh.defaultKeyCommand=x commit -S",
            "git -c difftool.x.path=/bin/sh difftool",
            "git diff --no-index --output=/outside/x a b",
            "git checkout-index -a --prefix=/usr/local/bin/",
            "git init /outside/repo",
            "git -C /etc status",
            "git daemon --detach",
            "git ls-remote http://127.0.0.1:8080/",
            "git clone http://localhost/x",
            "git fetch http://[::1]:9/x",
            "git diff --ext-diff",
        ] {
            assert!(git_extra(&argv(bad)).is_err(), "{bad}");
        }
        for good in [
            "git status",
            "git log --oneline -5",
            "git -c color.ui=never log",
            "git -c user.name=Bot commit -m x",
            "git diff --stat",
            "git archive --prefix=proj/ -o out.tar HEAD",
            "git clone https://github.com/o/r",
            "git init sub",
        ] {
            assert_eq!(git_extra(&argv(good)), Ok(()), "{good}");
        }
    }
}
