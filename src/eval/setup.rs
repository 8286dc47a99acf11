//! What the runner lays out before a task runs: the workspace (the task's `workspace/` folder
//! and its `files`), a git repository with commits, and a static site on 127.0.0.1.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use tokio::sync::oneshot;

use super::EvalError;
use super::task::GitSetup;

/// Empties `workspace` and fills it with the task's `workspace/` folder (when it has one).
pub(super) fn fresh_workspace(workspace: &Path, task_dir: &Path) -> Result<(), EvalError> {
    if workspace.exists() {
        std::fs::remove_dir_all(workspace).map_err(|e| EvalError::io(workspace, e))?;
    }
    std::fs::create_dir_all(workspace).map_err(|e| EvalError::io(workspace, e))?;
    let source = task_dir.join("workspace");
    if source.is_dir() {
        copy_dir(&source, workspace)?;
    }
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> Result<(), EvalError> {
    for entry in std::fs::read_dir(from).map_err(|e| EvalError::io(from, e))? {
        let entry = entry.map_err(|e| EvalError::io(from, e))?;
        let target = to.join(entry.file_name());
        let kind = entry.file_type().map_err(|e| EvalError::io(&entry.path(), e))?;
        if kind.is_dir() {
            std::fs::create_dir_all(&target).map_err(|e| EvalError::io(&target, e))?;
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target).map_err(|e| EvalError::io(&target, e))?;
        }
    }
    Ok(())
}

/// Writes `files` (path relative to `root` → content), creating folders. A path that would
/// leave `root` is refused.
pub(super) fn write_files(root: &Path, files: &BTreeMap<String, String>) -> Result<(), EvalError> {
    for (rel, content) in files {
        let path = inside(root, rel)?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| EvalError::io(parent, e))?;
        }
        std::fs::write(&path, content).map_err(|e| EvalError::io(&path, e))?;
    }
    Ok(())
}

/// `root/rel`, for a relative path that stays inside `root`.
fn inside(root: &Path, rel: &str) -> Result<PathBuf, EvalError> {
    let path = Path::new(rel);
    if path.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir)) {
        Ok(root.join(path))
    } else {
        Err(EvalError::Setup(format!("`{rel}` is not a path inside the workspace")))
    }
}

/// Makes the repository of `git` in the workspace: `git init`, then each commit with its author
/// and date. Git runs without the user's or the system's configuration.
pub(super) fn git_repo(workspace: &Path, git: &GitSetup, home: &Path) -> Result<(), EvalError> {
    let repo = inside(workspace, &git.path)?;
    std::fs::create_dir_all(&repo).map_err(|e| EvalError::io(&repo, e))?;
    let run = |args: &[&str], env: &[(&str, String)]| -> Result<(), EvalError> {
        let out = Command::new("git")
            .args(args)
            .current_dir(&repo)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .output()
            .map_err(|e| EvalError::Setup(format!("cannot run git: {e}; the task needs git installed")))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(EvalError::Setup(format!(
                "git {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            )))
        }
    };
    run(&["init", "-q", "-b", "main"], &[])?;
    for commit in &git.commits {
        write_files(&repo, &commit.files)?;
        let (name, email) = author(commit.author.as_deref());
        let when = Utc::now()
            - commit.ago.map_or(chrono::Duration::zero(), |d| chrono::Duration::from_std(d.get()).unwrap_or_default());
        let date = when.to_rfc3339();
        let env = [
            ("GIT_AUTHOR_NAME", name.clone()),
            ("GIT_AUTHOR_EMAIL", email.clone()),
            ("GIT_AUTHOR_DATE", date.clone()),
            ("GIT_COMMITTER_NAME", name),
            ("GIT_COMMITTER_EMAIL", email),
            ("GIT_COMMITTER_DATE", date),
        ];
        run(&["add", "-A"], &env)?;
        run(&["commit", "-q", "--allow-empty", "-m", &commit.message], &env)?;
    }
    Ok(())
}

/// Name and address of `Name <email>`.
fn author(written: Option<&str>) -> (String, String) {
    let text = written.unwrap_or("Eval Runner <eval@example.com>");
    match text.split_once('<') {
        Some((name, rest)) => (name.trim().to_string(), rest.trim_end_matches('>').trim().to_string()),
        None => (text.trim().to_string(), "eval@example.com".to_string()),
    }
}

/// A static site served while a task runs; it stops when dropped.
pub(super) struct Site {
    pub addr: SocketAddr,
    _stop: oneshot::Sender<()>,
}

impl Site {
    /// Serves the files of `dir` on 127.0.0.1:`port` (any free port when `None`).
    pub(super) async fn start(dir: PathBuf, port: Option<u16>) -> Result<Site, EvalError> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port.unwrap_or(0)))
            .await
            .map_err(|e| EvalError::Setup(format!("cannot serve the site on 127.0.0.1:{}: {e}", port.unwrap_or(0))))?;
        let addr = listener.local_addr().map_err(|e| EvalError::Setup(format!("cannot serve the site: {e}")))?;
        let app = Router::new().fallback(serve).with_state(dir);
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(Site { addr, _stop: stop })
    }
}

/// One file of the site: `/` is `index.html`; anything outside the folder is not found.
async fn serve(State(dir): State<PathBuf>, uri: Uri) -> Response {
    let rel = uri.path().trim_start_matches('/');
    let rel = if rel.is_empty() || rel.ends_with('/') { format!("{rel}index.html") } else { rel.to_string() };
    let Ok(path) = inside(&dir, &rel) else { return StatusCode::NOT_FOUND.into_response() };
    match tokio::fs::read(&path).await {
        Ok(body) => ([(header::CONTENT_TYPE, content_type(&path))], body).into_response(),
        Err(_) => (StatusCode::NOT_FOUND, "not found").into_response(),
    }
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" | "htm" => "text/html; charset=utf-8",
        "json" => "application/json",
        "csv" => "text/csv; charset=utf-8",
        "xml" => "application/xml",
        _ => "text/plain; charset=utf-8",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_stay_inside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let files = BTreeMap::from([("logs/app.log".to_string(), "ok\n".to_string())]);
        write_files(dir.path(), &files).unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("logs/app.log")).unwrap(), "ok\n");
        let escape = BTreeMap::from([("../x".to_string(), String::new())]);
        assert!(matches!(write_files(dir.path(), &escape), Err(EvalError::Setup(_))));
    }

    #[test]
    fn authors_are_read_as_name_and_address() {
        assert_eq!(author(Some("Rosa Diaz <rosa@example.com>")), ("Rosa Diaz".into(), "rosa@example.com".into()));
        assert_eq!(author(None), ("Eval Runner".into(), "eval@example.com".into()));
    }
}
