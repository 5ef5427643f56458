//! Claude Code's output schema, with the real CLI as the oracle: one scripted session (a
//! write, then a final text) goes through `claude -p --output-format stream-json` and
//! `crew -p --output-format stream-json`, both against the same kind of scripted
//! Anthropic server on 127.0.0.1. The messages must come in the same order, with the same
//! content blocks, and carry the keys the Agent SDKs and scripts read; the result must
//! agree on how the run ended. A key the oracle stops sending fails the test too, so a
//! change of the schema is noticed.
//!
//! The CLI comes from `scripts/install-claude-code.sh`; without it the test is skipped,
//! saying so on stderr and in the test ledger.

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use support::provider::{
    a_end, a_message_start, a_text_turn, a_tool_block, anthropic_sse, sse_response,
};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// The keys both sides' messages must carry, by message (dotted: inside `message`).
const INIT_KEYS: &[&str] = &[
    "type",
    "subtype",
    "cwd",
    "session_id",
    "tools",
    "mcp_servers",
    "model",
    "permissionMode",
    "slash_commands",
    "apiKeySource",
    "claude_code_version",
    "output_style",
    "agents",
    "uuid",
];
const ASSISTANT_KEYS: &[&str] = &[
    "type",
    "parent_tool_use_id",
    "session_id",
    "uuid",
    "message.id",
    "message.type",
    "message.role",
    "message.model",
    "message.content",
    "message.stop_reason",
];
const USER_KEYS: &[&str] = &[
    "type",
    "parent_tool_use_id",
    "session_id",
    "uuid",
    "message.role",
    "message.content",
];
const RESULT_KEYS: &[&str] = &[
    "type",
    "subtype",
    "is_error",
    "duration_ms",
    "duration_api_ms",
    "num_turns",
    "result",
    "session_id",
    "total_cost_usd",
    "usage",
    "permission_denials",
    "uuid",
    "usage.input_tokens",
    "usage.output_tokens",
    "usage.cache_creation_input_tokens",
    "usage.cache_read_input_tokens",
];

/// The scripted server: to a request offering a write tool with no tool result yet, one
/// `tool_use` of it (Claude Code's `Write` or crew's `write_file`, each with its own
/// arguments); to anything else the final text.
struct Script {
    file: PathBuf,
}

impl Respond for Script {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = request.body_json().unwrap_or(Value::Null);
        let offers = |name: &str| {
            body["tools"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t["name"] == name))
        };
        let answered = body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["content"].as_array())
            .flatten()
            .any(|b| b["type"] == "tool_result");
        let call = if offers("Write") {
            Some(("Write", json!({"file_path": self.file, "content": "hi\n"})))
        } else if offers("write_file") {
            Some(("write_file", json!({"path": "out.txt", "content": "hi\n"})))
        } else {
            None
        };
        match call {
            Some((name, input)) if !answered => {
                let mut e = vec![a_message_start(10, 0)];
                e.extend(a_tool_block(0, "toolu_01", name, &[&input.to_string()]));
                e.extend(a_end("tool_use", 5));
                sse_response(anthropic_sse(&e))
            }
            _ => sse_response(a_text_turn(&["done"])),
        }
    }
}

async fn server(repo: &Path) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(Script {
            file: repo.join("out.txt"),
        })
        .mount(&server)
        .await;
    server
}

/// Runs `program ARGS…` in `repo` against `server`; returns its stdout as JSON lines.
async fn run(
    program: &Path,
    args: &[&str],
    repo: &Path,
    home: &Path,
    server: &MockServer,
) -> Vec<Value> {
    let out = tokio::process::Command::new(program)
        .args(args)
        .current_dir(repo)
        .env("HOME", home)
        .env("ANTHROPIC_BASE_URL", server.uri())
        .env("ANTHROPIC_API_KEY", "anything")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .env_remove("OPENAI_API_KEY")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(180), out)
        .await
        .expect("the run ends within 3 minutes")
        .expect("the program runs");
    assert!(out.status.success(), "{program:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The messages both sides are compared on: init, assistant, user and result (Claude
/// Code also writes status and hook messages that crew does not).
fn conversation(lines: &[Value]) -> Vec<&Value> {
    lines
        .iter()
        .filter(|l| match l["type"].as_str() {
            Some("system") => l["subtype"] == "init",
            Some("assistant" | "user" | "result") => true,
            _ => false,
        })
        .collect()
}

/// A message's kind and its content blocks' types: `assistant[tool_use]`.
fn shape(m: &Value) -> String {
    let blocks: Vec<&str> = m["message"]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["type"].as_str())
        .collect();
    format!(
        "{}[{}]",
        m["type"].as_str().unwrap_or("?"),
        blocks.join(",")
    )
}

fn has(m: &Value, key: &str) -> bool {
    match key.split_once('.') {
        Some((outer, inner)) => m.get(outer).is_some_and(|o| o.get(inner).is_some()),
        None => m.get(key).is_some(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_json_has_claude_codes_messages_in_claude_codes_order() {
    let test = "stream_json_has_claude_codes_messages_in_claude_codes_order";
    let name = format!(
        "{}::{}",
        env!("CARGO_CRATE_NAME"),
        support::own_test(module_path!(), test)
    );
    let claude = match super::claude_code_differential::claude_code() {
        Ok(p) => {
            support::kernel::record_ran(&name, "Claude Code CLI");
            p
        }
        Err(why) => return support::kernel::record_skip(&name, &why),
    };
    let args = [
        "-p",
        "write out.txt",
        "--output-format",
        "stream-json",
        "--verbose",
        "--permission-mode",
        "acceptEdits",
    ];
    let (_t1, theirs_home, theirs_repo) = support::repo_and_home();
    let theirs_server = server(&theirs_repo).await;
    let theirs = run(&claude, &args, &theirs_repo, &theirs_home, &theirs_server).await;
    let (_t2, ours_home, ours_repo) = support::repo_and_home();
    let ours_server = server(&ours_repo).await;
    let mut crew_args = args.to_vec();
    crew_args.extend(["--model", "claude-sonnet-4-5"]);
    let crew = Path::new(env!("CARGO_BIN_EXE_crew"));
    let ours = tokio::task::block_in_place(|| {
        tokio::runtime::Handle::current().block_on(run(
            crew,
            &crew_args,
            &ours_repo,
            &ours_home,
            &ours_server,
        ))
    });
    // Both wrote the file, through the same scripted session.
    for repo in [&theirs_repo, &ours_repo] {
        assert_eq!(
            std::fs::read_to_string(repo.join("out.txt")).unwrap(),
            "hi\n"
        );
    }
    let (theirs, ours) = (conversation(&theirs), conversation(&ours));
    let shapes = |ms: &[&Value]| ms.iter().map(|m| shape(m)).collect::<Vec<_>>();
    assert_eq!(
        shapes(&ours),
        shapes(&theirs),
        "the messages' order and blocks"
    );
    assert_eq!(
        shapes(&theirs),
        [
            "system[]",
            "assistant[tool_use]",
            "user[tool_result]",
            "assistant[text]",
            "result[]"
        ]
    );
    for (t, o) in theirs.iter().zip(&ours) {
        let keys = match t["type"].as_str() {
            Some("system") => INIT_KEYS,
            Some("assistant") => ASSISTANT_KEYS,
            Some("user") => USER_KEYS,
            _ => RESULT_KEYS,
        };
        for key in keys {
            assert!(has(t, key), "the oracle no longer sends `{key}`: {t}");
            assert!(
                has(o, key),
                "crew's {} message lacks `{key}`: {o}",
                shape(o)
            );
        }
        // Every message of a session names it.
        assert_eq!(o["session_id"], ours[0]["session_id"]);
    }
    let (tr, or) = (theirs.last().unwrap(), ours.last().unwrap());
    for key in ["subtype", "is_error", "num_turns", "result"] {
        assert_eq!(or[key], tr[key], "result.{key}: crew {or}\nclaude {tr}");
    }
    // The tool result answers the call by its id on both sides.
    let answered = |ms: &[&Value]| ms[2]["message"]["content"][0]["tool_use_id"].clone();
    assert_eq!(answered(&ours), json!("toolu_01"));
    assert_eq!(answered(&theirs), json!("toolu_01"));
}
