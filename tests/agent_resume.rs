//! Resuming a finished subagent (issue 10): a message to it — through the `Delegator`
//! the `send_message` tool uses, here driven by a probe tool the scripted lead calls —
//! starts it again in the background, and its first resumed request holds its whole
//! earlier conversation followed by the message; its answer reaches the lead as a task
//! notification.

mod common;

use std::sync::Arc;

use async_trait::async_trait;
use common::{Setup, start, tool_results};
use crewmaster::agent::delegate::ResumeRequest;
use crewmaster::agent::mode::AgentMode;
use crewmaster::agent::runner::RunRequest;
use crewmaster::protocol::Role;
use crewmaster::tasks::TaskStatus;
use crewmaster::tools::{Definition, Safety, Tool, ToolContext, ToolError, required};
use serde_json::{Value, json};

/// Sends `message` to the finished subagent `target` through the caller's delegator,
/// as `send_message` does for a name that is no teammate.
struct ResumeProbe(Definition);

impl ResumeProbe {
    fn new() -> Self {
        let name = "mcp__test__resume";
        Self(Definition {
            name: name.into(),
            description: "resume a finished subagent".into(),
            input_schema: json!({"type": "object"}),
            safety: Safety::SideEffect,
            system: false,
            timeout: None,
            aliases: Vec::new(),
            permission: crewmaster::tools::builtin_permission(name),
        })
    }
}

#[async_trait]
impl Tool for ResumeProbe {
    fn definition(&self) -> &Definition {
        &self.0
    }

    async fn run(&self, input: Value, ctx: ToolContext) -> Result<String, ToolError> {
        let delegate = ctx
            .delegate
            .ok_or(ToolError::Failed("no delegate".into()))?;
        let req = ResumeRequest {
            target: required(&input, "target")?,
            message: required(&input, "message")?,
        };
        delegate
            .resume(req)
            .await
            .map(|id| format!("resumed as task {id}"))
            .map_err(ToolError::Failed)
    }
}

fn chat(task: &str) -> RunRequest {
    RunRequest {
        mode: AgentMode::Chat,
        task: task.into(),
        plan: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_to_a_finished_subagent_resumes_it_with_its_history() {
    let script = r#"{"turns":[
        {"tool_calls":[{"name":"agent","input":{"description":"writer","prompt":"write a.txt","subagent_type":"w1"}}]},
        {"text":"first run noted"},
        {"tool_calls":[
            {"name":"mcp__test__resume","input":{"target":"nobody","message":"x"}},
            {"name":"mcp__test__resume","input":{"target":"w1","message":"please also write b.txt"}}]},
        {"text":"resumed it"},
        {"text":"heard back"}],
      "agents":{"w1":{"turns":[
        {"tool_calls":[{"name":"write_file","input":{"path":"a.txt","content":"a"}}]},
        {"text":"a written"},
        {"tool_calls":[{"name":"write_file","input":{"path":"b.txt","content":"b"}}]},
        {"text":"b written"}]}}}"#;
    let mut tools = crewmaster::tools::builtin_tools();
    tools.push(Arc::new(ResumeProbe::new()));
    let mut setup = Setup::new(script, tools);
    setup.orchestration = true;
    setup.git = true;
    setup.files = vec![(
        ".crew/agents/w1.md",
        "---\nname: w1\ndescription: test writer\ntools: write_file, read_file\n---\nWrite your file.\n"
            .into(),
    )];
    let t = start(setup).await;

    t.session.run(chat("write a")).await.unwrap();
    t.session.run(chat("and b")).await.unwrap();
    let conv = t.session.conversation().await.unwrap();
    let results = tool_results(&conv);
    let missing = &results[results.len() - 2];
    assert!(
        missing.is_error && missing.content.contains("no finished subagent `nobody`"),
        "{missing:?}"
    );
    let resumed = &results[results.len() - 1];
    assert!(
        !resumed.is_error && resumed.content.starts_with("resumed as task"),
        "{resumed:?}"
    );

    // It ran in the background; the lead hears of its end.
    let record = t.session.next_completion().await.expect("a completion");
    assert_eq!(record.status, TaskStatus::Completed, "{record:?}");
    assert!(
        resumed.content.ends_with(&record.id),
        "{resumed:?} / {}",
        record.id
    );
    assert!(
        record.result.as_deref().unwrap_or("").contains("b written"),
        "{record:?}"
    );

    // Its first resumed request: its earlier conversation, then the message.
    let requests: Vec<_> = t
        .provider
        .requests()
        .into_iter()
        .filter(|r| r.agent.starts_with("w1/"))
        .collect();
    assert_eq!(requests.len(), 4, "{requests:#?}");
    assert!(
        requests.iter().all(|r| r.agent == requests[0].agent),
        "it keeps its agent id"
    );
    let (before, first_resumed) = (&requests[1].messages, &requests[2].messages);
    assert_eq!(&first_resumed[..before.len()], &before[..], "its history");
    let answer = &first_resumed[before.len()];
    assert_eq!(answer.role, Role::Assistant);
    assert_eq!(answer.text(), "a written");
    let message = &first_resumed[before.len() + 1];
    assert_eq!(message.role, Role::User);
    assert!(
        message.text().contains("please also write b.txt"),
        "{message:?}"
    );
    assert_eq!(first_resumed.len(), before.len() + 2);
    assert_eq!(requests[2].system, requests[0].system);

    // Its work stays out of the main checkout.
    assert!(!t.cwd().join("b.txt").exists() && !t.cwd().join("a.txt").exists());
}
