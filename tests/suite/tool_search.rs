//! Deferred MCP tools and `tool_search`: with 200 fake MCP tools the first request
//! carries only the built-in tools and `tool_search` (bytes compared with deferral off);
//! the scripted model searches, the next request carries the found tool, a call to it
//! runs, and a call to a tool not loaded is refused without running.

use crate::support;

use std::sync::Arc;

use crewmaster::agent::mode::AgentMode;
use crewmaster::agent::runner::RunRequest;
use crewmaster::provider::ModelRequest;
use crewmaster::tools::deferred::{Mode, Threshold};
use crewmaster::tools::tool_search::ToolSearch;
use crewmaster::tools::{Safety, Tool, builtin_tools};
use support::{Behaviour, FakeTool, Setup, start, tool_results};

const TOPICS: [&str; 4] = ["calendar", "weather", "github", "slack"];

/// 200 fake MCP tools `mcp__fake__<topic>_<n>`, the two the test follows, and the
/// registry's other tools.
struct Tools {
    all: Vec<Arc<dyn Tool>>,
    found: Arc<FakeTool>,
    not_loaded: Arc<FakeTool>,
}

fn tools(threshold: Threshold) -> Tools {
    let fakes: Vec<Arc<FakeTool>> = (0..200)
        .map(|n| {
            let name = format!("mcp__fake__{}_{n}", TOPICS[n % 4]);
            Arc::new(FakeTool::new(
                &name,
                Safety::ReadOnly,
                false,
                Behaviour::Succeed,
            ))
        })
        .collect();
    let mut all = builtin_tools();
    all.push(Arc::new(ToolSearch::new(threshold)));
    all.extend(fakes.iter().map(|f| f.clone() as Arc<dyn Tool>));
    Tools {
        all,
        found: fakes[137].clone(),
        not_loaded: fakes[2].clone(),
    }
}

fn chat(task: &str) -> RunRequest {
    RunRequest {
        mode: AgentMode::Chat,
        task: task.into(),
        plan: None,
    }
}

fn tool_bytes(r: &ModelRequest) -> usize {
    serde_json::to_vec(&r.tools).unwrap().len()
}

fn names(r: &ModelRequest) -> Vec<&str> {
    r.tools.iter().map(|t| t.name.as_str()).collect()
}

#[tokio::test]
async fn deferred_tools_are_found_loaded_and_callable() {
    let script = r#"{"turns": [
        {"tool_calls": [
            {"name": "ToolSearch", "input": {"query": "weather 137", "max_results": 2}},
            {"name": "mcp__fake__github_2", "input": {}}
        ]},
        {"tool_calls": [{"name": "mcp__fake__weather_137", "input": {}}]},
        {"text": "done"},
        {"text": "still here"}
    ]}"#;
    let t = tools(Threshold::default());
    let (found, not_loaded) = (t.found.clone(), t.not_loaded.clone());
    let s = start(Setup::new(script, t.all)).await;
    s.session.run(chat("use the weather tool")).await.unwrap();

    let reqs = s.provider.requests();
    assert_eq!(reqs.len(), 3);
    let first = names(&reqs[0]);
    assert!(
        !first.iter().any(|n| n.starts_with("mcp__")),
        "no MCP tool is sent before it is loaded: {first:?}"
    );
    assert!(first.contains(&"read_file") && first.contains(&"tool_search"));
    let search = reqs[0].tools.iter().find(|t| t.name == "tool_search");
    assert!(
        search.is_some_and(|t| t.description.contains("mcp__fake__weather_137")),
        "tool_search lists the deferred names"
    );

    // Deferral off: the same tools, every definition sent.
    let off = tools(Threshold {
        mode: Mode::Never,
        ..Threshold::default()
    });
    let s_off = start(Setup::new(r#"{"turns": [{"text": "hi"}]}"#, off.all)).await;
    s_off.session.run(chat("hi")).await.unwrap();
    let all = s_off.provider.requests();
    assert_eq!(
        all[0]
            .tools
            .iter()
            .filter(|t| t.name.starts_with("mcp__"))
            .count(),
        200
    );
    assert!(!names(&all[0]).contains(&"tool_search"));
    let (deferred, full) = (tool_bytes(&reqs[0]), tool_bytes(&all[0]));
    println!(
        "tool definitions in the first request: {deferred} bytes deferred vs {full} bytes \
         with deferral off; saved {} bytes ≈ {} tokens ({:.0}%)",
        full - deferred,
        (full - deferred) / 4,
        100.0 * (full - deferred) as f64 / full as f64
    );
    assert!(
        deferred * 3 < full,
        "deferral must cut the definitions by far: {deferred} vs {full}"
    );

    // The search loads the best match; the next request carries it, and only it.
    let results = tool_results(&s.session.conversation().await.unwrap());
    assert!(
        results[0]
            .content
            .starts_with("Loaded tools: mcp__fake__weather_137, "),
        "{}",
        results[0].content
    );
    assert_eq!(results[1].error_code.as_deref(), Some("tool_not_loaded"));
    assert_eq!(not_loaded.runs(), 0, "a tool not loaded never runs");
    let second = names(&reqs[1]);
    assert!(second.contains(&"mcp__fake__weather_137"));
    assert!(!second.contains(&"mcp__fake__github_2"));
    assert_eq!(second.iter().filter(|n| n.starts_with("mcp__")).count(), 2);

    // The loaded tool is called and runs.
    assert_eq!(found.runs(), 1);
    assert_eq!(results[2].content, "ok from mcp__fake__weather_137");
    assert!(!results[2].is_error);

    // It stays loaded for the rest of the conversation.
    s.session.run(chat("again")).await.unwrap();
    let reqs = s.provider.requests();
    assert!(names(&reqs[3]).contains(&"mcp__fake__weather_137"));
}

#[tokio::test]
async fn few_mcp_tools_are_sent_without_tool_search() {
    let script = r#"{"turns": [{"text": "hi"}]}"#;
    let mut all = builtin_tools();
    all.push(Arc::new(ToolSearch::new(Threshold::default())));
    all.extend((0..10).map(|n| {
        Arc::new(FakeTool::new(
            &format!("mcp__few__t{n}"),
            Safety::ReadOnly,
            false,
            Behaviour::Succeed,
        )) as Arc<dyn Tool>
    }));
    let s = start(Setup::new(script, all)).await;
    s.session.run(chat("hi")).await.unwrap();
    let reqs = s.provider.requests();
    let shown = names(&reqs[0]);
    assert_eq!(shown.iter().filter(|n| n.starts_with("mcp__")).count(), 10);
    assert!(!shown.contains(&"tool_search"), "{shown:?}");
}

/// The real MCP route: `crew -p` with the rmcp test server and deferral forced on. Its
/// tools are not in the first request; `tool_search` loads `read_note`, which then runs
/// on the server, and a call to `danger` (never loaded) is refused and never reaches it.
#[test]
fn an_mcp_servers_tools_are_deferred_loaded_and_called_through_crew() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (proj, home, markers) = (root.join("proj"), root.join("home"), root.join("markers"));
    for d in [&proj, &markers] {
        std::fs::create_dir_all(d).unwrap();
    }
    support::put(
        &home,
        ".crew/settings.json",
        r#"{"toolSearch": {"mode": "always"}}"#,
    );
    let config = root.join("mcp.json");
    let servers = serde_json::json!({"mcpServers": {"test": {
        "command": support::mcp_test_server(), "args": ["--marker-dir", markers]}}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let script = root.join("script.json");
    std::fs::write(
        &script,
        r#"{"turns": [
            {"tool_calls": [
                {"name": "tool_search", "input": {"query": "read note"}},
                {"name": "mcp__test__danger", "input": {}}
            ]},
            {"tool_calls": [{"name": "mcp__test__read_note", "input": {"name": "n1"}}]},
            {"text": "done"}
        ]}"#,
    )
    .unwrap();
    let record = root.join("requests.jsonl");
    let out = support::crew(
        &proj,
        &home,
        &[
            "--mcp-config",
            config.to_str().unwrap(),
            "-p",
            "read note n1",
            "--permission-mode",
            "bypassPermissions",
            "--model",
            &format!("script:{}", script.display()),
            "--record-requests",
            record.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let requests: Vec<ModelRequest> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(requests.len(), 3, "{stderr}");
    assert!(!names(&requests[0]).iter().any(|n| n.starts_with("mcp__")));
    assert!(names(&requests[1]).contains(&"mcp__test__read_note"));
    assert!(!names(&requests[1]).contains(&"mcp__test__danger"));
    let results = tool_results(&requests[2].messages.to_vec());
    assert!(
        results[0]
            .content
            .starts_with("Loaded tools: mcp__test__read_note"),
        "{}",
        results[0].content
    );
    assert_eq!(results[1].error_code.as_deref(), Some("tool_not_loaded"));
    assert!(!markers.join("danger.called").exists(), "danger never ran");
    assert!(
        results[2].content.contains("note n1: the answer is 42"),
        "{}",
        results[2].content
    );
}
