//! `routines daemon` as a real process (SPEC §2, §5, §6): started in a
//! tempdir against the mock model server, driven through its files, its
//! webhook listener and signals, and observed through its SQLite database.
//! Every wait is for an event with a deadline; a fixed pause is used only to
//! show that nothing more happens.

use std::collections::HashSet;
use std::ops::Deref;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use routines::routine::template::fence;
use rusqlite::{Connection, OpenFlags, OptionalExtension};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::common::mock_llm::{MockLlm, text};
use crate::common::os::free_port;
use crate::common::wait::{self, DEADLINE};
use crate::common::{Routines, Running};

/// How often the database is polled.
const POLL: Duration = Duration::from_millis(20);

const HOOK_SECRET: &str = "whsec-test-6f1d2c";
const HOOK_TOKEN: &str = "tok-test-91ab";

// ------------------------------------------------------------------------ harness

/// A project folder whose daemon listens on a port of its own.
struct Project {
    routines: Routines,
    port: u16,
}

impl Deref for Project {
    type Target = Routines;

    fn deref(&self) -> &Routines {
        &self.routines
    }
}

/// One row of `runs`.
#[derive(Debug, Clone)]
struct Run {
    id: i64,
    routine: String,
    trigger: String,
    status: String,
    scheduled_for: Option<String>,
    reason: Option<String>,
    attempt: i64,
    context: Option<String>,
}

impl Project {
    /// `routines.yaml` with the mock as provider, `server` settings after
    /// `listen` (e.g. `, rate_limit: 5`), and `extra` top-level keys.
    fn new(mock: &MockLlm, server: &str, extra: &str) -> Project {
        let port = free_port();
        let routines = Routines::new().config(&format!(
            "provider: {{ base_url: {}, model: m, max_retries: 0 }}\nserver: {{ listen: 127.0.0.1:{port}{server} }}\n{extra}",
            mock.base_url()
        ));
        std::fs::create_dir_all(routines.path().join("routines")).unwrap();
        Project { routines, port }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn db_path(&self) -> PathBuf {
        self.path().join(".routines/routines.db")
    }

    /// Every run, oldest first (empty before the database exists).
    fn runs(&self) -> Vec<Run> {
        let path = self.db_path();
        if !path.exists() {
            return Vec::new();
        }
        // Never create the file: only the daemon does.
        let conn = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_WRITE).unwrap();
        conn.busy_timeout(Duration::from_secs(5)).unwrap();
        let mut stmt = conn
            .prepare(
                "SELECT id, routine, trigger, status, scheduled_for, reason, attempt, trigger_context
                 FROM runs ORDER BY id",
            )
            .unwrap();
        stmt.query_map([], |r| {
            Ok(Run {
                id: r.get(0)?,
                routine: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                trigger: r.get(2)?,
                status: r.get(3)?,
                scheduled_for: r.get(4)?,
                reason: r.get(5)?,
                attempt: r.get(6)?,
                context: r.get(7)?,
            })
        })
        .unwrap()
        .collect::<rusqlite::Result<Vec<_>>>()
        .unwrap()
    }

    fn runs_of(&self, routine: &str) -> Vec<Run> {
        self.runs().into_iter().filter(|r| r.routine == routine).collect()
    }

    fn run(&self, id: i64) -> Option<Run> {
        self.runs().into_iter().find(|r| r.id == id)
    }

    /// The rendered prompt recorded for run `id`.
    fn prompt(&self, id: i64) -> Option<String> {
        let conn = Connection::open_with_flags(self.db_path(), OpenFlags::SQLITE_OPEN_READ_WRITE).unwrap();
        conn.busy_timeout(Duration::from_secs(5)).unwrap();
        conn.query_row("SELECT prompt FROM runs WHERE id = ?1", [id], |r| r.get(0)).optional().unwrap().flatten()
    }

    /// Starts `routines -v daemon` with `env` set, and waits for its ready line and for
    /// its listener to answer.
    async fn start(&self, env: &[(&str, &str)]) -> Running {
        let daemon = env.iter().fold(self.command(["-v", "daemon"]), |c, (k, v)| c.env(k, v)).spawn().await;
        let ready = daemon.wait_for_stderr("the ready line", |l| l.starts_with("routines daemon: ")).await;
        let expected = format!("listening on http://127.0.0.1:{}; stop with Ctrl-C", self.port);
        assert!(ready.contains(&expected), "ready line {ready:?} lacks {expected:?}");
        daemon.wait_for_http(&self.url("/healthz"), 200).await;
        daemon
    }

    /// Polls `f` until it returns `Some`, or panics after [`DEADLINE`] with
    /// the runs and the daemon's log.
    async fn wait_until<T>(&self, daemon: &Running, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
        match wait::poll(DEADLINE, POLL, async || f()).await {
            Some(value) => value,
            None => panic!(
                "timed out after {DEADLINE:?} waiting for {what}\nruns: {:#?}\ndaemon log:\n{}",
                self.runs(),
                daemon.stderr()
            ),
        }
    }
}

/// SIGTERM, then asserts a clean exit (0) within a few seconds; returns the daemon's log.
async fn stop(mut daemon: Running) -> String {
    daemon.signal(libc::SIGTERM);
    let code = daemon.exit_code(Duration::from_secs(10)).await;
    let log = daemon.stderr();
    assert_eq!(code, 0, "the daemon's exit code after SIGTERM; log:\n{log}");
    assert!(log.lines().any(|l| l == "routines daemon: stopped"), "{log}");
    log
}

/// SIGKILL: the daemon dies at once, leaving whatever it was doing.
async fn crash(mut daemon: Running) {
    daemon.kill().await;
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap()
}

fn sign(secret: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// Asserts `status` and the `{"error": "..."}` body; returns the message.
async fn expect_error(response: reqwest::Response, status: u16) -> String {
    assert_eq!(response.status().as_u16(), status, "{response:?}");
    let body: Value = response.json().await.unwrap();
    let object = body.as_object().unwrap_or_else(|| panic!("error body is not an object: {body}"));
    assert_eq!(object.len(), 1, "{body}");
    object["error"].as_str().unwrap_or_else(|| panic!("no error message: {body}")).to_owned()
}

/// POSTs a body of 1 MiB + 1.
async fn oversized(http: &reqwest::Client, url: &str) -> reqwest::Response {
    http.post(url).body(vec![b'a'; 1024 * 1024 + 1]).send().await.unwrap()
}

/// Asserts a 202 with `{"run_id": N}` and returns N.
async fn expect_accepted(response: reqwest::Response) -> i64 {
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    assert_eq!(status, 202, "{body}");
    let object = body.as_object().unwrap();
    assert_eq!(object.len(), 1, "{body}");
    body["run_id"].as_i64().unwrap_or_else(|| panic!("no run_id: {body}"))
}

/// The last user message of every request the mock received.
fn prompts(mock: &MockLlm) -> Vec<String> {
    mock.requests()
        .iter()
        .filter_map(|req| {
            req["messages"]
                .as_array()?
                .iter()
                .rev()
                .find(|m| m["role"] == "user")
                .and_then(|m| m["content"].as_str())
                .map(str::to_owned)
        })
        .collect()
}

fn succeeded(runs: &[Run]) -> usize {
    runs.iter().filter(|r| r.status == "succeeded").count()
}

fn is_done(status: &str) -> bool {
    !matches!(status, "queued" | "running")
}

// ------------------------------------------------------------------------ tests

/// An `every: 1s` routine across a SIGKILL mid-run and a restart: no
/// instant runs twice, the run the crash cut is found, retried as attempt 2
/// and finished, and a clean stop leaves nothing queued or running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_second_runs_each_instant_once_across_a_crash() {
    let mock = MockLlm::start().await;
    // Three quick runs, then one the crash interrupts, then quick ones.
    mock.push_all((0..3).map(|_| text("done")));
    mock.push(text("done").with_delay(Duration::from_secs(30)));
    mock.push_all((0..200).map(|_| text("done")));
    let p = Project::new(&mock, "", "");
    p.write("routines/tick.yaml", "on: [{ every: 1s }]\nprompt: Tick.\n");

    let daemon = p.start(&[]).await;
    p.wait_until(&daemon, "3 succeeded runs", || (succeeded(&p.runs_of("tick")) >= 3).then_some(())).await;
    // The fourth run waits for its (delayed) reply: kill the daemon then.
    let cut = p
        .wait_until(&daemon, "a fourth run waiting for the model", || {
            let running: Vec<Run> = p.runs_of("tick").into_iter().filter(|r| r.status == "running").collect();
            (mock.request_count() >= 4 && running.len() == 1).then(|| running[0].clone())
        })
        .await;
    crash(daemon).await;
    let at_kill = p.runs_of("tick");
    assert_eq!(at_kill.iter().filter(|r| r.status == "running").count(), 1, "{at_kill:#?}");
    assert_eq!(succeeded(&at_kill), 3, "{at_kill:#?}");

    let daemon = p.start(&[]).await;
    let before = succeeded(&at_kill);
    p.wait_until(&daemon, "the cut run retried and 3 more runs", || {
        let runs = p.runs_of("tick");
        let retried = runs.iter().any(|r| r.id == cut.id && r.status == "succeeded");
        // Stop right after a run ended: the next instant is most of a second away.
        (retried && succeeded(&runs) > before + 3).then_some(())
    })
    .await;
    stop(daemon).await;

    let runs = p.runs_of("tick");
    let retried = runs.iter().find(|r| r.id == cut.id).unwrap();
    assert_eq!((retried.status.as_str(), retried.attempt), ("succeeded", 2), "{runs:#?}");
    let unfinished: Vec<&Run> = runs.iter().filter(|r| !is_done(&r.status)).collect();
    assert!(unfinished.is_empty(), "left queued or running after a clean stop: {unfinished:#?}");
    let dangling: Vec<&Run> = runs.iter().filter(|r| r.status == "interrupted").collect();
    assert!(dangling.is_empty(), "interrupted and not retried: {dangling:#?}");
    let mut seen = HashSet::new();
    for r in &runs {
        assert_eq!(r.trigger, "every", "{r:?}");
        let at = r.scheduled_for.as_deref().unwrap_or_else(|| panic!("no scheduled_for: {r:?}"));
        let t = chrono::DateTime::parse_from_rfc3339(at).unwrap();
        assert_eq!(t.timestamp_subsec_nanos(), 0, "not a whole second: {r:?}");
        assert!(seen.insert(t), "instant {at} has two runs: {runs:#?}");
    }
    let fired: Vec<&Run> = runs.iter().filter(|r| r.status == "succeeded").collect();
    assert!(fired.len() >= 7, "{runs:#?}");
    mock.assert_clean();
}

/// A file trigger fires once per file after its writes settle, with the
/// path and event in the prompt; files outside the glob fire nothing; the
/// watch survives its folder being deleted and created again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_trigger_fires_once_per_settled_file() {
    let mock = MockLlm::start().await;
    mock.push_all((0..20).map(|_| text("done")));
    let p = Project::new(&mock, "", "");
    p.write(
        "routines/inbox.yaml",
        "on: [{ file: { paths: [\"inbox/*.txt\"], debounce: 600ms } }]\nprompt: \"Summarize {{ trigger.path }} ({{ trigger.event }})\"\n",
    );
    std::fs::create_dir_all(p.path().join("inbox")).unwrap();
    let daemon = p.start(&[]).await;

    std::fs::write(p.path().join("inbox/a.txt"), "all at once\n").unwrap();
    {
        use std::io::Write;
        let mut f = std::fs::File::create(p.path().join("inbox/b.txt")).unwrap();
        for i in 0..5 {
            writeln!(f, "chunk {i}").unwrap();
            f.flush().unwrap();
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    std::fs::write(p.path().join("inbox/c.csv"), "a,b\n").unwrap();

    p.wait_until(&daemon, "2 finished runs", || {
        let runs = p.runs_of("inbox");
        (runs.len() >= 2 && runs.iter().all(|r| is_done(&r.status))).then_some(())
    })
    .await;
    // A marker created after them fires after any late event about them
    // would have: once its run exists, a second fire of a or b would have too.
    std::fs::write(p.path().join("inbox/z.txt"), "marker\n").unwrap();
    p.wait_until(&daemon, "the marker's run", || {
        let runs = p.runs_of("inbox");
        runs.iter()
            .any(|r| r.context.as_deref().is_some_and(|c| c.contains("inbox/z.txt")) && is_done(&r.status))
            .then_some(())
    })
    .await;
    let runs: Vec<_> = p
        .runs_of("inbox")
        .into_iter()
        .filter(|r| !r.context.as_deref().unwrap_or("").contains("inbox/z.txt"))
        .collect();
    assert_eq!(runs.len(), 2, "{runs:#?}");
    let mut contexts: Vec<Value> = runs
        .iter()
        .map(|r| {
            assert_eq!((r.trigger.as_str(), r.status.as_str()), ("file", "succeeded"), "{r:?}");
            serde_json::from_str(r.context.as_deref().unwrap()).unwrap()
        })
        .collect();
    contexts.sort_by_key(|c| c["path"].as_str().unwrap_or_default().to_owned());
    assert_eq!(
        contexts,
        vec![json!({"path": "inbox/a.txt", "event": "create"}), json!({"path": "inbox/b.txt", "event": "create"})]
    );
    let seen = prompts(&mock);
    // File names are untrusted data: fenced in the prompt.
    let expected = ["inbox/a.txt", "inbox/b.txt"].map(|f| format!("Summarize {} (create)", fence(f)));
    for expected in &expected {
        assert_eq!(seen.iter().filter(|p| p.contains(expected)).count(), 1, "{expected:?} in {seen:#?}");
    }

    // The folder is deleted and made again: its new file still fires.
    std::fs::remove_dir_all(p.path().join("inbox")).unwrap();
    std::fs::create_dir_all(p.path().join("inbox")).unwrap();
    std::fs::write(p.path().join("inbox/d.txt"), "after the folder came back\n").unwrap();
    p.wait_until(&daemon, "a run for inbox/d.txt", || {
        let runs = p.runs_of("inbox");
        (runs.len() >= 4 && runs.iter().all(|r| is_done(&r.status))).then_some(())
    })
    .await;
    // The watcher rescans a recreated folder on its own 2 s timer, inside the
    // daemon process, which no event of ours can order against: a window
    // longer than that period is the only way to see that it does not fire
    // d.txt a second time.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let runs = p.runs_of("inbox");
    assert_eq!(runs.len(), 4, "{runs:#?}");
    let last: Value = serde_json::from_str(runs[3].context.as_deref().unwrap()).unwrap();
    assert_eq!(last, json!({"path": "inbox/d.txt", "event": "create"}));
    assert_eq!(runs[3].status, "succeeded");
    stop(daemon).await;
    mock.assert_clean();
}

/// Webhooks end to end: HMAC and bearer auth, the request reaching the
/// template, the error statuses, the rate limit against the database, and
/// /healthz and /metrics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_queue_runs_and_refuse_what_they_must() {
    let mock = MockLlm::start().await;
    mock.push_all((0..40).map(|_| text("done")));
    let p = Project::new(&mock, ", rate_limit: 5, rate_burst: 5", "");
    p.write(
        "routines/deploy.yaml",
        "on: [{ webhook: { path: /hooks/deploy, secret_env: HOOK_SECRET } }]\nprompt: \"Deploy {{ trigger.json.ref }} by {{ trigger.method }} to {{ trigger.query.env }}\"\n",
    );
    p.write(
        "routines/token.yaml",
        "on: [{ webhook: { path: /hooks/token, token_env: HOOK_TOKEN } }]\nprompt: Token hook.\n",
    );
    p.write("routines/open.yaml", "on: [{ webhook: { path: /hooks/open, auth: none } }]\nprompt: Open hook.\n");
    let daemon = p.start(&[("HOOK_SECRET", HOOK_SECRET), ("HOOK_TOKEN", HOOK_TOKEN)]).await;
    let http = client();

    // A good signature.
    let body = r#"{"ref":"main","commits":2}"#;
    let response = http
        .post(p.url("/hooks/deploy?env=prod"))
        .header("X-Signature-256", sign(HOOK_SECRET, body.as_bytes()))
        .header("Content-Type", "application/json")
        .header("X-Custom", "yes")
        .body(body)
        .send()
        .await
        .unwrap();
    let deploy = expect_accepted(response).await;
    // Durably queued before the 202.
    let run = p.run(deploy).unwrap_or_else(|| panic!("run {deploy} is not in the database"));
    assert_eq!((run.routine.as_str(), run.trigger.as_str()), ("deploy", "webhook"));
    let context: Value = serde_json::from_str(run.context.as_deref().unwrap()).unwrap();
    assert_eq!(context["method"], "POST");
    assert_eq!(context["path"], "/hooks/deploy");
    assert_eq!(context["query"], json!({"env": "prod"}));
    assert_eq!(context["json"], json!({"ref": "main", "commits": 2}));
    assert_eq!(context["body"], body);
    assert_eq!(context["headers"]["x-custom"], "yes");
    assert!(context["headers"].get("x-signature-256").is_none(), "{context}");

    // Bad and missing signatures.
    let response = http
        .post(p.url("/hooks/deploy"))
        .header("X-Signature-256", sign("not-the-secret", body.as_bytes()))
        .body(body)
        .send()
        .await
        .unwrap();
    let message = expect_error(response, 401).await;
    assert!(!message.contains(HOOK_SECRET), "{message}");
    expect_error(http.post(p.url("/hooks/deploy")).body(body).send().await.unwrap(), 401).await;

    // Bearer tokens.
    let response = http.post(p.url("/hooks/token")).bearer_auth(HOOK_TOKEN).send().await.unwrap();
    let token_run = expect_accepted(response).await;
    let response = http.post(p.url("/hooks/token")).bearer_auth("tok-wrong").send().await.unwrap();
    let message = expect_error(response, 401).await;
    assert!(!message.contains(HOOK_TOKEN), "{message}");

    // Too big, wrong method, unknown path.
    // (On another route than the burst below: a refused request takes a token too.)
    expect_error(oversized(&http, &p.url("/hooks/deploy")).await, 413).await;
    let response = http.get(p.url("/hooks/deploy")).send().await.unwrap();
    assert_eq!(response.headers().get("allow").map(|v| v.to_str().unwrap()), Some("POST"));
    expect_error(response, 405).await;
    expect_error(http.post(p.url("/hooks/nothing")).send().await.unwrap(), 404).await;

    // The body reached the template and the model.
    p.wait_until(&daemon, "the deploy and token runs to finish", || {
        let done = [deploy, token_run].iter().all(|id| p.run(*id).is_some_and(|r| r.status == "succeeded"));
        done.then_some(())
    })
    .await;
    // The webhook's body and query are untrusted data, fenced; its method is the route's.
    let deploy_prompt = format!("Deploy {} by POST to {}", fence("main"), fence("prod"));
    assert_eq!(p.prompt(deploy).as_deref(), Some(deploy_prompt.as_str()));
    assert!(prompts(&mock).iter().any(|m| m.contains(&deploy_prompt)), "{:#?}", prompts(&mock));
    let token_context: Value = serde_json::from_str(p.run(token_run).unwrap().context.as_deref().unwrap()).unwrap();
    assert!(token_context["headers"].get("authorization").is_none(), "{token_context}");

    // A burst on the rate-limited route: every 202 is a run, the rest 429.
    let mut burst = tokio::task::JoinSet::new();
    for _ in 0..20 {
        let request = http.post(p.url("/hooks/open")).send();
        burst.spawn(async move { request.await.unwrap() });
    }
    let (mut accepted, mut limited) = (Vec::new(), 0);
    while let Some(response) = burst.join_next().await {
        let response = response.unwrap();
        if response.status().as_u16() == 429 {
            let retry_after: u64 = response.headers()["retry-after"].to_str().unwrap().parse().unwrap();
            assert!(retry_after >= 1, "Retry-After: {retry_after}");
            expect_error(response, 429).await;
            limited += 1;
        } else {
            accepted.push(expect_accepted(response).await);
        }
    }
    assert!(limited > 0, "no 429 in a burst of 20 over a burst limit of 5");
    assert!(accepted.len() >= 5, "{} accepted", accepted.len());
    accepted.sort_unstable();
    let open: Vec<i64> = p.runs_of("open").iter().map(|r| r.id).collect();
    assert_eq!(open, accepted, "runs of `open` vs run ids answered 202");

    // Health and metrics.
    let health = http.get(p.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status().as_u16(), 200);
    let metrics = http.get(p.url("/metrics")).send().await.unwrap();
    assert_eq!(metrics.status().as_u16(), 200);
    let metrics = metrics.text().await.unwrap();
    let value = |name: &str| -> f64 {
        let line = metrics.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no {name} in:\n{metrics}"));
        line[name.len()..].trim().parse().unwrap()
    };
    assert!(value("routines_runs{status=\"succeeded\"} ") >= 2.0, "{metrics}");
    assert!(value("routines_queue_depth ") >= 0.0, "{metrics}");

    p.wait_until(&daemon, "every run to end", || p.runs().iter().all(|r| is_done(&r.status)).then_some(())).await;
    let log = stop(daemon).await;
    for secret in [HOOK_SECRET, HOOK_TOKEN] {
        assert!(!log.contains(secret), "the log shows a secret:\n{log}");
        for r in p.runs() {
            assert!(!r.context.unwrap_or_default().contains(secret), "run {} stores a secret", r.id);
        }
    }
    mock.assert_clean();
}

/// One daemon per data folder: a second one exits 1 naming the first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_daemon_on_the_same_data_folder_is_refused() {
    let mock = MockLlm::start().await;
    let p = Project::new(&mock, "", "");
    p.write("routines/open.yaml", "on: [{ webhook: { path: /hooks/open, auth: none } }]\nprompt: hi\n");
    let first = p.start(&[]).await;

    let second = p.command(["daemon"]).spawn().await.finish(DEADLINE).await;
    second.code(1);
    let expected =
        format!("error: another routines daemon (pid {}) is already running on the data folder ", first.pid());
    let first_line = second.stderr.lines().next().unwrap_or_default();
    assert!(first_line.starts_with(&expected), "{second}");
    assert!(first_line.ends_with(".routines"), "{second}");
    assert!(!second.stderr.contains("panicked"), "{second}");

    // The first one is unharmed.
    let health = client().get(p.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status().as_u16(), 200);
    stop(first).await;
}

/// A new routine file is picked up while running; a file that turns invalid
/// keeps its routine's last valid version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routine_files_reload_without_restart() {
    let mock = MockLlm::start().await;
    mock.push_all((0..20).map(|_| text("done")));
    let p = Project::new(&mock, "", "");
    p.write("routines/a.yaml", "on: [{ webhook: { path: /hooks/a, auth: none } }]\nprompt: Hook a.\n");
    let daemon = p.start(&[]).await;
    let http = client();
    expect_accepted(http.post(p.url("/hooks/a")).send().await.unwrap()).await;
    expect_error(http.post(p.url("/hooks/b")).send().await.unwrap(), 404).await;

    p.write("routines/b.yaml", "on: [{ webhook: { path: /hooks/b, auth: none } }]\nprompt: Hook b.\n");
    daemon.wait_for_stderr("the reload that adds b.yaml", |l| l.contains("Routines reloaded.")).await;
    let b_run = expect_accepted(http.post(p.url("/hooks/b")).send().await.unwrap()).await;
    assert_eq!(p.run(b_run).unwrap().routine, "b");

    p.write("routines/a.yaml", "on: [{ webhook: { path: /hooks/a, auth: none } }]\nprompt: [unclosed\n");
    daemon
        .wait_for_stderr("the warning that a.yaml is invalid", |l| l.contains("keeping its last valid version"))
        .await;
    let a_run = expect_accepted(http.post(p.url("/hooks/a")).send().await.unwrap()).await;
    assert_eq!(p.run(a_run).unwrap().routine, "a");
    expect_accepted(http.post(p.url("/hooks/b")).send().await.unwrap()).await;

    p.wait_until(&daemon, "every run to end", || p.runs().iter().all(|r| is_done(&r.status)).then_some(())).await;
    let a_prompts: Vec<Option<String>> = p.runs_of("a").iter().map(|r| p.prompt(r.id)).collect();
    assert!(a_prompts.iter().all(|x| x.as_deref() == Some("Hook a.")), "{a_prompts:?}");
    stop(daemon).await;
    mock.assert_clean();
}

/// SIGTERM with a run in flight: the daemon waits `shutdown_grace`, records
/// the run `interrupted` (shutdown) and exits 0; the next start runs it
/// again as attempt 2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_interrupts_a_slow_run_and_the_next_start_retries_it() {
    let mock = MockLlm::start().await;
    mock.push(text("too late").with_delay(Duration::from_secs(30)));
    let p = Project::new(&mock, "", "limits: { shutdown_grace: 1s }\n");
    p.write("routines/slow.yaml", "on: [{ webhook: { path: /hooks/slow, auth: none } }]\nprompt: Take your time.\n");
    let mut daemon = p.start(&[]).await;
    let id = expect_accepted(client().post(p.url("/hooks/slow")).send().await.unwrap()).await;
    p.wait_until(&daemon, "the run waiting for the model", || {
        (mock.request_count() >= 1 && p.run(id).is_some_and(|r| r.status == "running")).then_some(())
    })
    .await;

    let stopping = Instant::now();
    daemon.signal(libc::SIGTERM);
    let code = daemon.exit_code(Duration::from_secs(10)).await;
    let took = stopping.elapsed();
    assert_eq!(code, 0, "{}", daemon.stderr());
    assert!(took >= Duration::from_millis(900), "stopped after {took:?}, before the grace period");
    assert!(took < Duration::from_secs(6), "stopped after {took:?}");
    drop(daemon);
    let run = p.run(id).unwrap();
    assert_eq!(
        (run.status.as_str(), run.reason.as_deref(), run.attempt),
        ("interrupted", Some("shutdown"), 1),
        "{run:?}"
    );

    mock.push(text("done"));
    let daemon = p.start(&[]).await;
    let run = p
        .wait_until(&daemon, "the retried run to end", || p.run(id).filter(|r| is_done(&r.status) && r.attempt > 1))
        .await;
    assert_eq!((run.status.as_str(), run.attempt), ("succeeded", 2), "{run:?}");
    assert_eq!(p.runs().len(), 1, "{:#?}", p.runs());
    stop(daemon).await;
    assert_eq!(mock.request_count(), 2);
    mock.assert_clean();
}

/// SPEC §5: a body over 1 MiB is answered 413, every time. Answering before
/// reading the body let the kernel reset the connection under a client still
/// sending (about 2 requests in 100 saw a broken pipe instead of the 413);
/// the daemon now reads and drops moderate oversized bodies first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_body_is_always_answered_413() {
    let mock = MockLlm::start().await;
    let p = Project::new(&mock, ", rate_limit: 1000, rate_burst: 1000", "");
    p.write("routines/open.yaml", "on: [{ webhook: { path: /hooks/open, auth: none } }]\nprompt: hi\n");
    let daemon = p.start(&[]).await;
    let http = client();
    let mut failures = Vec::new();
    for _ in 0..200 {
        match http.post(p.url("/hooks/open")).body(vec![b'a'; 1024 * 1024 + 1]).send().await {
            Ok(response) => assert_eq!(response.status().as_u16(), 413),
            Err(e) => failures.push(format!("{e:?}")),
        }
    }
    stop(daemon).await;
    assert!(failures.is_empty(), "{} of 200 oversized requests got no 413: {failures:#?}", failures.len());
}
