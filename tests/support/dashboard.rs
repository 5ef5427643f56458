//! Helpers for the dashboard tests: a `crew` run (or `crew dashboard`) started with the
//! dashboard, its printed URL read from its output, and the page's server-sent events
//! read as JSON lines.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;

/// A running crew process serving a dashboard; killed when dropped.
pub struct Served {
    pub child: Child,
    /// The URL as printed (token included).
    pub url: String,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    pub port: u16,
    pub token: String,
    /// What the process printed before the URL.
    pub before: Vec<String>,
    /// What it printed after, as it comes.
    pub output: mpsc::Receiver<String>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The command for `crew ARGS` in `dir` with `HOME=home`, no real provider key.
pub fn crew_command(dir: &Path, home: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_crew"));
    cmd.args(args)
        .current_dir(dir)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Starts `cmd` and waits for the dashboard URL it prints (on stdout or stderr).
pub fn serve(mut cmd: Command) -> Served {
    let mut child = cmd.spawn().expect("crew starts");
    let (tx, rx) = mpsc::channel::<String>();
    for pipe in [
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
    ]
    .into_iter()
    .flatten()
    {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    let url = loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => match line.find("http://") {
                Some(at) if line.contains("dashboard") => break line[at..].trim().to_string(),
                _ => seen.push(line),
            },
            Err(_) => panic!("no dashboard URL printed; output: {seen:#?}"),
        }
    };
    let token = url
        .split("token=")
        .nth(1)
        .expect("the URL carries the token")
        .to_string();
    let rest = url.strip_prefix("http://").unwrap();
    let host = rest.split('/').next().unwrap();
    let port = host.rsplit(':').next().unwrap().parse().unwrap();
    Served {
        child,
        base: format!("http://{host}"),
        url,
        port,
        token,
        before: seen,
        output: rx,
    }
}

/// A client that neither follows redirects nor keeps cookies: each test says what it sends.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// The page's event stream, as JSON lines (`{"s": session, "e": line}`).
pub struct Events {
    stream: futures::stream::BoxStream<'static, reqwest::Result<axum::body::Bytes>>,
    buffer: String,
    /// Lines read but not yet returned (an event may carry several).
    ready: std::collections::VecDeque<Value>,
    /// Every line read so far, raw.
    pub raw: String,
}

impl Events {
    /// Opens `/api/events` on `served`.
    pub async fn open(served: &Served) -> Events {
        Events::open_at(&served.base, &served.token).await
    }

    /// Opens `/api/events` on the dashboard at `base` (`http://127.0.0.1:PORT`).
    pub async fn open_at(base: &str, token: &str) -> Events {
        let r = client()
            .get(format!("{base}/api/events"))
            .header("x-crew-token", token)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        Events {
            stream: r.bytes_stream().boxed(),
            buffer: String::new(),
            ready: Default::default(),
            raw: String::new(),
        }
    }

    /// The next line (`None`: the stream ended).
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(line) = self.ready.pop_front() {
                return Some(line);
            }
            if let Some(end) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..end + 2).collect();
                // One JSON line per data line.
                for data in event.lines().filter_map(|l| l.strip_prefix("data:")) {
                    self.ready
                        .push_back(serde_json::from_str(data.trim_start()).unwrap());
                }
                continue;
            }
            let chunk = self.stream.next().await?.ok()?;
            let text = String::from_utf8_lossy(&chunk).into_owned();
            self.raw.push_str(&text);
            self.buffer.push_str(&text);
        }
    }

    /// The first line whose event (`e`) satisfies `wanted`, within 60 s.
    pub async fn until(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        let found = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = self.next().await {
                if wanted(&line["e"]) {
                    return Some(line);
                }
            }
            None
        })
        .await;
        match found {
            Ok(Some(line)) => line,
            _ => panic!("no event for {what}; read: {}", self.raw),
        }
    }
}
