//! TLS to PostgreSQL as the URL's `sslmode` and `sslrootcert` say (libpq's meaning), against a
//! real server that refuses every connection without TLS (`hostssl` only) and holds a
//! certificate from a test CA (made with `openssl`).

use crate::common::Routines;
use crate::common::mock_llm::text;
use crate::common::postgres::PgServer;
use crate::common::smtp::TestCert;

use super::mock;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_reaches_a_tls_only_server_as_sslmode_says_and_checks_its_certificate() {
    let cert = TestCert::generate();
    let server = PgServer::start().unwrap();
    server.require_tls(&cert.cert, &cert.key).unwrap();
    // With a password (which the server ignores) only it is redacted from messages, not the
    // whole URL.
    let base = server.database().unwrap().replacen("postgres@", "postgres:pw-ignored-4417@", 1);
    let dir = tempfile::tempdir().unwrap();
    let (ca, other_ca) = (dir.path().join("ca.pem"), dir.path().join("other-ca.pem"));
    std::fs::write(&ca, &cert.ca_pem).unwrap();
    std::fs::write(&other_ca, TestCert::generate().ca_pem).unwrap();
    let mock = mock().await;
    mock.push_all([text("one"), text("two"), text("three")]);
    let p = Routines::project(&mock.base_url(), "");
    p.write("routines/note.yaml", "prompt: Go.\n");
    let run = async |query: String| {
        p.command(["run", "note"]).env("ROUTINES_DATABASE_URL", &format!("{base}{query}")).run_async().await
    };

    // Without TLS the server refuses.
    let o = run("?sslmode=disable".into()).await;
    o.code(1)
        .stderr_has("cannot reach the PostgreSQL database")
        .stderr_has("the server refused: FATAL no pg_hba.conf entry")
        .stderr_has("no encryption");

    // By default (prefer) the connection is encrypted; the certificate is not checked.
    run(String::new()).await.success().stdout_is("one\n");
    // verify-full checks the chain to sslrootcert and the host name (127.0.0.1 is in it).
    run(format!("?sslmode=verify-full&sslrootcert={}", ca.display())).await.success().stdout_is("two\n");
    run(format!("?sslmode=verify-ca&sslrootcert={}", ca.display())).await.success().stdout_is("three\n");

    // A certificate from another CA than sslrootcert's is refused, also by `require` with a
    // root certificate (then it checks the chain, as libpq does).
    for mode in ["verify-full", "verify-ca", "require"] {
        let o = run(format!("?sslmode={mode}&sslrootcert={}", other_ca.display())).await;
        o.code(1)
            .stderr_has("cannot reach the PostgreSQL database")
            .stderr_has("error performing TLS handshake: invalid peer certificate")
            .stderr_has("check sslmode and sslrootcert");
    }
    // A mode libpq does not know, and a root certificate that cannot be read, are named.
    run("?sslmode=verify".into()).await.code(1).stderr_has("sslmode `verify` is not one of");
    run("?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem".into())
        .await
        .code(1)
        .stderr_has("sslrootcert: cannot read /nonexistent/ca.pem");
    assert_eq!(mock.request_count(), 3);
}
