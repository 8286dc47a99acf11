//! A scripted strong model over tasks of the shipped suite (issue 48): for each task, the right
//! tool calls with the right arguments, then the right answer (or the silent token where the task
//! expects silence), run through `routines eval` at the default assist level. The engine must
//! make exactly the script's requests (no assist asks a model that is right) and deliver the
//! scripted answer untouched, and the task's own checks must pass.
//!
//! At the default level (`evidence`) and under `off` there is no extra request anywhere. At
//! `full`, [`OPEN`] lists the tasks where the engine still asks more, with how many: a task
//! leaves the list when its assist stops asking a model that is right, and a request added
//! anywhere else fails the test.

mod tasks;

use std::fmt::Write as _;

use serde_json::Value;

use crate::common::Routines;
use crate::common::mock_llm::{MockLlm, Reply, text, tool_calls};

/// One reply of the script: tool calls (name, JSON arguments), or the final answer of a run.
#[derive(Debug, Clone, Copy)]
pub enum Step {
    Call(&'static str, &'static str),
    /// Several calls in one reply.
    Calls(&'static [(&'static str, &'static str)]),
    Say(&'static str),
}

/// A task of `evals/` and what a strong model replies to its run or runs, in order.
pub struct Task {
    pub name: &'static str,
    pub script: &'static [Step],
}

impl Step {
    fn reply(self) -> Reply {
        let parse = |args: &str| serde_json::from_str::<Value>(args).unwrap_or_else(|e| panic!("{args}: {e}"));
        match self {
            Step::Call(name, args) => tool_calls(vec![(name, parse(args))]),
            Step::Calls(calls) => tool_calls(calls.iter().map(|(n, a)| (*n, parse(a))).collect()),
            Step::Say(answer) => text(answer),
        }
    }
}

/// What the engine did with one task's script.
struct Seen {
    name: &'static str,
    extra: i64,
    changed: bool,
    passed: bool,
    detail: String,
}

/// Tasks where an assist of `full` still asks a model that is right, and how many requests it adds (the
/// note kinds that show which assist, as of this list):
/// - a silence after a look: the code check asks for a `findings()` function, and when it
///   cannot decide (here: the model answers the token again) the review asks once more
///   (`code_check`, `silence_review`);
/// - a count, a pick or a list over records: the calls used every file the task names, so the
///   answer is asked from the evidence, whose selection asks for a `keep()`/`value()` function
///   (`named_all_used`, `records_selection`); services-up has both that and the silence checks;
/// - a count answered in the turn is asked again from the evidence (`records_selection_reask`);
/// - a task of two questions answered in the turn is asked again (`questions_reask`);
/// - a webhook's list is filtered by a function before the answer (`items_filter`).
const OPEN: &[(&str, i64)] = &[
    ("log-quiet", 2),
    ("services-up", 3),
    ("services-down", 1),
    ("json-admins", 1),
    ("count-open-todos", 1),
    ("stock-least", 1),
    ("cpu-quiet", 2),
    ("cert-quiet", 2),
    ("invoice-total", 1),
    ("paid-total", 1),
    ("users-no-2fa", 1),
    ("webhook-alerts", 1),
    ("git-last-change", 1),
    ("memory-oncall", 1),
    ("fetch-status", 1),
    ("backup-quiet", 2),
    ("disk-full-quiet", 2),
];

/// Replies beyond the script, each the last answer again.
const PADDING: usize = 8;

/// Held while a task whose site is served on a fixed port plays (`site: { port: N }` in its
/// task.yaml, for prompts that name the URL): the four tests of this file play every task at
/// the same time, and two servers cannot listen on one port.
static FIXED_PORT: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Whether the shipped task `name` serves its site on a fixed port.
fn fixed_port(name: &str) -> bool {
    let task = format!("{}/evals/{name}/task.yaml", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(task).is_ok_and(|t| t.lines().any(|l| l.starts_with("site:") && l.contains("port:")))
}

async fn play(task: &Task, engine: &str) -> Seen {
    let _port = if fixed_port(task.name) { Some(FIXED_PORT.lock().await) } else { None };
    let answer = task
        .script
        .iter()
        .rev()
        .find_map(|s| match s {
            Step::Say(a) => Some(*a),
            _ => None,
        })
        .unwrap_or_default();
    let mock = MockLlm::start().await;
    let p = Routines::project(&mock.base_url(), engine);
    mock.push_all(task.script.iter().map(|s| s.reply()));
    // A request the script did not foresee gets the answer again, as a model that is right
    // gives it: the run goes on and what the engine makes of it is measured.
    mock.push_all((0..PADDING).map(|_| text(answer)));
    let suite = format!("{}/evals/{}", env!("CARGO_MANIFEST_DIR"), task.name);
    let o = p.run_async(["eval", suite.as_str(), "--json"]).await;
    let v = o.json();
    let row = &v["tasks"][0];
    let output = row["output"].as_str().unwrap_or_default();
    let requests = mock.requests();
    let extra = requests.len() as i64 - task.script.len() as i64;
    let changed = output.trim() != answer.trim();
    let passed = row["passed"] == true;
    let mut detail = String::new();
    if extra != 0 || changed || !passed {
        let _ = write!(
            detail,
            "status {} output {output:?}; failures {}; error {}",
            row["status"], row["failures"], row["error"]
        );
        let _ = write!(detail, "\n    steps {}", row["steps"]);
        for (i, r) in requests.iter().enumerate().skip(task.script.len().saturating_sub(1)) {
            let last = crate::common::last_message(r);
            let said = last["content"].as_str().unwrap_or_default();
            let _ = write!(detail, "\n    request {}: {}", i + 1, said.chars().take(300).collect::<String>());
        }
    }
    Seen { name: task.name, extra, changed, passed, detail }
}

/// At the default level (`evidence`) a model that is right makes exactly its own requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_is_right_gets_no_extra_request_and_its_answers_stand() {
    strictly_as_written("").await;
}

/// At `full` the assists that help small models still ask a model that is right: exactly the
/// requests of [`OPEN`], and no answer changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_assist_full_the_extra_requests_are_the_listed_ones() {
    let mut seen = Vec::new();
    for task in tasks::TASKS {
        seen.push(play(task, "agent: { assist: full }\n").await);
    }
    let open = |name: &str| OPEN.iter().find(|(n, _)| *n == name).map_or(0, |(_, e)| *e);
    let bad: Vec<&Seen> = seen.iter().filter(|s| s.extra != open(s.name) || s.changed || !s.passed).collect();
    let extra: i64 = seen.iter().map(|s| s.extra).sum();
    let with_extra = seen.iter().filter(|s| s.extra != 0).count();
    let changed = seen.iter().filter(|s| s.changed).count();
    let mut report = format!(
        "{} tasks: {extra} extra requests in {with_extra} tasks, {changed} answers changed, {} failed their checks\n",
        seen.len(),
        seen.iter().filter(|s| !s.passed).count()
    );
    for s in &bad {
        let _ = writeln!(
            report,
            "  {}: extra {}, changed {}, passed {}: {}",
            s.name, s.extra, s.changed, s.passed, s.detail
        );
    }
    assert!(seen.len() >= 30, "{report}");
    assert!(bad.is_empty(), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_assist_off_the_same_scripts_run_as_written() {
    strictly_as_written("agent: { assist: off }\n").await;
}

/// The evidence level, named: it steps in only on facts about the calls, which a model that
/// is right never gives it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_assist_evidence_the_same_scripts_run_as_written() {
    strictly_as_written("agent: { assist: evidence }\n").await;
}

async fn strictly_as_written(engine: &str) {
    let mut report = String::new();
    for task in tasks::TASKS {
        let s = play(task, engine).await;
        if s.extra != 0 || s.changed || !s.passed {
            let _ = writeln!(
                report,
                "  {}: extra {}, changed {}, passed {}: {}",
                s.name, s.extra, s.changed, s.passed, s.detail
            );
        }
    }
    assert!(report.is_empty(), "{report}");
}
