//! Deliveries cut off by a process that dies (issue 13): a run's end is recorded with its
//! deliveries before any is attempted, each attempt is claimed before it starts and finished
//! after, so a restart knows what may have been sent. Killed with SIGKILL while a real SMTP
//! server holds back its answer to a message it took, the message is never sent a second time
//! unless a person asks; a run is never run again once its end is recorded, and an append file
//! gets its content once also when a crash makes the daemon run the routine again.

use std::sync::Arc;
use std::time::Duration;

use routines::config::{self, ProcessEnv};
use routines::engine::{Cancel, Engine, RunOptions};
use routines::llm::OpenAiProvider;
use routines::routine::{TriggerContext, load_all};
use routines::store::{DeliveryStatus, RunStatus};
use routines::tools::Registry;

use crate::common::mock_llm::{MockLlm, hang, text};
use crate::common::os::free_port;
use crate::common::smtp::SmtpServer;
use crate::common::wait::{self, DEADLINE};
use crate::common::{Routines, Running};

/// An append file, then a mail over SMTP on `smtp_port` (its timeout far longer than any test).
const DELIVER: &str = "deliver:\n  - file: { path: out/log.md, mode: append }\n  - mail: { to: [ops@example.com] }\n";

fn project(mock: &MockLlm, smtp_port: u16, extra: &str) -> Routines {
    let mail = format!(
        "mail:\n  from: routines@example.com\n  smtp: {{ host: 127.0.0.1, port: {smtp_port}, security: none, timeout: 300s }}\n{extra}"
    );
    Routines::project(&mock.base_url(), &mail)
}

/// Waits until the server holds `n` messages.
async fn received(smtp: &SmtpServer, n: usize) {
    let got =
        wait::poll(DEADLINE, Duration::from_millis(20), async || (smtp.received().len() >= n).then_some(())).await;
    assert!(got.is_some(), "the SMTP server did not get {n} message(s); it has {}", smtp.received().len());
}

/// Run 1's deliveries as `show --json` tells them: (status, attempts) in order.
async fn deliveries(p: &Routines) -> Vec<(String, u64)> {
    let show = p.show(1).await;
    let list = show["deliveries"].as_array().cloned().unwrap_or_default();
    list.iter().map(|d| (d["status"].as_str().unwrap().to_owned(), d["attempts"].as_u64().unwrap())).collect()
}

fn pairs(list: &[(&str, u64)]) -> Vec<(String, u64)> {
    list.iter().map(|(s, n)| ((*s).to_owned(), *n)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mail_cut_off_by_sigkill_is_never_sent_again_unless_a_person_asks() {
    let mock = MockLlm::start().await;
    let smtp = SmtpServer::start_hanging(1);
    let p = project(&mock, smtp.port, "");
    p.write("routines/report.yaml", &format!("prompt: Report.\nagent: {{ tools: [] }}\n{DELIVER}"));
    mock.push(text("the report"));
    let mut running = p.command(["run", "report"]).spawn().await;
    // The server took the message and holds back its answer: the attempt is under way.
    received(&smtp, 1).await;
    let show = p.show(1).await;
    assert_eq!(show["status"], "succeeded", "the end is recorded before any delivery: {show}");
    assert_eq!(deliveries(&p).await, pairs(&[("delivered", 1), ("sending", 0)]));
    running.kill().await;

    // After the death, a retry does not send it blindly again: it may have arrived.
    let o = p.run_async(["deliver", "--retry"]).await;
    o.code(1).stderr_has("uncertain  run 1  mail ops@example.com").stderr_has("deliver --retry --uncertain");
    assert_eq!(smtp.received().len(), 1);
    assert_eq!(deliveries(&p).await, pairs(&[("delivered", 1), ("uncertain", 1)]));
    p.run_async(["deliver", "--retry"]).await.success().stderr_is(
        "1 uncertain delivery left alone: an attempt was cut off or never answered and may have arrived; \
         check, then run `routines deliver --retry --uncertain` to send again\n",
    );
    assert_eq!(smtp.received().len(), 1, "an uncertain mail was sent again unasked");
    assert_eq!(p.read("out/log.md"), "the report\n");

    // A person who checked asks for it: the same message goes out again.
    p.run_async(["deliver", "--retry", "--uncertain"]).await.success().stderr_has("delivered  run 1  mail");
    let got = smtp.received();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].header("Message-ID"), got[1].header("Message-ID"));
    assert_eq!(deliveries(&p).await, pairs(&[("delivered", 1), ("delivered", 2)]));
    assert_eq!(mock.request_count(), 1);
}

/// A daemon with a webhook `/hooks/go` that runs `report`, retried after a crash.
async fn daemon(p: &Routines, port: u16) -> Running {
    let running = p.command(["daemon"]).spawn().await;
    running.wait_for_http(&format!("http://127.0.0.1:{port}/healthz"), 200).await;
    running
}

async fn fire(port: u16) {
    let c = reqwest::Client::builder().no_proxy().build().unwrap();
    let answer = c.post(format!("http://127.0.0.1:{port}/hooks/go")).body("{}").send().await.unwrap();
    assert_eq!(answer.status(), 202);
}

const HOOK: &str = "on: [{ webhook: { path: /hooks/go, auth: none } }]\nprompt: Report.\nagent: { tools: [] }\n\
                    retry: { attempts: 3, backoff: 1s }\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_killed_during_the_deliveries_neither_runs_nor_delivers_again() {
    let mock = MockLlm::start().await;
    let smtp = SmtpServer::start_hanging(1);
    let port = free_port();
    let p = project(&mock, smtp.port, &format!("server: {{ listen: 127.0.0.1:{port} }}\n"));
    p.write("routines/report.yaml", &format!("{HOOK}{DELIVER}"));
    mock.push(text("the report"));
    let mut first = daemon(&p, port).await;
    fire(port).await;
    received(&smtp, 1).await;
    first.kill().await;

    // Started again: the run ended before its deliveries, so it is not taken for a crash;
    // the append file is not written again and the mail is judged, not sent.
    let second = daemon(&p, port).await;
    let judged = wait::poll(DEADLINE, Duration::from_millis(100), async || {
        let d = deliveries(&p).await;
        (d.get(1).is_some_and(|(s, _)| s == "uncertain")).then_some(d)
    })
    .await;
    assert_eq!(judged, Some(pairs(&[("delivered", 1), ("uncertain", 1)])), "{}", second.stderr());
    let show = p.show(1).await;
    assert_eq!((show["status"].as_str(), show["attempt"].as_u64()), (Some("succeeded"), Some(1)), "{show}");
    assert_eq!(mock.request_count(), 1, "the run was executed again");
    assert_eq!(p.read("out/log.md"), "the report\n");
    assert_eq!(smtp.received().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_before_its_end_runs_again_and_appends_once() {
    let mock = MockLlm::start().await;
    let port = free_port();
    let p = Routines::project(&mock.base_url(), &format!("server: {{ listen: 127.0.0.1:{port} }}\n"));
    p.write("routines/report.yaml", &format!("{HOOK}deliver:\n  - file: {{ path: out/log.md, mode: append }}\n"));
    p.write("out/log.md", "yesterday\n");
    mock.push(hang());
    let mut first = daemon(&p, port).await;
    fire(port).await;
    mock.wait_for_requests(1).await;
    first.kill().await;

    mock.push(text("the report"));
    let _second = daemon(&p, port).await;
    let done = wait::poll(DEADLINE, Duration::from_millis(100), async || {
        let show = p.show(1).await;
        (show["status"] == "succeeded").then_some(show)
    })
    .await;
    let Some(show) = done else { panic!("the interrupted run was not run again: {}", p.show(1).await) };
    assert_eq!(show["attempt"], 2, "{show}");
    assert_eq!(deliveries(&p).await, pairs(&[("delivered", 1)]));
    assert_eq!(p.read("out/log.md"), "yesterday\nthe report\n");
}

/// An attempt of a run that finds its delivery recorded delivered by an earlier attempt (an end
/// lost after the deliveries, as an older version could leave it) does not deliver again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_attempted_again_does_not_repeat_a_delivery_recorded_delivered() {
    let mock = MockLlm::start().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write(
        "routines/report.yaml",
        "prompt: Report.\nagent: { tools: [] }\ndeliver:\n  - file: { path: out/log.md, mode: append }\n",
    );
    let config = config::load(Some(&p.path().join("routines.yaml")), p.path(), &ProcessEnv).unwrap();
    let loaded = load_all(&config, None, &Registry::builtin().names());
    let routine = loaded.routines.into_iter().find(|r| r.name == "report").unwrap();
    let provider = OpenAiProvider::new(crate::common::provider_options(&mock)).unwrap();
    let engine = Engine::open(config, Arc::new(provider), "m").unwrap();
    mock.push(text("the report"));
    let first = engine.run(&routine, TriggerContext::Manual, &RunOptions::default(), None).await.unwrap();
    assert_eq!(first.deliveries[0].status, DeliveryStatus::Delivered);

    engine.store.with_conn(|c| c.execute("UPDATE runs SET status = 'queued' WHERE id = ?1", [first.run_id])).unwrap();
    mock.push(text("the report, again"));
    let opts = RunOptions::default();
    let again = engine
        .execute(&routine, first.run_id, TriggerContext::Manual, 2, &opts, None, &Cancel::default())
        .await
        .unwrap();
    assert_eq!(again.status, RunStatus::Succeeded);
    assert_eq!((again.deliveries[0].status, again.deliveries[0].error.as_deref()), (DeliveryStatus::Delivered, None));
    assert_eq!(p.read("out/log.md"), "the report\n");
    let rows = engine.store.deliveries(first.run_id).unwrap();
    assert_eq!(rows.iter().map(|d| (d.status, d.attempts)).collect::<Vec<_>>(), [(DeliveryStatus::Delivered, 1)]);
}

/// What a retry makes of each kind of file delivery whose attempt a dead process cut off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_file_is_written_again_only_where_that_cannot_write_it_twice() {
    let mock = MockLlm::start().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write(
        "routines/report.yaml",
        "prompt: Report.\nagent: { tools: [] }\ndeliver:\n  - file: { path: out/over.md, mode: overwrite }\n  \
         - file: { path: out/new.md, mode: create }\n  - file: { path: out/log.md, mode: append }\n",
    );
    mock.push(text("the report"));
    p.run_async(["run", "report"]).await.success();
    // What a process killed during the attempts leaves (its owner is gone): every delivery
    // `sending`; the overwrite never reached the disk, the create and the append did.
    let db = rusqlite::Connection::open(p.path().join(".routines/routines.db")).unwrap();
    db.execute("UPDATE deliveries SET status = 'sending'", []).unwrap();
    drop(db);
    std::fs::remove_file(p.path().join("out/over.md")).unwrap();

    let o = p.run_async(["deliver", "--retry"]).await;
    o.code(1).stderr_has("delivered  run 1  file out/over.md").stderr_has("delivered  run 1  file out/new.md");
    o.stderr_has("uncertain  run 1  file out/log.md");
    assert_eq!(p.read("out/over.md"), "the report\n");
    assert_eq!(p.read("out/new.md"), "the report\n");
    assert_eq!(p.read("out/log.md"), "the report\n");
    assert_eq!(deliveries(&p).await, pairs(&[("delivered", 2), ("delivered", 2), ("uncertain", 2)]));
}
