//! End to end: the real `crew` binary against local mocks of the Anthropic and OpenAI
//! APIs. The model first calls `read_file` on a file in a temporary project, then
//! answers; the run must execute the tool, send its result back, and print the answer.

use crate::support;

use std::path::Path;

use serde_json::{Value, json};
use support::provider::*;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

const NOTE: &str = "the launch code is 4-8-15-16-23-42";

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), format!("{NOTE}\n")).unwrap();
    dir
}

/// Runs `crew -p … --output-format json` in `dir` with `env`; returns the result object.
async fn crew(dir: &Path, model: &str, env: &[(&str, String)]) -> Value {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_crew"));
    cmd.args(["-p", "What does notes.txt say?", "--model", model])
        .args(["--output-format", "json", "--cwd"])
        .arg(dir)
        .env("HOME", dir)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().await.expect("crew runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "crew failed\nstdout: {stdout}\nstderr: {stderr}"
    );
    let last = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {stdout}\nstderr: {stderr}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crew_runs_a_tool_loop_against_the_anthropic_api() {
    let mut first = vec![a_message_start(900, 0)];
    first.extend(a_text_block(0, &["Let me read it."]));
    first.extend(a_tool_block(
        1,
        "toolu_01",
        "read_file",
        &["{\"path\": ", "\"notes.txt\"}"],
    ));
    first.extend(a_end("tool_use", 30));
    let seq = Sequence::new(vec![
        sse_response(anthropic_sse(&first)),
        sse_response(a_text_turn(&["The note says ", "4-8-15-16-23-42."])),
    ]);
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(seq.clone())
        .mount(&server)
        .await;
    let dir = project();
    let result = crew(
        dir.path(),
        "anthropic:test-model",
        &[
            ("ANTHROPIC_BASE_URL", server.uri()),
            ("ANTHROPIC_API_KEY", "k".into()),
        ],
    )
    .await;
    assert_eq!(result["result"], "The note says 4-8-15-16-23-42.");

    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].headers["x-api-key"], "k");
    let second: Value = requests[1].body_json().unwrap();
    assert_eq!(second["model"], "test-model");
    let messages = second["messages"].as_array().unwrap();
    let assistant = &messages[messages.len() - 2];
    assert_eq!(assistant["content"][1]["type"], "tool_use");
    assert_eq!(
        assistant["content"][1]["input"],
        json!({"path": "notes.txt"})
    );
    let results = &messages[messages.len() - 1]["content"];
    let tool_result = results
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_result")
        .expect("a tool_result block");
    assert_eq!(tool_result["tool_use_id"], "toolu_01");
    assert_eq!(tool_result["is_error"], false, "{tool_result}");
    assert!(tool_result["content"].as_str().unwrap().contains(NOTE));
    let last_block = results.as_array().unwrap().last().unwrap();
    assert_eq!(last_block["cache_control"], json!({"type": "ephemeral"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crew_runs_a_tool_loop_against_an_openai_compatible_api() {
    let first = openai_sse(&[
        o_chunk(
            json!({"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_r1","type":"function","function":{"name":"read_file","arguments":""}}],"refusal":null}),
            None,
        ),
        o_chunk(
            json!({"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":\"notes.txt\"}"}}]}),
            None,
        ),
        o_chunk(json!({}), Some("tool_calls")),
        o_usage(800, 20, 0),
    ]);
    let seq = Sequence::new(vec![
        sse_response(first),
        sse_response(o_text_turn(&["It says ", "4-8-15-16-23-42."])),
    ]);
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(seq.clone())
        .mount(&server)
        .await;
    let dir = project();
    let result = crew(
        dir.path(),
        "openai:test-model",
        &[
            ("OPENAI_BASE_URL", format!("{}/v1", server.uri())),
            ("OPENAI_API_KEY", "k".into()),
        ],
    )
    .await;
    assert_eq!(result["result"], "It says 4-8-15-16-23-42.");

    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].headers["authorization"], "Bearer k");
    let second: Value = requests[1].body_json().unwrap();
    let messages = second["messages"].as_array().unwrap();
    let call_index = messages
        .iter()
        .position(|m| m["role"] == "assistant" && m.get("tool_calls").is_some())
        .expect("the assistant tool call is sent back");
    assert_eq!(
        messages[call_index]["tool_calls"][0]["function"]["name"],
        "read_file"
    );
    let tool = &messages[call_index + 1];
    assert_eq!(tool["role"], "tool");
    assert_eq!(tool["tool_call_id"], "call_r1");
    assert!(tool["content"].as_str().unwrap().contains(NOTE), "{tool}");
}
