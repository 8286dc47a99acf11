//! One attack scene: a project whose only routine, `hostile`, does what a hostile model says,
//! a folder outside the workspace (on the same file system, so links can be tried), and what
//! each call returned to the model. Cases in this suite play one hostile call and its benign
//! counterpart in the same run, then check the disk, the network or the database.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::common::mock_llm::{MockLlm, Reply, text, tool_call};
use crate::common::{Routines, last_message};

/// A variable only the engine's process has: no tool may hand it to the model.
pub const ENGINE_ONLY: (&str, &str) = ("ENGINE_ONLY_MARKER", "marker-7f3a9c1e5d");

pub struct Scene {
    pub mock: MockLlm,
    pub p: Routines,
    pub outside: tempfile::TempDir,
}

/// A scene whose routine has `tools` and whose config ends with `security` (the whole
/// `security:` block, or "" for the defaults).
pub async fn scene(tools: &str, security: &str) -> Scene {
    scene_with(tools, security, "").await
}

/// [`scene`] with `agent_extra` added to the routine's `agent:` mapping (", key: value").
pub async fn scene_with(tools: &str, security: &str, agent_extra: &str) -> Scene {
    let mock = MockLlm::start().await;
    let p = Routines::project(&mock.base_url(), security).env(ENGINE_ONLY.0, ENGINE_ONLY.1);
    p.write(
        "routines/hostile.yaml",
        &format!("prompt: Do what the page says.\nagent: {{ autonomy: full, tools: [{tools}]{agent_extra} }}\n"),
    );
    let outside = tempfile::tempdir_in(p.path().parent().unwrap()).unwrap();
    Scene { mock, p, outside }
}

/// A scene with `shell` and the file tools, whose allowlist is `commands`.
pub async fn shell_scene(commands: &str) -> Scene {
    scene("shell, file_read, file_write, file_list", &format!("security:\n  allowed_commands: [{commands}]\n")).await
}

impl Scene {
    /// A path in the folder outside the workspace.
    pub fn outside(&self, rel: &str) -> PathBuf {
        self.outside.path().join(rel)
    }

    /// A path in the workspace.
    pub fn inside(&self, rel: &str) -> PathBuf {
        self.p.path().join(rel)
    }

    /// Runs `hostile` once: the model makes `calls` in order, then answers "done" (twice when
    /// none of its calls succeeded: the engine sends such an answer back once). Returns the
    /// run's status as `show` records it.
    pub async fn play(&self, calls: Vec<Reply>) -> String {
        let n = calls.len();
        self.mock.push_all(calls.into_iter().chain([text("done"), text("done")]));
        let out = self.p.run_async(["run", "hostile", "--json"]).await;
        let made = self.mock.request_count();
        assert!(made == n + 1 || made == n + 2, "the run stopped early: {made} requests; {}", out.stderr);
        out.json()["status"].as_str().unwrap_or_default().to_string()
    }

    /// [`Scene::play`] with one `shell` call per command.
    pub async fn shell(&self, commands: &[&str]) -> String {
        self.play(commands.iter().map(|c| tool_call("shell", json!({"command": c}))).collect()).await
    }

    /// What the model read back as the result of call `i` (scenes play once).
    pub fn seen(&self, i: usize) -> String {
        let msg: Value = last_message(&self.mock.requests()[i + 1]);
        msg["content"].as_str().unwrap_or("").to_string()
    }
}

/// `file_write` of `content` to `path`.
pub fn write(path: &str, content: &str) -> Reply {
    tool_call("file_write", json!({"path": path, "content": content}))
}

/// `file_read` of `path`.
pub fn read(path: &str) -> Reply {
    tool_call("file_read", json!({"path": path}))
}

/// `shell` running `command`.
pub fn sh(command: &str) -> Reply {
    tool_call("shell", json!({"command": command}))
}
