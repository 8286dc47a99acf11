//! Who may fire a route: an HMAC-SHA256 signature of the raw body or a bearer token, both compared in
//! constant time; and the request headers that carry credentials, which are never passed on.

use std::collections::BTreeMap;
use std::fmt;

use axum::http::{HeaderMap, header};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The header that carries the HMAC-SHA256 signature of the raw body.
const SIGNATURE_HEADER: &str = "x-signature-256";

/// Request headers that are never handed to the engine, because they carry credentials.
const HIDDEN_HEADERS: [&str; 4] = crate::routine::WebhookRequest::HIDDEN_HEADERS;

/// How a route authenticates its callers.
///
/// `Debug` prints the kind of authentication only, never the secret.
#[derive(Clone, PartialEq, Eq)]
pub enum Auth {
    /// The caller sends `X-Signature-256: sha256=<hex>`, the HMAC-SHA256 of the raw body keyed
    /// with this secret.
    Hmac(String),
    /// The caller sends `Authorization: Bearer <token>` with this token.
    Bearer(String),
    /// Every caller is accepted (`auth: none` in the routine file).
    None,
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::Hmac(_) => f.write_str("Hmac(<redacted>)"),
            Auth::Bearer(_) => f.write_str("Bearer(<redacted>)"),
            Auth::None => f.write_str("None"),
        }
    }
}

/// Why a request failed authentication. The messages name what the caller must send, never
/// the expected value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AuthFailure {
    MissingSignature,
    BadSignature,
    MissingToken,
    BadToken,
}

impl AuthFailure {
    pub(super) fn message(self) -> &'static str {
        match self {
            AuthFailure::MissingSignature => {
                "the request is not signed: send `X-Signature-256: sha256=<hex>` with the HMAC-SHA256 of the body"
            }
            AuthFailure::BadSignature => "the X-Signature-256 signature does not match the request body",
            AuthFailure::MissingToken => "the request has no `Authorization: Bearer <token>` header",
            AuthFailure::BadToken => "the bearer token is not valid",
        }
    }
}

/// Checks the credentials of a request. An empty configured secret or token matches nothing.
pub(super) fn check_auth(auth: &Auth, headers: &HeaderMap, body: &[u8]) -> Result<(), AuthFailure> {
    match auth {
        Auth::None => Ok(()),
        Auth::Hmac(secret) => {
            let value = headers.get(SIGNATURE_HEADER).ok_or(AuthFailure::MissingSignature)?;
            let value = value.to_str().map_err(|_| AuthFailure::BadSignature)?.trim();
            let hex_digest = match value.split_at_checked(7) {
                Some((prefix, rest)) if prefix.eq_ignore_ascii_case("sha256=") => rest,
                _ => return Err(AuthFailure::BadSignature),
            };
            let signature = hex::decode(hex_digest).map_err(|_| AuthFailure::BadSignature)?;
            if secret.is_empty() {
                tracing::error!("A webhook route has an empty HMAC secret; every request to it is refused.");
                return Err(AuthFailure::BadSignature);
            }
            let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).map_err(|_| AuthFailure::BadSignature)?;
            mac.update(body);
            // `verify_slice` compares in constant time.
            mac.verify_slice(&signature).map_err(|_| AuthFailure::BadSignature)
        }
        Auth::Bearer(expected) => {
            let value = headers.get(header::AUTHORIZATION).ok_or(AuthFailure::MissingToken)?;
            let value = value.to_str().map_err(|_| AuthFailure::BadToken)?.trim();
            let token = match value.split_once(' ') {
                Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => token.trim(),
                _ => return Err(AuthFailure::MissingToken),
            };
            if expected.is_empty() {
                tracing::error!("A webhook route has an empty bearer token; every request to it is refused.");
                return Err(AuthFailure::BadToken);
            }
            // Comparing digests in constant time hides both the content and the length.
            let same = Sha256::digest(token.as_bytes()).ct_eq(&Sha256::digest(expected.as_bytes()));
            if bool::from(same) { Ok(()) } else { Err(AuthFailure::BadToken) }
        }
    }
}

/// The request headers by lower-case name, without those that carry credentials; repeated headers are
/// joined with `, `.
pub(super) fn visible_headers(headers: &HeaderMap) -> BTreeMap<String, String> {
    let mut visible: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in headers {
        if HIDDEN_HEADERS.contains(&name.as_str()) {
            continue;
        }
        let value = String::from_utf8_lossy(value.as_bytes());
        visible
            .entry(name.as_str().to_owned())
            .and_modify(|joined| {
                joined.push_str(", ");
                joined.push_str(&value);
            })
            .or_insert_with(|| value.into_owned());
    }
    visible
}
