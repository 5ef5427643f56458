//! End-to-end tests of the tool-call path through the real actors: agent → permission
//! engine → gate → executor, driven by the scripted model.

use crate::support;

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use crewmaster::agent::mode::AgentMode;
use crewmaster::agent::runner::{RunRequest, RunStatus};
use crewmaster::permission::PermissionMode;
use crewmaster::tools::run_command::RunCommand;
use crewmaster::tools::{Safety, Tool};
use serde_json::json;
use support::{Behaviour, FakeTool, Setup, faults, start, tool_results};

fn request(mode: AgentMode) -> RunRequest {
    RunRequest {
        mode,
        task: "do the thing".into(),
        plan: if mode == AgentMode::Do {
            Some("1. write the file".into())
        } else {
            None
        },
    }
}

fn names(tools: &[crewmaster::tools::ToolSpec]) -> HashSet<String> {
    tools.iter().map(|t| t.name.clone()).collect()
}

#[tokio::test]
async fn plan_mode_refuses_a_forged_write_even_under_bypass_and_never_runs_it() {
    let read = Arc::new(FakeTool::new(
        "read_file",
        Safety::ReadOnly,
        false,
        Behaviour::Succeed,
    ));
    let write = Arc::new(FakeTool::new(
        "write_file",
        Safety::SideEffect,
        false,
        Behaviour::Succeed,
    ));
    let mut t = start(Setup {
        mode: PermissionMode::BypassPermissions,
        ..Setup::new(
            r#"{"turns":[
                {"tool_calls":[{"name":"write_file","input":{"path":"x"}}]},
                {"text":"I need requirements first."}]}"#,
            vec![read.clone() as Arc<dyn Tool>, write.clone()],
        )
    })
    .await;
    let outcome = t.session.run(request(AgentMode::Plan)).await.unwrap();
    assert_eq!(outcome.status, RunStatus::Completed);
    assert_eq!(
        write.runs(),
        0,
        "the write tool must never run in Plan mode"
    );
    let conv = t.session.conversation().await.unwrap();
    let results = tool_results(&conv);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].error_code.as_deref(), Some("tool_not_allowed"));
    assert!(
        results[0]
            .content
            .contains("not available in the current mode")
    );
    // The engine allowed it (bypass); the gate refused it.
    let mut saw_allow = false;
    while let Ok(e) = t.events.try_recv() {
        if let crewmaster::events::EventKind::PermissionDecided { verdict, .. } = e.kind {
            saw_allow |= verdict == crewmaster::permission::Verdict::Allow;
        }
    }
    assert!(
        saw_allow,
        "the permission engine should have allowed the call under bypass"
    );
    t.session.shutdown().await;
}

#[tokio::test]
async fn plan_request_shows_only_read_only_tools_and_do_shows_all() {
    let tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(FakeTool::new(
            "read_file",
            Safety::ReadOnly,
            false,
            Behaviour::Succeed,
        )),
        Arc::new(FakeTool::new(
            "find_files",
            Safety::ReadOnly,
            false,
            Behaviour::Succeed,
        )),
        Arc::new(FakeTool::new(
            "write_file",
            Safety::SideEffect,
            false,
            Behaviour::Succeed,
        )),
        Arc::new(FakeTool::new(
            "run_command",
            Safety::SideEffect,
            false,
            Behaviour::Succeed,
        )),
    ];
    let t = start(Setup::new(
        r#"{"turns":[{"text":"the plan"},{"text":"done"}]}"#,
        tools,
    ))
    .await;
    t.session.run(request(AgentMode::Plan)).await.unwrap();
    t.session.run(request(AgentMode::Do)).await.unwrap();
    let reqs = t.provider.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(
        names(&reqs[0].tools),
        HashSet::from(["read_file".into(), "find_files".into()])
    );
    assert_eq!(names(&reqs[1].tools).len(), 4);
    // Plan: the plan prompt and the reminder; Do: the task and the approved plan.
    let plan_text = reqs[0].messages.to_vec().last().unwrap().text();
    assert!(plan_text.contains("Plan mode") && plan_text.contains("do the thing"));
    assert!(plan_text.contains("system-reminder"));
    let do_text = reqs[1].messages.to_vec().last().unwrap().text();
    assert!(do_text.contains("do the thing") && do_text.contains("1. write the file"));
    assert!(!do_text.contains("system-reminder"));
    // The reminder was never stored in the conversation.
    let conv = t.session.conversation().await.unwrap();
    assert!(conv.iter().all(|m| !m.text().contains("system-reminder")));
    t.session.shutdown().await;
}

#[tokio::test]
async fn names_filter_refuses_at_the_gate_and_system_tools_pass_names_not_safety() {
    let read = Arc::new(FakeTool::new(
        "read_file",
        Safety::ReadOnly,
        false,
        Behaviour::Succeed,
    ));
    let write = Arc::new(FakeTool::new(
        "write_file",
        Safety::SideEffect,
        false,
        Behaviour::Succeed,
    ));
    let sys_ro = Arc::new(FakeTool::new(
        "task_list",
        Safety::ReadOnly,
        true,
        Behaviour::Succeed,
    ));
    let sys_se = Arc::new(FakeTool::new(
        "task_stop",
        Safety::SideEffect,
        true,
        Behaviour::Succeed,
    ));
    let tools: Vec<Arc<dyn Tool>> =
        vec![read.clone(), write.clone(), sys_ro.clone(), sys_se.clone()];
    let script = r#"{"turns":[
        {"tool_calls":[{"name":"write_file","input":{"path":"x"}},{"name":"task_list","input":{}},{"name":"task_stop","input":{"task_id":"t1"}}]},
        {"text":"done"}]}"#;
    // Chat mode, bypass: the engine allows all; only read_file is in the agent's list.
    let t = start(Setup {
        allowed_tools: Some(vec!["read_file"]),
        ..Setup::new(script, tools.clone())
    })
    .await;
    t.session.run(request(AgentMode::Chat)).await.unwrap();
    let results = tool_results(&t.session.conversation().await.unwrap());
    assert_eq!(write.runs(), 0);
    assert!(
        results[0].content.contains("not in this agent's tool list"),
        "{}",
        results[0].content
    );
    assert!(!results[1].is_error, "a system tool passes the name filter");
    assert!(
        !results[2].is_error,
        "a side-effecting system tool passes the name filter in chat mode"
    );
    assert_eq!((sys_ro.runs(), sys_se.runs()), (1, 1));
    t.session.shutdown().await;

    // Plan mode: the system side-effect tool is refused by the safety filter.
    let t = start(Setup {
        allowed_tools: Some(vec!["read_file"]),
        ..Setup::new(script, tools)
    })
    .await;
    t.session.run(request(AgentMode::Plan)).await.unwrap();
    let results = tool_results(&t.session.conversation().await.unwrap());
    assert_eq!(results[2].error_code.as_deref(), Some("tool_not_allowed"));
    assert!(results[2].content.contains("current mode"));
    assert_eq!(sys_se.runs(), 1, "no further run of task_stop in plan mode");
    t.session.shutdown().await;
}

#[tokio::test]
async fn bad_calls_become_error_results_and_the_loop_goes_on() {
    let ok = Arc::new(FakeTool::new(
        "read_file",
        Safety::ReadOnly,
        false,
        Behaviour::Succeed,
    ));
    // Names the permission engine knows, so the calls reach the executor.
    let panicky = Arc::new(FakeTool::new(
        "search_code",
        Safety::ReadOnly,
        false,
        Behaviour::Panic,
    ));
    let slow = Arc::new(FakeTool::new(
        "find_files",
        Safety::ReadOnly,
        false,
        Behaviour::Hang,
    ));
    // A real command that hangs, with a child in its group, past its own timeout.
    let hang = format!(
        "{}sleep 600 & sleep 600",
        faults::record_group(Path::new("hang.pgid"))
    );
    let tools: Vec<Arc<dyn Tool>> = vec![
        ok.clone(),
        panicky.clone(),
        slow.clone(),
        Arc::new(RunCommand::new()),
    ];
    let t = start(Setup {
        git: true,
        transcript: true,
        ..Setup::new(
            json!({"turns":[
                {"tool_calls":[{"name":"read_file","input":{"path":"a","limit":"ten"}}]},
                {"tool_calls":[{"name":"no_such_tool","input":{}}]},
                {"tool_calls":[{"name":"search_code","input":{"pattern":"x"}}]},
                {"tool_calls":[{"name":"find_files","input":{"pattern":"*"}}]},
                {"tool_calls":[{"name":"run_command","input":{"command":hang,"timeout_ms":300}}]},
                {"tool_calls":[{"name":"read_file","arguments":"{not json"}]},
                {"tool_calls":[{"name":"read_file","input":{"path":"a"}}]},
                {"text":"done"}]})
            .to_string(),
            tools,
        )
    })
    .await;
    let work = faults::work_in(&t.cwd());
    let outcome = t.session.run(request(AgentMode::Chat)).await.unwrap();
    assert_eq!(outcome.status, RunStatus::Completed);
    assert_eq!(outcome.result, "done");
    let conversation = t.session.conversation().await.unwrap();
    let results = tool_results(&conversation);
    let codes: Vec<Option<&str>> = results.iter().map(|r| r.error_code.as_deref()).collect();
    assert_eq!(
        codes,
        [
            Some("invalid_arguments"),
            Some("unknown_tool"), // the engine asks; nobody is asked about a call the gate refuses
            Some("panicked"),
            Some("timeout"),
            Some("failed"),            // the command's own timeout: its group killed
            Some("permission_denied"), // unparseable arguments: denied before anything runs
            None
        ]
    );
    assert!(
        results[0].content.contains("`limit`"),
        "names the field: {}",
        results[0].content
    );
    assert_eq!(results[6].content, "ok from read_file");
    assert_eq!(panicky.runs(), 1);
    assert_eq!(ok.runs(), 1, "only the valid call ran");

    // The fault matrix's four properties: every call answered once in the transcript,
    // which holds the conversation exactly; the hung command's group is gone; no work
    // lost; and each fault is told in the call's result.
    let lines = faults::assert_in_process_transcript(t.home.path(), &conversation);
    let group = faults::recorded_group(&t.cwd().join("hang.pgid"));
    faults::assert_group_gone(&group);
    faults::assert_no_process_under(&t.cwd());
    faults::assert_work_kept(&t.cwd(), &work);
    for told in [
        "`limit`".to_string(),
        "no_such_tool".to_string(),
        "fake tool search_code panics".to_string(),
        "tool `find_files` did not finish".to_string(),
        format!("its whole process group ({}) was killed", group.pgid),
    ] {
        faults::assert_told("", &lines, &told);
    }
    t.session.shutdown().await;
}

#[tokio::test]
async fn headless_ask_is_refused_with_a_how_to_allow_reason() {
    let write = Arc::new(FakeTool::new(
        "write_file",
        Safety::SideEffect,
        false,
        Behaviour::Succeed,
    ));
    let t = start(Setup {
        mode: PermissionMode::Default,
        ..Setup::new(
            r#"{"turns":[{"tool_calls":[{"name":"write_file","input":{"path":"a"}}]},{"text":"ok"}]}"#,
            vec![write.clone() as Arc<dyn Tool>],
        )
    })
    .await;
    t.session.run(request(AgentMode::Chat)).await.unwrap();
    let results = tool_results(&t.session.conversation().await.unwrap());
    assert_eq!(write.runs(), 0);
    assert_eq!(results[0].error_code.as_deref(), Some("permission_denied"));
    assert!(
        results[0].content.contains("--permission-mode acceptEdits"),
        "{}",
        results[0].content
    );
    t.session.shutdown().await;
}

#[tokio::test]
async fn a_mode_switch_during_a_run_applies_to_its_next_call() {
    use crewmaster::agent::lead_actor::LeadMsg;
    use crewmaster::approver::ApprovalAnswer;
    use crewmaster::approver::actor::ApproverPolicy;
    use crewmaster::tools::write_file::WriteFile;

    let (tx, mut questions) = tokio::sync::mpsc::unbounded_channel();
    let t = start(Setup {
        mode: PermissionMode::Default,
        approver: ApproverPolicy::Forward(tx),
        ..Setup::new(
            r#"{"turns":[
                {"tool_calls":[{"name":"write_file","input":{"path":"first.txt","content":"1"}}]},
                {"tool_calls":[{"name":"write_file","input":{"path":"second.txt","content":"2"}}]},
                {"text":"done"}]}"#,
            vec![Arc::new(WriteFile::new()) as Arc<dyn Tool>],
        )
    })
    .await;
    let mut asked = Vec::new();
    let outcome = {
        let run = t.session.run(request(AgentMode::Chat));
        tokio::pin!(run);
        loop {
            tokio::select! {
                outcome = &mut run => break outcome,
                Some(q) = questions.recv() => {
                    asked.push(q.request.call.arguments.clone());
                    if asked.len() == 1 {
                        // Default mode asks before the first write.
                        assert_eq!(q.request.mode, PermissionMode::Default);
                        // Shift+Tab in the TUI sends this to the lead while the run waits.
                        t.session
                            .lead()
                            .cast(LeadMsg::SetPermissionMode(PermissionMode::AcceptEdits))
                            .unwrap();
                        // The lead handles its mailbox in order: once this answers, the
                        // switch is done.
                        t.session.conversation().await.unwrap();
                    }
                    q.reply
                        .send(ApprovalAnswer::Deny { message: Some("not this one".into()) })
                        .unwrap();
                }
            }
        }
    };
    assert_eq!(outcome.unwrap().status, RunStatus::Completed);
    assert_eq!(
        asked.len(),
        1,
        "acceptEdits allows the second write unasked: {asked:?}"
    );
    assert!(asked[0].contains("first.txt"));
    let results = tool_results(&t.session.conversation().await.unwrap());
    assert_eq!(results[0].error_code.as_deref(), Some("permission_denied"));
    assert!(!results[1].is_error, "{}", results[1].content);
    assert!(!t.cwd().join("first.txt").exists());
    assert_eq!(
        std::fs::read_to_string(t.cwd().join("second.txt")).unwrap(),
        "2"
    );
    t.session.shutdown().await;
}

#[tokio::test]
async fn nobody_is_asked_about_a_call_the_registered_gate_policy_refuses() {
    use crewmaster::approver::ApprovalAnswer;
    use crewmaster::approver::actor::ApproverPolicy;
    use crewmaster::tools::write_file::WriteFile;

    let (tx, mut questions) =
        tokio::sync::mpsc::unbounded_channel::<crewmaster::approver::actor::PendingApproval>();
    // Default mode would ask before a write; Plan Mode (registered with the gate by the
    // lead for this run) refuses it first, so no human sees the question.
    let t = start(Setup {
        mode: PermissionMode::Default,
        approver: ApproverPolicy::Forward(tx),
        ..Setup::new(
            r#"{"turns":[
                {"tool_calls":[{"name":"write_file","input":{"path":"x.txt","content":"1"}}]},
                {"text":"a plan"}]}"#,
            vec![Arc::new(WriteFile::new()) as Arc<dyn Tool>],
        )
    })
    .await;
    // Should a question come, answer it (so the run ends) and count it.
    let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = asked.clone();
    tokio::spawn(async move {
        while let Some(q) = questions.recv().await {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let _ = q.reply.send(ApprovalAnswer::AllowOnce);
        }
    });
    let outcome = t.session.run(request(AgentMode::Plan)).await.unwrap();
    assert_eq!(outcome.status, RunStatus::Completed);
    assert_eq!(
        asked.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "nobody was asked"
    );
    let results = tool_results(&t.session.conversation().await.unwrap());
    assert_eq!(results[0].error_code.as_deref(), Some("tool_not_allowed"));
    assert!(!t.cwd().join("x.txt").exists());
    t.session.shutdown().await;
}

#[tokio::test]
async fn a_hung_tool_does_not_hold_up_the_calls_beside_it() {
    // The executor answers a tool that finishes in its first poll itself and moves one
    // that waits into a task of its own: a hung tool must not keep its mailbox.
    let quick = Arc::new(FakeTool::new(
        "read_file",
        Safety::ReadOnly,
        false,
        Behaviour::Succeed,
    ));
    let hung = Arc::new(FakeTool::new(
        "find_files",
        Safety::ReadOnly,
        false,
        Behaviour::Hang,
    ));
    let tools: Vec<Arc<dyn Tool>> = vec![quick.clone(), hung.clone()];
    let t = start(Setup {
        transcript: true,
        ..Setup::new(
            // Read-only calls of one turn run at once: the hung one is sent first.
            json!({"turns":[
                {"tool_calls":[
                    {"name":"find_files","id":"hung","input":{"pattern":"*"}},
                    {"name":"read_file","id":"quick","input":{"path":"a"}}]},
                {"text":"done"}]})
            .to_string(),
            tools,
        )
    })
    .await;
    let outcome = t.session.run(request(AgentMode::Chat)).await.unwrap();
    assert_eq!(outcome.result, "done");
    let conversation = t.session.conversation().await.unwrap();
    let lines = faults::assert_in_process_transcript(t.home.path(), &conversation);
    let finished: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "tool_call_finished")
        .filter_map(|l| l["call_id"].as_str())
        .collect();
    // The quick call was answered while the hung one still ran (until its 200 ms timeout).
    assert_eq!(finished, ["quick", "hung"], "{lines:?}");
    let codes: Vec<Option<String>> = tool_results(&conversation)
        .into_iter()
        .map(|r| r.error_code)
        .collect();
    assert_eq!(codes, [Some("timeout".to_string()), None]);
    t.session.shutdown().await;
}

/// What each `publish` gave the recorders: the event types, in one list per write.
#[derive(Default)]
struct Writes(std::sync::Mutex<Vec<Vec<String>>>);

impl crewmaster::events::Recorder for Writes {
    fn record(&self, _: &crewmaster::events::Event) -> Option<crewmaster::events::Event> {
        None
    }

    fn record_all(
        &self,
        events: &[crewmaster::events::EventJson<'_>],
    ) -> Vec<crewmaster::events::Event> {
        let types = events
            .iter()
            .map(|e| {
                let line: serde_json::Value = serde_json::from_str(e.line().unwrap()).unwrap();
                line["type"].as_str().unwrap().to_string()
            })
            .collect();
        self.0.lock().unwrap().push(types);
        Vec::new()
    }

    fn close(&self) {}
}

#[tokio::test]
async fn the_decisions_on_a_turns_read_only_calls_are_recorded_in_one_write() {
    let read = Arc::new(FakeTool::new(
        "read_file",
        Safety::ReadOnly,
        false,
        Behaviour::Succeed,
    ));
    let write = Arc::new(FakeTool::new(
        "write_file",
        Safety::SideEffect,
        false,
        Behaviour::Succeed,
    ));
    let t = start(Setup {
        mode: PermissionMode::BypassPermissions,
        ..Setup::new(
            json!({"turns":[
            {"tool_calls":[
                {"name":"read_file","id":"r1","input":{"path":"a"}},
                {"name":"read_file","id":"r2","input":{"path":"b"}},
                {"name":"read_file","id":"r3","input":{"path":"c"}},
                {"name":"write_file","id":"w1","input":{"path":"d"}},
                {"name":"read_file","id":"r4","input":{"path":"e"}}]},
            {"text":"done"}]})
            .to_string(),
            vec![read.clone() as Arc<dyn Tool>, write.clone()],
        )
    })
    .await;
    let writes = Arc::new(Writes::default());
    t.bus.add_recorder(writes.clone());
    let outcome = t.session.run(request(AgentMode::Chat)).await.unwrap();
    assert_eq!(outcome.result, "done");
    assert_eq!((read.runs(), write.runs()), (4, 1));
    let decided: Vec<usize> = writes
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|types| types.iter().any(|t| t == "permission_decided"))
        .map(|types| {
            assert!(types.iter().all(|t| t == "permission_decided"), "{types:?}");
            types.len()
        })
        .collect();
    // The first three reads run together and are decided in one write; the write runs
    // alone, and the read after it is a batch of one.
    assert_eq!(decided, [3, 1, 1]);
    t.session.shutdown().await;
}

#[tokio::test]
async fn a_batch_the_gate_clears_in_part_runs_what_it_cleared_and_refuses_the_rest() {
    let read = Arc::new(FakeTool::new(
        "read_file",
        Safety::ReadOnly,
        false,
        Behaviour::Succeed,
    ));
    let find = Arc::new(FakeTool::new(
        "find_files",
        Safety::ReadOnly,
        false,
        Behaviour::Succeed,
    ));
    // Both allowed by the engine, decided together; only read_file is in the agent's
    // list, so the gate clears one call of the two it was sent in one message.
    let t = start(Setup {
        mode: PermissionMode::BypassPermissions,
        allowed_tools: Some(vec!["read_file"]),
        ..Setup::new(
            json!({"turns":[
                {"tool_calls":[
                    {"name":"find_files","id":"f1","input":{"pattern":"*"}},
                    {"name":"read_file","id":"r1","input":{"path":"a"}},
                    {"name":"find_files","id":"f2","input":{"pattern":"*"}}]},
                {"text":"done"}]})
            .to_string(),
            vec![read.clone() as Arc<dyn Tool>, find.clone()],
        )
    })
    .await;
    let writes = Arc::new(Writes::default());
    t.bus.add_recorder(writes.clone());
    t.session.run(request(AgentMode::Chat)).await.unwrap();
    assert_eq!((read.runs(), find.runs()), (1, 0));
    let results = tool_results(&t.session.conversation().await.unwrap());
    let codes: Vec<Option<&str>> = results.iter().map(|r| r.error_code.as_deref()).collect();
    assert_eq!(
        codes,
        [Some("tool_not_allowed"), None, Some("tool_not_allowed")]
    );
    assert!(results[0].content.contains("not in this agent's tool list"));
    let decided: Vec<usize> = writes
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|types| types.iter().filter(|t| *t == "permission_decided").count())
        .filter(|&n| n > 0)
        .collect();
    assert_eq!(decided, [3]);
    t.session.shutdown().await;
}
