//! Tests of the listener over real HTTP: checks in order, errors, limits and reloads.

use super::*;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

const SECRET: &str = "hook-secret";
const TOKEN: &str = "hook-token";

#[derive(Clone, Copy)]
enum Mode {
    Accept,
    Unavailable,
    Refused,
}

/// Records every enqueue call and answers it according to `mode`.
struct Recorder {
    mode: Mode,
    calls: Mutex<Vec<(String, WebhookRequest)>>,
}

impl Recorder {
    fn calls(&self) -> Vec<(String, WebhookRequest)> {
        self.calls.lock().unwrap().clone()
    }
}

#[async_trait::async_trait]
impl Intake for Recorder {
    async fn enqueue(&self, routine: &str, request: WebhookRequest) -> Result<i64, IntakeError> {
        match self.mode {
            Mode::Accept => {
                let mut calls = self.calls.lock().unwrap();
                calls.push((routine.to_owned(), request));
                Ok(100 + calls.len() as i64)
            }
            Mode::Unavailable => Err(IntakeError::Unavailable("database is locked at /secret/path".into())),
            Mode::Refused => Err(IntakeError::Refused("routine `deploy` is disabled".into())),
        }
    }

    fn metrics(&self) -> String {
        "# TYPE routines_runs_total counter\nroutines_runs_total 7\n".to_owned()
    }
}

struct Server {
    base: String,
    address: std::net::SocketAddr,
    intake: Arc<Recorder>,
    table: RouteTable,
    client: reqwest::Client,
    shutdown: oneshot::Sender<()>,
    task: JoinHandle<std::io::Result<()>>,
}

impl Server {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn post(&self, path: &str, body: &str) -> reqwest::Response {
        self.client.post(self.url(path)).body(body.to_owned()).send().await.unwrap()
    }
}

fn route(routine: &str, path: &str, auth: Auth) -> Route {
    Route { routine: routine.to_owned(), path: path.to_owned(), auth }
}

fn default_routes() -> Vec<Route> {
    vec![
        route("deploy", "/hooks/deploy", Auth::Hmac(SECRET.to_owned())),
        route("bearer", "/hooks/bearer", Auth::Bearer(TOKEN.to_owned())),
        route("open", "/hooks/open", Auth::None),
    ]
}

async fn start_with(routes: Vec<Route>, settings: Settings, mode: Mode) -> Server {
    start_limited(routes, settings, mode, Limits::default()).await
}

async fn start_limited(routes: Vec<Route>, settings: Settings, mode: Mode, limits: Limits) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let intake = Arc::new(Recorder { mode, calls: Mutex::new(Vec::new()) });
    let table = RouteTable::new(routes);
    let app = router(table.clone(), intake.clone(), settings, None);
    let (shutdown, signal) = oneshot::channel::<()>();
    let task = tokio::spawn(serve(
        listener,
        app,
        async move {
            let _ = signal.await;
        },
        limits,
    ));
    Server { base: format!("http://{address}"), address, intake, table, client: reqwest::Client::new(), shutdown, task }
}

async fn start() -> Server {
    start_with(default_routes(), Settings::default(), Mode::Accept).await
}

fn sign(secret: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// Asserts the status and the JSON error shape, and returns the message.
async fn expect_error(response: reqwest::Response, status: u16) -> String {
    assert_eq!(response.status().as_u16(), status);
    let content_type = response.headers().get("content-type").unwrap().to_str().unwrap().to_owned();
    assert_eq!(content_type, "application/json");
    let body: serde_json::Value = response.json().await.unwrap();
    let object = body.as_object().unwrap();
    assert_eq!(object.len(), 1, "{body}");
    object["error"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn signed_request_is_queued_with_its_details() {
    let server = start().await;
    let body = r#"{"ref":"main","commits":2}"#;
    let response = server
        .client
        .post(server.url("/hooks/deploy?a=1&b=two%20words"))
        .header("X-Signature-256", sign(SECRET, body.as_bytes()))
        .header("Authorization", "Bearer unrelated")
        .header("Cookie", "session=1")
        .header("X-Custom", "yes")
        .header("Content-Type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();

    assert_eq!(response.status().as_u16(), 202);
    let answer: serde_json::Value = response.json().await.unwrap();
    assert_eq!(answer, serde_json::json!({ "run_id": 101 }));

    let calls = server.intake.calls();
    assert_eq!(calls.len(), 1);
    let (routine, request) = &calls[0];
    assert_eq!(routine, "deploy");
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/hooks/deploy");
    assert_eq!(request.body, body);
    assert_eq!(request.json, Some(serde_json::json!({ "ref": "main", "commits": 2 })));
    let query: BTreeMap<String, String> =
        [("a", "1"), ("b", "two words")].into_iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect();
    assert_eq!(request.query, query);
    assert_eq!(request.headers.get("x-custom").map(String::as_str), Some("yes"));
    assert_eq!(request.headers.get("content-type").map(String::as_str), Some("application/json"));
    for hidden in ["authorization", "cookie", "x-signature-256"] {
        assert!(!request.headers.contains_key(hidden), "{hidden} was passed on");
    }
}

#[tokio::test]
async fn signature_prefix_is_case_insensitive_and_text_body_has_no_json() {
    let server = start().await;
    let body = "plain text";
    let signature = sign(SECRET, body.as_bytes()).replacen("sha256=", "SHA256=", 1).to_uppercase();
    let response = server
        .client
        .post(server.url("/hooks/deploy"))
        .header("X-Signature-256", signature)
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 202);
    let calls = server.intake.calls();
    assert_eq!(calls[0].1.json, None);
    assert_eq!(calls[0].1.body, body);
}

#[tokio::test]
async fn bad_or_missing_signature_is_refused() {
    let server = start().await;
    let body = "payload";
    for signature in [sign("wrong-secret", body.as_bytes()), sign(SECRET, b"other body"), "sha256=zz".into()] {
        let response = server
            .client
            .post(server.url("/hooks/deploy"))
            .header("X-Signature-256", signature)
            .body(body)
            .send()
            .await
            .unwrap();
        let message = expect_error(response, 401).await;
        assert!(!message.contains(SECRET));
    }
    let message = expect_error(server.post("/hooks/deploy", body).await, 401).await;
    assert!(message.contains("X-Signature-256"), "{message}");
    assert!(server.intake.calls().is_empty());
}

#[tokio::test]
async fn bearer_token_is_checked() {
    let server = start().await;
    let good = server.client.post(server.url("/hooks/bearer")).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(good.status().as_u16(), 202);

    let bad = server.client.post(server.url("/hooks/bearer")).bearer_auth("hook-tokem").send().await.unwrap();
    assert_eq!(bad.headers().get("www-authenticate").unwrap(), "Bearer");
    let message = expect_error(bad, 401).await;
    assert!(!message.contains(TOKEN));

    let missing = server.post("/hooks/bearer", "").await;
    expect_error(missing, 401).await;
    let basic = server.client.post(server.url("/hooks/bearer")).basic_auth("user", Some(TOKEN)).send().await;
    expect_error(basic.unwrap(), 401).await;

    assert_eq!(server.intake.calls().len(), 1);
}

#[tokio::test]
async fn auth_none_accepts_any_request() {
    let server = start().await;
    let response = server.post("/hooks/open", "").await;
    assert_eq!(response.status().as_u16(), 202);
    assert_eq!(server.intake.calls()[0].0, "open");
}

#[tokio::test]
async fn body_at_the_limit_is_accepted_and_one_byte_more_is_refused() {
    let server = start().await;
    let limit = Settings::default().body_limit;
    let response = server.client.post(server.url("/hooks/open")).body(vec![b'a'; limit]).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 202);

    let response = server.client.post(server.url("/hooks/open")).body(vec![b'a'; limit + 1]).send().await.unwrap();
    let message = expect_error(response, 413).await;
    assert!(message.contains("1 MiB"), "{message}");
    assert_eq!(server.intake.calls().len(), 1);
}

/// Sends `head` (and `body`) on a raw connection and returns the response head.
async fn raw_exchange(server: &Server, head: &str, body: &[u8]) -> String {
    let mut stream = TcpStream::connect(server.address).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    let mut response = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let read = stream.read(&mut buffer).await.unwrap();
        response.extend_from_slice(&buffer[..read]);
        if read == 0 || response.windows(4).any(|window| window == b"\r\n\r\n") {
            break;
        }
    }
    String::from_utf8(response).unwrap()
}

#[tokio::test]
async fn declared_oversize_body_is_refused_before_it_is_sent() {
    let server = start().await;
    // The body never follows, so only a decision from Content-Length can answer.
    let head = "POST /hooks/open HTTP/1.1\r\nHost: test\r\nContent-Length: 10000000\r\n\r\n";
    let response = raw_exchange(&server, head, b"").await;
    assert!(response.starts_with("HTTP/1.1 413"), "{response}");
    assert!(server.intake.calls().is_empty());
}

#[tokio::test]
async fn chunked_oversize_body_is_refused() {
    let server = start().await;
    let limit = Settings::default().body_limit;
    let head = "POST /hooks/open HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n";
    let mut body = format!("{limit:x}\r\n").into_bytes();
    body.extend(vec![b'a'; limit]);
    body.extend_from_slice(b"\r\n1\r\na\r\n0\r\n\r\n");
    let response = raw_exchange(&server, head, &body).await;
    assert!(response.starts_with("HTTP/1.1 413"), "{response}");
    assert!(server.intake.calls().is_empty());
}

#[tokio::test]
async fn burst_over_the_rate_limit_is_answered_429() {
    // One token per 1000 s: nothing refills while the test runs.
    let settings = Settings { rate_per_second: 0.001, burst: 5, ..Settings::default() };
    let server = start_with(default_routes(), settings, Mode::Accept).await;
    let mut requests = tokio::task::JoinSet::new();
    for _ in 0..20 {
        let request = server.client.post(server.url("/hooks/open")).send();
        requests.spawn(async move { request.await.unwrap() });
    }
    let (mut accepted, mut limited) = (0, 0);
    while let Some(response) = requests.join_next().await {
        let response = response.unwrap();
        match response.status().as_u16() {
            202 => accepted += 1,
            429 => {
                let retry_after: u64 = response.headers()["retry-after"].to_str().unwrap().parse().unwrap();
                assert!(retry_after >= 1);
                expect_error(response, 429).await;
                limited += 1;
            }
            other => panic!("unexpected status {other}"),
        }
    }
    assert_eq!((accepted, limited), (5, 15));
    assert_eq!(server.intake.calls().len(), accepted);

    // Another route has its own bucket.
    let other = server.client.post(server.url("/hooks/bearer")).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(other.status().as_u16(), 202);
}

#[test]
fn bucket_refills_at_the_configured_rate() {
    let start = Instant::now();
    let mut bucket = Bucket::full(2, start);
    assert_eq!(bucket.take(0.5, 2, start), Ok(()));
    assert_eq!(bucket.take(0.5, 2, start), Ok(()));
    assert_eq!(bucket.take(0.5, 2, start), Err(2));
    assert_eq!(bucket.take(0.5, 2, start + Duration::from_secs(1)), Err(1));
    assert_eq!(bucket.take(0.5, 2, start + Duration::from_secs(2)), Ok(()));
    // Idle time never fills the bucket past its capacity.
    let later = start + Duration::from_secs(3600);
    assert_eq!(bucket.take(0.5, 2, later), Ok(()));
    assert_eq!(bucket.take(0.5, 2, later), Ok(()));
    assert_eq!(bucket.take(0.5, 2, later), Err(2));
    // A vanishing rate saturates instead of overflowing.
    assert_eq!(Bucket::full(0, start).take(1e-300, 1, start), Err(u64::MAX));
}

#[tokio::test]
async fn unknown_path_is_404_and_wrong_method_is_405() {
    let server = start().await;
    expect_error(server.post("/hooks/nothing", "").await, 404).await;
    expect_error(server.client.get(server.url("/")).send().await.unwrap(), 404).await;

    let response = server.client.get(server.url("/hooks/deploy")).send().await.unwrap();
    assert_eq!(response.headers()["allow"], "POST");
    expect_error(response, 405).await;

    let response = server.post("/healthz", "").await;
    assert_eq!(response.headers()["allow"], "GET, HEAD");
    expect_error(response, 405).await;
    assert!(server.intake.calls().is_empty());
}

#[tokio::test]
async fn healthz_and_metrics_answer() {
    let server = start().await;
    let health = server.client.get(server.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status().as_u16(), 200);
    assert_eq!(health.json::<serde_json::Value>().await.unwrap(), serde_json::json!({ "status": "ok" }));

    let metrics = server.client.get(server.url("/metrics")).send().await.unwrap();
    assert_eq!(metrics.status().as_u16(), 200);
    let content_type = metrics.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(content_type.starts_with("text/plain; version=0.0.4"), "{content_type}");
    assert_eq!(metrics.text().await.unwrap(), server.intake.metrics());
}

#[tokio::test]
async fn replaced_routes_apply_to_the_next_request() {
    let server = start().await;
    expect_error(server.post("/hooks/new", "").await, 404).await;

    server.table.replace(vec![route("fresh", "/hooks/new", Auth::None)]);
    assert_eq!(server.post("/hooks/new", "").await.status().as_u16(), 202);
    expect_error(server.post("/hooks/open", "").await, 404).await;
    assert_eq!(server.intake.calls()[0].0, "fresh");
}

#[tokio::test]
async fn intake_errors_map_to_503_and_409() {
    let server = start_with(default_routes(), Settings::default(), Mode::Unavailable).await;
    let message = expect_error(server.post("/hooks/open", "").await, 503).await;
    assert!(!message.contains("/secret/path"), "{message}");

    let server = start_with(default_routes(), Settings::default(), Mode::Refused).await;
    let message = expect_error(server.post("/hooks/open", "").await, 409).await;
    assert_eq!(message, "routine `deploy` is disabled");
}

#[tokio::test]
async fn serve_returns_after_shutdown() {
    let server = start().await;
    assert_eq!(server.post("/hooks/open", "").await.status().as_u16(), 202);
    drop(server.client);
    server.shutdown.send(()).unwrap();
    server.task.await.unwrap().unwrap();
}

#[test]
fn debug_output_hides_secrets() {
    let shown = format!("{:?}", route("deploy", "/hooks/deploy", Auth::Hmac(SECRET.to_owned())));
    assert!(!shown.contains(SECRET), "{shown}");
    assert!(!format!("{:?}", Auth::Bearer(TOKEN.to_owned())).contains(TOKEN));
}

// ---- slow and idle clients ----

/// Reads from `stream` until the server closes it (or it errors); how long that took.
async fn closed_after(mut stream: tokio::net::TcpStream) -> (std::time::Duration, Vec<u8>) {
    let started = std::time::Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout(std::time::Duration::from_secs(10), stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (started.elapsed(), got),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => panic!("the server kept a stalled connection open"),
        }
    }
}

fn short() -> Limits {
    Limits { read_timeout: std::time::Duration::from_millis(300), max_connections: 8 }
}

#[tokio::test]
async fn half_sent_headers_and_bodies_are_cut_off_at_the_read_timeout() {
    let server = start_limited(default_routes(), Settings::default(), Mode::Accept, short()).await;
    let mut headers = tokio::net::TcpStream::connect(server.address).await.unwrap();
    headers.write_all(b"POST /hooks/deploy HTTP/1.1\r\nHost: x\r\n").await.unwrap();
    let (_, got) = closed_after(headers).await;
    assert!(got.is_empty() || String::from_utf8_lossy(&got).contains("408"), "{}", String::from_utf8_lossy(&got));
    let mut body = tokio::net::TcpStream::connect(server.address).await.unwrap();
    body.write_all(b"POST /hooks/deploy HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"a\":").await.unwrap();
    let (_, got) = closed_after(body).await;
    assert!(String::from_utf8_lossy(&got).starts_with("HTTP/1.1 408"), "{}", String::from_utf8_lossy(&got));
    assert!(server.intake.calls.lock().unwrap().is_empty(), "nothing half-sent was accepted");
}

#[tokio::test]
async fn beyond_the_connection_cap_a_connection_is_closed_and_healthz_answers_once_idle_ones_time_out() {
    let server = start_limited(default_routes(), Settings::default(), Mode::Accept, short()).await;
    let mut idle = Vec::new();
    for _ in 0..8 {
        idle.push(tokio::net::TcpStream::connect(server.address).await.unwrap());
    }
    // Let the server take them all before the one too many.
    let one_more = loop {
        let s = tokio::net::TcpStream::connect(server.address).await.unwrap();
        let (took, got) = closed_after(s).await;
        if took < std::time::Duration::from_millis(200) && got.is_empty() {
            break true;
        }
    };
    assert!(one_more, "a connection over the cap was refused at once");
    // The idle ones end at the read timeout, and then the service answers again.
    for s in idle {
        closed_after(s).await;
    }
    let health = server.client.get(server.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
}
