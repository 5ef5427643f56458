//! Opt-in: auto mode's classifier played by a small real model behind llama-server (its
//! OpenAI-compatible API), the lead by the scripted model. The classifier must answer
//! with a parsable `{decision, reason}` — or fail closed: the command does not run.
//!
//! Needs `llama-server` (`CREW_LLAMA_SERVER`, else on `PATH`) and a GGUF model
//! (`CREW_LLAMA_MODEL`); without either the test prints why and passes as skipped.

use crate::support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long the model may take to load (a small model on a loaded CI machine).
const LOAD_PATIENCE: Duration = Duration::from_secs(300);

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn find_server() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CREW_LLAMA_SERVER") {
        return Some(PathBuf::from(p));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join("llama-server"))
        .find(|p| p.is_file())
}

fn healthy(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    if s.write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut reply = String::new();
    let _ = s.read_to_string(&mut reply);
    reply.starts_with("HTTP/1.1 200") || reply.starts_with("HTTP/1.0 200")
}

#[test]
fn a_small_real_model_answers_with_a_parsable_decision_or_fails_closed() {
    let (Some(server), Some(model)) = (
        find_server(),
        std::env::var_os("CREW_LLAMA_MODEL").map(PathBuf::from),
    ) else {
        eprintln!(
            "SKIPPED: set CREW_LLAMA_MODEL=/path/to/small-model.gguf and put llama-server on PATH \
             (or CREW_LLAMA_SERVER=/path/to/llama-server) to run auto mode's classifier against a real model"
        );
        return;
    };
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap();
    let _server = Server(
        Command::new(&server)
            .args(["-m", model.to_str().unwrap(), "--port", &port.to_string()])
            .args(["--host", "127.0.0.1", "-c", "4096"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("llama-server starts"),
    );
    let start = Instant::now();
    while !healthy(port) {
        assert!(
            start.elapsed() < LOAD_PATIENCE,
            "llama-server did not become healthy"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let dir = tempfile::tempdir().unwrap();
    let (work, home) = (dir.path().join("work"), dir.path().join("home"));
    std::fs::create_dir_all(&work).unwrap();
    support::put(
        &home,
        ".crew/settings.json",
        r#"{"autoMode": {"model": "openai:local", "timeoutMs": 120000}}"#,
    );
    let script = json!({ "turns": [
        { "tool_calls": [ { "name": "run_command", "input": { "command": "touch notes.txt" } } ] },
        { "text": "done" }
    ] });
    std::fs::write(home.join("script.json"), script.to_string()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_crew"))
        .args([
            "-p",
            "create an empty notes.txt file",
            "--permission-mode",
            "auto",
        ])
        .args(["--output-format", "json", "--model"])
        .arg(format!("script:{}", home.join("script.json").display()))
        .current_dir(&work)
        .env("HOME", &home)
        .env("OPENAI_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let result: Value = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| {
            panic!(
                "no result: {stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let auto = &result["auto_mode"];
    let decisions = auto["decisions"].as_array().unwrap();
    assert_eq!(decisions.len(), 1, "{auto}");
    let d = &decisions[0];
    eprintln!("classifier: {d}; usage {}", auto["usage"]);
    let ran = work.join("notes.txt").exists();
    match d["decision"].as_str().unwrap() {
        "allow" => assert!(ran, "an allowed command runs"),
        "deny" => assert!(!ran, "a denied command never runs"),
        other => panic!("decision `{other}`"),
    }
    assert!(!d["reason"].as_str().unwrap().is_empty());
}
