//! `routines eval [SUITE]`: runs a suite of routine tasks against the configured model and
//! prints one row per task, then the pass rate. Exit code 0 when every task passed, 1 when
//! one failed (as a test runner), 2 for a suite that cannot be loaded.

use std::path::Path;
use std::sync::Arc;

use routines::config::Config;
use routines::eval::{self, SuiteReport, TaskReport};
use routines::llm::Provider;
use serde_json::json;

use super::{print_json, table};
use crate::app::Error;

pub async fn run(config: Config, cwd: &Path, suite: Option<&Path>, json_out: bool) -> Result<(), Error> {
    let dir = match suite {
        Some(p) => cwd.join(p),
        None => config.base_dir.join("evals"),
    };
    let mut shown_config = config.clone();
    shown_config.base_dir = cwd.to_path_buf();
    let suite = eval::load_suite(&dir, &shown_config)?;
    let (provider, model) = crate::app::provider(&config, true)?;
    let provider: Arc<dyn Provider> = provider;
    let root = eval::Scratch::new()?;
    let shown = dir.strip_prefix(cwd).unwrap_or(&dir).display().to_string();
    eprintln!("eval {shown}: {} task{} against {model}", suite.tasks.len(), plural(suite.tasks.len()));
    let mut report = SuiteReport { suite: shown, tasks: Vec::new() };
    for task in &suite.tasks {
        let done = eval::run_task(task, &config, root.path(), provider.clone(), &model).await;
        eprintln!("  {} {} ({:.1} s)", if done.passed { "pass" } else { "FAIL" }, done.name, done.seconds);
        report.tasks.push(done);
    }
    if json_out {
        print_json(&to_json(&report))?;
    } else {
        outln!("{}", render(&report))?;
    }
    match report.tasks.len() - report.passed() {
        0 => Ok(()),
        failed => Err(Error::TasksFailed { failed, total: report.tasks.len() }),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The table, what each failed task missed, and the totals.
fn render(report: &SuiteReport) -> String {
    let rows: Vec<Vec<String>> = report
        .tasks
        .iter()
        .map(|t| {
            vec![
                t.name.clone(),
                if t.passed { "pass".into() } else { "FAIL".into() },
                t.status.map_or_else(|| "-".into(), |s| s.to_string()),
                t.model_calls.to_string(),
                t.prompt_tokens.to_string(),
                t.completion_tokens.to_string(),
                format!("{:.1}", t.seconds),
            ]
        })
        .collect();
    let mut out = table(&["TASK", "RESULT", "STATUS", "CALLS", "PROMPT", "COMPLETION", "SECONDS"], &rows);
    let failed: Vec<&TaskReport> = report.tasks.iter().filter(|t| !t.passed).collect();
    if !failed.is_empty() {
        out.push_str("\n\nfailed:");
        for t in failed {
            for f in &t.failures {
                out.push_str(&format!("\n  {}: {f}", t.name));
            }
            if let Some(o) = &t.output {
                let one_line: String = o.split_whitespace().collect::<Vec<_>>().join(" ");
                let cut: String = one_line.chars().take(160).collect();
                out.push_str(&format!("\n    output: {cut}{}", if cut.len() < one_line.len() { "…" } else { "" }));
            }
        }
    }
    let (prompt, completion) = report.tokens();
    out.push_str(&format!(
        "\n\npassed {} of {} ({:.0}%), median {:.1} s per task, {prompt} prompt and {completion} completion tokens",
        report.passed(),
        report.tasks.len(),
        report.pass_rate() * 100.0,
        report.median_seconds(),
    ));
    out
}

fn to_json(report: &SuiteReport) -> serde_json::Value {
    let (prompt, completion) = report.tokens();
    json!({
        "suite": report.suite,
        "tasks": report.tasks,
        "passed": report.passed(),
        "total": report.tasks.len(),
        "pass_rate": report.pass_rate(),
        "median_seconds": report.median_seconds(),
        "prompt_tokens": prompt,
        "completion_tokens": completion,
    })
}
