//! What every sandbox profile hides, against real programs: a confined command (run by
//! `crew -p` under dontAsk on a scripted model, or by the `run_command` tool in a
//! confined context) cannot print the credential stores, crew's own secrets, other
//! agents' worktrees or what `Read` deny rules cover, not through a symlink or a hard
//! link in the project either, and cannot reach the ssh-agent or Docker socket. Each
//! test also reads something allowed the same way, so a reader that merely failed cannot
//! pass it. Tests fail without Landlock, mount namespaces or python3 unless knowingly
//! opted out (`support::kernel`).

use crate::support;
use crewmaster::tools::rule_names::ParseRule;

use std::io::Write;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crewmaster::permission::walk::WalkFilter;
use crewmaster::permission::{Layer, Policy, Rule, RuleKind};
use support::sandbox::{confined, crew, run, tool_results};

/// Fails (or returns, when knowingly opted out) unless the hiding layers are here.
macro_rules! require_hiding {
    () => {
        require_features!(Landlock, Python3, MountNamespaces);
    };
}

/// A project and a home beside it (one file system, so hard links work), canonical.
fn layout() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let proj = base.join("proj");
    let home = base.join("home");
    std::fs::create_dir_all(proj.join(".crew")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    support::put(&proj, "README.md", "PUBLIC-README\n");
    (tmp, proj, home)
}

/// Runs each command as one `run_command` turn of `crew -p` under dontAsk; returns the
/// tool results the model was sent.
fn crew_dont_ask(proj: &Path, home: &Path, commands: &[&str], env: &[(&str, &str)]) -> String {
    let turns: Vec<serde_json::Value> = commands
        .iter()
        .map(|c| serde_json::json!({"tool_calls": [{"name": "run_command", "input": {"command": c}}]}))
        .chain([serde_json::json!({"text": "done"})])
        .collect();
    let script = home.join("script.json");
    std::fs::write(&script, serde_json::json!({ "turns": turns }).to_string()).unwrap();
    let out = crew(proj, home, &script, "dontAsk", env);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    tool_results(proj)
}

/// A python3 one-liner printing each file (its path assembled at run time, relative to
/// `$HOME` when it starts with `~`) or why it could not.
fn python_cat(paths: &[&str]) -> String {
    let list: Vec<String> = paths
        .iter()
        .map(|p| {
            let (a, b) = p.split_at(p.len() / 2);
            format!("'{a}'+'{b}'")
        })
        .collect();
    format!(
        "python3 -c \"import os\nfor p in [{}]:\n  q=os.path.expanduser(p)\n  try: print(p, '=>', repr(open(q).read()))\n  except Exception as e: print(p, '=>', type(e).__name__)\"; echo RAN-$?",
        list.join(",")
    )
}

#[test]
fn credential_stores_and_crews_secrets_are_hidden_from_a_confined_program() {
    require_hiding!();
    let (_t, proj, home) = layout();
    support::put(&home, ".ssh/id_rsa", "SSH-PRIVATE-KEY");
    support::put(&home, ".crew/cluster.cookie", "CLUSTER-COOKIE");
    support::put(&home, ".crew/tls/key.pem", "CREW-TLS-KEY");
    support::put(&home, ".crew/trusted.json", "{\"TRUST-STORE\":1}");
    support::put(&home, ".claude/.credentials.json", "CLAUDE-LOGIN");
    support::put(&home, ".config/gh/hosts.yml", "GH-TOKEN");
    support::put(&home, ".kube/config", "KUBE-TOKEN");
    support::put(&home, ".docker/config.json", "DOCKER-AUTH");
    support::put(&home, ".password-store/x.gpg", "PASS-STORE");
    support::put(&home, ".config/other.txt", "NOT-A-SECRET");
    let reader = python_cat(&[
        "~/.ssh/id_rsa",
        "~/.crew/cluster.cookie",
        "~/.crew/tls/key.pem",
        "~/.crew/trusted.json",
        "~/.claude/.credentials.json",
        "~/.config/gh/hosts.yml",
        "~/.kube/config",
        "~/.docker/config.json",
        "~/.password-store/x.gpg",
        "~/.config/other.txt",
        "README.md",
    ]);
    let shell = "cat ~/.ssh/id_rsa ~/.config/gh/hosts.yml ~/.claude/.credentials.json; ls -a ~/.crew; echo SHELL-RAN";
    let results = crew_dont_ask(&proj, &home, &[&reader, shell], &[]);
    assert!(
        results.contains("RAN-0"),
        "the reader did not run: {results}"
    );
    assert!(results.contains("NOT-A-SECRET"), "{results}");
    assert!(results.contains("PUBLIC-README"), "{results}");
    for secret in [
        "SSH-PRIVATE-KEY",
        "CLUSTER-COOKIE",
        "CREW-TLS-KEY",
        "TRUST-STORE",
        "CLAUDE-LOGIN",
        "GH-TOKEN",
        "KUBE-TOKEN",
        "DOCKER-AUTH",
        "PASS-STORE",
    ] {
        assert!(!results.contains(secret), "{secret} was printed: {results}");
    }
    assert!(
        !results.contains("cluster.cookie\\n"),
        "crew's home was listed: {results}"
    );
    // The files themselves are untouched.
    assert_eq!(
        std::fs::read_to_string(home.join(".crew/cluster.cookie")).unwrap(),
        "CLUSTER-COOKIE"
    );
}

#[test]
fn links_in_the_project_do_not_reach_hidden_files() {
    require_hiding!();
    let (_t, proj, home) = layout();
    support::put(&home, ".ssh/id_rsa", "SSH-PRIVATE-KEY");
    support::put(&home, ".ssh/config", "SSH-CONFIG");
    support::put(&home, ".crew/cluster.cookie", "CLUSTER-COOKIE");
    std::os::unix::fs::symlink(home.join(".ssh"), proj.join("link")).unwrap();
    std::os::unix::fs::symlink(home.join(".ssh/config"), proj.join("conf")).unwrap();
    std::fs::hard_link(home.join(".ssh/id_rsa"), proj.join("id_copy")).unwrap();
    std::fs::create_dir_all(proj.join("src")).unwrap();
    std::fs::hard_link(home.join(".crew/cluster.cookie"), proj.join("src/cookie")).unwrap();
    // A hard link outside the roots, reached through a symlink inside them.
    std::fs::hard_link(home.join(".ssh/id_rsa"), home.join("stray")).unwrap();
    std::os::unix::fs::symlink(home.join("stray"), proj.join("stray")).unwrap();
    // Two names of a file that is no secret stay readable.
    support::put(&proj, "a.txt", "PLAIN-A\n");
    std::fs::hard_link(proj.join("a.txt"), proj.join("b.txt")).unwrap();
    let results = crew_dont_ask(
        &proj,
        &home,
        &[
            "grep -R . . ; echo GREP-R-RAN",
            "grep -r . . ; echo GREP-r-RAN",
            "python3 -c \"import subprocess; subprocess.run(['grep','-R','-e','.','.'])\"; echo PY-GREP-RAN",
            &python_cat(&[
                "id_copy",
                "src/cookie",
                "stray",
                "link/id_rsa",
                "conf",
                "b.txt",
            ]),
        ],
        &[],
    );
    assert!(results.contains("PY-GREP-RAN"), "{results}");
    assert!(results.contains("RAN-0"), "{results}");
    assert!(results.contains("PLAIN-A"), "{results}");
    for secret in ["SSH-PRIVATE-KEY", "SSH-CONFIG", "CLUSTER-COOKIE"] {
        assert!(!results.contains(secret), "{secret} was printed: {results}");
    }
}

#[test]
fn read_deny_rules_hide_their_files_from_programs() {
    require_hiding!();
    let (_t, proj, home) = layout();
    support::put(&proj, "secrets/key.txt", "TOPSECRET-KEY\n");
    support::put(&proj, "secrets/deep/more.txt", "TOPSECRET-DEEP\n");
    support::put(&proj, ".env", "TOPSECRET-ENV\n");
    support::put(&proj, "src/tls/server.pem", "TOPSECRET-PEM\n");
    support::put(&proj, "src/main.rs", "PLAIN-MAIN\n");
    std::fs::hard_link(proj.join("secrets/key.txt"), proj.join("src/copy.txt")).unwrap();
    std::os::unix::fs::symlink(proj.join("secrets"), proj.join("alias")).unwrap();
    support::put(
        &proj,
        ".crew/settings.local.json",
        r#"{"permissions":{"deny":["Read(./secrets/**)","Read(./.env)","Read(**/*.pem)"]}}"#,
    );
    let results = crew_dont_ask(
        &proj,
        &home,
        &[
            "python3 -c \"print(open('secrets/key.txt').read())\"; echo PY1-RAN",
            &python_cat(&[
                "secrets/deep/more.txt",
                ".env",
                "src/tls/server.pem",
                "src/copy.txt",
                "alias/key.txt",
                "src/main.rs",
            ]),
            "python3 -c \"import subprocess; subprocess.run(['grep','-r','TOPSECRET','.'])\"; echo PY-GREP-RAN",
        ],
        &[],
    );
    assert!(results.contains("PY1-RAN"), "{results}");
    assert!(results.contains("PY-GREP-RAN"), "{results}");
    assert!(results.contains("PLAIN-MAIN"), "{results}");
    assert!(
        !results.contains("TOPSECRET-"),
        "a denied file was printed: {results}"
    );
}

/// A policy for `home` with these Read deny rules, as the session's walk filter.
fn walk(proj: &Path, home: &Path, deny: &[&str]) -> Arc<WalkFilter> {
    let policy = Policy {
        project_root: Some(proj.to_path_buf()),
        home: Some(home.to_path_buf()),
        rules: deny
            .iter()
            .map(|r| Rule::parse(r, RuleKind::Deny, Layer::User, Some(home)).unwrap())
            .collect(),
        ..Policy::default()
    };
    Arc::new(WalkFilter::new(&policy))
}

#[tokio::test]
async fn the_agents_own_worktree_stays_writable_while_a_siblings_is_hidden() {
    require_hiding!();
    let (_t, _proj, home) = layout();
    let own = home.join(".crew/worktrees/repo/mine");
    let sibling = home.join(".crew/worktrees/repo/theirs");
    support::put(&own, "src/lib.rs", "OWN-SOURCE\n");
    support::put(&sibling, "src/lib.rs", "SIBLING-SOURCE\n");
    support::put(
        &home,
        ".crew/projects/p/s2/transcript.jsonl",
        "OTHER-SESSION\n",
    );
    support::put(&home, ".crew/settings.json", "{\"USER-SETTINGS\":1}\n");
    let mut ctx = confined(&own);
    ctx.walk = walk(&own, &home, &[]);
    let out = run(
        ctx,
        "cat src/lib.rs; echo made > new.txt; echo inner > src/inner.txt; \
         cat ../theirs/src/lib.rs; echo x > ../theirs/planted.txt; \
         cat ../../../projects/p/s2/transcript.jsonl ../../../settings.json; \
         ls ../../..; echo DONE",
    )
    .await;
    assert!(out.contains("OWN-SOURCE") && out.contains("DONE"), "{out}");
    assert_eq!(
        std::fs::read_to_string(own.join("new.txt")).unwrap(),
        "made\n"
    );
    assert_eq!(
        std::fs::read_to_string(own.join("src/inner.txt")).unwrap(),
        "inner\n"
    );
    for secret in ["SIBLING-SOURCE", "OTHER-SESSION", "USER-SETTINGS"] {
        assert!(!out.contains(secret), "{secret} was printed: {out}");
    }
    assert!(!sibling.join("planted.txt").exists(), "{out}");
    assert_eq!(
        std::fs::read_to_string(sibling.join("src/lib.rs")).unwrap(),
        "SIBLING-SOURCE\n"
    );
}

/// Serves `HELLO-<name>` to whoever connects to a fresh socket at `path`, in one write,
/// then closes the connection (the client reads to the end: a reply may still arrive in
/// pieces).
fn serve(path: &Path, name: &'static str) {
    let listener = UnixListener::bind(path).unwrap();
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            let mut s = s;
            let _ = s.write_all(format!("HELLO-{name}\n").as_bytes());
        }
    });
}

#[test]
fn the_ssh_agent_and_docker_sockets_are_unreachable() {
    require_hiding!();
    let (_t, proj, home) = layout();
    let sockets = home.join("sock");
    std::fs::create_dir_all(&sockets).unwrap();
    let agent = sockets.join("agent.sock");
    let docker = sockets.join("docker.sock");
    let plain = proj.join("plain.sock");
    serve(&agent, "AGENT");
    serve(&docker, "DOCKER");
    serve(&plain, "PLAIN");
    let connect = |p: &Path| {
        format!(
            "python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{}'); print(b''.join(iter(lambda: s.recv(64), b'')))\" 2>&1 | tail -1; echo CONNECT-RAN",
            p.display()
        )
    };
    let docker_host = format!("unix://{}", docker.display());
    let results = crew_dont_ask(
        &proj,
        &home,
        &[&connect(&agent), &connect(&docker), &connect(&plain)],
        &[
            ("SSH_AUTH_SOCK", agent.to_str().unwrap()),
            ("DOCKER_HOST", &docker_host),
        ],
    );
    assert!(results.contains("CONNECT-RAN"), "{results}");
    assert!(
        results.contains("HELLO-PLAIN"),
        "the control socket: {results}"
    );
    assert!(
        !results.contains("HELLO-AGENT"),
        "ssh-agent reached: {results}"
    );
    assert!(
        !results.contains("HELLO-DOCKER"),
        "docker reached: {results}"
    );
}
