//! Running one task: a fresh workspace and state, its setup, each run through the engine as
//! `routines run` would make it, and the checks; what it cost in model calls, tokens and time.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use super::check::{self, Ended};
use super::setup::{self, Site};
use super::task::{Expect, RunSpec, TriggerSetup};
use super::{EvalError, Task, task_config};
use crate::config::{Config, MailTransport};
use crate::engine::{Engine, RunOptions};
use crate::llm::Provider;
use crate::routine::{FileContext, Routine, TriggerContext, WebhookRequest};
use crate::store::{EventKind, RunStatus};

/// How one task went.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskReport {
    pub name: String,
    pub passed: bool,
    /// The status of its last run (none when the setup failed).
    pub status: Option<RunStatus>,
    /// The output of its last run.
    pub output: Option<String>,
    /// The error of its last run, or why the task could not run.
    pub error: Option<String>,
    /// Every check it missed.
    pub failures: Vec<String>,
    pub runs: usize,
    /// What the runs did, in order: each tool call with its arguments and status, and each
    /// note the agent recorded (`run 2: file_read {"path":"a.txt"} -> success`).
    pub steps: Vec<String>,
    pub model_calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub seconds: f64,
}

/// How a suite went.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SuiteReport {
    pub suite: String,
    pub tasks: Vec<TaskReport>,
}

impl SuiteReport {
    pub fn passed(&self) -> usize {
        self.tasks.iter().filter(|t| t.passed).count()
    }

    /// Passed tasks over all tasks, from 0 to 1.
    pub fn pass_rate(&self) -> f64 {
        if self.tasks.is_empty() { 0.0 } else { self.passed() as f64 / self.tasks.len() as f64 }
    }

    /// The median of the tasks' seconds.
    pub fn median_seconds(&self) -> f64 {
        let mut s: Vec<f64> = self.tasks.iter().map(|t| t.seconds).collect();
        s.sort_by(f64::total_cmp);
        match s.len() {
            0 => 0.0,
            n if n % 2 == 1 => s[n / 2],
            n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
        }
    }

    /// Prompt and completion tokens of every task.
    pub fn tokens(&self) -> (u64, u64) {
        self.tasks.iter().fold((0, 0), |(p, c), t| (p + t.prompt_tokens, c + t.completion_tokens))
    }
}

/// Runs `task` in the folder `root`: the workspace `root/workspace` (the same path for every
/// task, emptied first, so prompts differ only by what the tasks differ in) and a fresh state
/// folder. `config` is the engine's; its provider is `provider` with `model`.
pub async fn run_task(
    task: &Task,
    config: &Config,
    root: &Path,
    provider: Arc<dyn Provider>,
    model: &str,
) -> TaskReport {
    let started = Instant::now();
    let mut report = TaskReport {
        name: task.name.clone(),
        passed: false,
        status: None,
        output: None,
        error: None,
        failures: Vec::new(),
        runs: 0,
        steps: Vec::new(),
        model_calls: 0,
        prompt_tokens: 0,
        completion_tokens: 0,
        seconds: 0.0,
    };
    if let Err(e) = run_all(task, config, root, provider, model, &mut report).await {
        report.error = Some(e.to_string());
        report.failures.push(format!("the task could not run: {e}"));
    }
    report.passed = report.failures.is_empty();
    report.seconds = started.elapsed().as_secs_f64();
    report
}

async fn run_all(
    task: &Task,
    config: &Config,
    root: &Path,
    provider: Arc<dyn Provider>,
    model: &str,
    report: &mut TaskReport,
) -> Result<(), EvalError> {
    let workspace = root.join("workspace");
    setup::fresh_workspace(&workspace, &task.dir)?;
    let workspace = workspace.canonicalize().map_err(|e| EvalError::io(&workspace, e))?;
    let data_dir = root.join("state").join(&task.name);
    if data_dir.exists() {
        std::fs::remove_dir_all(&data_dir).map_err(|e| EvalError::io(&data_dir, e))?;
    }
    let t = &task.file;
    setup::write_files(&workspace, &t.files)?;
    if let Some(git) = &t.git {
        setup::git_repo(&workspace, git, root)?;
    }
    let site = match &t.site {
        Some(s) => Some(Site::start(task.dir.join(&s.dir), s.port).await?),
        None => None,
    };

    let mut c = task_config(config, &task.dir);
    c.workspace = workspace.clone();
    c.data_dir = data_dir;
    c.heartbeat.enabled = false;
    if let Some(language) = t.language {
        c.language = language;
    }
    // Nothing leaves the machine: mail goes to the outbox of the task's state folder.
    if let Some(mail) = &mut c.mail {
        mail.transport = Some(MailTransport::Outbox);
    }
    if let Some(site) = &site {
        c.security.allowed_hosts.push(site.addr.to_string());
    }
    let engine = Engine::open(c, provider, model)?;

    let single = [RunSpec {
        routine: None,
        files: BTreeMap::new(),
        vars: BTreeMap::new(),
        trigger: None,
        expect: t.expect.clone(),
    }];
    let runs: &[RunSpec] = if t.runs.is_empty() { &single } else { &t.runs };
    for (i, run) in runs.iter().enumerate() {
        setup::write_files(&workspace, &run.files)?;
        let routine = pick(task, run.routine.as_deref().or(t.routine.as_deref()))?;
        let trigger = trigger_context(run.trigger.as_ref().or(t.trigger.as_ref()));
        let mut vars: BTreeMap<String, String> = t.vars.clone();
        vars.extend(run.vars.clone());
        if let Some(site) = &site {
            vars.insert("site_url".into(), format!("http://{}", site.addr));
        }
        let done =
            engine.run(routine, trigger, &RunOptions { vars, now: t.now(), ..RunOptions::default() }, None).await?;
        report.runs += 1;
        if let Some(row) = engine.store.get_run(done.run_id)? {
            report.prompt_tokens += row.prompt_tokens;
            report.completion_tokens += row.completion_tokens;
        }
        let events = engine.store.run_events(done.run_id)?;
        report.model_calls += events.iter().filter(|e| e.event_kind() == Some(EventKind::ModelCall)).count() as u64;
        let run_prefix = if runs.len() > 1 { format!("run {}: ", i + 1) } else { String::new() };
        report.steps.extend(events.iter().filter_map(|e| match e.event_kind() {
            Some(EventKind::ToolCall) => Some(format!(
                "{run_prefix}{} {} -> {}",
                e.tool.as_deref().unwrap_or("?"),
                e.arguments.as_deref().unwrap_or("{}"),
                e.status
            )),
            Some(EventKind::Note) => Some(format!("{run_prefix}note {}", e.status)),
            _ => None,
        }));
        let expect = run.expect.clone().unwrap_or_else(Expect::default);
        let ended =
            Ended { status: done.status, output: done.output.as_deref().unwrap_or(""), error: done.error.as_deref() };
        let missed = check::failures(&expect, &ended, &workspace);
        report.failures.extend(missed.into_iter().map(|f| format!("{run_prefix}{f}")));
        report.status = Some(done.status);
        report.output = done.output;
        report.error = done.error;
    }
    Ok(())
}

/// The routine a run names, or the task's only one (checked when the suite was loaded).
fn pick<'a>(task: &'a Task, name: Option<&str>) -> Result<&'a Routine, EvalError> {
    match name {
        Some(n) => task.routines.iter().find(|r| r.name == n),
        None => task.routines.first(),
    }
    .ok_or_else(|| EvalError::Setup(format!("the task has no routine `{}`", name.unwrap_or("?"))))
}

/// What fired the run: a manual run, or the webhook request or file event of the task.
fn trigger_context(setup: Option<&TriggerSetup>) -> TriggerContext {
    let Some(t) = setup else { return TriggerContext::Manual };
    if let Some(w) = &t.webhook {
        let body = w.body.0.clone();
        return TriggerContext::Webhook(WebhookRequest {
            method: "POST".into(),
            path: w.path.clone(),
            headers: w.headers.iter().map(|(k, v)| (k.to_ascii_lowercase(), v.clone())).collect(),
            query: w.query.clone(),
            json: serde_json::from_str(&body).ok(),
            body,
        });
    }
    match &t.file {
        Some(f) => TriggerContext::File(FileContext { path: f.path.clone(), event: f.event }),
        None => TriggerContext::Manual,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(seconds: &[f64], passed: &[bool]) -> SuiteReport {
        let tasks = seconds
            .iter()
            .zip(passed)
            .enumerate()
            .map(|(i, (s, p))| TaskReport {
                name: format!("t{i}"),
                passed: *p,
                status: None,
                output: None,
                error: None,
                failures: Vec::new(),
                runs: 1,
                steps: Vec::new(),
                model_calls: 2,
                prompt_tokens: 100,
                completion_tokens: 10,
                seconds: *s,
            })
            .collect();
        SuiteReport { suite: "evals".into(), tasks }
    }

    #[test]
    fn the_summary_counts_passes_the_median_and_tokens() {
        let r = report(&[3.0, 1.0, 10.0, 2.0], &[true, true, false, true]);
        assert_eq!((r.passed(), r.pass_rate()), (3, 0.75));
        assert_eq!(r.median_seconds(), 2.5);
        assert_eq!(r.tokens(), (400, 40));
        assert_eq!(report(&[5.0, 1.0, 4.0], &[true; 3]).median_seconds(), 4.0);
    }

    #[test]
    fn a_webhook_body_written_as_yaml_arrives_as_json() {
        let setup: TriggerSetup = serde_json::from_value(serde_json::json!({
            "webhook": {"body": {"ref": "main"}, "headers": {"X-Event": "push"}}
        }))
        .unwrap();
        let TriggerContext::Webhook(w) = trigger_context(Some(&setup)) else { panic!("not a webhook") };
        assert_eq!((w.body.as_str(), w.json), (r#"{"ref":"main"}"#, Some(serde_json::json!({"ref": "main"}))));
        assert_eq!(w.headers["x-event"], "push");
        assert_eq!(w.path, "/hooks/eval");

        // As a task writes it: the keys keep their order, as a sender's would.
        let yaml = "webhook: { body: { status: firing, alerts: [{ status: resolved, labels: { alertname: A } }] } }";
        let setup = crate::yaml::from_str::<TriggerSetup>(std::path::Path::new("task.yaml"), yaml).unwrap().value;
        let TriggerContext::Webhook(w) = trigger_context(Some(&setup)) else { panic!("not a webhook") };
        assert_eq!(w.body, r#"{"status":"firing","alerts":[{"status":"resolved","labels":{"alertname":"A"}}]}"#);
    }
}
