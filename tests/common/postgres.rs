//! A real PostgreSQL server for tests: Debian's `postgresql` package, `initdb` into a
//! temporary folder, `postgres` on a private port of 127.0.0.1, a fresh database per test.
//!
//! Also compiled into the library's unit tests (`src/store/testing.rs` includes this file),
//! so it uses only std, libc and tempfile.
//!
//! PostgreSQL refuses to run as root. As root (CI, containers), the server runs as `nobody`:
//! the child switches user itself before it executes `initdb` or `postgres`, so no `runuser`,
//! `su` or `setpriv` is needed. Without PostgreSQL installed the tests that need it fail,
//! saying to run `apt-get install postgresql`; they never pass silently.
//!
//! [`shared`] starts one server per test process, stopped when the process exits (an `atexit`
//! hook, and the parent-death signal if the process is killed); [`PgServer::start`] starts
//! one that stops when dropped.

#![allow(dead_code)]

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

const INSTALL: &str = "PostgreSQL is not installed: run `apt-get install postgresql` (the tests need its \
     initdb and postgres, found under /usr/lib/postgresql/VERSION/bin, or set ROUTINES_PG_BIN to that folder)";

/// Why a test server could not be set up. Tests panic with it: it says what to fix.
#[derive(Debug)]
pub enum PgSetupError {
    /// No PostgreSQL installation was found or its programs would not start.
    NotInstalled(Option<std::io::Error>),
    /// The tests run as root and there is no user `nobody` to run the server as.
    NoServerUser,
    /// A file-system or socket step failed (`what` says which).
    Io { what: String, source: std::io::Error },
    /// A PostgreSQL program ran and failed (`what`: the program; `output`: what it printed).
    Failed { what: String, output: String },
    /// The server did not accept connections in time.
    NotReady,
}

impl std::fmt::Display for PgSetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PgSetupError::NotInstalled(None) => f.write_str(INSTALL),
            PgSetupError::NotInstalled(Some(e)) => write!(f, "{INSTALL} ({e})"),
            PgSetupError::NoServerUser => {
                f.write_str("the tests run as root and there is no user `nobody` to run PostgreSQL as")
            }
            PgSetupError::Io { what, source } => write!(f, "{what}: {source}"),
            PgSetupError::Failed { what, output } => write!(f, "{what} failed: {output}"),
            PgSetupError::NotReady => f.write_str("postgres did not accept connections within 30 s"),
        }
    }
}

impl std::error::Error for PgSetupError {}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> PgSetupError {
    let what = what.into();
    move |source| PgSetupError::Io { what, source }
}

/// A running server; stopped and its folder removed when dropped.
pub struct PgServer {
    child: Mutex<Option<Child>>,
    dir: PathBuf,
    bin: PathBuf,
    pub port: u16,
    next_db: AtomicU32,
}

/// Starts `postgres` on the data of `dir` and `port`, its output in `dir/server.log`.
fn launch(bin: &Path, dir: &Path, port: u16, user: Option<(u32, u32)>) -> Result<Child, PgSetupError> {
    let log = std::fs::File::options()
        .create(true)
        .append(true)
        .open(dir.join("server.log"))
        .map_err(io("open server.log"))?;
    chown(&dir.join("server.log"), user)?;
    command(&bin.join("postgres"), user)
        .arg("-D")
        .arg(dir.join("data"))
        .args(["-p", &port.to_string(), "-k"])
        .arg(dir)
        .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off"])
        .args(["-c", "full_page_writes=off", "-c", "max_connections=300", "-c", "shared_buffers=32MB"])
        .stdout(log.try_clone().map_err(io("share server.log"))?)
        .stderr(log)
        .spawn()
        .map_err(|e| PgSetupError::NotInstalled(Some(e)))
}

/// The folder holding `initdb`, `postgres` and `createdb`.
fn bin_dir() -> Result<PathBuf, PgSetupError> {
    if let Some(dir) = std::env::var_os("ROUTINES_PG_BIN") {
        return Ok(PathBuf::from(dir));
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|e| PgSetupError::NotInstalled(Some(e)))?
        .filter_map(|e| e.ok())
        .filter_map(|e| Some((e.file_name().to_str()?.parse::<u32>().ok()?, e.path().join("bin"))))
        .filter(|(_, bin)| bin.join("initdb").exists() && bin.join("postgres").exists())
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin).ok_or(PgSetupError::NotInstalled(None))
}

/// `(uid, gid)` to run the server as: `nobody` when this process is root, else no change.
fn server_user() -> Result<Option<(u32, u32)>, PgSetupError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let name = c"nobody";
    // SAFETY: getpwnam with a valid C string; the result is read at once, before any other call.
    let pw = unsafe { libc::getpwnam(name.as_ptr()) };
    if pw.is_null() {
        return Err(PgSetupError::NoServerUser);
    }
    // SAFETY: pw is non-null and points to a passwd record.
    Ok(Some(unsafe { ((*pw).pw_uid, (*pw).pw_gid) }))
}

/// A command that runs as `user` (if any) and gets SIGTERM when the thread that spawned it
/// ends (spawn from a thread that lives as long as the server must).
fn command(program: &Path, user: Option<(u32, u32)>) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_remove("PGDATA").env("LC_ALL", "C.UTF-8").stdin(Stdio::null());
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if let Some((uid, gid)) = user {
                if libc::setgroups(0, std::ptr::null()) != 0 || libc::setgid(gid) != 0 || libc::setuid(uid) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    cmd
}

fn chown(path: &Path, user: Option<(u32, u32)>) -> Result<(), PgSetupError> {
    if let Some((uid, gid)) = user {
        std::os::unix::fs::chown(path, Some(uid), Some(gid)).map_err(io(format!("chown {}", path.display())))?;
    }
    Ok(())
}

impl PgServer {
    /// initdb, then start the server and wait until it accepts connections.
    pub fn start() -> Result<PgServer, PgSetupError> {
        let bin = bin_dir()?;
        let user = server_user()?;
        // A folder `nobody` can reach: $TMPDIR may lie under root's home.
        let base = if user.is_some() { PathBuf::from("/tmp") } else { std::env::temp_dir() };
        let dir = base.join(format!("routines-pg-{}-{}", std::process::id(), NEXT_DIR.fetch_add(1, Ordering::Relaxed)));
        std::fs::create_dir_all(&dir).map_err(io(format!("create {}", dir.display())))?;
        chown(&dir, user)?;
        let data = dir.join("data");
        let out = command(&bin.join("initdb"), user)
            .args(["-D"])
            .arg(&data)
            .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"])
            .output()
            .map_err(|e| PgSetupError::NotInstalled(Some(e)))?;
        if !out.status.success() {
            let output = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            return Err(PgSetupError::Failed { what: "initdb".into(), output });
        }
        let mut last = PgSetupError::NotReady;
        for _ in 0..5 {
            let port = super::os::free_port();
            let child = launch(&bin, &dir, port, user)?;
            let server = PgServer {
                child: Mutex::new(Some(child)),
                dir: dir.clone(),
                bin: bin.clone(),
                port,
                next_db: AtomicU32::new(0),
            };
            match server.wait_ready() {
                Ok(()) => return Ok(server),
                Err(e) => {
                    last = e;
                    server.stop_child();
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        Err(last)
    }

    fn wait_ready(&self) -> Result<(), PgSetupError> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(mut guard) = self.child.lock()
                && let Some(child) = guard.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
                return Err(PgSetupError::Failed { what: format!("postgres ({status})"), output: log });
            }
            let ready = Command::new(self.bin.join("pg_isready"))
                .args(["-q", "-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", "postgres"])
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(PgSetupError::NotReady)
    }

    /// Stops the server (fast shutdown: every connection is cut) and keeps its data: with
    /// [`PgServer::start_again`], a database restart or a network cut as its clients see it.
    pub fn stop_for_now(&self) {
        self.stop_child();
    }

    /// Starts a server stopped by [`PgServer::stop_for_now`] again, on the same port with the
    /// same data, and waits until it accepts connections.
    pub fn start_again(&self) -> Result<(), PgSetupError> {
        let child = launch(&self.bin, &self.dir, self.port, server_user()?)?;
        if let Ok(mut guard) = self.child.lock() {
            *guard = Some(child);
        }
        self.wait_ready()
    }

    /// Turns TLS on with this certificate and key (PEM files), and makes every TCP connection
    /// use it (`hostssl` in `pg_hba.conf`; a plain one is refused); restarts the server.
    pub fn require_tls(&self, cert: &Path, key: &Path) -> Result<(), PgSetupError> {
        let user = server_user()?;
        let data = self.dir.join("data");
        for (from, to) in [(cert, "server.crt"), (key, "server.key")] {
            std::fs::copy(from, data.join(to)).map_err(io(format!("copy {}", from.display())))?;
            chown(&data.join(to), user)?;
        }
        std::fs::set_permissions(data.join("server.key"), std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .map_err(io("chmod server.key"))?;
        let conf = data.join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf).map_err(io("read postgresql.conf"))?;
        text.push_str("\nssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n");
        std::fs::write(&conf, text).map_err(io("write postgresql.conf"))?;
        let hba = data.join("pg_hba.conf");
        let rules = std::fs::read_to_string(&hba).map_err(io("read pg_hba.conf"))?;
        let rules: Vec<String> = rules
            .lines()
            .map(|l| l.strip_prefix("host ").map_or_else(|| l.to_string(), |rest| format!("hostssl {rest}")))
            .collect();
        std::fs::write(&hba, rules.join("\n") + "\n").map_err(io("write pg_hba.conf"))?;
        self.stop_child();
        self.start_again()
    }

    /// A new empty database; returns its URL.
    pub fn database(&self) -> Result<String, PgSetupError> {
        let name = format!("t{}", self.next_db.fetch_add(1, Ordering::Relaxed));
        let out = Command::new(self.bin.join("createdb"))
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", "postgres", &name])
            .output()
            .map_err(io("run createdb"))?;
        if !out.status.success() {
            let output = String::from_utf8_lossy(&out.stderr).into_owned();
            return Err(PgSetupError::Failed { what: format!("createdb {name}"), output });
        }
        Ok(self.url(&name))
    }

    /// The URL of database `name` on this server.
    pub fn url(&self, name: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }

    fn stop_child(&self) {
        let child = self.child.lock().ok().and_then(|mut c| c.take());
        if let Some(mut child) = child {
            // SIGINT: PostgreSQL's fast shutdown.
            if let Ok(pid) = i32::try_from(child.id()) {
                // SAFETY: signalling our own child.
                unsafe { libc::kill(pid, libc::SIGINT) };
            }
            // Runs in an atexit hook too, where starting a thread to wait is unsafe: poll the
            // exit, bounded, then SIGKILL.
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn stop(&self) {
        self.stop_child();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        self.stop();
    }
}

static NEXT_DIR: AtomicU32 = AtomicU32::new(0);
static SHARED: OnceLock<Result<PgServer, PgSetupError>> = OnceLock::new();

extern "C" fn stop_shared() {
    if let Some(Ok(server)) = SHARED.get() {
        server.stop();
    }
}

/// The server shared by every test of this process, started on first use and stopped when
/// the process exits. Panics with the fix when PostgreSQL cannot be started.
pub fn shared() -> &'static PgServer {
    let server = SHARED.get_or_init(|| {
        // Started from a thread that never ends, so the parent-death signal (sent when the
        // spawning thread ends) comes only when the whole process dies.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(PgServer::start());
            loop {
                std::thread::park();
            }
        });
        let server = rx.recv().unwrap_or_else(|_| Err(PgSetupError::NotReady));
        if server.is_ok() {
            // SAFETY: registers a plain function to run at exit.
            unsafe { libc::atexit(stop_shared) };
        }
        server
    });
    match server {
        Ok(server) => server,
        Err(e) => panic!("cannot start PostgreSQL for the tests: {e}"),
    }
}

/// A fresh database on the [`shared`] server; returns its URL.
pub fn fresh_database() -> String {
    shared().database().unwrap_or_else(|e| panic!("{e}"))
}
