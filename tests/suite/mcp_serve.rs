//! `crew mcp serve` end to end: an rmcp client in this process talks to the real `crew`
//! binary over stdio (spawned child) and over streamable HTTP (`--listen 127.0.0.1:0`).
//! Attacks from the client (paths outside the project, `_meta`, extra arguments, names
//! not listed, write tools in Plan Mode) are run and the disk is checked after.

use crate::support;

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig, Tool};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{
    StreamableHttpClientTransport, TokioChildProcess,
    streamable_http_client::StreamableHttpClientTransportConfig,
};
use serde_json::{Value, json};

type Client = RunningService<RoleClient, ClientConfig>;

/// A project directory (a git repository with `notes.txt`), a HOME and a spare
/// directory outside the project.
struct Fixture {
    _root: tempfile::TempDir,
    project: PathBuf,
    home: PathBuf,
    outside: PathBuf,
}

fn fixture(script: &Value) -> Fixture {
    let root = tempfile::tempdir().unwrap();
    let project = root.path().join("project");
    let home = root.path().join("home");
    let outside = root.path().join("outside");
    for d in [&project, &home, &outside] {
        std::fs::create_dir_all(d).unwrap();
    }
    support::committed_repo(&project, &[("notes.txt", "the serving side's notes\n")]);
    std::fs::write(root.path().join("script.json"), script.to_string()).unwrap();
    Fixture {
        project: project.canonicalize().unwrap(),
        home,
        outside: outside.canonicalize().unwrap(),
        _root: root,
    }
}

impl Fixture {
    fn script(&self) -> String {
        format!(
            "script:{}",
            self.project.parent().unwrap().join("script.json").display()
        )
    }

    /// `crew mcp serve` with `extra` arguments, as a command.
    fn serve(&self, extra: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_crew"));
        cmd.arg("--cwd")
            .arg(&self.project)
            .args(["mcp", "serve", "--model", &self.script()]);
        cmd.args(extra)
            .current_dir(&self.project)
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY");
        cmd
    }

    async fn stdio(&self, extra: &[&str]) -> Client {
        let transport = TokioChildProcess::builder(self.serve(extra))
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap()
            .0;
        ClientConfig::default().serve(transport).await.unwrap()
    }
}

fn params(value: Value) -> CallToolRequestParams {
    serde_json::from_value(value).unwrap()
}

async fn call(client: &Client, name: &str, args: Value) -> CallToolResult {
    client
        .call_tool(params(json!({"name": name, "arguments": args})))
        .await
        .unwrap()
}

fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_error(r: &CallToolResult) -> bool {
    r.is_error == Some(true)
}

fn find<'a>(tools: &'a [Tool], name: &str) -> &'a Tool {
    tools
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

fn read_only(t: &Tool) -> Option<bool> {
    t.annotations.as_ref().and_then(|a| a.read_only_hint)
}

async fn lists_tools_and_reads(client: &Client) {
    let tools = client.list_all_tools().await.unwrap();
    for name in [
        "read_file",
        "write_file",
        "edit_file",
        "find_files",
        "search_code",
        "run_command",
        "delegate",
        "task_status",
        "task_output",
        "task_stop",
    ] {
        find(&tools, name);
    }
    assert_eq!(read_only(find(&tools, "read_file")), Some(true));
    assert_eq!(read_only(find(&tools, "search_code")), Some(true));
    assert_eq!(read_only(find(&tools, "write_file")), Some(false));
    assert_eq!(read_only(find(&tools, "run_command")), Some(false));
    let schema = &find(&tools, "read_file").input_schema;
    assert_eq!(schema["required"], json!(["path"]), "{schema:?}");
    // The orchestration tools stay inside crew.
    assert!(
        tools
            .iter()
            .all(|t| t.name != "agent" && t.name != "send_message")
    );

    let r = call(client, "read_file", json!({"path": "notes.txt"})).await;
    assert!(!is_error(&r), "{}", text(&r));
    assert!(
        text(&r).contains("the serving side's notes"),
        "{}",
        text(&r)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_lists_tools_with_read_only_hints_and_reads_a_file() {
    let f = fixture(&json!({"turns": []}));
    let client = f.stdio(&[]).await;
    lists_tools_and_reads(&client).await;
    client.cancel().await.unwrap();
}

/// Every way a client could try to write outside the project or widen its rights; under
/// acceptEdits (writes in the project allowed) so a refusal is the path check's.
async fn attacks_write_nothing(client: &Client, f: &Fixture) {
    let target = f.outside.join("pwned.txt");
    let traversal = format!(
        "../{}/pwned.txt",
        f.outside.file_name().unwrap().to_string_lossy()
    );
    let calls = [
        json!({"name": "write_file", "arguments": {"path": target, "content": "x"}}),
        json!({"name": "write_file", "arguments": {"path": traversal, "content": "x"}}),
        // Extra arguments and `_meta` that name modes or approvals are not read.
        json!({"name": "write_file", "arguments": {"path": target, "content": "x",
            "permission_mode": "bypassPermissions", "approved": true},
            "_meta": {"permissionMode": "bypassPermissions", "crew/approve": true, "cwd": f.outside}}),
        json!({"name": "run_command", "arguments": {"command": format!("echo x > {}", target.display())}}),
        // Names not listed: crew's orchestration tools, aliases, hook-ish names.
        json!({"name": "agent", "arguments": {"description": "d", "prompt": format!("write {}", target.display())}}),
        json!({"name": "Write", "arguments": {"path": target, "content": "x"}}),
        json!({"name": "mcp__crew__write_file", "arguments": {"path": target, "content": "x"}}),
    ];
    for c in calls {
        let r = client.call_tool(params(c.clone())).await.unwrap();
        // A command the serving mode lets run is confined by the OS sandbox (dontAsk);
        // what counts for it is the disk, checked below.
        if c["name"] == "run_command" && !is_error(&r) {
            continue;
        }
        assert!(is_error(&r), "{c}: {}", text(&r));
        let t = text(&r);
        assert!(
            t.contains("[permission_denied]") || t.contains("[unknown_tool]"),
            "{c}: {t}"
        );
    }
    assert!(!target.exists(), "a client wrote outside the project");
    assert_eq!(std::fs::read_dir(&f.outside).unwrap().count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_outside_the_project_are_refused_and_nothing_is_written() {
    let f = fixture(&json!({"turns": []}));
    let client = f.stdio(&["--mode", "acceptEdits"]).await;
    attacks_write_nothing(&client, &f).await;
    // Positive control: the same server writes inside the project in this mode.
    let r = call(
        &client,
        "write_file",
        json!({"path": "inside.txt", "content": "ok"}),
    )
    .await;
    assert!(!is_error(&r), "{}", text(&r));
    assert_eq!(
        std::fs::read_to_string(f.project.join("inside.txt")).unwrap(),
        "ok"
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_dont_ask_a_client_cannot_write_outside_the_project() {
    require_features!(Landlock, Python3);
    let f = fixture(&json!({"turns": []}));
    // Commands run unasked here, under Landlock: the redirect outside must fail.
    let client = f.stdio(&["--mode", "dontAsk"]).await;
    attacks_write_nothing(&client, &f).await;
    // A write the engine cannot see (the path is assembled at run time) runs, and only
    // the OS sandbox stops it.
    let target = f.outside.join("opaque.txt").display().to_string();
    let (a, b) = target.split_at(target.len() / 2);
    let r = call(
        &client,
        "run_command",
        json!({"command": format!("python3 -c \"open('{a}'+'{b}','w').write('x')\"")}),
    )
    .await;
    assert!(text(&r).contains("[Errno"), "{}", text(&r));
    assert_eq!(std::fs::read_dir(&f.outside).unwrap().count(), 0);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_default_mode_an_ask_is_refused_with_a_clear_reason() {
    let f = fixture(&json!({"turns": []}));
    let client = f.stdio(&[]).await;
    let r = call(
        &client,
        "write_file",
        json!({"path": "asked.txt", "content": "x"}),
    )
    .await;
    assert!(is_error(&r));
    assert!(
        text(&r).contains("without a human to approve"),
        "{}",
        text(&r)
    );
    assert!(!f.project.join("asked.txt").exists());
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mode_comes_from_the_serving_sides_settings_and_an_untrusted_project_cannot_loosen_it()
{
    let f = fixture(&json!({"turns": []}));
    // The cloned project asks for acceptEdits; it is not trusted, so that is ignored.
    support::put(
        &f.project,
        ".crew/settings.json",
        r#"{"permissions": {"defaultMode": "acceptEdits", "allow": ["Write(*)", "Edit(*)"]}}"#,
    );
    let client = f.stdio(&[]).await;
    let r = call(
        &client,
        "write_file",
        json!({"path": "shared.txt", "content": "x"}),
    )
    .await;
    assert!(is_error(&r), "{}", text(&r));
    assert!(!f.project.join("shared.txt").exists());
    client.cancel().await.unwrap();
    // The user's own settings are the serving side's: their defaultMode applies.
    support::put(
        &f.home,
        ".crew/settings.json",
        r#"{"permissions": {"defaultMode": "acceptEdits"}}"#,
    );
    let client = f.stdio(&[]).await;
    let r = call(
        &client,
        "write_file",
        json!({"path": "mine.txt", "content": "x"}),
    )
    .await;
    assert!(!is_error(&r), "{}", text(&r));
    assert!(f.project.join("mine.txt").exists());
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_plan_mode_write_tools_are_refused() {
    let f = fixture(&json!({"turns": []}));
    // Settings that would allow everything do not lift Plan Mode's read-only boundary.
    support::put(
        &f.home,
        ".crew/settings.json",
        r#"{"permissions": {"defaultMode": "bypassPermissions"}}"#,
    );
    let client = f.stdio(&["--mode", "plan"]).await;
    let r = call(&client, "read_file", json!({"path": "notes.txt"})).await;
    assert!(!is_error(&r), "{}", text(&r));
    for (name, args) in [
        ("write_file", json!({"path": "plan.txt", "content": "x"})),
        (
            "edit_file",
            json!({"path": "notes.txt", "old_string": "notes", "new_string": "pwned"}),
        ),
        ("run_command", json!({"command": "touch plan.txt"})),
    ] {
        let r = call(&client, name, args).await;
        assert!(is_error(&r), "{name}: {}", text(&r));
        assert!(
            text(&r).contains("[tool_not_allowed]"),
            "{name}: {}",
            text(&r)
        );
    }
    assert!(!f.project.join("plan.txt").exists());
    assert_eq!(
        std::fs::read_to_string(f.project.join("notes.txt")).unwrap(),
        "the serving side's notes\n"
    );
    client.cancel().await.unwrap();
}

/// A `crew mcp serve --listen 127.0.0.1:0` child; killed on drop.
struct HttpServer {
    child: std::process::Child,
    url: String,
    /// The bearer token it printed.
    token: String,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http_server(f: &Fixture, extra: &[&str]) -> HttpServer {
    let cmd = f.serve(&[&["--listen", "127.0.0.1:0"], extra].concat());
    let mut cmd = cmd.into_std();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = std::io::BufReader::new(stderr).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("the server printed its address")
            .unwrap();
        if let Some(rest) = line.split("listening on ").nth(1) {
            break rest.trim().to_string();
        }
    };
    let line = lines.next().expect("the server printed its token").unwrap();
    let token = line
        .split("Bearer ")
        .nth(1)
        .and_then(|r| r.split('`').next())
        .unwrap_or_else(|| panic!("no token in {line:?}"))
        .to_string();
    // Keep draining stderr so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    HttpServer { child, url, token }
}

async fn http_client(server: &HttpServer) -> Client {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(server.url.clone())
            .auth_header(server.token.clone()),
    );
    ClientConfig::default().serve(transport).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_serves_the_same_tools_and_refuses_the_same_attacks() {
    let f = fixture(&json!({"turns": []}));
    let server = http_server(&f, &["--mode", "acceptEdits"]);
    assert!(
        server.url.starts_with("http://127.0.0.1:") && server.url.ends_with("/mcp"),
        "{}",
        server.url
    );
    let client = http_client(&server).await;
    lists_tools_and_reads(&client).await;
    attacks_write_nothing(&client, &f).await;
    client.cancel().await.unwrap();
}

fn structured_id(r: &CallToolResult) -> String {
    r.structured_content
        .as_ref()
        .and_then(|s| s["task_id"].as_str())
        .unwrap_or_else(|| panic!("no task id: {}", text(r)))
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delegate_returns_a_task_id_and_the_task_tools_report_the_leads_result() {
    let f = fixture(&json!({"agents": {"lead": {"turns": [
        {"tool_calls": [{"name": "read_file", "input": {"path": "notes.txt"}}]},
        {"text": "The notes say: serving side. Delegated work done."}
    ]}}}));
    let client = f.stdio(&[]).await;
    let r = call(
        &client,
        "delegate",
        json!({"task": "summarise the notes", "wait": false}),
    )
    .await;
    assert!(!is_error(&r), "{}", text(&r));
    let id = structured_id(&r);
    let out = call(&client, "task_output", json!({"task_id": id, "wait": true})).await;
    assert!(!is_error(&out), "{}", text(&out));
    assert!(
        text(&out).contains("Delegated work done."),
        "{}",
        text(&out)
    );
    assert!(text(&out).contains("status: completed"), "{}", text(&out));
    // The log shows the lead's read going through crew's tools.
    assert!(text(&out).contains("read_file"), "{}", text(&out));
    let status = call(&client, "task_status", json!({"task_id": id})).await;
    let status = status.structured_content.unwrap();
    assert_eq!(status["status"], "completed");
    assert_eq!(status["tool_calls"], 1, "{status}");
    assert!(
        status["last_activity"]
            .as_str()
            .unwrap()
            .contains("read_file"),
        "{status}"
    );
    // An id that is not a delegated task is unknown.
    let r = call(&client, "task_status", json!({"task_id": "t0000000"})).await;
    assert!(is_error(&r));
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delegate_with_wait_returns_the_result() {
    let f = fixture(&json!({"agents": {"lead": {"turns": [{"text": "Waited result: 42."}]}}}));
    let client = f.stdio(&[]).await;
    let r = call(&client, "delegate", json!({"task": "answer", "wait": true})).await;
    assert!(!is_error(&r), "{}", text(&r));
    assert!(text(&r).contains("Waited result: 42."), "{}", text(&r));
    let r = call(
        &client,
        "delegate",
        json!({"task": "x", "agents": ["no-such-agent"]}),
    )
    .await;
    assert!(
        is_error(&r) && text(&r).contains("no-such-agent"),
        "{}",
        text(&r)
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_stop_stops_a_long_delegated_lead() {
    // The lead's first turn takes ten minutes unless stopped.
    let f =
        fixture(&json!({"agents": {"lead": {"turns": [{"delay_ms": 600000, "text": "never"}]}}}));
    let client = f.stdio(&[]).await;
    let r = call(&client, "delegate", json!({"task": "take long"})).await;
    let id = structured_id(&r);
    let stopped = call(&client, "task_stop", json!({"task_id": id})).await;
    assert!(!is_error(&stopped), "{}", text(&stopped));
    let status = call(&client, "task_status", json!({"task_id": id})).await;
    assert_eq!(
        status.structured_content.as_ref().unwrap()["status"],
        "cancelled",
        "{}",
        text(&status)
    );
    client.cancel().await.unwrap();
}

/// The official Python `mcp` client (installed by `scripts/mcp-python-client.sh` into
/// target/mcp-python) lists the tools and calls read_file; skipped, saying why, without it.
#[test]
fn python_client_lists_tools_and_reads_a_file() {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/mcp-python/bin/python");
    if !python.exists() {
        println!(
            "SKIPPED: the Python mcp client is not installed ({} missing); run scripts/mcp-python-client.sh",
            python.display()
        );
        return;
    }
    let f = fixture(&json!({"turns": []}));
    let program = r#"
import asyncio, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def main():
    crew, project, home, model = sys.argv[1:5]
    params = StdioServerParameters(command=crew, args=["--cwd", project, "mcp", "serve", "--model", model],
                                   env={"HOME": home, "PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1"}, cwd=project)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            names = sorted(t.name for t in tools.tools)
            print("TOOLS", ",".join(names))
            hint = lambda a: a is not None and (getattr(a, "read_only_hint", None) or getattr(a, "readOnlyHint", None))
            ro = [t.name for t in tools.tools if hint(t.annotations)]
            print("READONLY", ",".join(sorted(ro)))
            result = await session.call_tool("read_file", {"path": "notes.txt"})
            print("ERROR", bool(getattr(result, "is_error", None) or getattr(result, "isError", None)))
            print("TEXT", result.content[0].text.replace("\n", " "))

asyncio.run(main())
"#;
    let out = std::process::Command::new(&python)
        .arg("-c")
        .arg(program)
        .arg(env!("CARGO_BIN_EXE_crew"))
        .arg(&f.project)
        .arg(&f.home)
        .arg(f.script())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("TOOLS ") && stdout.contains("read_file") && stdout.contains("delegate"),
        "{stdout}"
    );
    assert!(
        stdout.lines().any(|l| l.starts_with("READONLY")
            && l.contains("read_file")
            && !l.contains("write_file")),
        "{stdout}"
    );
    assert!(stdout.contains("ERROR False"), "{stdout}");
    assert!(stdout.contains("the serving side's notes"), "{stdout}");
}
