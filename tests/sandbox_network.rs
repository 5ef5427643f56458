//! The network side of the sandbox, attacked from real sandboxed commands: a server on
//! the host's `127.0.0.1` cannot be reached directly (curl, python3, bash `/dev/tcp`), and
//! through crew's proxy it is reachable only when `sandbox.network.allowedDomains` lists
//! it (`localhost:PORT`), over plain HTTP, `CONNECT` and SOCKS5 alike; anything else is
//! refused with a message naming the host and the setting. No DNS is needed.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a test binary: a failed unwrap is a failed test"
)]

mod support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crewmaster::sandbox::net::{self, NetworkPolicy};
use serde_json::json;
use support::sandbox::{confined, crew, repo, run, tool_results};

/// The network policy is process-wide (set from the settings at start), so the tests of
/// this binary that set it take turns.
static POLICY_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A tiny HTTP server on the host's loopback answering `body` to every request; returns
/// its port and the number of connections it accepted.
fn server(body: &'static str) -> (u16, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&hits);
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            seen.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let mut head = Vec::new();
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                // One write: `write!` on a bare stream sends each piece as it formats.
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(reply.as_bytes());
            });
        }
    });
    (port, hits)
}

/// python3 talking to `127.0.0.1:PORT` by hand: straight, or through the proxy with a
/// hand-made CONNECT or SOCKS5 handshake (no proxy support in the library needed).
fn python(kind: &str, port: u16) -> String {
    let body = match kind {
        "direct" => format!(
            "s=socket.create_connection(('127.0.0.1',{port}),3); s.sendall(b'GET / HTTP/1.0\\r\\n\\r\\n')"
        ),
        "connect" => format!(
            "s=socket.create_connection(('127.0.0.1',{p}),3); s.sendall(b'CONNECT localhost:{port} HTTP/1.1\\r\\n\\r\\n'); print(head(s)); s.sendall(b'GET / HTTP/1.0\\r\\n\\r\\n')",
            p = net::PROXY_PORT
        ),
        "socks" => format!(
            "s=socket.create_connection(('127.0.0.1',{p}),3); s.sendall(b'\\x05\\x01\\x00'); exact(s,2); s.sendall(b'\\x05\\x01\\x00\\x03\\x09localhost'+({port}).to_bytes(2,'big')); r=exact(s,10); print('socks reply', r[1]); s.sendall(b'GET / HTTP/1.0\\r\\n\\r\\n')",
            p = net::PROXY_PORT
        ),
        _ => unreachable!(),
    };
    // TCP may deliver any reply in pieces: read the proxy's replies to their end and
    // the server's answer until it closes.
    let reads = "def exact(s,n):\n    b=b''\n    while len(b)<n:\n        c=s.recv(n-len(b))\n        if not c: break\n        b+=c\n    return b\n\
        def head(s):\n    b=b''\n    while not b.endswith(b'\\r\\n\\r\\n'):\n        c=s.recv(1)\n        if not c: break\n        b+=c\n    return b\n\
        def rest(s):\n    b=b''\n    while True:\n        try: c=s.recv(4096)\n        except OSError: break\n        if not c: break\n        b+=c\n    return b\n";
    format!(
        "python3 -c \"import socket\n{reads}try:\n    {body}\n    print(rest(s))\nexcept Exception as e:\n    print('py failed', e)\"; echo rc=$?"
    )
}

#[tokio::test]
async fn a_server_on_the_hosts_loopback_is_unreachable_from_a_sandboxed_command() {
    require_features!(Landlock, NetworkNamespaces, Python3, Curl);
    let _turn = POLICY_LOCK.lock().await;
    net::set_policy(NetworkPolicy::default());
    let (port, hits) = server("HOST-SECRET");
    let (_d, root) = repo();
    for command in [
        format!("curl -s --max-time 3 http://127.0.0.1:{port}/; echo rc=$?"),
        format!("curl -s --max-time 3 http://localhost:{port}/; echo rc=$?"),
        format!("curl -s --max-time 3 -g 'http://[::1]:{port}/'; echo rc=$?"),
        format!(
            "exec 3<>/dev/tcp/127.0.0.1/{port} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3; echo rc=$?"
        ),
        python("direct", port),
        // No proxy runs when nothing is listed: its port is closed too.
        python("connect", port),
        python("socks", port),
    ] {
        let out = run(confined(&root), &command).await;
        assert!(!out.contains("HOST-SECRET"), "{command}: {out}");
        assert!(out.contains("rc="), "{command}: {out}");
    }
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "the host's server saw a connection"
    );
    // Loopback inside the namespace works: a command can talk to itself.
    let out = run(
        confined(&root),
        "python3 -c \"import socket\nl=socket.socket(); l.bind(('127.0.0.1',0)); l.listen()\nc=socket.create_connection(l.getsockname()); a,_=l.accept(); c.sendall(b'LOOP-OK'); print(a.recv(7).decode())\"",
    )
    .await;
    assert!(out.contains("LOOP-OK"), "{out}");
    // An unconfined command still reaches the host (the control: the server works).
    let out = run(
        crewmaster::tools::ToolContext::new(&root, "test"),
        &format!("curl -s --max-time 3 http://127.0.0.1:{port}/"),
    )
    .await;
    assert!(out.contains("HOST-SECRET"), "{out}");
}

#[tokio::test]
async fn through_the_proxy_a_listed_host_is_reachable_and_every_other_refused() {
    require_features!(Landlock, NetworkNamespaces, Python3, Curl);
    let _turn = POLICY_LOCK.lock().await;
    let (listed, listed_hits) = server("LISTED-OK");
    let (other, other_hits) = server("OTHER-SECRET");
    net::set_policy(NetworkPolicy::from_settings(&[format!("localhost:{listed}")], false).unwrap());
    let (_d, root) = repo();

    // Plain HTTP in absolute form (curl and python read HTTP_PROXY / http_proxy).
    let out = run(
        confined(&root),
        &format!("curl -s --max-time 5 http://localhost:{listed}/"),
    )
    .await;
    assert!(out.contains("LISTED-OK"), "{out}");
    let out = run(
        confined(&root),
        &format!("python3 -c \"import urllib.request; print(urllib.request.urlopen('http://localhost:{listed}/').read())\""),
    )
    .await;
    assert!(out.contains("LISTED-OK"), "{out}");
    // CONNECT (what HTTPS uses), from curl and by hand.
    let out = run(
        confined(&root),
        &format!("curl -s -p --max-time 5 http://localhost:{listed}/"),
    )
    .await;
    assert!(out.contains("LISTED-OK"), "{out}");
    let out = run(confined(&root), &python("connect", listed)).await;
    assert!(
        out.contains("200 Connection Established") && out.contains("LISTED-OK"),
        "{out}"
    );
    // SOCKS5 with a domain name, from curl (ALL_PROXY) and by hand.
    let out = run(
        confined(&root),
        &format!("env -u HTTP_PROXY -u http_proxy curl -s --max-time 5 http://localhost:{listed}/; echo; env | grep -i '^all_proxy='"),
    )
    .await;
    assert!(out.contains("LISTED-OK"), "{out}");
    assert!(
        out.contains(&format!("socks5h://127.0.0.1:{}", net::PROXY_PORT)),
        "{out}"
    );
    let out = run(confined(&root), &python("socks", listed)).await;
    assert!(
        out.contains("socks reply 0") && out.contains("LISTED-OK"),
        "{out}"
    );
    let served = listed_hits.load(Ordering::SeqCst);
    assert!(served >= 6, "the listed server saw {served} connections");

    // Every way to the unlisted server is refused, and the result says why.
    for command in [
        format!("curl -s --max-time 5 http://localhost:{other}/; echo rc=$?"),
        format!("curl -s -p --max-time 5 http://localhost:{other}/; echo rc=$?"),
        format!(
            "curl -s --max-time 5 --socks5-hostname 127.0.0.1:{} http://localhost:{other}/; echo rc=$?",
            net::PROXY_PORT
        ),
        format!("curl -s --max-time 5 http://127.0.0.1:{listed}/; echo rc=$?"),
        format!("NO_PROXY='*' curl -s --max-time 3 http://localhost:{other}/; echo rc=$?"),
        format!("curl -s --noproxy '*' --max-time 3 http://localhost:{listed}/; echo rc=$?"),
        python("direct", other),
        python("connect", other),
        python("socks", other),
    ] {
        let out = run(confined(&root), &command).await;
        assert!(!out.contains("OTHER-SECRET"), "{command}: {out}");
        assert!(out.contains("rc="), "{command}: {out}");
        if command.contains("127.0.0.1:") && !command.contains("socks5") {
            assert!(!out.contains("LISTED-OK"), "{command}: {out}");
        }
    }
    assert_eq!(
        other_hits.load(Ordering::SeqCst),
        0,
        "the unlisted server saw a connection"
    );
    assert_eq!(
        listed_hits.load(Ordering::SeqCst),
        served,
        "a bypass reached the listed server"
    );

    // The refusal names the host and the setting, in the 403 body and in the result.
    let out = run(
        confined(&root),
        &format!("curl -s --max-time 5 http://localhost:{other}/"),
    )
    .await;
    assert!(out.contains(&format!("localhost:{other}")), "{out}");
    assert!(
        out.contains("not in sandbox.network.allowedDomains"),
        "{out}"
    );
    assert!(
        out.contains("note: the sandbox blocked network connections to"),
        "{out}"
    );
    net::set_policy(NetworkPolicy::default());
}

#[test]
fn crew_reads_allowed_domains_from_local_settings_and_ignores_the_projects() {
    require_features!(Landlock, NetworkNamespaces, Curl);
    let (listed, _) = server("LOCAL-LISTED");
    let (project, project_hits) = server("PROJECT-LISTED");
    let (_d, root) = repo();
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        root.join(".crew/settings.local.json"),
        json!({"sandbox": {"network": {"allowedDomains": [format!("localhost:{listed}")]}}})
            .to_string(),
    )
    .unwrap();
    std::fs::write(
        root.join(".crew/settings.json"),
        json!({"sandbox": {"network": {"allowedDomains": [format!("localhost:{project}")]}}})
            .to_string(),
    )
    .unwrap();
    let script = root.join("script.json");
    let calls = [listed, project].map(|p| {
        json!({"name": "run_command", "input": {"command": format!("curl -s --max-time 5 http://localhost:{p}/; echo rc=$?")}})
    });
    std::fs::write(
        &script,
        json!({"turns": [{"tool_calls": calls}, {"text": "done"}]}).to_string(),
    )
    .unwrap();
    let out = crew(&root, &home, &script, "dontAsk", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let results = tool_results(&root);
    assert!(results.contains("LOCAL-LISTED"), "{results}");
    assert!(!results.contains("PROJECT-LISTED"), "{results}");
    assert!(
        results.contains(&format!("localhost:{project}")),
        "{results}"
    );
    assert!(
        results.contains("sandbox.network.allowedDomains"),
        "{results}"
    );
    assert_eq!(project_hits.load(Ordering::SeqCst), 0);
    assert!(
        stderr.contains("allowedDomains") && stderr.contains("ignored in project settings"),
        "{stderr}"
    );
}

#[test]
fn a_malformed_allowed_domains_value_stops_crew_naming_the_file_and_field() {
    let (_d, root) = repo();
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    for (value, field) in [
        (json!("github.com"), "sandbox.network.allowedDomains"),
        (
            json!(["github.com", "https://evil.example/x"]),
            "sandbox.network.allowedDomains[1]",
        ),
    ] {
        std::fs::write(
            root.join(".crew/settings.local.json"),
            json!({"sandbox": {"network": {"allowedDomains": value}}}).to_string(),
        )
        .unwrap();
        let script = root.join("script.json");
        std::fs::write(&script, json!({"turns": [{"text": "done"}]}).to_string()).unwrap();
        let out = crew(&root, &home, &script, "default", &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(stderr.contains("settings.local.json"), "{stderr}");
        assert!(stderr.contains(field), "{stderr}");
    }
}

#[test]
fn without_namespaces_landlock_lets_tcp_reach_only_the_proxy() {
    require_features!(Landlock, LandlockNetwork, Curl, Python3);
    let (listed, listed_hits) = server("FENCE-LISTED");
    let (other, other_hits) = server("FENCE-SECRET");
    let (_d, root) = repo();
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        root.join(".crew/settings.local.json"),
        json!({"sandbox": {"network": {"allowedDomains": [format!("localhost:{listed}")]}}})
            .to_string(),
    )
    .unwrap();
    let commands = [
        format!("curl -s --max-time 5 http://localhost:{listed}/; echo rc=$?"),
        format!("curl -s --max-time 5 http://localhost:{other}/; echo rc=$?"),
        format!("curl -s --noproxy '*' --max-time 3 http://127.0.0.1:{other}/; echo rc=$?"),
        format!("curl -s --noproxy '*' --max-time 3 http://127.0.0.1:{listed}/; echo rc=$?"),
        format!("exec 3<>/dev/tcp/127.0.0.1/{other} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3; echo rc=$?"),
        "python3 -c \"import socket\ntry:\n    socket.socket().bind(('127.0.0.1', 0)); print('BOUND')\nexcept Exception as e:\n    print('bind refused', e)\"".to_string(),
    ];
    let calls: Vec<_> = commands
        .iter()
        .map(|c| json!({"name": "run_command", "input": {"command": c}}))
        .collect();
    let script = root.join("script.json");
    std::fs::write(
        &script,
        json!({"turns": [{"tool_calls": calls}, {"text": "done"}]}).to_string(),
    )
    .unwrap();
    let out = crew(
        &root,
        &home,
        &script,
        "dontAsk",
        &[(net::SIMULATE_NO_NAMESPACES_ENV, "1")],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let results = tool_results(&root);
    assert_eq!(
        results.matches("FENCE-LISTED").count(),
        1,
        "only through the proxy: {results}"
    );
    assert!(!results.contains("FENCE-SECRET"), "{results}");
    assert!(
        results.contains(&format!("localhost:{other}")),
        "refusal named: {results}"
    );
    assert!(results.contains("bind refused"), "{results}");
    assert!(!results.contains("BOUND"), "{results}");
    assert_eq!(other_hits.load(Ordering::SeqCst), 0);
    assert_eq!(
        listed_hits.load(Ordering::SeqCst),
        1,
        "a direct connection got through"
    );
}

#[test]
fn a_background_command_keeps_its_proxy_until_it_ends() {
    require_features!(Landlock, NetworkNamespaces, Curl);
    let (listed, _) = server("BACKGROUND-LISTED");
    let (_d, root) = repo();
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        root.join(".crew/settings.local.json"),
        json!({"sandbox": {"network": {"allowedDomains": [format!("localhost:{listed}")]}}})
            .to_string(),
    )
    .unwrap();
    let script = root.join("script.json");
    // The request is made a second after the call has returned to the model.
    let turns = json!({"turns": [
        {"tool_calls": [{"name": "run_command", "input": {
            "command": format!("sleep 1; curl -s --max-time 5 http://localhost:{listed}/ > got.txt; echo rc=$? >> got.txt"),
            "run_in_background": true}}]},
        {"tool_calls": [{"name": "run_command", "input": {"command": "sleep 4; cat got.txt"}}]},
        {"text": "done"}
    ]});
    std::fs::write(&script, turns.to_string()).unwrap();
    let out = crew(&root, &home, &script, "dontAsk", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let got = std::fs::read_to_string(root.join("got.txt")).unwrap_or_default();
    assert!(got.contains("BACKGROUND-LISTED"), "{got} / {stderr}");
}
