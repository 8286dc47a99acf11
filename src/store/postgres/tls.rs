//! TLS to PostgreSQL, as libpq's `sslmode` and `sslrootcert` say in the URL
//! (`postgres://…/db?sslmode=verify-full&sslrootcert=/etc/ssl/db-ca.pem`).
//!
//! tokio-postgres knows `disable`, `prefer` and `require`, and checks nothing itself; the
//! checking is the connector's (tokio-postgres-rustls over rustls with *ring*). So the URL's
//! TLS options are taken out here and mapped, with libpq's meaning:
//!
//! | `sslmode` | TLS | the server's certificate |
//! |---|---|---|
//! | `disable` | never | — |
//! | `allow`, `prefer` (the default) | when the server offers it | not checked |
//! | `require` | always | not checked; with `sslrootcert`, its chain is (as `verify-ca`) |
//! | `verify-ca` | always | chain to `sslrootcert`, or to the system's roots |
//! | `verify-full` | always | that, and the host name |
//!
//! (libpq's `allow` tries without TLS first; here it is `prefer`, which tries TLS first.)
//! Without `sslrootcert`, `verify-*` use the system's root certificates (libpq would look for
//! `~/.postgresql/root.crt`).

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

/// Why the URL's TLS options cannot be used. It becomes the `why` of
/// `StoreError::BadPostgresUrl` (exit code 1, with the hint to check the URL's options).
#[derive(Debug, thiserror::Error)]
pub(super) enum TlsError {
    #[error("sslmode `{0}` is not one of disable, allow, prefer, require, verify-ca, verify-full")]
    UnknownMode(String),
    #[error("sslrootcert: cannot read {}: {source}", path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    #[error("sslrootcert: {} holds no PEM certificate", path.display())]
    NoCertificate { path: PathBuf },
    #[error("sslrootcert: {}: {source}", path.display())]
    BadCertificate {
        path: PathBuf,
        #[source]
        source: rustls::Error,
    },
    #[error(
        "no system root certificates were found to check the server's certificate; set sslrootcert to the CA \
         certificate of the server"
    )]
    NoSystemRoots,
    #[error("TLS could not be set up: {0}")]
    Setup(String),
}

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    Disable,
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// The TLS options of a URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Tls {
    pub mode: Mode,
    pub root_cert: Option<PathBuf>,
}

/// The URL for tokio-postgres (its `sslmode` one it knows, no `sslrootcert`) and the TLS options
/// it had; `Err` says what is wrong with them.
pub(super) fn split(url: &str) -> Result<(String, Tls), TlsError> {
    let mut tls = Tls { mode: Mode::Prefer, root_cert: None };
    let Some((base, query)) = url.split_once('?') else { return Ok((url.to_string(), tls)) };
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "sslmode" => {
                tls.mode = match decode(value).as_str() {
                    "disable" => Mode::Disable,
                    "allow" => Mode::Allow,
                    "prefer" => Mode::Prefer,
                    "require" => Mode::Require,
                    "verify-ca" => Mode::VerifyCa,
                    "verify-full" => Mode::VerifyFull,
                    other => return Err(TlsError::UnknownMode(other.to_string())),
                };
            }
            "sslrootcert" => tls.root_cert = Some(PathBuf::from(decode(value))),
            _ => kept.push(pair.to_string()),
        }
    }
    let mode = match tls.mode {
        Mode::Disable => "disable",
        Mode::Allow | Mode::Prefer => "prefer",
        Mode::Require | Mode::VerifyCa | Mode::VerifyFull => "require",
    };
    kept.push(format!("sslmode={mode}"));
    Ok((format!("{base}?{}", kept.join("&")), tls))
}

/// `%XX` escapes decoded (a path in a URL); anything else as it is.
fn decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).and_then(|b| hex(*b)), bytes.get(i + 2).and_then(|b| hex(*b))) {
            (b'%', Some(hi), Some(lo)) => {
                out.push(u8::try_from(hi * 16 + lo).unwrap_or(b'?'));
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The connector for `tls`; `Err` says why it cannot be made (an unreadable `sslrootcert`).
pub(super) fn connector(tls: &Tls) -> Result<MakeRustlsConnect, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier: Arc<dyn ServerCertVerifier> = match (tls.mode, &tls.root_cert) {
        (Mode::Disable | Mode::Allow | Mode::Prefer | Mode::Require, None) => {
            Arc::new(Unchecked { provider: provider.clone() })
        }
        (Mode::VerifyFull, root) => webpki(roots(root.as_ref())?, &provider)?,
        (_, root) => Arc::new(ChainOnly(webpki(roots(root.as_ref())?, &provider)?)),
    };
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Setup(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// The certificates of `sslrootcert`, or the system's roots.
fn roots(file: Option<&PathBuf>) -> Result<RootCertStore, TlsError> {
    let mut store = RootCertStore::empty();
    match file {
        Some(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|source| TlsError::Unreadable { path: path.clone(), source })?;
            if certs.is_empty() {
                return Err(TlsError::NoCertificate { path: path.clone() });
            }
            for cert in certs {
                store.add(cert).map_err(|source| TlsError::BadCertificate { path: path.clone(), source })?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(found.certs);
            if store.is_empty() {
                return Err(TlsError::NoSystemRoots);
            }
        }
    }
    Ok(store)
}

fn webpki(roots: RootCertStore, provider: &Arc<CryptoProvider>) -> Result<Arc<WebPkiServerVerifier>, TlsError> {
    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| TlsError::Setup(e.to_string()))
}

/// `prefer` and `require` without a root certificate: the connection is encrypted, the server
/// not authenticated (libpq's meaning). The handshake's signatures are still checked.
#[derive(Debug)]
struct Unchecked {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca`: the chain must lead to a trusted root; the host name is not compared.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.0.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tls_options_are_taken_out_of_the_url_and_mapped_to_what_tokio_postgres_knows() {
        let (url, tls) = split("postgres://u:p@db:5432/x").unwrap();
        assert_eq!((url.as_str(), tls.mode, tls.root_cert), ("postgres://u:p@db:5432/x", Mode::Prefer, None));

        let (url, tls) =
            split("postgres://u@db/x?application_name=r&sslmode=verify-full&sslrootcert=%2Fetc%2Fdb%20ca.pem").unwrap();
        assert_eq!(url, "postgres://u@db/x?application_name=r&sslmode=require");
        assert_eq!((tls.mode, tls.root_cert), (Mode::VerifyFull, Some(PathBuf::from("/etc/db ca.pem"))));

        for (given, passed, mode) in [
            ("disable", "disable", Mode::Disable),
            ("allow", "prefer", Mode::Allow),
            ("prefer", "prefer", Mode::Prefer),
            ("require", "require", Mode::Require),
            ("verify-ca", "require", Mode::VerifyCa),
        ] {
            let (url, tls) = split(&format!("postgres://db/x?sslmode={given}")).unwrap();
            assert_eq!((url, tls.mode), (format!("postgres://db/x?sslmode={passed}"), mode));
        }
        let err = split("postgres://db/x?sslmode=verify_full").unwrap_err().to_string();
        assert!(err.contains("`verify_full`") && err.contains("verify-full"), "{err}");
    }

    #[test]
    fn an_unreadable_or_empty_root_certificate_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.pem");
        let tls = |root: &std::path::Path| Tls { mode: Mode::VerifyFull, root_cert: Some(root.to_path_buf()) };
        let err = connector(&tls(&missing)).err().unwrap();
        assert!(matches!(err, TlsError::Unreadable { .. }), "{err}");
        let err = err.to_string();
        assert!(err.starts_with("sslrootcert: cannot read ") && err.contains("nope.pem"), "{err}");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let err = connector(&tls(&empty)).err().unwrap();
        assert!(matches!(err, TlsError::NoCertificate { .. }), "{err}");
        let err = err.to_string();
        assert!(err.contains("holds no PEM certificate"), "{err}");
    }
}
