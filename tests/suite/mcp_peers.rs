//! Against the official MCP servers, as installed by `scripts/mcp-peers.sh` under
//! `target/mcp-peers` (or `$CREW_MCP_PEERS`): `crew mcp list` shows their tools, and a
//! scripted `crew -p` run loads (through `tool_search`, deferral forced on) and calls
//! `mcp__time__get_current_time` and the filesystem server's `read_text_file`, whose
//! results reach the model. Skipped, saying why, when the servers are not installed.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::{committed_repo, crew, put};

const NODE: [&str; 2] = ["mcp-server-everything", "mcp-server-filesystem"];
const PYTHON: [&str; 2] = ["mcp-server-time", "mcp-server-git"];

/// The installed servers' programs, or why the test cannot run.
fn peers() -> Result<[PathBuf; 4], String> {
    let prefix = std::env::var_os("CREW_MCP_PEERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/mcp-peers"));
    let node = |b: &str| prefix.join("node/node_modules/.bin").join(b);
    let py = |b: &str| prefix.join("venv/bin").join(b);
    let all = [node(NODE[0]), node(NODE[1]), py(PYTHON[0]), py(PYTHON[1])];
    let missing: Vec<String> = all
        .iter()
        .filter(|p| !p.exists())
        .map(|p| p.display().to_string())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "SKIPPED: the official MCP servers are not installed ({} missing); run \
             scripts/mcp-peers.sh to install them under {}",
            missing.join(", "),
            prefix.display()
        ));
    }
    Ok(all)
}

/// A git project with a note, a home, and an `--mcp-config` file naming the four servers.
struct Peers {
    project: tempfile::TempDir,
    home: tempfile::TempDir,
    config: PathBuf,
}

fn setup(programs: &[PathBuf; 4]) -> Peers {
    let project = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let dir = project.path().canonicalize().unwrap();
    put(&dir, "note.txt", "the peers marker 7f3a9c\n");
    committed_repo(&dir, &[]);
    let [everything, filesystem, time, git_server] = programs;
    let config = home.path().join("peers.mcp.json");
    let servers = json!({"mcpServers": {
        "everything": {"command": everything, "args": ["stdio"]},
        "filesystem": {"command": filesystem, "args": [dir]},
        "time": {"command": time, "args": ["--local-timezone", "UTC"]},
        "git": {"command": git_server, "args": ["--repository", dir]}
    }});
    std::fs::write(&config, servers.to_string()).unwrap();
    // Deferral on whatever the tool count: the run loads the two tools via tool_search.
    put(
        home.path(),
        ".crew/settings.json",
        r#"{"toolSearch": {"mode": "always"}}"#,
    );
    Peers {
        project,
        home,
        config,
    }
}

#[test]
fn crew_mcp_list_shows_the_official_servers_tools() {
    let programs = match peers() {
        Ok(p) => p,
        Err(why) => return println!("{why}"),
    };
    let p = setup(&programs);
    let config = p.config.to_str().unwrap();
    let out = crew(
        p.project.path(),
        p.home.path(),
        &["--mcp-config", config, "mcp", "list"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    println!("{stdout}");
    for tool in ["echo", "read_text_file", "get_current_time", "git_status"] {
        assert!(
            stdout.contains(tool),
            "`{tool}` not listed:\n{stdout}\n{stderr}"
        );
    }
    for server in ["everything", "filesystem", "time", "git"] {
        assert!(stdout.contains(server), "{server} not listed:\n{stdout}");
    }
    assert!(!stdout.contains("failed"), "{stdout}\n{stderr}");
}

#[test]
fn a_scripted_run_calls_time_and_filesystem_tools_and_the_model_sees_the_results() {
    let programs = match peers() {
        Ok(p) => p,
        Err(why) => return println!("{why}"),
    };
    let p = setup(&programs);
    let dir = p.project.path().canonicalize().unwrap();
    let note = dir.join("note.txt");
    let script = json!({"turns": [
        {"tool_calls": [{"name": "tool_search", "input": {
            "query": "select:mcp__time__get_current_time,mcp__filesystem__read_text_file"}}]},
        {"tool_calls": [
            {"name": "mcp__time__get_current_time", "input": {"timezone": "UTC"}},
            {"name": "mcp__filesystem__read_text_file", "input": {"path": note}}
        ]},
        {"text": "done"}
    ]});
    let script_file = p.home.path().join("script.json");
    std::fs::write(&script_file, script.to_string()).unwrap();
    let record = p.home.path().join("requests.jsonl");
    let out = crew(
        &dir,
        p.home.path(),
        &[
            "--mcp-config",
            p.config.to_str().unwrap(),
            "-p",
            "what time is it, and what is in note.txt?",
            "--permission-mode",
            "bypassPermissions",
            "--model",
            &format!("script:{}", script_file.display()),
            "--record-requests",
            record.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let requests: Vec<Value> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(requests.len(), 3, "{stderr}");
    let tools = |r: &Value| -> Vec<String> {
        r["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    let first = tools(&requests[0]);
    assert!(first.contains(&"tool_search".to_string()), "{first:?}");
    assert!(!first.iter().any(|n| n.starts_with("mcp__")), "{first:?}");
    let second = tools(&requests[1]);
    for t in [
        "mcp__time__get_current_time",
        "mcp__filesystem__read_text_file",
    ] {
        assert!(
            second.contains(&t.to_string()),
            "{t} not loaded: {second:?}"
        );
    }
    // The last request carries both results, as the model sees them.
    let results: Vec<(String, bool)> = requests[2]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            (
                b["content"].as_str().unwrap_or_default().to_string(),
                b["is_error"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    println!("results the model saw: {results:#?}");
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(results.iter().all(|(_, err)| !err), "{results:?}");
    assert!(results[1].0.contains("\"timezone\": \"UTC\"") || results[1].0.contains("UTC"));
    assert!(results[1].0.contains("datetime"), "{}", results[1].0);
    assert!(
        results[2].0.contains("the peers marker 7f3a9c"),
        "{}",
        results[2].0
    );
}
