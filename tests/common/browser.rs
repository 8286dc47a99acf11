//! A real headless Chromium, driven through chromedriver with the W3C WebDriver protocol
//! (JSON over HTTP, spoken here with reqwest): pages are loaded and links followed by real
//! clicks, the DOM is read back, and screenshots are saved under `target/screenshots/`.
//!
//! WebDriver rather than a CDP crate: Debian ships chromedriver matched to its chromium,
//! the protocol is a standard a few requests deep, and clicks go through the browser's own
//! input pipeline (the element must be visible and on top to be clicked), as a person's do.
//! Dark mode and full-page screenshots use chromedriver's CDP passthrough.
//!
//! [`Browser::start`] returns `None`, after printing why, when chromium or chromedriver is
//! not installed (`apt-get install chromium chromium-driver`).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use super::os::free_port;
use super::wait;

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// The key WebDriver names an element reference with.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// How the browser is set up.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// `prefers-color-scheme: dark`.
    pub dark: bool,
    /// JavaScript switched off in the browser's settings.
    pub no_javascript: bool,
}

/// One browser session; the browser and its driver end when it is dropped.
pub struct Browser {
    http: reqwest::Client,
    driver_port: u16,
    session: String,
    driver: Child,
    _profile: tempfile::TempDir,
}

/// An element of the current page.
#[derive(Debug, Clone)]
pub struct Element(String);

impl Browser {
    /// Starts chromedriver and a headless Chromium, or says why not and returns `None`.
    pub async fn start(options: Options) -> Option<Browser> {
        for tool in [CHROMIUM, CHROMEDRIVER] {
            if !Path::new(tool).exists() {
                eprintln!("SKIPPED browser test: {tool} is not installed (apt-get install chromium chromium-driver)");
                return None;
            }
        }
        let profile = tempfile::tempdir().unwrap();
        let driver_port = free_port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={driver_port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let http = reqwest::Client::builder().timeout(Duration::from_secs(60)).no_proxy().build().unwrap();
        let base = format!("http://127.0.0.1:{driver_port}");
        let ready = wait::poll(wait::DEADLINE, Duration::from_millis(50), async || {
            let r = http.get(format!("{base}/status")).send().await.ok()?;
            let v: Value = r.json().await.ok()?;
            v["value"]["ready"].as_bool().filter(|r| *r)
        })
        .await;
        assert!(ready.is_some(), "chromedriver did not become ready on port {driver_port}");

        let mut args = vec![
            "--headless".to_string(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-quic".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--disable-dev-shm-usage".into(),
            "--hide-scrollbars".into(),
            "--force-device-scale-factor=1".into(),
            "--window-size=1280,900".into(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        if options.no_javascript {
            args.push("--blink-settings=scriptEnabled=false".into());
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": { "binary": CHROMIUM, "args": args },
        }}});
        let response: Value =
            http.post(format!("{base}/session")).json(&caps).send().await.unwrap().json().await.unwrap();
        let session = response["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("chromedriver did not start a session: {response}"))
            .to_string();
        let browser = Browser { http, driver_port, session, driver, _profile: profile };
        if options.dark {
            browser
                .cdp(
                    "Emulation.setEmulatedMedia",
                    json!({"features": [{"name": "prefers-color-scheme", "value": "dark"}]}),
                )
                .await;
        }
        Some(browser)
    }

    fn url_of(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/session/{}{path}", self.driver_port, self.session)
    }

    /// One WebDriver command; panics with the driver's message when it fails.
    async fn command(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut request = self.http.request(method.clone(), self.url_of(path));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let value: Value = response.json().await.unwrap();
        assert!(status.is_success(), "WebDriver {method} {path} failed ({status}): {}", value["value"]);
        value["value"].clone()
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        self.command(reqwest::Method::POST, path, Some(body)).await
    }

    async fn get(&self, path: &str) -> Value {
        self.command(reqwest::Method::GET, path, None).await
    }

    /// A Chrome DevTools Protocol command through chromedriver.
    pub async fn cdp(&self, cmd: &str, params: Value) -> Value {
        self.post("/goog/cdp/execute", json!({"cmd": cmd, "params": params})).await
    }

    /// Loads `url` and waits for it.
    pub async fn goto(&self, url: &str) {
        self.post("/url", json!({ "url": url })).await;
    }

    /// The address of the current page.
    pub async fn current_url(&self) -> String {
        self.get("/url").await.as_str().unwrap().to_string()
    }

    /// Waits until the address satisfies `done` (a form sent, a link followed) and returns it.
    pub async fn wait_for_url(&self, done: impl Fn(&str) -> bool) -> String {
        let found = wait::poll(wait::DEADLINE, Duration::from_millis(25), async || {
            let url = self.current_url().await;
            done(&url).then_some(url)
        })
        .await;
        match found {
            Some(url) => url,
            None => panic!("the page stayed at {}", self.current_url().await),
        }
    }

    pub async fn title(&self) -> String {
        self.get("/title").await.as_str().unwrap().to_string()
    }

    /// Every element matching `css`.
    pub async fn find_all(&self, css: &str) -> Vec<Element> {
        let found = self.post("/elements", json!({"using": "css selector", "value": css})).await;
        found.as_array().unwrap().iter().map(|e| Element(e[ELEMENT_KEY].as_str().unwrap().to_string())).collect()
    }

    /// The first element matching `css`; panics with the page's title when there is none.
    pub async fn find(&self, css: &str) -> Element {
        match self.find_all(css).await.into_iter().next() {
            Some(e) => e,
            None => panic!("no element matches `{css}` on {} ({})", self.current_url().await, self.title().await),
        }
    }

    /// The element among those matching `css` whose text contains `text`.
    pub async fn find_with_text(&self, css: &str, text: &str) -> Element {
        for e in self.find_all(css).await {
            if self.text(&e).await.contains(text) {
                return e;
            }
        }
        panic!("no `{css}` with text {text:?} on {}", self.current_url().await)
    }

    /// Clicks `element` the way a mouse does (scrolled into view, in its middle), then
    /// waits for the navigation it started, if any.
    pub async fn click(&self, element: &Element) {
        self.post(&format!("/element/{}/click", element.0), json!({})).await;
    }

    /// The rendered text of `element`, as a person sees it.
    pub async fn text(&self, element: &Element) -> String {
        self.get(&format!("/element/{}/text", element.0)).await.as_str().unwrap().to_string()
    }

    /// A computed CSS value of `element`.
    pub async fn css(&self, element: &Element, property: &str) -> String {
        self.get(&format!("/element/{}/css/{property}", element.0)).await.as_str().unwrap().to_string()
    }

    pub async fn is_displayed(&self, element: &Element) -> bool {
        self.get(&format!("/element/{}/displayed", element.0)).await.as_bool().unwrap()
    }

    /// Runs `script` (a function body) in the page and returns what it returns.
    pub async fn execute(&self, script: &str) -> Value {
        self.post("/execute/sync", json!({"script": script, "args": []})).await
    }

    /// Saves a screenshot of the whole page (beyond the window) as
    /// `target/screenshots/<name>.png` and returns its path.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let shot = self
            .cdp("Page.captureScreenshot", json!({"format": "png", "captureBeyondViewport": true, "fromSurface": true}))
            .await;
        save_png(name, shot["data"].as_str().unwrap())
    }

    /// Saves what the window shows, as a person first sees the page.
    pub async fn screenshot_window(&self, name: &str) -> PathBuf {
        save_png(name, self.get("/screenshot").await.as_str().unwrap())
    }

    /// Ends the session (and the browser) and the driver.
    pub async fn quit(mut self) {
        let _ = self.http.delete(self.url_of("")).send().await;
        self.session.clear();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // A test that panicked never called `quit`: end the session with a plain request so
        // the driver closes Chromium, then stop the driver.
        if !self.session.is_empty() {
            if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", self.driver_port)) {
                let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
                let request = format!(
                    "DELETE /session/{} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    self.session
                );
                let _ = s.write_all(request.as_bytes());
                let _ = s.read(&mut [0u8; 512]);
            }
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Writes base64 `data` as `target/screenshots/<name>.png`.
fn save_png(name: &str, data: &str) -> PathBuf {
    let png = base64_decode(data);
    assert!(png.starts_with(b"\x89PNG"), "the screenshot is not a PNG");
    let dir = screenshot_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.png"));
    std::fs::write(&path, png).unwrap();
    path
}

/// `target/screenshots/`, beside the tests' own scratch folder.
pub fn screenshot_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).parent().unwrap().join("screenshots")
}

/// Standard base64 with padding, as CDP sends images.
fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let clean: Vec<u8> = text.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    let mut out = Vec::with_capacity(clean.len() / 4 * 3);
    for chunk in clean.chunks(4) {
        let data: Vec<u8> = chunk.iter().copied().filter(|c| *c != b'=').collect();
        let mut n = 0u32;
        for (i, c) in data.iter().enumerate() {
            n |= value(*c) << (18 - 6 * i);
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..data.len().saturating_sub(1)]);
    }
    out
}

#[test]
fn base64_round_trip_of_known_values() {
    assert_eq!(base64_decode("aGVsbG8="), b"hello");
    assert_eq!(base64_decode("aGk="), b"hi");
    assert_eq!(base64_decode("YWJj"), b"abc");
}
