use axum::http::HeaderMap;

use super::*;

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(), HeaderValue::from_str(v).unwrap());
    }
    h
}

#[test]
fn the_token_is_taken_out_of_the_query_and_the_rest_kept_as_sent() {
    assert_eq!(take_token(""), None);
    assert_eq!(take_token("status=failed"), None);
    assert_eq!(take_token("token=abc"), Some(("abc".into(), String::new())));
    assert_eq!(
        take_token("routine=daily%2Dreport&token=a%2Bb+c&status=failed"),
        Some(("a+b c".into(), "routine=daily%2Dreport&status=failed".into()))
    );
    // An encoded name is the same parameter.
    assert_eq!(take_token("t%6Fken=x&a=1"), Some(("x".into(), "a=1".into())));
}

#[test]
fn bearer_and_cookie_are_read_as_sent() {
    let h = headers(&[("authorization", "bearer  s3cret "), ("cookie", "a=1; routines_status=abc; b=2")]);
    assert_eq!(bearer(&h), Some("s3cret"));
    assert_eq!(cookie(&h, COOKIE_NAME), Some("abc"));
    assert_eq!(bearer(&headers(&[("authorization", "Basic dXNlcjpwYXNz")])), None);
    assert_eq!(cookie(&headers(&[("cookie", "routines_status_x=1")]), COOKIE_NAME), None);
}

#[test]
fn comparison_is_exact() {
    assert!(same("token", "token"));
    assert!(!same("token", "token "));
    assert!(!same("", "token"));
    assert!(!same("tokeN", "token"));
}

#[test]
fn the_session_cookie_stands_for_the_token_without_holding_it() {
    let a = session_value(&Secret::new("first-token"));
    assert_eq!(a.len(), 64);
    assert!(!a.contains("first-token"));
    assert_eq!(a, session_value(&Secret::new("first-token")), "stable across restarts");
    assert_ne!(a, session_value(&Secret::new("second-token")), "a new token ends old sessions");
}

#[test]
fn loopback_host_names() {
    let host = |h: &str| host_is_loopback(&headers(&[("host", h)]));
    for ok in ["localhost", "LOCALHOST:8787", "127.0.0.1", "127.0.0.1:8787", "127.1.2.3:80", "[::1]:8787", "[::1]"] {
        assert!(host(ok), "{ok}");
    }
    for no in [
        "example.com",
        "attacker.example:8787",
        "10.0.0.1:8787",
        "0.0.0.0:8787",
        "localhost.attacker.example",
        "[::2]:1",
    ] {
        assert!(!host(no), "{no}");
    }
    assert!(host_is_loopback(&HeaderMap::new()), "no Host: not a browser");
}

#[test]
fn sign_in_stays_on_the_site() {
    let location =
        |path: &str, rest: &str| sign_in(path, rest, "abc").headers()[header::LOCATION].to_str().unwrap().to_string();
    assert_eq!(location("/runs", "status=failed"), "/runs?status=failed");
    assert_eq!(location("/", ""), "/");
    assert_eq!(location("//attacker.example/x", ""), "/");
    assert_eq!(location("/\\attacker.example", "a=1"), "/?a=1");
    let response = sign_in("/", "", "abc");
    let cookie = response.headers()[header::SET_COOKIE].to_str().unwrap();
    assert_eq!(cookie, "routines_status=abc; Path=/; Max-Age=2592000; HttpOnly; SameSite=Strict");
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
}
