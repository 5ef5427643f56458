//! A WebDriver client for the browser tests: headless Chromium driven by `chromedriver`
//! (Debian's `chromium` and `chromium-driver`, installed by scripts/install-chromium.sh)
//! over plain HTTP and JSON. [`Browser::start`] says why it cannot start (no driver, no
//! browser), so that a test can skip, saying so, on a machine without them.

#![allow(dead_code)]

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};

/// The key of an element reference in WebDriver's answers.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A headless Chromium session; the driver (and its browser) die when it is dropped.
pub struct Browser {
    http: reqwest::Client,
    session: String,
    base: String,
    driver: Child,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    /// Ends the browser session (so chromedriver closes Chromium), then kills the driver's
    /// process group: a failed test leaves no browser behind.
    fn drop(&mut self) {
        use std::io::{Read, Write};
        if !self.session.is_empty()
            && let Ok(mut tcp) =
                std::net::TcpStream::connect(self.base.trim_start_matches("http://"))
        {
            let _ = tcp.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = write!(
                tcp,
                "DELETE /session/{} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                self.session
            );
            let _ = tcp.read_to_end(&mut Vec::new());
        }
        let group = nix::unistd::Pid::from_raw(self.driver.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.driver.wait();
    }
}

/// The first of `names` on PATH.
fn on_path(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |n| dir.join(n)))
        .find(|p| p.is_file())
}

impl Browser {
    /// Starts chromedriver and a headless Chromium with a fresh profile; `Err` says why
    /// it could not.
    pub async fn start() -> Result<Browser, String> {
        let driver = on_path(&["chromedriver"])
            .ok_or("chromedriver is not installed (run scripts/install-chromium.sh)".to_string())?;
        let chromium = on_path(&["chromium", "chromium-browser"])
            .ok_or("chromium is not installed (run scripts/install-chromium.sh)".to_string())?;
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free port: {e}"))?
            .port();
        let child = Command::new(&driver)
            .arg(format!("--port={port}"))
            // Its own process group, which the browser joins: killed whole on drop.
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", driver.display()))?;
        let profile = tempfile::tempdir().map_err(|e| e.to_string())?;
        let mut browser = Browser {
            http: reqwest::Client::new(),
            session: String::new(),
            base: format!("http://127.0.0.1:{port}"),
            driver: child,
            _profile: profile,
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let ready = browser
                .http
                .get(format!("{}/status", browser.base))
                .send()
                .await
                .ok()
                .map(|r| r.status().is_success())
                .unwrap_or(false);
            if ready {
                break;
            }
            if std::time::Instant::now() > deadline {
                return Err("chromedriver did not become ready within 20 s".into());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--window-size=1500,950",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([format!(
            "--user-data-dir={}",
            browser._profile.path().display()
        )])
        .collect::<Vec<_>>();
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args}
        }}});
        let started = browser
            .http
            .post(format!("{}/session", browser.base))
            .json(&caps)
            .send()
            .await
            .map_err(|e| format!("no WebDriver session: {e}"))?
            .json::<Value>()
            .await
            .map_err(|e| format!("no WebDriver session: {e}"))?;
        browser.session = started["value"]["sessionId"]
            .as_str()
            .ok_or(format!("no WebDriver session: {started}"))?
            .to_string();
        Ok(browser)
    }

    /// WebDriver's whole answer to one command.
    async fn raw(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}/session/{}{path}", self.base, self.session);
        let mut request = self.http.request(method, &url);
        if let Some(body) = body {
            request = request.json(&body);
        }
        request.send().await.unwrap().json().await.unwrap()
    }

    async fn command(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let answer = self.raw(method, path, body).await;
        assert!(
            answer["value"].get("error").is_none(),
            "WebDriver {path}: {answer}"
        );
        answer["value"].clone()
    }

    /// Opens `url`.
    pub async fn goto(&self, url: &str) {
        self.command(reqwest::Method::POST, "/url", Some(json!({"url": url})))
            .await;
    }

    /// Runs `script` (a function body) in the page and returns what it returns.
    pub async fn eval(&self, script: &str) -> Value {
        self.command(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
        .await
    }

    /// Waits (up to 60 s) until `script` returns something truthy, and returns it.
    pub async fn wait(&self, what: &str, script: &str) -> Value {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let v = self.eval(script).await;
            let truthy = !matches!(&v, Value::Null | Value::Bool(false))
                && v.as_array().is_none_or(|a| !a.is_empty())
                && v.as_str().is_none_or(|s| !s.is_empty());
            if truthy {
                return v;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "gave up waiting for {what} in the page"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Clicks the element `css` selects, as a user would (WebDriver's element click);
    /// found again if the page redrew it in between.
    pub async fn click(&self, css: &str) {
        for _ in 0..5 {
            let found = self
                .command(
                    reqwest::Method::POST,
                    "/element",
                    Some(json!({"using": "css selector", "value": css})),
                )
                .await;
            let id = found[ELEMENT]
                .as_str()
                .unwrap_or_else(|| panic!("no element {css}: {found}"))
                .to_string();
            let path = format!("/element/{id}/click");
            let answer = self
                .raw(reqwest::Method::POST, &path, Some(json!({})))
                .await;
            match answer["value"]["error"].as_str() {
                None => return,
                Some("stale element reference") => continue,
                Some(_) => panic!("WebDriver click on {css}: {answer}"),
            }
        }
        panic!("{css} kept being redrawn under the click");
    }

    /// Saves a screenshot of the page as `path` (PNG).
    pub async fn screenshot(&self, path: &Path) {
        let data = self
            .command(reqwest::Method::GET, "/screenshot", None)
            .await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(data.as_str().unwrap())
            .unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, png).unwrap();
    }

    /// Ends the browser session.
    pub async fn quit(mut self) {
        self.command(reqwest::Method::DELETE, "", None).await;
        self.session.clear();
    }
}
