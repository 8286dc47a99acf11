//! Who may see the status page (SPEC §11, `server.token_env`).
//!
//! With a token, a request passes with `Authorization: Bearer <token>` or
//! with the session cookie. `?token=<token>` in the address, once, sets the
//! cookie (HttpOnly, SameSite=Strict) and redirects to the same address
//! without the token, so it stays out of the history, bookmarks and logs.
//! The cookie holds a hash of the token, not the token: the browser never
//! stores the secret, and a new token ends every old session. Everything is
//! compared in constant time.
//!
//! Without a token the page is open, for a daemon listening on loopback
//! only (`validate` refuses anything else). It then answers only requests
//! whose `Host` is a loopback name: a web page the owner visits cannot point
//! its own domain at 127.0.0.1 and read the status page (DNS rebinding).

use std::net::IpAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use percent_encoding::percent_decode_str;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::config::Secret;

/// The name of the session cookie.
pub const COOKIE_NAME: &str = "routines_status";

/// The query parameter that carries the token once.
const TOKEN_PARAM: &str = "token";

/// How long the session cookie lasts (30 days); a new token ends it sooner.
const COOKIE_MAX_AGE_SECS: u64 = 30 * 24 * 3600;

/// What the guard checks requests against.
struct Gate {
    token: Option<Secret>,
    /// The cookie value that stands for the token.
    session: Option<String>,
}

/// Puts `router` behind the token: every request needs it (see the module
/// docs); with `None`, only requests to a loopback host name are answered.
/// The daemon puts `/metrics` behind it too.
pub fn guard<S: Clone + Send + Sync + 'static>(router: Router<S>, token: Option<Secret>) -> Router<S> {
    let session = token.as_ref().map(session_value);
    let gate = Arc::new(Gate { token, session });
    router.layer(axum::middleware::from_fn_with_state(gate, check))
}

async fn check(State(gate): State<Arc<Gate>>, request: Request, next: Next) -> Response {
    let (Some(token), Some(session)) = (&gate.token, &gate.session) else {
        if host_is_loopback(request.headers()) {
            return next.run(request).await;
        }
        return refuse(StatusCode::FORBIDDEN, FORBIDDEN_PAGE);
    };
    let query = request.uri().query().unwrap_or("");
    if let Some((presented, rest)) = take_token(query) {
        if !same(&presented, token.expose()) {
            return refuse(StatusCode::UNAUTHORIZED, UNAUTHORIZED_PAGE);
        }
        return sign_in(request.uri().path(), &rest, session);
    }
    let headers = request.headers();
    let by_bearer = bearer(headers).is_some_and(|b| same(b, token.expose()));
    let by_cookie = cookie(headers, COOKIE_NAME).is_some_and(|c| same(c, session));
    if by_bearer || by_cookie {
        return next.run(request).await;
    }
    refuse(StatusCode::UNAUTHORIZED, UNAUTHORIZED_PAGE)
}

/// Constant-time equality: both sides are hashed first, so neither the
/// contents nor the length of the secret shows in the time taken.
fn same(presented: &str, expected: &str) -> bool {
    let a = Sha256::digest(presented.as_bytes());
    let b = Sha256::digest(expected.as_bytes());
    a.ct_eq(&b).into()
}

/// The cookie value for `token`: SHA-256 of a fixed label and the token.
/// One-way, so the cookie does not reveal the token.
fn session_value(token: &Secret) -> String {
    let mut hash = Sha256::new();
    hash.update(b"routines status page session v1\0");
    hash.update(token.expose().as_bytes());
    hex::encode(hash.finalize())
}

/// The token of `Authorization: Bearer <token>`.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, rest) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
}

/// The value of cookie `name`.
fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find_map(|(k, v)| (k == name).then_some(v))
}

/// The token given in `query`, and the query without it (still encoded).
fn take_token(query: &str) -> Option<(String, String)> {
    let mut token = None;
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if decode(key) == TOKEN_PARAM {
            token = Some(decode(value));
        } else {
            rest.push(pair);
        }
    }
    token.map(|t| (t, rest.join("&")))
}

/// Decodes one `application/x-www-form-urlencoded` component.
fn decode(s: &str) -> String {
    percent_decode_str(&s.replace('+', " ")).decode_utf8_lossy().into_owned()
}

/// 303 to `path?rest` with the session cookie set.
fn sign_in(path: &str, rest: &str, session: &str) -> Response {
    // `//host` or `/\host` would leave the site: only a plain path stays.
    let path = if path.starts_with("//") || path.starts_with("/\\") || !path.starts_with('/') { "/" } else { path };
    let location = if rest.is_empty() { path.to_string() } else { format!("{path}?{rest}") };
    let cookie = format!("{COOKIE_NAME}={session}; Path=/; Max-Age={COOKIE_MAX_AGE_SECS}; HttpOnly; SameSite=Strict");
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    match (HeaderValue::from_str(&location), HeaderValue::from_str(&cookie)) {
        (Ok(location), Ok(cookie)) => {
            headers.insert(header::LOCATION, location);
            headers.insert(header::SET_COOKIE, cookie);
            response
        }
        // The path came from a parsed URI and the cookie is hex: both are
        // valid header values; answer plainly if that ever changes.
        _ => refuse(StatusCode::BAD_REQUEST, UNAUTHORIZED_PAGE),
    }
}

fn refuse(status: StatusCode, page: &'static str) -> Response {
    let mut response = (status, Html(page)).into_response();
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"routines\""));
    }
    response
}

/// Whether the request is addressed to a loopback name (`localhost`,
/// `127.0.0.0/8`, `[::1]`), or names no host at all (not a browser).
fn host_is_loopback(headers: &HeaderMap) -> bool {
    let Some(host) = headers.get(header::HOST) else { return true };
    let Ok(host) = host.to_str() else { return false };
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _port)| name),
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

const UNAUTHORIZED_PAGE: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Token needed · routines</title><link rel="icon" href="data:,"><link rel="stylesheet" href="/static/style.css"></head>
<body><main class="narrow"><h1>This status page needs its token</h1>
<p>Open it once with the token in the address, <code>/?token=…</code>, using the value of the variable that
<code>server.token_env</code> names in <code>routines.yaml</code>. The page then keeps you signed in with a cookie
and takes the token out of the address.</p>
<p>Scripts and <code>/metrics</code> send <code>Authorization: Bearer …</code> instead.</p></main></body></html>
"#;

const FORBIDDEN_PAGE: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Not here · routines</title><link rel="icon" href="data:,"><link rel="stylesheet" href="/static/style.css"></head>
<body><main class="narrow"><h1>Open the status page on this machine</h1>
<p>Without <code>server.token_env</code> the status page answers only at a loopback address, such as
<code>http://127.0.0.1:8787/</code> or <code>http://localhost:8787/</code>. To reach it under another name,
set <code>server.token_env</code> in <code>routines.yaml</code>.</p></main></body></html>
"#;

#[cfg(test)]
mod tests;
