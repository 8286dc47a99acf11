//! Model-written Python, run by the engine: a harness of the engine's, the model's code and the
//! data, in a fresh scratch folder inside the OS sandbox of `security.sandbox` (bubblewrap or
//! Landlock; never without one), with no network, writing only that folder, as one process,
//! with the wall-clock limit `timeout` (each harness sets its own CPU, memory and file size
//! limits first). Used by the code check of a silent reply (`code_check.rs`) and the filter of
//! a webhook's list (`items.rs`): the code is the model's output, so it is as hostile as any
//! tool argument, and what it prints only ever selects among data the prompt already holds.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::tools::{Contained, ShellSettings, ToolError};

/// Why model-written code gave no usable result: recorded in the run's events, never shown to
/// the model.
#[derive(Debug, thiserror::Error)]
pub(super) enum RunError {
    #[error("no python3 in /usr/local/bin, /usr/bin or /bin")]
    NoPython,
    #[error("no OS sandbox is set up to run it in")]
    NoSandbox,
    #[error("cannot make a scratch folder: {0}")]
    Scratch(std::io::Error),
    #[error("cannot write {name}: {source}")]
    Write { name: &'static str, source: std::io::Error },
    #[error("it could not run: {0}")]
    Start(ToolError),
    #[error("it ran past {0} s")]
    Timeout(u64),
    #[error("the reply held no `{0}` function")]
    NoFunction(&'static str),
    /// The harness's last line and its exit code, when they were not a result.
    #[error("{}", failure_text(.last, *.code))]
    Failed { last: String, code: Option<i32> },
}

/// The `resource` limits every harness sets before it runs the model's code: 1 GiB of address
/// space, 5 s of CPU, 1 MiB per file written.
pub(super) const LIMITS: &str = r#"import resource
for which, value in ((resource.RLIMIT_AS, 1 << 30), (resource.RLIMIT_CPU, 5), (resource.RLIMIT_FSIZE, 1 << 20)):
    hard = resource.getrlimit(which)[1]
    value = value if hard == resource.RLIM_INFINITY else min(value, hard)
    resource.setrlimit(which, (value, value))
"#;

/// `define(path, name)`: the definitions of the model's code in the file at `path` (imports,
/// functions, classes, assignments), each run on its own so that one that fails is skipped,
/// and the rest of the module not run at all. The model writes the function asked for and then,
/// often, a script that opens the file it read (`users.json`) or imports pandas; that script
/// is not what was asked for, and running it would fail the whole harness. Every harness takes
/// the model's code through it.
pub(super) const DEFINE: &str = r#"import ast
def define(path, name):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), name)
    scope = {"__name__": "model"}
    kinds = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign)
    for node in tree.body:
        if isinstance(node, kinds):
            try:
                exec(compile(ast.Module(body=[node], type_ignores=[]), name, "exec"), scope)
            except Exception:
                pass
    return scope
"#;

/// `python3` in the shell's PATH, where the sandbox finds the same file.
pub(super) fn python() -> Option<PathBuf> {
    ["/usr/local/bin", "/usr/bin", "/bin"].iter().map(|d| Path::new(d).join("python3")).find(|p| p.is_file())
}

/// Runs `harness` with the paths of `code` and `data` as its arguments, contained as the
/// module says. `Err` says why it could not run (no `python3`, no sandbox, no scratch folder).
pub(super) async fn run(
    harness: &str,
    code: &str,
    data: &str,
    timeout: Duration,
    shell: &ShellSettings,
) -> Result<Contained, RunError> {
    let python = python().ok_or(RunError::NoPython)?;
    let scratch = tempfile::Builder::new().prefix("routines-check-").tempdir().map_err(RunError::Scratch)?;
    let dir = scratch.path();
    for (name, text) in [("harness.py", harness), ("check.py", code), ("data.txt", data)] {
        std::fs::write(dir.join(name), text).map_err(|source| RunError::Write { name, source })?;
    }
    let at = |name: &str| dir.join(name).display().to_string();
    let argv =
        vec![python.display().to_string(), "-I".into(), "-B".into(), at("harness.py"), at("check.py"), at("data.txt")];
    let env = vec![
        ("PATH".to_string(), "/usr/local/bin:/usr/bin:/bin".to_string()),
        ("LANG".to_string(), "C.UTF-8".to_string()),
        ("HOME".to_string(), dir.display().to_string()),
    ];
    match crate::tools::run_contained(&argv, dir, env, timeout, shell).await {
        None => Err(RunError::NoSandbox),
        Some(Err(e)) => Err(RunError::Start(e)),
        Some(Ok(out)) if out.timed_out => Err(RunError::Timeout(timeout.as_secs())),
        Some(Ok(out)) => Ok(out),
    }
}

/// The code of a reply: its first fenced block, or the whole reply; `None` when it does not
/// define `def NAME`.
pub(super) fn code_of(reply: &str, name: &str) -> Option<String> {
    let code = match reply.split_once("```") {
        Some((_, rest)) => {
            let body = rest.split_once('\n').map_or("", |(_, b)| b);
            body.split_once("```").map_or(body, |(b, _)| b)
        }
        None => reply,
    };
    code.contains(&format!("def {name}")).then(|| code.to_string())
}

/// Why a harness that gave no usable last line failed, from that line `last` and its exit code.
pub(super) fn failure(last: &str, code: Option<i32>) -> RunError {
    RunError::Failed { last: last.to_string(), code }
}

fn failure_text(last: &str, code: Option<i32>) -> String {
    let why: String = last.chars().take(200).collect();
    match code {
        // bubblewrap exits 128 + the signal that ended the program: the CPU or memory limit.
        Some(c) if c > 128 => format!("it was killed by signal {} (a limit of CPU time or memory)", c - 128),
        Some(c) => format!("it exited {c}: {why}"),
        None => format!("it was killed: {why}"),
    }
}

/// The string literals of Python `code`, in order, outside comments (escapes taken as the
/// character they escape; a literal ends at its quote or the line's end).
pub(super) fn literals(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = code.chars();
    while let Some(c) = chars.next() {
        if c == '#' {
            // A comment, to the end of its line.
            chars.by_ref().find(|&c| c == '\n');
            continue;
        }
        if c != '\'' && c != '"' {
            continue;
        }
        let mut literal = String::new();
        let mut escaped = false;
        for d in chars.by_ref() {
            match (escaped, d) {
                (true, _) => {
                    literal.push(d);
                    escaped = false;
                }
                (false, '\\') => escaped = true,
                (false, d) if d == c || d == '\n' => break,
                (false, d) => literal.push(d),
            }
        }
        out.push(literal);
    }
    out
}
