//! The status page as `routines daemon` serves it (SPEC §11): beside the webhooks, behind
//! `server.token_env`, following hot reload, and reached in a real browser.

use std::time::Duration;

use serde_json::json;

use crate::common::browser::{Browser, Options};
use crate::common::mock_llm::{MockLlm, error, text, tool_call};
use crate::common::os::free_port;
use crate::common::wait::{self, DEADLINE};
use crate::common::{Routines, Running};

const TOKEN: (&str, &str) = ("ROUTINES_UI_TOKEN", "ui-token-5c1f0a9e7b3d2846");

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(10)).build().unwrap()
}

async fn daemon(p: &Routines, port: u16) -> Running {
    let running = p.command(["daemon"]).spawn().await;
    running.wait_for_stderr("the ready line", |l| l.starts_with("routines daemon: ")).await;
    running.wait_for_http(&format!("http://127.0.0.1:{port}/healthz"), 200).await;
    running
}

/// A project whose `nightly-backup` failed last night: its shell call failed, then the
/// provider gave up.
async fn failed_backup(mock: &MockLlm, extra: &str) -> (Routines, u16) {
    let port = free_port();
    let p = Routines::project(
        &mock.base_url(),
        &format!("server: {{ listen: 127.0.0.1:{port} }}\nsecurity:\n  allowed_commands: [sh]\n{extra}"),
    );
    p.write("backup.sh", "echo 'repository is already locked exclusively by PID 4242' >&2\nexit 1\n").write(
        "routines/nightly-backup.yaml",
        "prompt: Run the backup.\nretry: { attempts: 1 }\nagent: { autonomy: full, tools: [shell] }\n",
    );
    mock.push_all([tool_call("shell", json!({"command": "sh backup.sh"})), error(503, "Service Unavailable")]);
    p.run_async(["run", "nightly-backup"]).await.code(1);
    (p, port)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_the_daemon_to_last_nights_failing_tool_call_in_three_clicks() {
    let mock = MockLlm::start().await;
    let (p, port) = failed_backup(&mock, "").await;
    let running = daemon(&p, port).await;
    let Some(browser) = Browser::start(Options::default()).await else { return };
    let base = format!("http://127.0.0.1:{port}");

    browser.goto(&format!("{base}/")).await;
    assert_eq!(browser.title().await, "Routines · routines");
    browser.click(&browser.find("#routine-nightly-backup a.name").await).await; // 1
    assert!(browser.current_url().await.ends_with("/runs?routine=nightly-backup"));
    browser.click(&browser.find("a.status-link[href='/runs/1']").await).await; // 2
    assert!(browser.current_url().await.ends_with("/runs/1"));
    let failed_call = browser.find("a.failed-call").await;
    browser.click(&failed_call).await; // 3
    let url = browser.current_url().await;
    let anchor = url.rsplit_once('#').map(|(_, a)| a.to_string()).expect("the click went to the call");
    let shown = browser.find(&format!("li#{anchor}")).await;
    let text = browser.text(&shown).await;
    assert!(text.contains("shell") && text.contains("failed"), "{text}");
    assert!(text.contains("sh backup.sh"), "the arguments: {text}");
    assert!(text.contains("repository is already locked exclusively by PID 4242"), "the result: {text}");
    browser.screenshot("daemon-run-failed-call").await;
    browser.quit().await;
    drop(running);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_token_the_page_and_metrics_need_it_and_healthz_does_not() {
    let mock = MockLlm::start().await;
    let (p, port) = failed_backup(&mock, "").await;
    // A failed run still reports what its turn used: one model call before the provider gave up.
    let show = p.show(1).await;
    assert_eq!((show["status"].as_str(), show["iterations"].as_u64()), (Some("failed"), Some(1)), "{show}");
    assert_eq!(show["tokens"], serde_json::json!({"prompt": 10, "completion": 5}), "{show}");
    // The same project, now served with a token.
    let p = p.env(TOKEN.0, TOKEN.1);
    p.write(
        "routines.yaml",
        &format!(
            "timezone: Asia/Shanghai\nprovider:\n  base_url: {}\n  model: mock-model\n  max_retries: 0\nserver: {{ listen: 127.0.0.1:{port}, token_env: {} }}\n",
            mock.base_url(),
            TOKEN.0
        ),
    );
    let running = daemon(&p, port).await;
    let base = format!("http://127.0.0.1:{port}");
    let c = client();
    for path in ["/", "/runs", "/runs/1", "/charts", "/metrics"] {
        let open = c.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(open.status(), 401, "{path} without the token");
        let signed = c.get(format!("{base}{path}")).bearer_auth(TOKEN.1).send().await.unwrap();
        assert_eq!(signed.status(), 200, "{path} with the token");
    }
    let page = c.get(format!("{base}/runs/1")).bearer_auth(TOKEN.1).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("nightly-backup"), "the run is on the page");
    assert!(!page.contains(TOKEN.1), "the token is never shown");
    assert_eq!(c.get(format!("{base}/healthz")).send().await.unwrap().status(), 200);
    drop(running);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_variable_that_is_not_set_stops_the_daemon_instead_of_an_open_page() {
    let port = free_port();
    let p = Routines::project(
        "http://127.0.0.1:9/v1",
        &format!("server: {{ listen: 127.0.0.1:{port}, token_env: UNSET_UI_TOKEN_VAR }}\n"),
    );
    let out = p.command(["daemon"]).spawn().await.finish(Duration::from_secs(20)).await;
    out.code(2).stderr_has("error: server.token_env names $UNSET_UI_TOKEN_VAR, which is not set\n");
}

#[test]
fn listening_beyond_loopback_without_a_token_is_a_config_error() {
    let p = Routines::project("http://127.0.0.1:9/v1", "server: { listen: 0.0.0.0:8787 }\n");
    p.run(["validate"]).code(2).stderr_has(
        "routines.yaml:7:19: `0.0.0.0:8787` listens beyond this machine but the status page has no token\n    help: set server.token_env to the name of a variable holding a long random token, or listen on 127.0.0.1\n",
    );
    let p = Routines::project("http://127.0.0.1:9/v1", "server: { listen: 0.0.0.0:8787, token_env: UI_TOKEN }\n");
    p.write("routines/r.yaml", "prompt: hi\n");
    p.run(["validate"]).success();
}

#[test]
fn a_webhook_on_the_pages_paths_is_a_validate_error() {
    let p = Routines::project("http://127.0.0.1:9/v1", "");
    for (name, path) in [("a", "/runs/new"), ("b", "/"), ("c", "/static/x.css"), ("d", "/charts")] {
        p.write(
            &format!("routines/{name}.yaml"),
            &format!("on: [{{ webhook: {{ path: {path}, auth: none }} }}]\nprompt: hi\n"),
        );
    }
    let out = p.run(["validate"]);
    out.code(2);
    for path in ["/runs/new", "/", "/static/x.css", "/charts"] {
        out.stdout_has(&format!("webhook path `{path}` is reserved by the daemon's listener"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_follows_routines_added_while_the_daemon_runs() {
    let mock = MockLlm::start().await;
    mock.push(text("unused"));
    let port = free_port();
    let p = Routines::project(&mock.base_url(), &format!("server: {{ listen: 127.0.0.1:{port} }}\n"));
    p.write("routines/first.yaml", "prompt: hi\n");
    let running = daemon(&p, port).await;
    let base = format!("http://127.0.0.1:{port}");
    let c = client();
    let page = c.get(format!("{base}/")).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("routine-first") && !page.contains("routine-second"), "{page}");
    p.write("routines/second.yaml", "prompt: hi\n");
    let shown = wait::poll(DEADLINE, Duration::from_millis(100), async || {
        let page = c.get(format!("{base}/")).send().await.ok()?.text().await.ok()?;
        page.contains("routine-second").then_some(())
    })
    .await;
    assert!(shown.is_some(), "the new routine never showed up on the page");
    drop(running);
}
