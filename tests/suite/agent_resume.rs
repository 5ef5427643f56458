//! Resuming a finished subagent (issue 10): a message to it — the lead's `send_message`
//! to a name that is no teammate, which goes through the caller's `Delegator` — starts it
//! again in the background, and its first resumed request holds its whole
//! earlier conversation followed by the message; its answer reaches the lead as a task
//! notification.

use crate::support;

use crewmaster::agent::mode::AgentMode;
use crewmaster::agent::runner::RunRequest;
use crewmaster::protocol::Role;
use crewmaster::tasks::TaskStatus;
use support::{Setup, start, tool_results};

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
            {"name":"send_message","input":{"to":"nobody","message":"x"}},
            {"name":"send_message","input":{"to":"w1","message":"please also write b.txt"}}]},
        {"text":"resumed it"},
        {"text":"heard back"}],
      "agents":{"w1":{"turns":[
        {"tool_calls":[{"name":"write_file","input":{"path":"a.txt","content":"a"}}]},
        {"text":"a written"},
        {"tool_calls":[{"name":"write_file","input":{"path":"b.txt","content":"b"}}]},
        {"text":"b written"}]}}}"#;
    let mut setup = Setup::new(script, crewmaster::tools::builtin_tools());
    setup.orchestration = true;
    setup.git = true;
    setup.files = vec![(
        ".crew/agents/w1.md",
        "---\nname: w1\ndescription: test writer\nisolation: worktree\ntools: write_file, read_file\n---\nWrite your file.\n"
            .into(),
    )];
    let t = start(setup).await;

    t.session.run(chat("write a")).await.unwrap();
    t.session.run(chat("and b")).await.unwrap();
    let conv = t.session.conversation().await.unwrap();
    let results = tool_results(&conv);
    let missing = &results[results.len() - 2];
    assert!(
        missing.is_error && missing.content.contains("nobody"),
        "{missing:?}"
    );
    let resumed = &results[results.len() - 1];
    assert!(
        !resumed.is_error && resumed.content.contains("resumed in the background"),
        "{resumed:?}"
    );

    // It ran in the background; the lead hears of its end.
    let record = t.session.next_completion().await.expect("a completion");
    assert_eq!(record.status, TaskStatus::Completed, "{record:?}");
    assert!(
        resumed.content.contains(&record.id),
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
    let (before, first_resumed) = (
        &requests[1].messages.to_vec(),
        &requests[2].messages.to_vec(),
    );
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
