//! A real SMTP server (Python's aiosmtpd, `tests/common/smtp_server.py`) as a child process of
//! the test, on 127.0.0.1 with a free port, writing every message it accepts to a folder.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

const SCRIPT: &str = include_str!("smtp_server.py");

/// How the test server secures its connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Plain,
    Starttls,
    Tls,
}

pub struct SmtpServer {
    child: Child,
    /// Closing it tells the server to exit.
    stdin: Option<ChildStdin>,
    pub port: u16,
    outdir: PathBuf,
    _dir: tempfile::TempDir,
}

/// One message as the server received it.
#[derive(Debug)]
pub struct Received {
    pub mail_from: String,
    pub rcpt_tos: Vec<String>,
    /// The login the client authenticated as, if any.
    pub login: Option<String>,
    /// The raw message (headers and body, CRLF line ends).
    pub raw: String,
    /// The message as Python's `email` package reads it.
    pub parsed: Parsed,
}

/// A message as Python's `email` package reads it: headers decoded (RFC 2047), leaf parts.
#[derive(Debug, serde::Deserialize)]
pub struct Parsed {
    /// Lower-case names; decoded values.
    pub headers: std::collections::BTreeMap<String, String>,
    pub content_type: String,
    pub defects: Vec<String>,
    pub parts: Vec<Part>,
}

#[derive(Debug, serde::Deserialize)]
pub struct Part {
    pub content_type: String,
    pub filename: Option<String>,
    pub disposition: Option<String>,
    pub content: String,
}

/// Parses an .eml file with Python's `email` package.
pub fn parse_eml(path: &Path) -> Parsed {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("smtp_server.py");
    std::fs::write(&script, SCRIPT).unwrap();
    let out = python_command().arg(&script).arg("--parse").arg(path).output().unwrap();
    assert!(out.status.success(), "parsing {} failed: {}", path.display(), String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".into())
}

/// A `python3` command that can import aiosmtpd: if it is not installed,
/// it is installed once with pip into a folder of the build directory (so
/// `cargo test` needs nothing beyond Python and pip).
fn python_command() -> Command {
    static DEPS: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let deps = DEPS.get_or_init(|| {
        let deps = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pydeps");
        let importable = |extra: &Path| {
            Command::new(python())
                .args(["-c", "import aiosmtpd"])
                .env("PYTHONPATH", extra)
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if !importable(&deps) {
            let out = Command::new(python())
                .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--target"])
                .arg(&deps)
                .arg("aiosmtpd")
                .output()
                .unwrap_or_else(|e| panic!("could not run pip to install aiosmtpd for the SMTP test server: {e}"));
            assert!(
                out.status.success() && importable(&deps),
                "pip could not install aiosmtpd for the SMTP test server: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        deps
    });
    let mut cmd = Command::new(python());
    cmd.env("PYTHONPATH", deps);
    cmd
}

impl Received {
    /// The first header `name` (unfolded, still encoded).
    pub fn header(&self, name: &str) -> Option<String> {
        header(&self.raw, name)
    }
}

/// The first header `name` of a raw message or MIME part, unfolded.
pub fn header(raw: &str, name: &str) -> Option<String> {
    let head = raw.split("\r\n\r\n").next().unwrap_or_default();
    let unfolded = head.replace("\r\n ", " ").replace("\r\n\t", " ");
    let prefix = format!("{}:", name.to_ascii_lowercase());
    unfolded
        .split("\r\n")
        .find(|line| line.to_ascii_lowercase().starts_with(&prefix))
        .map(|line| line[prefix.len()..].trim().to_owned())
}

/// A certificate authority and a server certificate for 127.0.0.1 and localhost signed by it,
/// made with the `openssl` command.
pub struct TestCert {
    pub ca_pem: Vec<u8>,
    pub cert: PathBuf,
    pub key: PathBuf,
    _dir: tempfile::TempDir,
}

impl TestCert {
    pub fn generate() -> TestCert {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(
            d.join("server.ext"),
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=critical,CA:FALSE\n\
             keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n",
        )
        .unwrap();
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
        openssl(
            d,
            &[&["req", "-x509"][..], &ec, &["-keyout", "ca.key", "-out", "ca.pem", "-days", "2"]].concat(),
            "/CN=routines test CA",
        );
        openssl(d, &[&["req"][..], &ec, &["-keyout", "server.key", "-out", "server.csr"]].concat(), "/CN=localhost");
        openssl(
            d,
            &[
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-set_serial",
                "2",
                "-days",
                "2",
                "-extfile",
                "server.ext",
                "-out",
                "server.pem",
            ],
            "",
        );
        TestCert {
            ca_pem: std::fs::read(d.join("ca.pem")).unwrap(),
            cert: d.join("server.pem"),
            key: d.join("server.key"),
            _dir: dir,
        }
    }
}

fn openssl(dir: &Path, args: &[&str], subject: &str) {
    let mut cmd = Command::new("openssl");
    cmd.current_dir(dir).args(args);
    if !subject.is_empty() {
        cmd.args(["-subj", subject]);
    }
    let out = cmd.output().unwrap_or_else(|e| panic!("the TLS tests need the `openssl` command: {e}"));
    assert!(out.status.success(), "openssl {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
}

impl SmtpServer {
    pub fn start() -> SmtpServer {
        Self::start_with(Mode::Plain, None, None, 0)
    }

    /// `auth` is `(user, password)`: a login becomes required. `port` 0 picks a free one.
    pub fn start_with(mode: Mode, cert: Option<&TestCert>, auth: Option<(&str, &str)>, port: u16) -> SmtpServer {
        Self::spawn(mode, cert, auth, port, 0)
    }

    /// A plain server that writes the first `count` messages it is given and never answers
    /// their end of data, so their sender waits until it gives up or is killed; later messages
    /// are answered as usual.
    pub fn start_hanging(count: u32) -> SmtpServer {
        Self::spawn(Mode::Plain, None, None, 0, count)
    }

    fn spawn(mode: Mode, cert: Option<&TestCert>, auth: Option<(&str, &str)>, port: u16, hang: u32) -> SmtpServer {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("smtp_server.py");
        std::fs::write(&script, SCRIPT).unwrap();
        let outdir = dir.path().join("received");
        std::fs::create_dir(&outdir).unwrap();
        let mut cmd = python_command();
        cmd.arg(&script).arg("--outdir").arg(&outdir).arg("--port").arg(port.to_string());
        cmd.arg("--mode").arg(match mode {
            Mode::Plain => "plain",
            Mode::Starttls => "starttls",
            Mode::Tls => "tls",
        });
        if let Some(cert) = cert {
            cmd.arg("--cert").arg(&cert.cert).arg("--key").arg(&cert.key);
        }
        if let Some((user, password)) = auth {
            cmd.arg("--auth").arg(format!("{user}:{password}"));
        }
        cmd.arg("--hang").arg(hang.to_string());
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("could not start python3 for the SMTP test server: {e}"));
        let stdin = child.stdin.take();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let Some(port) = line.trim().strip_prefix("READY ").and_then(|p| p.parse().ok()) else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the SMTP test server did not start (printed {line:?}); it needs aiosmtpd: `pip install aiosmtpd`");
        };
        SmtpServer { child, stdin, port, outdir, _dir: dir }
    }

    /// The messages received so far, in order. The server writes a message before it answers
    /// 250, so everything a successful send delivered is here.
    pub fn received(&self) -> Vec<Received> {
        let mut names: Vec<PathBuf> = std::fs::read_dir(&self.outdir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "eml"))
            .collect();
        names.sort();
        names
            .into_iter()
            .map(|eml| {
                let meta: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(eml.with_extension("json")).unwrap()).unwrap();
                Received {
                    mail_from: meta["mail_from"].as_str().unwrap().to_owned(),
                    rcpt_tos: meta["rcpt_tos"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_str().unwrap().to_owned())
                        .collect(),
                    login: meta["login"].as_str().map(str::to_owned),
                    raw: String::from_utf8(std::fs::read(&eml).unwrap()).unwrap(),
                    parsed: serde_json::from_str(&std::fs::read_to_string(eml.with_extension("parsed.json")).unwrap())
                        .unwrap(),
                }
            })
            .collect()
    }

    /// Stops the server and waits until its port is closed.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for SmtpServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}
