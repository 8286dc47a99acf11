//! `http_request`: fetching a URL within the network rules
//! ([`crate::policy::net`]).
//!
//! Every hop (the URL and each redirect) is checked, and the connection is
//! pinned to the addresses checked. The body is read up to 1 MiB; HTML
//! becomes readable text, JSON and other text come back as they are, binary
//! content is described, not shown. Request headers are never logged.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use reqwest::{StatusCode, Url};
use schemars::JsonSchema;
use serde::Deserialize;

use super::format::human_size;
use super::html_text::html_to_text;
use super::{Tool, ToolContext, ToolError};
use crate::policy::net::{NetError, NetRules, redacted};
use crate::policy::{CallInfo, Effect};

/// Most bytes of a response body read.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// Most redirects followed.
pub const MAX_REDIRECTS: usize = 5;
const DEFAULT_TIMEOUT_SECS: u64 = 30;
const MAX_TIMEOUT_SECS: u64 = 120;
const USER_AGENT: &str = concat!("routines/", env!("CARGO_PKG_VERSION"), " (http_request)");

pub struct HttpRequest;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
pub enum Method {
    #[default]
    #[serde(rename = "GET", alias = "get", alias = "Get")]
    Get,
    #[serde(rename = "POST", alias = "post", alias = "Post")]
    Post,
    #[serde(rename = "PUT", alias = "put", alias = "Put")]
    Put,
    #[serde(rename = "DELETE", alias = "delete", alias = "Delete")]
    Delete,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
        }
    }

    fn to_reqwest(self) -> reqwest::Method {
        match self {
            Method::Get => reqwest::Method::GET,
            Method::Post => reqwest::Method::POST,
            Method::Put => reqwest::Method::PUT,
            Method::Delete => reqwest::Method::DELETE,
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpRequestArgs {
    /// Full http or https URL, e.g. https://example.com/page.
    pub url: String,
    /// GET (default) reads; POST, PUT and DELETE change things and may need approval.
    #[serde(default)]
    #[schemars(with = "Method")]
    pub method: Option<Method>,
    /// Request headers, e.g. {"Accept": "application/json"}.
    pub headers: Option<BTreeMap<String, String>>,
    /// Request body, sent as given (set Content-Type in headers).
    pub body: Option<String>,
    /// Seconds to wait for the whole answer; default 30, at most 120.
    pub timeout_secs: Option<u64>,
}

#[async_trait]
impl Tool for HttpRequest {
    const NAME: &'static str = "http_request";
    type Args = HttpRequestArgs;

    fn description(&self) -> &'static str {
        "Fetch a URL over HTTP(S). Returns the status line and the body: HTML as readable text, JSON and text as is (at most 1 MiB). Private and local addresses are refused."
    }

    fn effect(&self) -> Effect {
        Effect::ReadOnly
    }

    fn info(&self, args: &HttpRequestArgs) -> CallInfo {
        let method = args.method.unwrap_or_default();
        let shown = Url::parse(&args.url).map_or_else(|_| args.url.clone(), |u| redacted(&u));
        let mut info = CallInfo::new(format!("{} {shown}", method.as_str()), Self::NAME);
        if method != Method::Get {
            info.effect = Some(Effect::Mutating);
        }
        info
    }

    async fn call(&self, args: HttpRequestArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let url = Url::parse(args.url.trim()).map_err(|e| {
            ToolError::InvalidArgs(format!(
                "`{}` is not a valid URL ({e}); give a full URL with its scheme, e.g. https://example.com/page",
                args.url
            ))
        })?;
        let method = args.method.unwrap_or_default();
        let secs = args.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS).clamp(1, MAX_TIMEOUT_SECS);
        let request = Hop { method, url, headers: headers(args.headers.as_ref())?, body: args.body };
        let shown = format!("{} {}", method.as_str(), redacted(&request.url));
        let rules = NetRules::new(&ctx.policy.allowed_hosts);
        match tokio::time::timeout(Duration::from_secs(secs), fetch(&rules, request)).await {
            Ok(result) => result,
            Err(_) => Err(ToolError::transient(format!(
                "{shown} timed out after {secs} s without a complete answer; the server may be slow or down (timeout_secs can be raised to {MAX_TIMEOUT_SECS})"
            ))),
        }
    }
}

/// One request on the way: the first, or one after a redirect.
struct Hop {
    method: Method,
    url: Url,
    headers: HeaderMap,
    body: Option<String>,
}

/// The headers the model gave, checked. The Host header may not be set:
/// it would send the request to one host in the name of another.
fn headers(given: Option<&BTreeMap<String, String>>) -> Result<HeaderMap, ToolError> {
    let mut map = HeaderMap::new();
    for (name, value) in given.into_iter().flatten() {
        let parsed = HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| ToolError::InvalidArgs(format!("`{name}` is not a valid HTTP header name")))?;
        if parsed == header::HOST {
            return Err(ToolError::Refused(
                "the Host header cannot be set: the request always names the URL's host; put the host in the URL"
                    .to_string(),
            ));
        }
        if [header::CONTENT_LENGTH, header::TRANSFER_ENCODING, header::CONNECTION].contains(&parsed) {
            return Err(ToolError::InvalidArgs(format!("the {parsed} header is set by http_request; leave it out")));
        }
        // The value is not repeated: it may be a secret.
        let mut value = HeaderValue::from_str(value).map_err(|_| {
            ToolError::InvalidArgs(format!("the value of header `{name}` has line breaks or control characters"))
        })?;
        value.set_sensitive(true);
        map.append(parsed, value);
    }
    Ok(map)
}

async fn fetch(rules: &NetRules, mut hop: Hop) -> Result<String, ToolError> {
    let mut redirected: Option<(Url, StatusCode)> = None;
    for _ in 0..=MAX_REDIRECTS {
        let addrs = rules.vet(&hop.url).await.map_err(|e| match (e, &redirected) {
            (e @ NetError::Refused { .. }, None) => ToolError::Refused(e.to_string()),
            (e @ NetError::Refused { .. }, Some((from, status))) => ToolError::Refused(format!(
                "{} redirected ({}) to another URL: {e}",
                redacted(from),
                status_text(*status)
            )),
            (e, _) => ToolError::failed(format!("{} failed: {e}", redacted(&hop.url))),
        })?;
        let client = client(&hop.url, &addrs)?;
        let mut request = client.request(hop.method.to_reqwest(), hop.url.clone()).headers(hop.headers.clone());
        if let Some(body) = &hop.body {
            request = request.body(body.clone());
        }
        let response = request.send().await.map_err(|e| send_failure(&hop, &e))?;
        let status = response.status();
        tracing::debug!(
            method = hop.method.as_str(),
            host = hop.url.host_str(),
            status = status.as_u16(),
            "http_request"
        );
        let location = response.headers().get(header::LOCATION).and_then(|l| l.to_str().ok());
        let next = match location {
            Some(l) if matches!(status.as_u16(), 301 | 302 | 303 | 307 | 308) => hop.url.join(l).map_err(|e| {
                ToolError::failed(format!("{} redirected to `{l}`, which is not a valid URL ({e})", redacted(&hop.url)))
            })?,
            _ => return respond(response).await,
        };
        redirected = Some((hop.url.clone(), status));
        follow(&mut hop, status, next);
    }
    Err(ToolError::failed(format!(
        "stopped after {MAX_REDIRECTS} redirects; the last one pointed to {}",
        redacted(&hop.url)
    )))
}

/// Turns `hop` into the request a redirect asks for: 301, 302 and 303 go
/// on as a GET without body; credentials are not sent to another origin.
fn follow(hop: &mut Hop, status: StatusCode, next: Url) {
    if matches!(status, StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND | StatusCode::SEE_OTHER) {
        hop.method = Method::Get;
        hop.body = None;
        hop.headers.remove(header::CONTENT_TYPE);
    }
    if next.origin() != hop.url.origin() {
        for name in [header::AUTHORIZATION, header::COOKIE, header::PROXY_AUTHORIZATION] {
            hop.headers.remove(name);
        }
    }
    hop.url = next;
}

/// A client for one hop: no automatic redirects, no proxy (it would resolve
/// names itself), and the host name pinned to the addresses checked.
fn client(url: &Url, addrs: &[SocketAddr]) -> Result<reqwest::Client, ToolError> {
    let mut builder =
        reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).no_proxy().user_agent(USER_AGENT);
    if let Some(domain) = url.domain() {
        builder = builder.resolve_to_addrs(domain, addrs);
    }
    builder.build().map_err(|e| ToolError::System(format!("could not set up the HTTP client: {e}")))
}

fn send_failure(hop: &Hop, e: &reqwest::Error) -> ToolError {
    let shown = format!("{} {}", hop.method.as_str(), redacted(&hop.url));
    let mut cause: &dyn std::error::Error = e;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    // Timeouts, refused or reset connections and answers cut short may pass; a bad URL or a
    // redirect loop will not.
    let transient = e.is_timeout() || e.is_connect() || e.is_request() || e.is_body();
    let message = if e.is_connect() {
        let host = hop.url.host_str().unwrap_or("the host");
        format!("{shown} failed: could not connect to {host}: {cause}")
    } else {
        format!("{shown} failed: {cause}")
    };
    if transient { ToolError::transient(message) } else { ToolError::failed(message) }
}

/// The status line and the body as text; 4xx and 5xx are failures with the
/// body as partial output.
async fn respond(mut response: reqwest::Response) -> Result<String, ToolError> {
    let status = response.status();
    let content_type =
        response.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    let url = response.url().clone();
    let mut body = Vec::new();
    let mut cut = false;
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = MAX_BODY_BYTES - body.len();
                if chunk.len() > room {
                    body.extend_from_slice(&chunk[..room]);
                    cut = true;
                    break;
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(e) => {
                let text = String::from_utf8_lossy(&body).into_owned();
                return Err(ToolError::Transient {
                    message: format!("HTTP {} from {}, then reading the body failed: {e}", status_text(status), url),
                    partial: (!text.is_empty()).then_some(text),
                });
            }
        }
    }
    let essence = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let text = render(&essence, &content_type, &body, &url);
    let size = match (body.is_empty(), cut) {
        (true, _) => "empty body".to_string(),
        (false, true) => format!("first {}; the rest was not read", human_size(body.len() as u64)),
        (false, false) => human_size(body.len() as u64),
    };
    let described = if essence.is_empty() { size } else { format!("{essence}, {size}") };
    let line = format!("HTTP {} ({described})", status_text(status));
    let partial = (!text.is_empty()).then_some(text.clone());
    if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
        return Err(ToolError::Transient { message: line, partial });
    }
    if status.is_client_error() {
        return Err(ToolError::Failed { message: line, partial });
    }
    Ok(if text.is_empty() { line } else { format!("{line}\n\n{text}") })
}

/// The body of an `http_request` result: what follows its status line (`HTTP 200 OK (...)`) and
/// the blank line after it; the whole result when it has no such line.
pub fn body_of(result: &str) -> &str {
    match result.split_once("\n\n") {
        Some((line, body)) if line.starts_with("HTTP ") && !line.contains('\n') => body,
        _ => result,
    }
}

/// The body as the model should read it.
fn render(essence: &str, content_type: &str, body: &[u8], url: &Url) -> String {
    if body.is_empty() {
        return String::new();
    }
    let sniffed_binary = body[..body.len().min(8192)].contains(&0);
    let html = matches!(essence, "text/html" | "application/xhtml+xml");
    let text_like = essence.starts_with("text/")
        || essence.ends_with("json")
        || essence.ends_with("xml")
        || essence.ends_with("+json")
        || essence.ends_with("+xml")
        || matches!(
            essence,
            "application/javascript"
                | "application/x-javascript"
                | "application/ecmascript"
                | "application/x-www-form-urlencoded"
                | "application/yaml"
                | "application/x-yaml"
                | "application/toml"
                | "application/csv"
                | "application/graphql"
                | "application/x-sh"
        );
    if (!text_like && !essence.is_empty()) || sniffed_binary {
        let what = if essence.is_empty() { "binary data" } else { essence };
        return format!("[{what}, {}: binary content, not shown]", human_size(body.len() as u64));
    }
    let text = decode_text(content_type, body);
    let head = text.trim_start().get(..14).unwrap_or("").to_ascii_lowercase();
    if html || (essence.is_empty() && (head.starts_with("<!doctype html") || head.starts_with("<html"))) {
        html_to_text(&text, Some(url))
    } else {
        text
    }
}

/// UTF-8, or Latin-1 when the content type says so.
fn decode_text(content_type: &str, body: &[u8]) -> String {
    let charset = content_type
        .split(';')
        .skip(1)
        .filter_map(|p| p.trim().split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("charset"))
        .map(|(_, v)| v.trim().trim_matches('"').to_ascii_lowercase());
    match charset.as_deref() {
        Some("iso-8859-1" | "latin1" | "latin-1" | "windows-1252") => body.iter().map(|&b| char::from(b)).collect(),
        _ => String::from_utf8_lossy(body).into_owned(),
    }
}

fn status_text(status: StatusCode) -> String {
    match status.canonical_reason() {
        Some(reason) => format!("{} {reason}", status.as_u16()),
        None => status.as_u16().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_body_of_a_result_is_what_follows_its_status_line() {
        let result = "HTTP 200 OK (application/json, 20 B)\n\n{\"db\": \"healthy\"}";
        assert_eq!(body_of(result), "{\"db\": \"healthy\"}");
        assert_eq!(body_of("HTTP 204 No Content (empty body)"), "HTTP 204 No Content (empty body)");
        assert_eq!(body_of("a\nHTTP 200 OK\n\nb"), "a\nHTTP 200 OK\n\nb", "only a first line is a status line");
    }

    fn args(v: serde_json::Value) -> HttpRequestArgs {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn calls_are_described_and_writes_are_mutating() {
        let get = HttpRequest.info(&args(json!({"url": "https://u:pw@example.com/a?b=1"})));
        assert_eq!(get.summary, "GET https://u:***@example.com/a?b=1");
        assert_eq!((get.approval_key.as_str(), get.effect), ("http_request", None));
        let post = HttpRequest.info(&args(json!({"url": "https://example.com/", "method": "post"})));
        assert_eq!((post.summary.as_str(), post.effect), ("POST https://example.com/", Some(Effect::Mutating)));
        let put = HttpRequest.info(&args(json!({"url": "x", "method": "PUT"})));
        assert_eq!((put.summary.as_str(), put.effect), ("PUT x", Some(Effect::Mutating)));
        assert!(serde_json::from_value::<HttpRequestArgs>(json!({"url": "x", "method": "PATCH"})).is_err());
    }

    #[test]
    fn schema_lists_the_methods() {
        use super::super::DynTool;
        let spec = HttpRequest.spec();
        assert_eq!(spec.parameters["required"], json!(["url"]));
        let method = &spec.parameters["properties"]["method"];
        assert_eq!((&method["type"], &method["enum"]), (&json!("string"), &json!(["GET", "POST", "PUT", "DELETE"])));
    }

    #[test]
    fn headers_are_checked() {
        let h = |k: &str, v: &str| headers(Some(&BTreeMap::from([(k.to_string(), v.to_string())])));
        assert!(matches!(h("HOST", "evil"), Err(ToolError::Refused(_))));
        assert_eq!(
            h("Content-Length", "3").unwrap_err(),
            ToolError::InvalidArgs("the content-length header is set by http_request; leave it out".into())
        );
        assert_eq!(
            h("X-Token", "secret\nInjected: 1").unwrap_err(),
            ToolError::InvalidArgs("the value of header `X-Token` has line breaks or control characters".into())
        );
        assert_eq!(h("Authorization", "Bearer t").unwrap()[header::AUTHORIZATION], "Bearer t");
    }

    #[tokio::test]
    async fn connections_go_to_the_checked_addresses_without_asking_dns_again() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf).await;
            s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok").await.unwrap();
        });
        // `.invalid` never resolves: the answer can only come from the pinned address.
        let url = Url::parse(&format!("http://pinned.invalid:{}/", addr.port())).unwrap();
        let response = client(&url, &[addr]).unwrap().get(url).send().await.unwrap();
        assert_eq!(response.text().await.unwrap(), "ok");
    }

    #[test]
    fn bodies_render_by_content_type() {
        let url = Url::parse("http://h/").unwrap();
        assert_eq!(render("application/json", "application/json", b"{\"a\": 1}", &url), "{\"a\": 1}");
        assert_eq!(render("text/html", "text/html", b"<p>a</p><p>b</p>", &url), "a\n\nb");
        assert_eq!(render("", "", b"<!DOCTYPE html><p>x", &url), "x");
        assert_eq!(
            render("image/png", "image/png", &[1; 2048], &url),
            "[image/png, 2.0 KB: binary content, not shown]"
        );
        assert_eq!(render("", "", b"a\0b", &url), "[binary data, 3 B: binary content, not shown]");
        assert_eq!(render("text/plain", "text/plain; charset=ISO-8859-1", b"caf\xe9", &url), "café");
    }
}
