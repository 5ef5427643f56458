//! `crew mcp serve --listen` needs its bearer token: the real `crew` binary listens on
//! 127.0.0.1, and a client made of `curl` runs the whole MCP handshake and a `read_file`
//! of a mode-600 file — without the token, with a wrong one, with a foreign Host or
//! Origin, and as another local user (uid 65534) who tries to read the token file. Each
//! is refused and the file's content is not in the responses; with the token the same
//! client reads it (so the attack would work without the check). Served commands obey
//! the serving mode and the OS sandbox over HTTP too.

use crate::support;

use std::io::BufRead;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientConfig};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;

const SECRET: &str = "the-serving-users-secret-4b9e";

/// A project with a mode-600 `secret.txt`, a HOME and a directory outside the project.
struct Fixture {
    _tmp: tempfile::TempDir,
    project: PathBuf,
    home: PathBuf,
    outside: PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let (project, home, outside) = (base.join("project"), base.join("home"), base.join("out"));
    for d in [&home, &outside] {
        std::fs::create_dir_all(d).unwrap();
    }
    support::committed_repo(&project, &[("notes.txt", "notes\n")]);
    std::fs::write(project.join("secret.txt"), format!("{SECRET}\n")).unwrap();
    std::fs::set_permissions(
        project.join("secret.txt"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    Fixture {
        _tmp: tmp,
        project,
        home,
        outside,
    }
}

/// A running `crew mcp serve --listen 127.0.0.1:0`; killed on drop.
struct Server {
    child: std::process::Child,
    url: String,
    port: u16,
    token: String,
    token_file: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(f: &Fixture, mode: &str) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_crew"))
        .arg("--cwd")
        .arg(&f.project)
        .args(["mcp", "serve", "--listen", "127.0.0.1:0", "--mode", mode])
        .current_dir(&f.project)
        .env("HOME", &f.home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut next = || lines.next().expect("the server says more").unwrap();
    let url = loop {
        let line = next();
        if let Some(rest) = line.split("listening on ").nth(1) {
            break rest.trim().to_string();
        }
    };
    let line = next();
    let token = line
        .split("Bearer ")
        .nth(1)
        .unwrap()
        .split('`')
        .next()
        .unwrap();
    let token_file = line.split("is also in ").nth(1).unwrap();
    let token_file = PathBuf::from(token_file.split(", mode 600").next().unwrap());
    let port = url.rsplit(':').next().unwrap().trim_end_matches("/mcp");
    let server = Server {
        port: port.parse().unwrap(),
        url,
        token: token.to_string(),
        token_file,
        child,
    };
    std::thread::spawn(move || for _ in lines {});
    server
}

/// A client in bash and curl: initialize, `notifications/initialized`, then a
/// `tools/call` of `read_file secret.txt`; each request with the extra `-H` headers
/// given as arguments. Prints every response with its status line.
const HANDSHAKE: &str = r#"
url=$1; shift
hdrs=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2025-06-18')
for h in "$@"; do hdrs+=(-H "$h"); done
d=$(mktemp -d)
curl -s -i "${hdrs[@]}" -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}' "$url" > "$d/init"
cat "$d/init"; echo
sid=$(grep -i '^mcp-session-id:' "$d/init" | cut -d' ' -f2 | tr -d '\r')
[ -n "$sid" ] && hdrs+=(-H "Mcp-Session-Id: $sid")
curl -s -i "${hdrs[@]}" -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$url"; echo
curl -s -i "${hdrs[@]}" -d '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"secret.txt"}}}' "$url"; echo
rm -rf "$d"
"#;

/// Runs [`HANDSHAKE`] against `server` with `headers`, as root or (with `as_nobody`) as
/// uid 65534; returns what it printed.
fn probe(server: &Server, headers: &[String], as_nobody: bool) -> String {
    let mut cmd = if as_nobody {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "bash"]);
        c
    } else {
        Command::new("bash")
    };
    let out = cmd
        .args(["-c", HANDSHAKE, "probe", &server.url])
        .args(headers)
        .current_dir("/")
        .env("HOME", "/nonexistent")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

fn bearer(token: &str) -> String {
    format!("Authorization: Bearer {token}")
}

fn assert_refused(out: &str, status: &str, what: &str) {
    assert!(!out.contains(SECRET), "{what}: the secret leaked: {out}");
    let statuses: Vec<&str> = out.lines().filter(|l| l.starts_with("HTTP/")).collect();
    assert!(
        !statuses.is_empty() && statuses.iter().all(|l| l.contains(status)),
        "{what}: expected every response to be {status}: {out}"
    );
}

#[test]
fn requests_without_the_token_or_from_a_foreign_host_or_origin_are_refused() {
    require_features!(Curl);
    let f = fixture();
    let server = serve(&f, "default");
    let host = |h: &str| format!("Host: {h}");
    let right = bearer(&server.token);
    let cases: Vec<(Vec<String>, &str, &str)> = vec![
        (vec![], "401", "no token"),
        (vec![bearer("0000")], "401", "a wrong token"),
        (
            vec![bearer(&format!("{}0", server.token))],
            "401",
            "the token and more",
        ),
        (
            vec![bearer(&server.token[..63])],
            "401",
            "a prefix of the token",
        ),
        (
            vec![format!("Authorization: Basic {}", server.token)],
            "401",
            "another scheme",
        ),
        (
            vec![format!("Authorization: {}", server.token)],
            "401",
            "no scheme",
        ),
        (
            vec![format!("X-Api-Key: {}", server.token)],
            "401",
            "another header",
        ),
        (
            vec![
                right.clone(),
                host(&format!("evil.example:{}", server.port)),
            ],
            "403",
            "a rebinding Host",
        ),
        (
            vec![
                right.clone(),
                host(&format!("127.0.0.1:{}", server.port + 1)),
            ],
            "403",
            "another port",
        ),
        (
            vec![right.clone(), "Origin: http://evil.example".into()],
            "403",
            "a foreign Origin",
        ),
        (
            vec![right.clone(), "Origin: null".into()],
            "403",
            "a null Origin",
        ),
        (
            vec![
                right.clone(),
                format!("Origin: https://127.0.0.1:{}", server.port),
            ],
            "403",
            "another scheme's Origin",
        ),
    ];
    for (headers, status, what) in cases {
        assert_refused(&probe(&server, &headers, false), status, what);
    }
    // Positive control: the same client with the token (and the bound host named either
    // way, and a same-origin Origin) reads the file.
    for extra in [
        vec![],
        vec![host(&format!("localhost:{}", server.port))],
        vec![format!("Origin: http://127.0.0.1:{}", server.port)],
    ] {
        let out = probe(
            &server,
            &[vec![right.clone()], extra.clone()].concat(),
            false,
        );
        assert!(out.contains(SECRET), "with the token {extra:?}: {out}");
    }
}

#[test]
fn another_local_user_cannot_read_the_token_or_use_the_listener() {
    require_features!(Curl, OtherUser);
    let f = fixture();
    let server = serve(&f, "default");
    let mode = std::fs::metadata(&server.token_file)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "{}", server.token_file.display());
    assert_eq!(
        std::fs::read_to_string(&server.token_file).unwrap().trim(),
        server.token
    );
    // uid 65534 reads the token file, then uses whatever it got, then tries without.
    let steal = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "cat"])
        .arg(&server.token_file)
        .output()
        .unwrap();
    assert!(!steal.status.success());
    let stolen = String::from_utf8_lossy(&steal.stdout).trim().to_string();
    assert!(!stolen.contains(&server.token));
    for headers in [vec![bearer(&stolen)], vec![], vec![bearer("guess")]] {
        let out = probe(&server, &headers, true);
        assert_refused(&out, "401", &format!("uid 65534 with {headers:?}"));
        assert!(!out.contains(&server.token));
    }
    // The same probe as uid 65534 with the token gets through: the listener, not the
    // network, was what stopped it.
    let out = probe(&server, &[bearer(&server.token)], true);
    assert!(out.contains(SECRET), "{out}");
}

#[test]
fn the_token_file_is_removed_when_the_server_stops() {
    // The signal goes out the moment the server has printed its address: the server
    // must already be listening for it then, or the signal ends it before it cleans up.
    for signal in ["-INT", "-TERM"] {
        let f = fixture();
        let mut server = serve(&f, "default");
        assert!(server.token_file.is_file());
        let stopped = Command::new("kill")
            .args([signal, &server.child.id().to_string()])
            .status()
            .unwrap();
        assert!(stopped.success());
        let status = server.child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "{signal}: {status}");
        assert!(
            !server.token_file.exists(),
            "{signal}: {}",
            server.token_file.display()
        );
    }
}

async fn client(server: &Server) -> rmcp::service::RunningService<rmcp::RoleClient, ClientConfig> {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(server.url.clone())
            .auth_header(server.token.clone()),
    );
    ClientConfig::default().serve(transport).await.unwrap()
}

fn text(r: &rmcp::model::CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

fn params(name: &str, args: serde_json::Value) -> CallToolRequestParams {
    serde_json::from_value(json!({"name": name, "arguments": args})).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn served_commands_over_http_obey_the_mode_and_the_sandbox() {
    require_features!(Landlock, Python3);
    let f = fixture();
    let server = serve(&f, "dontAsk");
    let client = client(&server).await;
    let target = f.outside.join("pwned.txt").display().to_string();
    // A redirect outside the roots: refused or confined; either way nothing is written.
    let r = client
        .call_tool(params(
            "run_command",
            json!({"command": format!("echo x > {target}")}),
        ))
        .await
        .unwrap();
    let _ = text(&r);
    // A write the engine cannot see (the path is assembled at run time): the sandbox.
    let (a, b) = target.split_at(target.len() / 2);
    let r = client
        .call_tool(params(
            "run_command",
            json!({"command": format!("python3 -c \"open('{a}'+'{b}','w').write('x')\"")}),
        ))
        .await
        .unwrap();
    assert!(text(&r).contains("[Errno"), "{}", text(&r));
    assert_eq!(std::fs::read_dir(&f.outside).unwrap().count(), 0);
    // Positive control: a command writing inside the project runs.
    let r = client
        .call_tool(params(
            "run_command",
            json!({"command": "echo ok > inside.txt"}),
        ))
        .await
        .unwrap();
    assert!(r.is_error != Some(true), "{}", text(&r));
    assert_eq!(
        std::fs::read_to_string(f.project.join("inside.txt")).unwrap(),
        "ok\n"
    );
    client.cancel().await.unwrap();
}

/// The official Python `mcp` client over streamable HTTP: with the token it reads the
/// file; without it, it cannot even initialise. Needs `scripts/mcp-python-client.sh`
/// (target/mcp-python); skipped, saying why, without it.
#[test]
fn the_python_client_connects_over_http_only_with_the_token() {
    let python =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/mcp-python/bin/python");
    if !python.exists() {
        println!(
            "SKIPPED: the Python mcp client is not installed ({} missing); run scripts/mcp-python-client.sh --install",
            python.display()
        );
        return;
    }
    let f = fixture();
    let server = serve(&f, "default");
    let program = r#"
import asyncio, sys
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client, create_mcp_http_client

async def main():
    url, token = sys.argv[1:3]
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with create_mcp_http_client(headers=headers) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                result = await session.call_tool("read_file", {"path": "secret.txt"})
                print("TEXT", result.content[0].text.replace("\n", " "))

try:
    asyncio.run(asyncio.wait_for(main(), 30))
except BaseException as e:
    print("FAILED", type(e).__name__)
"#;
    let run = |token: &str| {
        let out = Command::new(&python)
            .args(["-c", program, &server.url, token])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let with = run(&server.token);
    assert!(with.contains(SECRET), "{with}");
    for token in ["", "wrong"] {
        let without = run(token);
        assert!(
            !without.contains(SECRET) && without.contains("FAILED"),
            "{without}"
        );
    }
}
