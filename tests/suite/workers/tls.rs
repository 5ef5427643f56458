//! TLS between lead and workers, end to end with real processes on loopback. The
//! certificates are made in each test with the `openssl` commands the README gives, so
//! the README's recipe is what is tested. A small TCP proxy between lead and worker
//! records the bytes on the wire.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::*;

/// A CA, and a worker certificate it signed for 127.0.0.1 and localhost.
struct Pki {
    ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("these tests need the openssl command (README: Running on several machines)");
    assert!(out.status.success(), "openssl {args:?}: {out:?}");
}

/// A CA named `name`, as the README makes it.
fn ca(dir: &Path, name: &str) -> PathBuf {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.pem"),
            "-days",
            "30",
            "-subj",
            &format!("/CN={name}"),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
    );
    dir.join(format!("{name}.pem"))
}

/// A certificate `name` for 127.0.0.1 and localhost, signed by the CA `ca`.
fn signed(dir: &Path, ca: &str, name: &str) -> (PathBuf, PathBuf) {
    signed_for(dir, ca, name, "IP:127.0.0.1,DNS:localhost")
}

/// A certificate `name` for the hosts `san`, signed by the CA `ca`, as the README makes it.
fn signed_for(dir: &Path, ca: &str, name: &str, san: &str) -> (PathBuf, PathBuf) {
    put(
        dir,
        &format!("{name}.ext"),
        &format!("subjectAltName={san}\nextendedKeyUsage=serverAuth,clientAuth\n"),
    );
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.csr"),
            "-subj",
            &format!("/CN={name}"),
        ],
    );
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &format!("{name}.csr"),
            "-CA",
            &format!("{ca}.pem"),
            "-CAkey",
            &format!("{ca}.key"),
            "-CAcreateserial",
            "-out",
            &format!("{name}.pem"),
            "-days",
            "30",
            "-extfile",
            &format!("{name}.ext"),
        ],
    );
    let key = dir.join(format!("{name}.key"));
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    (dir.join(format!("{name}.pem")), key)
}

fn pki(home: &Path) -> Pki {
    let dir = home.join("pki");
    std::fs::create_dir_all(&dir).unwrap();
    let ca = ca(&dir, "ca");
    let (cert, key) = signed(&dir, "ca", "worker");
    Pki { ca, cert, key }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn tls_worker(f: &Fixture, pki: &Pki, name: &str, extra: &[&str]) -> WorkerProcess {
    let mut args = vec!["--tls-cert", s(&pki.cert), "--tls-key", s(&pki.key)];
    args.extend_from_slice(extra);
    let w = start_worker_with(&f.home, &f.cookie, name, 1, &args);
    assert!(w.log().contains("TLS only"), "{}", w.log());
    w
}

/// `crew workers list --probe` against `addr` with `extra` flags.
fn probe(f: &Fixture, addr: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "workers",
        "list",
        "--probe",
        "--workers",
        addr,
        "--cookie-file",
        s(&f.cookie),
    ];
    args.extend_from_slice(extra);
    support::crew(&f.root, &f.home, &args)
}

/// A TCP proxy on loopback that forwards to `upstream` and records every byte, both ways.
fn recording_proxy(upstream: String) -> (String, Arc<Mutex<Vec<u8>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(server) = TcpStream::connect(&upstream) else {
                continue;
            };
            for (mut from, mut to) in [
                (client.try_clone().unwrap(), server.try_clone().unwrap()),
                (server, client),
            ] {
                let record = record.clone();
                std::thread::spawn(move || {
                    let mut buf = [0u8; 16 * 1024];
                    while let Ok(n) = from.read(&mut buf) {
                        if n == 0 || to.write_all(&buf[..n]).is_err() {
                            break;
                        }
                        record.lock().unwrap().extend_from_slice(&buf[..n]);
                    }
                    let _ = to.shutdown(std::net::Shutdown::Both);
                });
            }
        }
    });
    (addr, seen)
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[test]
fn a_tls_worker_serves_a_remote_subagent_and_nothing_readable_crosses_the_wire() {
    let f = fixture(&[("r", &remote_agent("r", "write_file"))]);
    let pki = pki(&f.home);
    let mut worker = tls_worker(&f, &pki, "a", &[]);
    let (proxy, seen) = recording_proxy(worker.addr.clone());
    // The lead reaches the worker through the recording proxy.
    let direct = std::mem::replace(&mut worker.addr, proxy);
    let script = serde_json::json!({
        "turns": [{"tool_calls": [spawn_call("r", "secret job")]}],
        "agents": {"r": {"turns": [
            {"tool_calls": [{"name": "write_file", "input": {
                "path": "plainly-named-file.txt", "content": "clearly visible words\n"}}]},
            {"text": "r done"}]}}
    });
    let out = lead(
        &f.root,
        &f.home,
        &script,
        &[worker.addr.as_str()],
        &f.cookie,
        &["--worker-ca", s(&pki.ca)],
    );
    worker.addr = direct;
    assert!(out.status.success(), "{}", text(&out));
    let task = &tasks_json(&f.root, &f.home)[0];
    assert_eq!(task["status"], "completed", "{task:#}");
    assert!(task["node"].as_str().unwrap().starts_with("a@"), "{task:#}");
    let branch = branch_of(&f.root, task["id"].as_str().unwrap());
    assert_eq!(
        git(
            &f.root,
            &["show", &format!("{branch}:plainly-named-file.txt")]
        ),
        "clearly visible words"
    );
    assert!(
        worker.log().contains("TLS connection from"),
        "{}",
        worker.log()
    );
    // The proxy carried the whole run (the bundle alone is kilobytes) and none of it is
    // readable: not the cookie, the file's name or content, the prompt, the agent type.
    let wire = seen.lock().unwrap().clone();
    assert!(
        wire.len() > 2048,
        "only {} bytes went through the proxy",
        wire.len()
    );
    let cookie = std::fs::read_to_string(&f.cookie).unwrap();
    for secret in [
        cookie.trim(),
        "plainly-named-file",
        "clearly visible words",
        "do secret job",
        "crew.workers",
    ] {
        assert!(
            !contains(&wire, secret),
            "`{secret}` crossed the wire in the clear"
        );
    }
}

#[test]
fn a_lead_that_does_not_trust_the_workers_certificate_is_refused_and_both_sides_log_it() {
    let f = fixture(&[]);
    let pki = pki(&f.home);
    let other = ca(&f.home.join("pki"), "other-ca");
    let worker = tls_worker(&f, &pki, "a", &[]);
    let out = probe(&f, &worker.addr, &["--worker-ca", s(&other)]);
    assert!(!out.status.success());
    let said = text(&out);
    assert!(
        said.contains("TLS handshake failed") && said.contains("UnknownIssuer"),
        "{said}"
    );
    wait_for("the worker to log the refusal", || {
        worker.log().contains("refused a connection") && worker.log().contains("UnknownCA")
    });
    // A certificate from the trusted CA that names another host is refused as well.
    let (cert, key) = signed_for(
        &f.home.join("pki"),
        "ca",
        "elsewhere",
        "DNS:elsewhere.example",
    );
    let misnamed = Pki {
        ca: pki.ca.clone(),
        cert,
        key,
    };
    let elsewhere = tls_worker(&f, &misnamed, "b", &[]);
    let out = probe(&f, &elsewhere.addr, &["--worker-ca", s(&pki.ca)]);
    assert!(!out.status.success());
    assert!(text(&out).contains("not valid for name"), "{}", text(&out));
    // The trusted CA is accepted, even while another client holds a connection open
    // without ever starting its TLS handshake.
    let _stalled = TcpStream::connect(&worker.addr).unwrap();
    let out = probe(&f, &worker.addr, &["--worker-ca", s(&pki.ca)]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("a@127.0.0.1  0/1 slots in use"));
}

#[test]
fn a_plaintext_lead_is_refused_by_a_tls_worker_and_a_tls_lead_by_a_plaintext_one() {
    let f = fixture(&[]);
    let pki = pki(&f.home);
    let worker = tls_worker(&f, &pki, "a", &[]);
    let out = probe(&f, &worker.addr, &[]);
    assert!(!out.status.success());
    let said = text(&out);
    assert!(
        said.contains("refused the connection") && said.contains("--worker-ca"),
        "{said}"
    );
    wait_for("the worker to log the refusal", || {
        worker.log().contains("refused a connection")
            && worker.log().contains("TLS handshake failed")
    });
    assert!(!worker.log().contains("authenticated"), "{}", worker.log());
    // The lead never falls back to plaintext either.
    let plain = start_worker(&f.home, &f.cookie, "p", 1);
    let out = probe(&f, &plain.addr, &["--worker-ca", s(&pki.ca)]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("TLS handshake failed"),
        "{}",
        text(&out)
    );
    assert!(!plain.log().contains("authenticated"), "{}", plain.log());
}

#[test]
fn mutual_tls_admits_only_a_lead_with_a_client_certificate_from_the_workers_ca() {
    let f = fixture(&[]);
    let pki = pki(&f.home);
    let dir = f.home.join("pki");
    let (lead_cert, lead_key) = signed(&dir, "ca", "lead");
    ca(&dir, "other-ca");
    let (stranger_cert, stranger_key) = signed(&dir, "other-ca", "stranger");
    let worker = tls_worker(&f, &pki, "m", &["--tls-ca", s(&pki.ca)]);
    assert!(worker.log().contains("mutual TLS only"), "{}", worker.log());
    let ca = ["--worker-ca", s(&pki.ca)];
    let out = probe(&f, &worker.addr, &ca);
    assert!(!out.status.success());
    assert!(text(&out).contains("--worker-cert"), "{}", text(&out));
    let stranger = [
        ca[0],
        ca[1],
        "--worker-cert",
        s(&stranger_cert),
        "--worker-key",
        s(&stranger_key),
    ];
    assert!(!probe(&f, &worker.addr, &stranger).status.success());
    wait_for("the worker to log both refusals", || {
        let log = worker.log();
        log.contains("peer sent no certificates")
            && log.matches("refused a connection").count() >= 2
    });
    let lead = [
        ca[0],
        ca[1],
        "--worker-cert",
        s(&lead_cert),
        "--worker-key",
        s(&lead_key),
    ];
    let out = probe(&f, &worker.addr, &lead);
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("m@127.0.0.1"));
}

#[test]
fn bad_certificate_and_key_files_are_refused_naming_the_flag_and_the_file() {
    use std::os::unix::fs::PermissionsExt;
    let f = fixture(&[]);
    let pki = pki(&f.home);
    let worker = |cert: &Path, key: &Path| {
        support::crew(
            &f.root,
            &f.home,
            &[
                "worker",
                "--listen",
                "127.0.0.1:0",
                "--cookie-file",
                s(&f.cookie),
                "--tls-cert",
                s(cert),
                "--tls-key",
                s(key),
            ],
        )
    };
    std::fs::set_permissions(&pki.key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let said = text(&worker(&pki.cert, &pki.key));
    assert!(
        said.contains("--tls-key") && said.contains("chmod 600"),
        "{said}"
    );
    std::fs::set_permissions(&pki.key, std::fs::Permissions::from_mode(0o600)).unwrap();
    // A key for another certificate, a key where the certificate goes.
    let said = text(&worker(&pki.ca, &pki.key));
    assert!(
        said.contains("--tls-key") && said.contains("does not go with"),
        "{said}"
    );
    let said = text(&worker(&pki.key, &pki.key));
    assert!(
        said.contains("--tls-cert") && said.contains("BEGIN CERTIFICATE"),
        "{said}"
    );
    // The lead's CA file.
    let out = probe(&f, "127.0.0.1:1", &["--worker-ca", s(&pki.key)]);
    let said = text(&out);
    assert!(
        !out.status.success() && said.contains("--worker-ca"),
        "{said}"
    );
}
