//! The MCP client end to end: `crew -p --model script:FILE` against the rmcp test server
//! (tests/peers/mcp_test_server.rs) over stdio and streamable HTTP — Plan Mode allows its
//! read-only tool and refuses its write tool at the gate (never sent), a deny rule is
//! honoured, a killed server errors at once and is restarted, untrusted `.mcp.json`
//! servers are not started, and every process group is gone at the end.

use crate::support;

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A project, a home, and a marker directory the server's write tools write to.
struct Setup {
    _dir: tempfile::TempDir,
    proj: PathBuf,
    home: PathBuf,
    markers: PathBuf,
}

fn setup(settings: Value) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let (proj, home, markers) = (root.join("proj"), root.join("home"), root.join("markers"));
    for d in [&proj, &home, &markers] {
        std::fs::create_dir_all(d).unwrap();
    }
    support::put(&proj, ".crew/settings.local.json", &settings.to_string());
    Setup {
        _dir: dir,
        proj,
        home,
        markers,
    }
}

fn stdio_entry(s: &Setup, extra: &[&str]) -> Value {
    let mut args = vec![
        "--marker-dir".to_string(),
        s.markers.display().to_string(),
        "--pid-log".to_string(),
        s.markers.join("pids").display().to_string(),
    ];
    args.extend(extra.iter().map(|a| a.to_string()));
    json!({"command": support::mcp_test_server(), "args": args})
}

/// An HTTP test server, killed when dropped.
struct HttpServer {
    child: std::process::Child,
    url: String,
}

impl HttpServer {
    fn start(markers: &Path) -> Self {
        let mut child = std::process::Command::new(support::mcp_test_server())
            .args(["--http", "127.0.0.1:0", "--marker-dir"])
            .arg(markers)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = format!("http://{}/mcp", line.trim());
        Self { child, url }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `crew -p` with `script` and the MCP config `servers`; returns the output and the
/// recorded requests.
fn run(
    s: &Setup,
    servers: Value,
    script: Value,
    extra: &[&str],
) -> (std::process::Output, Vec<Value>) {
    let config = s.proj.join("../mcp.json");
    std::fs::write(&config, json!({"mcpServers": servers}).to_string()).unwrap();
    let script_file = s.proj.join("../script.json");
    std::fs::write(&script_file, script.to_string()).unwrap();
    let requests = s.proj.join("../requests.jsonl");
    let _ = std::fs::remove_file(&requests);
    let mut args = vec![
        "--mcp-config".to_string(),
        config.display().to_string(),
        "-p".into(),
        "go".into(),
        "--model".into(),
        format!("script:{}", script_file.display()),
        "--record-requests".into(),
        requests.display().to_string(),
    ];
    args.extend(extra.iter().map(|a| a.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = support::crew(&s.proj, &s.home, &args);
    let recorded = std::fs::read_to_string(&requests)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (out, recorded)
}

/// The tool results the model was shown, by call id, from the last recorded request.
fn results(requests: &[Value]) -> Vec<(String, String, bool)> {
    let last = requests.last().expect("a request was recorded");
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            (
                b["tool_use_id"].as_str().unwrap().to_string(),
                b["content"].as_str().unwrap_or_default().to_string(),
                b["is_error"].as_bool().unwrap_or(false),
            )
        })
        .collect()
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

fn call(id: &str, name: &str, input: Value) -> Value {
    json!({"id": id, "name": name, "input": input})
}

/// Plan Mode: the read-only tool runs and its result reaches the model; the write tool is
/// refused at the gate and never reaches the server.
fn plan_mode_scenario(s: &Setup, servers: Value) {
    let script = json!({"turns": [
        {"tool_calls": [
            call("r", "mcp__test__read_note", json!({"name": "x"})),
            call("w", "mcp__test__write_note", json!({"text": "t"})),
            call("p", "mcp__test__picture", json!({})),
        ]},
        {"text": "planned"}
    ]});
    let (out, requests) = run(s, servers, script, &["--mode", "plan"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let first = tool_names(&requests[0]);
    assert!(
        first.contains(&"mcp__test__read_note".to_string()),
        "{first:?}"
    );
    assert!(
        !first.contains(&"mcp__test__write_note".to_string()),
        "{first:?}"
    );
    let r = results(&requests);
    assert_eq!(r[0], ("r".into(), "note x: the answer is 42".into(), false));
    assert!(r[1].2 && r[1].1.contains("tool_not_allowed"), "{:?}", r[1]);
    assert!(r[2].1.contains("[image content: image/png"), "{:?}", r[2]);
    assert!(r[2].1.contains("resource body"), "{:?}", r[2]);
    assert!(
        !s.markers.join("write_note.called").exists(),
        "the write tool ran"
    );
}

/// Default mode with `mcp__test` allowed and `mcp__test__danger` denied: the deny rule
/// wins and `danger` never runs, while `write_note` (allowed) does.
fn deny_rule_scenario(s: &Setup, servers: Value) {
    let script = json!({"turns": [
        {"tool_calls": [
            call("d", "mcp__test__danger", json!({})),
            call("w", "mcp__test__write_note", json!({"text": "t"})),
            call("f", "mcp__test__fail", json!({})),
        ]},
        {"text": "done"}
    ]});
    let (out, requests) = run(s, servers, script, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = results(&requests);
    assert!(r[0].2 && r[0].1.contains("mcp__test__danger"), "{:?}", r[0]);
    assert!(
        !s.markers.join("danger.called").exists(),
        "the denied tool ran"
    );
    assert_eq!(r[1], ("w".into(), "write_note done".into(), false));
    assert!(s.markers.join("write_note.called").exists());
    assert!(
        r[2].2 && r[2].1.contains("deliberate failure"),
        "{:?}",
        r[2]
    );
}

fn rules() -> Value {
    json!({"permissions": {"allow": ["mcp__test"], "deny": ["mcp__test__danger"]}})
}

#[test]
fn stdio_plan_mode_allows_read_only_and_refuses_writes_at_the_gate() {
    let s = setup(rules());
    plan_mode_scenario(&s, json!({"test": stdio_entry(&s, &[])}));
}

#[test]
fn stdio_deny_rule_is_honoured() {
    let s = setup(rules());
    deny_rule_scenario(&s, json!({"test": stdio_entry(&s, &[])}));
}

#[test]
fn a_large_mcp_result_is_offloaded_like_any_tool_result() {
    let s = setup(rules());
    let name = "n".repeat(40_000);
    let script = json!({"turns": [
        {"tool_calls": [call("big", "mcp__test__read_note", json!({"name": name}))]},
        {"text": "done"}
    ]});
    let (out, requests) = run(&s, json!({"test": stdio_entry(&s, &[])}), script, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (_, shown, is_error) = &results(&requests)[0];
    assert!(
        !is_error && shown.len() < 10_000,
        "{} bytes shown",
        shown.len()
    );
    assert!(shown.contains("result offloaded"), "{shown}");
    // The whole result is in the session's results directory, under the call's id.
    let saved = std::fs::read_dir(s.home.join(".crew/projects"))
        .unwrap()
        .flat_map(|p| std::fs::read_dir(p.unwrap().path()).unwrap())
        .map(|d| d.unwrap().path().join("results/big.txt"))
        .find(|p| p.exists())
        .expect("results/big.txt");
    assert!(shown.contains(&saved.display().to_string()), "{shown}");
    let whole = std::fs::read_to_string(saved).unwrap();
    assert_eq!(whole, format!("note {name}: the answer is 42"));
}

#[test]
fn http_plan_mode_and_deny_rule() {
    let s = setup(rules());
    let server = HttpServer::start(&s.markers);
    let entry = json!({"test": {"type": "http", "url": server.url}});
    plan_mode_scenario(&s, entry.clone());
    deny_rule_scenario(&s, entry);
}

/// Waits until `path` holds at least `lines` lines (a generous bound, no fixed sleep).
fn wait_lines(path: &Path, lines: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let got: Vec<String> = text.lines().map(str::to_string).collect();
        if got.len() >= lines || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn group_alive(pid: &str) -> bool {
    let pgid = nix::unistd::Pid::from_raw(pid.parse().unwrap());
    crewmaster::sandbox::process::group_alive(pgid)
}

#[test]
fn a_killed_server_errors_at_once_and_is_restarted() {
    let s = setup(json!({"permissions": {"allow": ["mcp__test", "Bash"]}}));
    let pids = s.markers.join("pids");
    // Waits (inside the run, on a file, bounded) for the restarted server's handshake.
    // A script file, so the command itself stays in the literal subset the engine reads
    // (a loop written inline is opaque and would ask).
    let wait_script = s.markers.join("wait.sh");
    std::fs::write(
        &wait_script,
        format!(
            "for i in $(seq 600); do [ $(wc -l < {0}) -ge 2 ] && exit 0; sleep 0.05; done; exit 1\n",
            pids.display()
        ),
    )
    .unwrap();
    let wait = format!("bash {}", wait_script.display());
    let script = json!({"turns": [
        {"tool_calls": [call("c", "mcp__test__crash", json!({}))]},
        {"tool_calls": [call("dead", "mcp__test__read_note", json!({"name": "a"}))]},
        {"tool_calls": [call("wait", "run_command", json!({"command": wait}))]},
        {"tool_calls": [call("back", "mcp__test__read_note", json!({"name": "b"}))]},
        {"text": "done"}
    ]});
    let servers = json!({"test": stdio_entry(&s, &["--grandchild"])});
    let (out, requests) = run(&s, servers, script, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let r = results(&requests);
    assert!(r[0].2, "the crash call must fail: {:?}", r[0]);
    // Not a timeout: the actor answered that the server is down and being restarted.
    assert!(r[1].2, "{:?}", r[1]);
    assert!(
        r[1].1.contains("not running") || r[1].1.contains("reconnecting"),
        "{:?}",
        r[1]
    );
    assert!(!r[1].1.contains("timeout"), "{:?}", r[1]);
    assert!(!r[2].2, "the restart was not seen: {:?}", r[2]);
    assert_eq!(
        r[3],
        ("back".into(), "note b: the answer is 42".into(), false)
    );
    let started = wait_lines(&pids, 2);
    assert_eq!(started.len(), 2, "{started:?}");
    assert_ne!(started[0], started[1]);
    for pid in &started {
        assert!(
            !group_alive(pid),
            "process group {pid} outlived the session"
        );
    }
}

#[test]
fn the_process_group_is_gone_after_the_session() {
    let s = setup(rules());
    let script = json!({"turns": [
        {"tool_calls": [call("r", "mcp__test__read_note", json!({"name": "x"}))]},
        {"text": "done"}
    ]});
    let servers = json!({"test": stdio_entry(&s, &["--grandchild"])});
    let (out, requests) = run(&s, servers, script, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!results(&requests)[0].2);
    let pids = wait_lines(&s.markers.join("pids"), 1);
    assert_eq!(pids.len(), 1);
    assert!(
        !group_alive(&pids[0]),
        "the server's process group outlived the session"
    );
}

#[test]
fn untrusted_mcp_json_servers_are_not_started_and_named() {
    let s = setup(rules());
    let sneaky = stdio_entry(&s, &[]);
    support::put(
        &s.proj,
        ".mcp.json",
        &json!({"mcpServers": {"sneaky": sneaky}}).to_string(),
    );
    let script = json!({"turns": [{"text": "done"}]});
    let (out, requests) = run(&s, json!({}), script, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("not trusted") && stderr.contains("sneaky"),
        "{stderr}"
    );
    assert!(
        !s.markers.join("pids").exists(),
        "an untrusted server was started"
    );
    assert!(
        !tool_names(&requests[0])
            .iter()
            .any(|n| n.starts_with("mcp__sneaky")),
        "untrusted tools were offered"
    );
}

#[test]
fn a_failing_server_is_reported_and_does_not_block_the_others() {
    let s = setup(rules());
    let servers = json!({
        "broken": {"command": s.proj.join("no-such-server")},
        "noisy": {"command": "sh", "args": ["-c", "echo config file missing >&2; exit 1"]},
        "test": stdio_entry(&s, &[]),
    });
    let script = json!({"turns": [
        {"tool_calls": [call("r", "mcp__test__read_note", json!({"name": "x"}))]},
        {"text": "done"}
    ]});
    let (out, requests) = run(&s, servers, script, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("MCP server `broken`") && stderr.contains("no-such-server"),
        "{stderr}"
    );
    // A server that dies during the handshake is explained by its own stderr.
    assert!(
        stderr.contains("MCP server `noisy`")
            && stderr.contains("its stderr ended with: config file missing"),
        "{stderr}"
    );
    assert_eq!(results(&requests)[0].1, "note x: the answer is 42");
}

#[test]
fn mcp_list_get_add_remove() {
    let s = setup(json!({}));
    let bin = support::mcp_test_server();
    let add = support::crew(
        &s.proj,
        &s.home,
        &[
            "mcp",
            "add",
            "test",
            "--env",
            "K=${K:-v}",
            "--",
            bin.to_str().unwrap(),
            "--marker-dir",
            s.markers.to_str().unwrap(),
        ],
    );
    assert!(
        add.status.success(),
        "{}",
        String::from_utf8_lossy(&add.stderr)
    );
    let list = support::crew(&s.proj, &s.home, &["mcp", "list"]);
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(text.contains("test (local: "), "{text}");
    assert!(text.contains("— connected"), "{text}");
    assert!(text.contains("mcp__test__read_note (read-only)"), "{text}");
    assert!(text.contains("mcp__test__danger\n"), "{text}");
    let get = support::crew(&s.proj, &s.home, &["mcp", "get", "test", "--json"]);
    let v: Value = serde_json::from_slice(&get.stdout).unwrap();
    assert_eq!(v["servers"][0]["status"], "connected");
    assert_eq!(v["servers"][0]["transport"], "stdio");
    let missing = support::crew(&s.proj, &s.home, &["mcp", "get", "nope"]);
    assert!(!missing.status.success());
    let rm = support::crew(&s.proj, &s.home, &["mcp", "remove", "test"]);
    assert!(
        rm.status.success(),
        "{}",
        String::from_utf8_lossy(&rm.stderr)
    );
    let list = support::crew(&s.proj, &s.home, &["mcp", "list"]);
    assert!(String::from_utf8_lossy(&list.stdout).contains("no MCP servers configured"));
}

/// `tools/list_changed` refreshes the registry; at shutdown the group is gone.
#[tokio::test]
async fn list_changed_refreshes_the_registry() {
    use crewmaster::mcp::config::{Scope, ServerConfig, Transport};
    let s = setup(json!({}));
    let config = ServerConfig {
        name: "test".into(),
        transport: Transport::Stdio {
            command: support::mcp_test_server().display().to_string(),
            args: vec![
                "--marker-dir".into(),
                s.markers.display().to_string(),
                "--pid-log".into(),
                s.markers.join("pids").display().to_string(),
            ],
            env: Default::default(),
        },
        scope: Scope::Flag,
        file: s.proj.join("mcp.json"),
    };
    let registry = crewmaster::tools::Registry::new();
    let (clients, statuses) = crewmaster::mcp::McpClients::start(
        vec![config],
        registry.dynamic_tools(),
        None,
        s.proj.clone(),
        Duration::from_secs(30),
    )
    .await;
    assert!(matches!(
        statuses[0].1,
        crewmaster::mcp::server_actor::Status::Connected { .. }
    ));
    assert!(registry.get("mcp__test__extra").is_none());
    let ctx = common_ctx(&s.proj);
    let add = registry.get("mcp__test__add_tool").unwrap();
    add.run(json!({}), ctx.clone()).await.unwrap();
    support::wait_until("the new tool to be registered", || {
        registry.get("mcp__test__extra").is_some()
    })
    .await;
    let extra = registry
        .get("mcp__test__extra")
        .expect("the new tool was registered");
    assert_eq!(
        extra.definition().safety,
        crewmaster::tools::Safety::ReadOnly
    );
    assert_eq!(extra.run(json!({}), ctx).await.unwrap(), "extra tool ran");
    let pids = s.markers.join("pids");
    support::wait_until("the server's pid line", || {
        std::fs::read_to_string(&pids).is_ok_and(|t| t.lines().count() >= 1)
    })
    .await;
    let pid = wait_lines(&pids, 1).remove(0);
    clients.shutdown().await;
    assert!(!group_alive(&pid));
    assert!(
        registry.get("mcp__test__read_note").is_none(),
        "tools stay after shutdown"
    );
}

fn common_ctx(cwd: &Path) -> crewmaster::tools::ToolContext {
    crewmaster::tools::ToolContext::new(cwd.to_path_buf(), "test")
}
