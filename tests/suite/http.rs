//! `http_request` against a real local server: what the model reads back,
//! and the network rules (refused hosts are never connected to).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{Html, IntoResponse};
use axum::routing::{any, get};
use routines::agent::AgentOptions;
use routines::config::Autonomy;
use routines::llm::ProviderOptions;
use routines::policy::Policy;
use serde_json::{Value, json};

use crate::common::mock_llm::{text, tool_call, tool_calls};
use crate::common::{Harness, last_message};

const PAGE: &str = r#"<!DOCTYPE html><html><head><title>Forecast</title><style>h1 { color: red }</style></head>
<body><script>document.write("<p>not text</p>")</script><h1>Forecast</h1>
<p>Sunny &amp; 25&#176;C<br>Wind:   light</p><ul><li>Mon</li><li>Tue</li></ul>
<p><a href="/data">raw data</a></p></body></html>"#;
const JSON: &str = r#"{"temp": 21, "ok": true}"#;
const HINT: &str = "non-public hosts need an entry in security.allowed_hosts";
const MIB: usize = 1024 * 1024;

/// What the site saw.
#[derive(Default)]
struct Seen {
    /// Method, headers and body of every request to `/submit` and `/echo`.
    requests: Mutex<Vec<(String, HeaderMap, String)>>,
    secret_hits: AtomicUsize,
}

/// A real HTTP server on 127.0.0.1.
struct Site {
    addr: SocketAddr,
    seen: Arc<Seen>,
}

impl Site {
    async fn start() -> Site {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Seen::default());
        let port = addr.port();
        let app = Router::new()
            .route("/page", get(|| async { Html(PAGE) }))
            .route("/data", get(|| async { ([(header::CONTENT_TYPE, "application/json")], JSON) }))
            .route("/missing", get(|| async { (StatusCode::NOT_FOUND, "no such page") }))
            .route("/hop", get(|| async { (StatusCode::FOUND, [(header::LOCATION, "/page")]) }))
            .route(
                "/go",
                get(move || async move {
                    (StatusCode::FOUND, [(header::LOCATION, format!("http://localhost:{port}/secret"))])
                }),
            )
            .route(
                "/secret",
                get(|State(s): State<Arc<Seen>>| async move {
                    s.secret_hits.fetch_add(1, Ordering::SeqCst);
                    "the secret"
                }),
            )
            .route("/big", get(|| async { "x".repeat(2 * MIB) }))
            .route("/loop", get(|| async { (StatusCode::FOUND, [(header::LOCATION, "/loop")]) }))
            .route("/hang", get(std::future::pending::<&'static str>))
            .route(
                "/redirect",
                any(|Query(q): Query<HashMap<String, String>>| async move {
                    (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, q["to"].clone())])
                }),
            )
            .route("/submit", any(record))
            .route("/echo", any(record))
            .with_state(seen.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Site { addr, seen }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn requests(&self) -> Vec<(String, HeaderMap, String)> {
        self.seen.requests.lock().unwrap().clone()
    }
}

async fn record(State(s): State<Arc<Seen>>, method: Method, headers: HeaderMap, body: String) -> impl IntoResponse {
    s.requests.lock().unwrap().push((method.to_string(), headers, body));
    (StatusCode::CREATED, "created")
}

fn allow_loopback(p: &mut Policy) {
    p.allowed_hosts = vec!["127.0.0.1".into()];
}

/// Runs one turn in which the model makes `calls` one after another, with
/// 127.0.0.1 in `allowed_hosts`, and returns what it read back from each.
async fn results(h: &Harness, autonomy: Autonomy, calls: Vec<Value>) -> Vec<String> {
    results_with(h, autonomy, |_, _| {}, allow_loopback, calls).await
}

async fn results_with(
    h: &Harness,
    autonomy: Autonomy,
    tweak: impl FnOnce(&mut AgentOptions, &mut ProviderOptions),
    policy: impl FnOnce(&mut Policy),
    calls: Vec<Value>,
) -> Vec<String> {
    let n = calls.len();
    h.mock.push_all(calls.into_iter().map(|args| tool_call("http_request", args)));
    h.mock.push(text("done"));
    let mut agent = h.agent_with(autonomy, tweak, policy);
    assert_eq!(agent.process_message("fetch").await.unwrap(), "done");
    let reqs = h.mock.requests();
    h.mock.assert_clean();
    (1..=n).map(|i| last_message(&reqs[i])["content"].as_str().unwrap().to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn html_pages_come_back_as_readable_text_also_after_a_redirect() {
    let (h, site) = (Harness::new().await, Site::start().await);
    let out = results(
        &h,
        Autonomy::Supervised,
        vec![json!({"url": site.url("/page")}), json!({"url": site.url("/hop"), "method": "get"})],
    )
    .await;
    let want = format!(
        "HTTP 200 OK (text/html, {} B)\n\nForecast\n\nSunny & 25°C\nWind: light\n\n- Mon\n- Tue\n\nraw data ({})",
        PAGE.len(),
        site.url("/data")
    );
    assert_eq!(out, [want.clone(), want]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_comes_back_as_is() {
    let (h, site) = (Harness::new().await, Site::start().await);
    let out = results(&h, Autonomy::Supervised, vec![json!({"url": site.url("/data")})]).await;
    assert_eq!(out, [format!("HTTP 200 OK (application/json, 24 B)\n\n{JSON}")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_sends_the_body_and_headers() {
    let (h, site) = (Harness::new().await, Site::start().await);
    let args = json!({
        "url": site.url("/submit"),
        "method": "POST",
        "headers": {"Content-Type": "application/json", "X-Token": "t0ken", "Authorization": "Bearer abc", "Cookie": "a=b"},
        "body": "{\"n\": 1}",
    });
    let out = results(&h, Autonomy::Full, vec![args]).await;
    assert_eq!(out, ["HTTP 201 Created (text/plain, 7 B)\n\ncreated"]);
    let seen = site.requests();
    assert_eq!(seen.len(), 1);
    let (method, headers, body) = &seen[0];
    assert_eq!((method.as_str(), body.as_str()), ("POST", "{\"n\": 1}"));
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(headers["x-token"], "t0ken");
    assert_eq!(headers["authorization"], "Bearer abc");
    assert_eq!(headers["cookie"], "a=b");
    assert_eq!(headers["host"], site.addr.to_string());
    assert!(headers["user-agent"].to_str().unwrap().starts_with("routines/"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_statuses_fail_with_the_body_as_partial_output() {
    let (h, site) = (Harness::new().await, Site::start().await);
    let out = results(&h, Autonomy::Supervised, vec![json!({"url": site.url("/missing")})]).await;
    assert_eq!(out, ["[failed] HTTP 404 Not Found (text/plain, 12 B)\n[partial output]\nno such page"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_public_hosts_are_refused_before_any_connection() {
    let h = Harness::new().await;
    // A bare listener that reports every connection it accepts.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, mut accepted) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((_, peer)) = listener.accept().await {
            let _ = tx.send(peer);
        }
    });
    let cases = [
        (
            format!("http://127.0.0.1:{port}/"),
            format!("http://127.0.0.1:{port}/ is refused: 127.0.0.1 is a loopback address; {HINT}"),
        ),
        (
            format!("http://[::1]:{port}/"),
            format!("http://[::1]:{port}/ is refused: ::1 is a loopback address; {HINT}"),
        ),
        ("http://10.0.0.1/".into(), format!("http://10.0.0.1/ is refused: 10.0.0.1 is a private address; {HINT}")),
        (
            "http://169.254.169.254/latest/meta-data/".into(),
            format!(
                "http://169.254.169.254/latest/meta-data/ is refused: 169.254.169.254 is the cloud metadata address (link-local); {HINT}"
            ),
        ),
        (
            format!("http://localhost:{port}/"),
            format!("http://localhost:{port}/ is refused: localhost resolves to 127.0.0.1, a loopback address; {HINT}"),
        ),
        (
            format!("http://2130706433:{port}/"),
            format!("http://127.0.0.1:{port}/ is refused: 127.0.0.1 is a loopback address; {HINT}"),
        ),
        ("http://2130706433/".into(), format!("http://127.0.0.1/ is refused: 127.0.0.1 is a loopback address; {HINT}")),
        (
            format!("http://0.0.0.0:{port}/"),
            format!("http://0.0.0.0:{port}/ is refused: 0.0.0.0 is the unspecified address; {HINT}"),
        ),
        (
            "http://metadata.google.internal/computeMetadata/v1/".into(),
            format!(
                "http://metadata.google.internal/computeMetadata/v1/ is refused: metadata.google.internal is a cloud metadata service; {HINT}"
            ),
        ),
        (
            format!("ftp://127.0.0.1:{port}/file"),
            format!("ftp://127.0.0.1:{port}/file is refused: only http and https URLs can be fetched, not ftp"),
        ),
    ];
    h.mock.push_all([
        tool_calls(cases.iter().map(|(url, _)| ("http_request", json!({"url": url}))).collect()),
        text("all refused"),
    ]);
    let mut agent = h.agent(Autonomy::Full, |_, _| {});
    assert_eq!(agent.process_message("fetch them").await.unwrap(), "all refused");
    let reqs = h.mock.requests();
    h.mock.assert_clean();
    let msgs = reqs[1]["messages"].as_array().unwrap();
    let got: Vec<&str> = msgs[msgs.len() - cases.len()..].iter().map(|m| m["content"].as_str().unwrap()).collect();
    let want: Vec<String> = cases.iter().map(|(_, reason)| format!("[failed] {reason}")).collect();
    assert_eq!(got, want);
    // Nothing connected: the first connection the listener accepts is this one.
    let probe = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    assert_eq!(accepted.recv().await, Some(probe.local_addr().unwrap()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_to_refused_hosts_are_not_followed() {
    let (h, site) = (Harness::new().await, Site::start().await);
    let out = results(&h, Autonomy::Supervised, vec![json!({"url": site.url("/go")})]).await;
    let port = site.addr.port();
    assert_eq!(
        out,
        [format!(
            "[failed] http://127.0.0.1:{port}/go redirected (302 Found) to another URL: http://localhost:{port}/secret is refused: localhost resolves to 127.0.0.1, a loopback address; {HINT}"
        )]
    );
    assert_eq!(site.seen.secret_hits.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_do_not_follow_a_redirect_to_another_origin() {
    let (h, a, b) = (Harness::new().await, Site::start().await, Site::start().await);
    let headers = json!({"Authorization": "Bearer abc", "Cookie": "a=b", "X-Plain": "1"});
    // 307: the method and the body are kept.
    let post = |to: &str| {
        let url = format!("{}?to={to}", a.url("/redirect"));
        json!({"url": url, "method": "POST", "headers": headers, "body": "payload"})
    };
    let out = results(&h, Autonomy::Full, vec![post("/echo"), post(&b.url("/echo"))]).await;
    let created = "HTTP 201 Created (text/plain, 7 B)\n\ncreated";
    assert_eq!(out, [created, created]);
    let (same, other) = (&a.requests()[0], &b.requests()[0]);
    assert_eq!((same.0.as_str(), same.2.as_str()), ("POST", "payload"));
    assert_eq!((other.0.as_str(), other.2.as_str()), ("POST", "payload"));
    assert_eq!(same.1["authorization"], "Bearer abc");
    assert_eq!(same.1["cookie"], "a=b");
    assert!(other.1.get("authorization").is_none() && other.1.get("cookie").is_none(), "{:?}", other.1);
    assert_eq!(other.1["x-plain"], "1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_over_one_mib_are_cut_with_a_note() {
    let (h, site) = (Harness::new().await, Site::start().await);
    let calls = vec![json!({"url": site.url("/big")})];
    // The tool's own cap, not the model's context (`agent/budget`): a window that holds it all.
    let tweak = |o: &mut AgentOptions, _: &mut ProviderOptions| {
        o.max_result_chars = 2 * MIB;
        o.context_window = Some(10 * MIB as u32);
    };
    let out = results_with(&h, Autonomy::Supervised, tweak, allow_loopback, calls).await;
    let want = format!("HTTP 200 OK (text/plain, first 1.0 MB; the rest was not read)\n\n{}", "x".repeat(MIB));
    assert!(out[0] == want, "{} characters: {}", out[0].len(), &out[0][..100]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_server_times_out() {
    let (h, site) = (Harness::new().await, Site::start().await);
    let url = site.url("/hang");
    let out = results(&h, Autonomy::Supervised, vec![json!({"url": url, "timeout_secs": 1})]).await;
    assert_eq!(
        out,
        [format!(
            "[failed] GET {url} timed out after 1 s without a complete answer; the server may be slow or down (timeout_secs can be raised to 120)"
        )]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_agents_may_get_but_not_post() {
    let (h, site) = (Harness::new().await, Site::start().await);
    let out = results(
        &h,
        Autonomy::ReadOnly,
        vec![json!({"url": site.url("/data")}), json!({"url": site.url("/submit"), "method": "POST", "body": "x"})],
    )
    .await;
    assert_eq!(
        out,
        [
            format!("HTTP 200 OK (application/json, 24 B)\n\n{JSON}"),
            "[failed] http_request changes things and the autonomy level is read_only; use a read-only tool or report what you would do".to_string(),
        ]
    );
    assert!(site.requests().is_empty());
    let first = &h.mock.requests()[0];
    let tools: Vec<&str> =
        first["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert!(tools.contains(&"http_request"), "{tools:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirect_loops_closed_ports_bad_urls_and_host_headers_fail_clearly() {
    let (h, site) = (Harness::new().await, Site::start().await);
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap();
    let calls = vec![
        json!({"url": site.url("/loop")}),
        json!({"url": format!("http://{closed}/")}),
        json!({"url": "example.com/page"}),
        json!({"url": site.url("/page"), "headers": {"Host": "example.com"}}),
    ];
    let out = results(&h, Autonomy::Supervised, calls).await;
    assert_eq!(out[0], format!("[failed] stopped after 5 redirects; the last one pointed to {}", site.url("/loop")));
    assert!(
        out[1].starts_with(&format!("[failed] GET http://{closed}/ failed: could not connect to 127.0.0.1: ")),
        "{}",
        out[1]
    );
    assert_eq!(
        out[2..],
        [
            "[failed] `example.com/page` is not a valid URL (relative URL without a base); give a full URL with its scheme, e.g. https://example.com/page",
            "[failed] the Host header cannot be set: the request always names the URL's host; put the host in the URL",
        ]
    );
}
