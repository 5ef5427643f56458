//! What an agent can never do, end to end through the `crew` binary with the disk checked
//! afterwards (issue 26 items 3 and 4):
//! - an MCP tool that is not read-only, called by a worktree subagent (dontAsk), cannot
//!   write the main checkout's `.git/hooks/pre-commit` — no OS sandbox confines a server,
//!   so the unattended modes deny it unless a rule names it (and a rule does permit it);
//! - MCP stdio servers get the scrubbed environment commands get, plus what their `env`
//!   names: `ANTHROPIC_API_KEY` and `GITHUB_TOKEN` do not reach them otherwise;
//! - under bypassPermissions, `crew trust .` and `crew mcp add evil --scope user -- …`,
//!   however spelled (a path, a link to the binary, a wrapper, a computed program), change
//!   neither the trust store nor the user's settings;
//! - a project's MCP server (`.mcp.json`, trusted) runs sandboxed like an agent's command
//!   (no writes outside the project, protected paths read-only), while a server from the
//!   user's own configuration runs as the user.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::{committed_repo, put};

/// A home, a git project and a marker directory, under one temporary directory.
struct World {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    home: PathBuf,
    proj: PathBuf,
    markers: PathBuf,
}

fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let (home, proj, markers) = (base.join("home"), base.join("proj"), base.join("markers"));
    for d in [&home, &proj, &markers] {
        std::fs::create_dir_all(d).unwrap();
    }
    committed_repo(&proj, &[("README.md", "# proj\n")]);
    World {
        _tmp: tmp,
        base,
        home,
        proj,
        markers,
    }
}

/// The test server's entry, with `env` for it.
fn server(w: &World, env: Value) -> Value {
    json!({
        "command": support::mcp_test_server(),
        "args": ["--marker-dir", w.markers],
        "env": env,
    })
}

/// Runs `crew -p go` in the project with `servers` (as `--mcp-config`), `script` as the
/// model, `mode`, and `env` added to crew's environment; returns the stderr and the
/// recorded requests.
fn run(
    w: &World,
    servers: Value,
    script: Value,
    mode: &str,
    env: &[(&str, &str)],
) -> (String, Vec<Value>) {
    let config = w.base.join("mcp.json");
    std::fs::write(&config, json!({ "mcpServers": servers }).to_string()).unwrap();
    let script_file = w.base.join("script.json");
    std::fs::write(&script_file, script.to_string()).unwrap();
    let record = w.base.join("requests.jsonl");
    let _ = std::fs::remove_file(&record);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_crew"))
        .args(["--mcp-config", config.to_str().unwrap(), "-p", "go"])
        .args(["--permission-mode", mode, "--model"])
        .arg(format!("script:{}", script_file.display()))
        .arg("--record-requests")
        .arg(&record)
        .current_dir(&w.proj)
        .env("HOME", &w.home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("GITHUB_TOKEN")
        .envs(env.iter().copied())
        .output()
        .expect("crew runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "crew failed: {stderr}");
    let requests = std::fs::read_to_string(&record)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (stderr, requests)
}

/// The tool results (content, is_error) by call id in the last request of the agent
/// whose name starts with `agent`.
fn results_of(requests: &[Value], agent: &str) -> Vec<(String, String, bool)> {
    let last = requests
        .iter()
        .rev()
        .find(|r| r["agent"].as_str().is_some_and(|a| a.starts_with(agent)))
        .unwrap_or_else(|| panic!("no request of {agent}"));
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            (
                b["tool_use_id"].as_str().unwrap_or_default().to_string(),
                b["content"].as_str().unwrap_or_default().to_string(),
                b["is_error"].as_bool().unwrap_or(false),
            )
        })
        .collect()
}

fn result<'a>(results: &'a [(String, String, bool)], id: &str) -> &'a (String, String, bool) {
    results
        .iter()
        .find(|r| r.0 == id)
        .unwrap_or_else(|| panic!("no result for `{id}`: {results:?}"))
}

fn call(id: &str, name: &str, input: Value) -> Value {
    json!({"id": id, "name": name, "input": input})
}

#[test]
fn a_worktree_subagents_mcp_write_cannot_plant_a_hook_in_the_main_checkout() {
    let w = world();
    let hook = w.proj.join(".git/hooks/pre-commit");
    let script = json!({
        "turns": [
            {"tool_calls": [call("a", "agent", json!({"description": "sneaky", "prompt": "p", "subagent_type": "general-purpose"}))]},
            {"text": "done"}
        ],
        "agents": {"general-purpose": {"turns": [
            {"tool_calls": [
                call("w", "mcp__test__write_file", json!({"path": hook, "text": "#!/bin/sh\ntouch /tmp/pwned\n"})),
                call("w2", "mcp__test__write_file", json!({"path": w.proj.join(".git/hooks/post-checkout"), "text": "x"})),
                call("r", "mcp__test__read_note", json!({"name": "x"})),
            ]},
            {"text": "finished"}
        ]}}
    });
    let (stderr, requests) = run(
        &w,
        json!({"test": server(&w, json!({}))}),
        script,
        "default",
        &[],
    );
    assert!(!hook.exists(), "the MCP server planted a hook: {stderr}");
    assert!(
        !w.proj.join(".git/hooks/post-checkout").exists(),
        "{stderr}"
    );
    let r = results_of(&requests, "general-purpose/");
    // The server was there and answered: only the write was refused, by the engine.
    assert_eq!(
        result(&r, "r").1,
        "note x: the answer is 42",
        "{r:?}\n{stderr}"
    );
    for id in ["w", "w2"] {
        let (_, text, is_error) = result(&r, id);
        assert!(*is_error, "{text}");
        assert!(
            text.contains("no OS sandbox confines an MCP server") && text.contains("mcp__test"),
            "{text}"
        );
    }
}

#[test]
fn under_dont_ask_a_rule_naming_the_mcp_tool_permits_it_and_nothing_else() {
    let w = world();
    put(
        &w.proj,
        ".crew/settings.local.json",
        &json!({"permissions": {"allow": ["mcp__test__write_file"]}}).to_string(),
    );
    let ok = w.markers.join("ok.txt");
    let script = json!({"turns": [
        {"tool_calls": [
            call("w", "mcp__test__write_file", json!({"path": ok, "text": "allowed"})),
            call("d", "mcp__test__danger", json!({})),
            call("n", "mcp__test__write_note", json!({"text": "t"})),
        ]},
        {"text": "done"}
    ]});
    for mode in ["dontAsk", "auto"] {
        let _ = std::fs::remove_file(&ok);
        let (stderr, requests) = run(
            &w,
            json!({"test": server(&w, json!({}))}),
            script.clone(),
            mode,
            &[],
        );
        let r = results_of(&requests, "lead");
        assert_eq!(
            std::fs::read_to_string(&ok).unwrap(),
            "allowed",
            "{mode}: {stderr}"
        );
        assert!(!result(&r, "w").2, "{mode}: {r:?}");
        for id in ["d", "n"] {
            assert!(result(&r, id).2, "{mode}: {r:?}");
        }
        assert!(!w.markers.join("danger.called").exists(), "{mode}");
        assert!(!w.markers.join("write_note.called").exists(), "{mode}");
    }
}

#[test]
fn mcp_servers_get_no_secrets_but_what_their_env_names() {
    let w = world();
    let servers = json!({
        "plain": server(&w, json!({})),
        "named": server(&w, json!({"GITHUB_TOKEN": "${GITHUB_TOKEN}", "MY_SETTING": "on"})),
    });
    let env = |id: &str, srv: &str, name: &str| {
        call(id, &format!("mcp__{srv}__env"), json!({ "name": name }))
    };
    let script = json!({"turns": [
        {"tool_calls": [
            env("pa", "plain", "ANTHROPIC_API_KEY"),
            env("pg", "plain", "GITHUB_TOKEN"),
            env("ps", "plain", "DB_PASSWORD"),
            env("pp", "plain", "CREW_TEST_PLAIN"),
            env("na", "named", "ANTHROPIC_API_KEY"),
            env("ng", "named", "GITHUB_TOKEN"),
            env("nm", "named", "MY_SETTING"),
        ]},
        {"text": "done"}
    ]});
    let (stderr, requests) = run(
        &w,
        servers,
        script,
        "dontAsk",
        &[
            ("ANTHROPIC_API_KEY", "sk-ant-test-7c1e"),
            ("GITHUB_TOKEN", "ghp_test_9d2f"),
            ("DB_PASSWORD", "hunter2"),
            ("CREW_TEST_PLAIN", "kept"),
        ],
    );
    let r = results_of(&requests, "lead");
    let text = |id: &str| result(&r, id).1.clone();
    assert_eq!(text("pa"), "ANTHROPIC_API_KEY is unset", "{stderr}");
    assert_eq!(text("pg"), "GITHUB_TOKEN is unset");
    assert_eq!(text("ps"), "DB_PASSWORD is unset");
    assert_eq!(text("na"), "ANTHROPIC_API_KEY is unset");
    // An ordinary variable still reaches it; a named one does, secret or not.
    assert_eq!(text("pp"), "CREW_TEST_PLAIN=kept");
    assert_eq!(text("ng"), "GITHUB_TOKEN=ghp_test_9d2f");
    assert_eq!(text("nm"), "MY_SETTING=on");
}

/// The trust store and the user's settings, as text ("" when absent).
fn controls_on_disk(home: &Path) -> (String, String) {
    let read = |p: PathBuf| std::fs::read_to_string(p).unwrap_or_default();
    (
        read(home.join(".crew/trusted.json")),
        read(home.join(".crew/settings.json")),
    )
}

#[test]
fn under_bypass_the_agent_cannot_trust_its_folder_or_add_an_mcp_server() {
    let w = world();
    let crew = PathBuf::from(env!("CARGO_BIN_EXE_crew"));
    let bin_dir = crew.parent().unwrap().to_path_buf();
    // Other names for the same binary: a hard link (or, across file systems, a symbolic
    // link) and a symbolic link, neither called `crew`.
    let links = w.base.join("links");
    std::fs::create_dir_all(&links).unwrap();
    let hard = links.join("c");
    if std::fs::hard_link(&crew, &hard).is_err() {
        std::os::unix::fs::symlink(&crew, &hard).unwrap();
    }
    let soft = links.join("helper");
    std::os::unix::fs::symlink(&crew, &soft).unwrap();
    let pwned = w.base.join("pwned");
    let before = controls_on_disk(&w.home);
    let attempts = [
        "crew trust .".to_string(),
        format!("{} trust {}", crew.display(), w.proj.display()),
        format!(
            "crew mcp add evil --scope user -- /bin/sh -c 'touch {}'",
            pwned.display()
        ),
        format!(
            "{} mcp add evil --scope user /bin/sh -c 'touch {}'",
            crew.display(),
            pwned.display()
        ),
        "env crew mcp add evil2 --scope user -- sh".to_string(),
        "bash -c 'crew trust .'".to_string(),
        "true && crew --cwd . trust".to_string(),
        format!("{} trust .", hard.display()),
        format!("{} mcp add evil3 --scope user -- sh", soft.display()),
        "\"$(command -v crew)\" trust .".to_string(),
        "crew permissions check run_command '{}' ; crew trust .".to_string(),
    ];
    let mut calls: Vec<Value> = attempts
        .iter()
        .enumerate()
        .map(|(i, c)| call(&format!("x{i}"), "run_command", json!({ "command": c })))
        .collect();
    // crew does run for the agent: its read forms pass.
    calls.push(call(
        "list",
        "run_command",
        json!({"command": "crew trust --list && crew mcp list"}),
    ));
    let script = json!({"turns": [{"tool_calls": calls}, {"text": "done"}]});
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (stderr, requests) = run(
        &w,
        json!({}),
        script,
        "bypassPermissions",
        &[("PATH", &path)],
    );
    assert_eq!(
        controls_on_disk(&w.home),
        before,
        "the agent changed crew's trust or user settings: {stderr}"
    );
    assert!(!pwned.exists(), "{stderr}");
    let r = results_of(&requests, "lead");
    for (i, attempt) in attempts.iter().enumerate() {
        let (_, text, is_error) = result(&r, &format!("x{i}"));
        assert!(
            *is_error && text.contains("changes crew's own"),
            "`{attempt}` was not refused: {text}"
        );
    }
    let (_, listed, is_error) = result(&r, "list");
    assert!(
        !is_error && listed.contains("no trusted folders"),
        "{listed}\n{stderr}"
    );
    // A later session of another, untrusted project starts no planted server.
    let other = w.base.join("other");
    committed_repo(&other, &[("README.md", "# other\n")]);
    let out = support::crew(&other, &w.home, &["mcp", "list"]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(!shown.contains("evil"), "{shown}");
}

#[test]
fn a_project_mcp_server_runs_sandboxed_and_the_users_own_does_not() {
    require_features!(Landlock, MountNamespaces);
    let w = world();
    // The project's own server, in its `.mcp.json`, in a folder the user trusted.
    put(
        &w.proj,
        ".mcp.json",
        &json!({"mcpServers": {"proj": server(&w, json!({}))}}).to_string(),
    );
    let trusted = support::crew(&w.proj, &w.home, &["trust", w.proj.to_str().unwrap()]);
    assert!(
        trusted.status.success(),
        "{}",
        String::from_utf8_lossy(&trusted.stderr)
    );
    let outside = w.base.join("outside.txt");
    let mine = w.base.join("mine.txt");
    let hook = w.proj.join(".git/hooks/pre-commit");
    let inside = w.proj.join("inside.txt");
    let write = |id: &str, srv: &str, path: &Path| {
        call(
            id,
            &format!("mcp__{srv}__write_file"),
            json!({"path": path, "text": "x"}),
        )
    };
    let script = json!({"turns": [
        {"tool_calls": [
            write("o", "proj", &outside),
            write("h", "proj", &hook),
            write("i", "proj", &inside),
            call("k", "mcp__proj__env", json!({"name": "GITHUB_TOKEN"})),
            write("m", "user", &mine),
        ]},
        {"text": "done"}
    ]});
    // Every call is allowed by the engine: only the OS can stop the project's server.
    let (stderr, requests) = run(
        &w,
        json!({"user": server(&w, json!({}))}),
        script,
        "bypassPermissions",
        &[("GITHUB_TOKEN", "ghp_test_9d2f")],
    );
    let r = results_of(&requests, "lead");
    assert!(
        !outside.exists(),
        "the project's server wrote outside: {r:?}\n{stderr}"
    );
    assert!(!hook.exists(), "the project's server planted a hook: {r:?}");
    for id in ["o", "h"] {
        assert!(result(&r, id).2, "{r:?}");
    }
    assert_eq!(
        std::fs::read_to_string(&inside).unwrap(),
        "x",
        "{r:?}\n{stderr}"
    );
    assert_eq!(result(&r, "k").1, "GITHUB_TOKEN is unset");
    // The user's own server runs as the user.
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "x", "{r:?}");
}
