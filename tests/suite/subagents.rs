//! Subagents and background tasks through the real actors: delegation, concurrency,
//! crash containment, notifications, and the persisted task state.

use crate::support;

use std::path::Path;
use std::sync::Arc;

use crewmaster::agent::mode::AgentMode;
use crewmaster::agent::runner::RunRequest;
use crewmaster::events::EventKind;
use crewmaster::tasks::{TaskStatus, load_records};
use crewmaster::tools::run_command::RunCommand;
use crewmaster::tools::write_file::WriteFile;
use crewmaster::tools::{Safety, Tool};
use serde_json::json;
use support::{Behaviour, FakeTool, Setup, faults, start, tool_results};

fn chat(task: &str) -> RunRequest {
    RunRequest {
        mode: AgentMode::Chat,
        task: task.into(),
        plan: None,
    }
}

fn fake_read() -> Arc<FakeTool> {
    Arc::new(FakeTool::new(
        "read_file",
        Safety::ReadOnly,
        false,
        Behaviour::Succeed,
    ))
}

#[tokio::test]
async fn a_panicking_subagent_fails_its_task_while_its_siblings_complete() {
    // `boom` writes a file in its worktree and runs a command that leaves a child in its
    // group, holds (so the test can see its work) and then panics. Its command is
    // confined as every subagent's: Landlock, and a PID namespace of its own.
    require_features!(Landlock, PidNamespaces);
    let sig = tempfile::tempdir().unwrap();
    let s = sig.path();
    let leave_child = format!(
        "{}sleep 600 &",
        faults::record_group(Path::new("boom.pgid"))
    );
    let read = fake_read();
    let t = start(Setup {
        orchestration: true,
        git: true,
        transcript: true,
        files: vec![(".crew/agents/boom.md", BOOM.to_string())],
        ..Setup::new(
            json!({"turns":[
                {"tool_calls":[
                  {"name":"agent","input":{"description":"one","prompt":"p","subagent_type":"general-purpose","run_in_background":true}},
                  {"name":"agent","input":{"description":"boom","prompt":"p","subagent_type":"boom","run_in_background":true}},
                  {"name":"agent","input":{"description":"two","prompt":"p","subagent_type":"plan","run_in_background":true}}]},
                {"text":"started"},
                {"text":"noted"}, {"text":"noted"}, {"text":"noted"},
                {"text":"still here"}],
              "agents":{
                "general-purpose":{"turns":[{"tool_calls":[{"name":"read_file","input":{"path":"a"}}]},{"text":"one done"}]},
                "boom":{"turns":[
                    {"tool_calls":[
                        {"name":"write_file","input":{"path":"boom.txt","content":"half done"}},
                        {"name":"run_command","input":{"command":leave_child}}]},
                    {"touch":s.join("holding"),"wait_for":s.join("go"),
                     "tool_calls":[{"name":"read_file","input":{"path":"a"}}]},
                    {"panic":true}]},
                "plan":{"turns":[{"text":"two done"}]}}})
            .to_string(),
            vec![
                read.clone() as Arc<dyn Tool>,
                Arc::new(WriteFile::new()),
                Arc::new(RunCommand::new()),
            ],
        )
    })
    .await;
    let first = t.session.run(chat("fan out")).await.unwrap();
    assert_eq!(first.result, "started");
    // What boom left in its worktree before it crashed.
    support::wait_until("boom to hold", || s.join("holding").exists()).await;
    let work = faults::work_in(&t.cwd());
    let boom_worktree = work
        .iter()
        .find(|w| w.dirty.iter().any(|(f, _)| f == "boom.txt"))
        .map(|w| w.path.clone())
        .unwrap_or_else(|| panic!("boom wrote in its worktree: {work:?}"));
    let group = faults::recorded_group(&boom_worktree.join("boom.pgid"));
    let boom_worktree = boom_worktree.display().to_string();
    std::fs::write(s.join("go"), b"").unwrap();
    // Run the lead again whenever something ended, until nothing is running.
    while t.session.next_completion().await.is_some() {
        t.session.run(chat("continue")).await.unwrap();
    }
    let session_dir = t.session_dir();
    let records = load_records(&session_dir).unwrap();
    let by_desc = |d: &str| records.iter().find(|r| r.description == d).unwrap().clone();
    assert_eq!(by_desc("boom").status, TaskStatus::Failed);
    assert!(
        by_desc("boom").result.unwrap().contains("panic"),
        "{:?}",
        by_desc("boom")
    );
    assert_eq!(by_desc("one").status, TaskStatus::Completed);
    // (with git, each subagent's worktree is finished: removed here, as it holds nothing)
    assert!(by_desc("one").result.unwrap().starts_with("one done"));
    assert_eq!(by_desc("one").tool_calls, 1);
    assert_eq!(by_desc("two").status, TaskStatus::Completed);
    assert_eq!(read.runs(), 2);
    // The lead saw a notification for each task in its conversation.
    let conv = t.session.conversation().await.unwrap();
    let notes: usize = conv
        .iter()
        .flat_map(|m| m.content.iter())
        .filter(|b| matches!(b, crewmaster::protocol::ContentBlock::Text { text } if text.starts_with("<task-notification>")))
        .count();
    assert_eq!(notes, 3);
    // The lead itself is still usable after the crash: it runs another turn and answers
    // with the script's next text (how many `noted` turns the completions took depends
    // on how they were batched).
    let lead_texts = ["", "started", "noted", "noted", "noted", "still here"];
    let asked = t
        .provider
        .requests()
        .iter()
        .filter(|r| r.agent == "lead")
        .count();
    let again = t.session.run(chat("are you there?")).await.unwrap();
    assert_eq!(again.result, lead_texts[asked]);

    // The fault matrix's four properties: the lead's and every agent's transcript whole,
    // the lead's holding its conversation exactly; the group of boom's command gone; boom's
    // uncommitted file kept (in its worktree or committed); the lead told of the panic and
    // where boom's work is.
    let conv = t.session.conversation().await.unwrap();
    let lines = faults::assert_in_process_transcript(t.home.path(), &conv);
    faults::assert_group_gone(&group);
    faults::assert_work_kept(&t.cwd(), &work);
    let told: Vec<_> = lines
        .iter()
        .filter(|l| l["agent"] == "lead")
        .cloned()
        .collect();
    faults::assert_told("", &told, "panics as the script asks");
    faults::assert_told("", &told, &boom_worktree);
    let (cwd, home) = (t.cwd(), t.home.path().to_path_buf());
    t.session.shutdown().await;
    faults::assert_no_process_under(&cwd);
    faults::assert_no_process_under(&home);
}

/// A subagent type that writes and runs commands (for the crash test).
const BOOM: &str = "---\nname: boom\ndescription: writes, then crashes\nisolation: worktree\ntools: write_file, read_file, run_command\n---\nDo your part.\n";

#[tokio::test]
async fn background_subagents_run_concurrently() {
    // Each subagent's first turn signals that it started, then holds until `go` exists,
    // which the test creates only once all three have started: run one after another,
    // the first would hold forever and the others never start.
    let sig = tempfile::tempdir().unwrap();
    let s = sig.path().display();
    let gate = format!(r#""touch":"{s}/started-{{agent}}","wait_for":"{s}/go""#);
    let mut t = start(Setup {
        orchestration: true,
        ..Setup::new(
            format!(
                r#"{{"turns":[
                {{"tool_calls":[
                  {{"name":"agent","input":{{"description":"a","prompt":"p","subagent_type":"general-purpose","run_in_background":true}}}},
                  {{"name":"agent","input":{{"description":"b","prompt":"p","subagent_type":"explore","run_in_background":true}}}},
                  {{"name":"agent","input":{{"description":"c","prompt":"p","subagent_type":"plan","run_in_background":true}}}}]}},
                {{"text":"started"}}],
              "agents":{{
                "general-purpose":{{"turns":[{{"text":"a1",{gate}}},{{"text":"a2"}}]}},
                "explore":{{"turns":[{{"text":"b1",{gate}}}]}},
                "plan":{{"turns":[{{"text":"c1",{gate}}}]}}}}}}"#
            ),
            vec![fake_read() as Arc<dyn Tool>],
        )
    })
    .await;
    t.session.run(chat("fan out")).await.unwrap();
    let started = || {
        std::fs::read_dir(sig.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.file_name().to_string_lossy().starts_with("started-"))
            })
            .count()
    };
    support::wait_until("all three subagents to be running at once", || {
        started() == 3
    })
    .await;
    std::fs::write(sig.path().join("go"), b"").unwrap();
    let mut done = 0;
    while t.session.next_completion().await.is_some() {
        let tasks = t.session.tasks().unwrap().clone();
        let taken = tasks
            .call(
                |r| crewmaster::tasks::actor::TaskMsg::TakeNotifications("lead".into(), r),
                None,
            )
            .await
            .unwrap()
            .unwrap();
        done += taken.len();
    }
    assert_eq!(done, 3);
    // Order of events: all three subagents started before any of them finished.
    let mut order = Vec::new();
    let mut task_events = Vec::new();
    while let Ok(e) = t.events.try_recv() {
        match e.kind {
            EventKind::RunStarted { .. } if e.agent != "lead" => order.push(("start", e.agent)),
            EventKind::RunFinished { .. } if e.agent != "lead" => order.push(("end", e.agent)),
            EventKind::TaskChanged { status, .. } => task_events.push(status),
            _ => {}
        }
    }
    // Each task announced itself pending, running and completed (for `--output-format events`, the TUI).
    for status in ["pending", "running", "completed"] {
        assert_eq!(
            task_events.iter().filter(|s| *s == status).count(),
            3,
            "{task_events:?}"
        );
    }
    let first_end = order.iter().position(|(k, _)| *k == "end").unwrap();
    let starts_before = order[..first_end]
        .iter()
        .filter(|(k, _)| *k == "start")
        .count();
    assert_eq!(starts_before, 3, "{order:?}");
    t.session.shutdown().await;
}

#[tokio::test]
async fn foreground_subagent_returns_its_answer_and_unknown_types_are_refused() {
    let t = start(Setup {
        orchestration: true,
        ..Setup::new(
            r#"{"turns":[
                {"tool_calls":[{"name":"agent","input":{"description":"look","prompt":"find it","subagent_type":"explore"}}]},
                {"tool_calls":[{"name":"agent","input":{"description":"x","prompt":"p","subagent_type":"nope"}}]},
                {"text":"done"}],
              "agents":{"explore":{"turns":[{"text":"found it in src/lib.rs"}]}}}"#,
            vec![fake_read() as Arc<dyn Tool>],
        )
    })
    .await;
    t.session.run(chat("go")).await.unwrap();
    let results = tool_results(&t.session.conversation().await.unwrap());
    assert!(!results[0].is_error);
    assert_eq!(results[0].content, "found it in src/lib.rs");
    assert!(results[1].is_error);
    assert!(
        results[1].content.contains("unknown subagent_type `nope`"),
        "{}",
        results[1].content
    );
    assert!(results[1].content.contains("explore"));
    // The subagent was shown only its definition's tools, never `agent` or writes.
    let sub = t
        .provider
        .requests()
        .into_iter()
        .find(|r| r.agent.starts_with("explore/"))
        .unwrap();
    let names: Vec<&str> = sub.tools.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"read_file"));
    assert!(
        !names.contains(&"agent") && !names.contains(&"write_file"),
        "{names:?}"
    );
    t.session.shutdown().await;
}

async fn wait_for(cond: impl FnMut() -> bool, what: &str) {
    support::wait_until(what, cond).await;
}

/// The pid of a live process whose command line (spaces for NULs) is `cmdline`.
fn pid_running(cmdline: &str) -> Option<String> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid = e.file_name().to_string_lossy().into_owned();
        let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
        (String::from_utf8_lossy(&cmd).replace('\0', " ").trim() == cmdline && alive(&pid))
            .then_some(pid)
    })
}

fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.contains(") Z "))
        .unwrap_or(false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_a_subagent_kills_the_command_it_is_running() {
    // A subagent's commands are always confined: without Landlock they are refused.
    require_features!(Landlock);
    let t = start(Setup {
        orchestration: true,
        ..Setup::new(
            r#"{"turns":[
                {"tool_calls":[{"name":"agent","input":{"description":"sleeper","prompt":"p","subagent_type":"general-purpose","run_in_background":true}}]},
                {"text":"started"}],
              "agents":{"general-purpose":{"turns":[
                {"tool_calls":[{"name":"run_command","input":{"command":"echo $$ > sub.pid; exec sleep 347"}}]},
                {"text":"never reached"}]}}}"#,
            crewmaster::tools::builtin_tools(),
        )
    })
    .await;
    t.session.run(chat("go")).await.unwrap();
    let pid_file = t.dir.path().join("sub.pid");
    wait_for(
        || std::fs::read_to_string(&pid_file).is_ok_and(|s| !s.trim().is_empty()),
        "the pid file",
    )
    .await;
    // `$$` is the shell's pid in its own PID namespace when the command is confined, so
    // the sleep is found by its command line as this process sees it.
    let mut pid = String::new();
    wait_for(
        || {
            pid = pid_running("sleep 347").unwrap_or_default();
            !pid.is_empty()
        },
        "the sleep to start",
    )
    .await;
    assert!(alive(&pid), "the subagent's sleep should be running");
    let tasks = t.session.tasks().unwrap().clone();
    let records = tasks
        .call(crewmaster::tasks::actor::TaskMsg::List, None)
        .await
        .unwrap()
        .unwrap();
    let id = records[0].id.clone();
    let stopped = tasks
        .call(
            |r| crewmaster::tasks::actor::TaskMsg::Stop(id, r),
            Some(std::time::Duration::from_secs(30)),
        )
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(stopped.status, TaskStatus::Cancelled);
    wait_for(|| !alive(&pid), "the sleep to die").await;
    t.session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_command_reports_its_end_to_the_lead() {
    // The build holds on a FIFO until the test writes to it, after the lead's first run
    // ended: the news arrives between runs however slow the machine.
    let gate = tempfile::tempdir().unwrap();
    let fifo = gate.path().join("build.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let t = start(Setup {
        orchestration: true,
        ..Setup::new(
            format!(
                r#"{{"turns":[
                {{"tool_calls":[{{"name":"run_command","input":{{"command":"read go < {fifo}; echo built ok","run_in_background":true,"description":"build"}}}}]}},
                {{"text":"waiting for the build"}},
                {{"text":"the build finished"}}]}}"#,
                fifo = fifo.display()
            ),
            crewmaster::tools::builtin_tools(),
        )
    })
    .await;
    let first = t.session.run(chat("build it")).await.unwrap();
    assert_eq!(first.result, "waiting for the build");
    // Opening the FIFO for writing waits for the command to open it for reading.
    tokio::task::spawn_blocking(move || std::fs::write(&fifo, "go\n"))
        .await
        .unwrap()
        .unwrap();
    let rec = t.session.next_completion().await.expect("the command ends");
    assert_eq!(rec.status, TaskStatus::Completed);
    assert!(
        std::fs::read_to_string(&rec.output_file)
            .unwrap()
            .contains("built ok")
    );
    let second = t.session.run(chat("continue")).await.unwrap();
    assert_eq!(second.result, "the build finished");
    let last_request = t.provider.requests().pop().unwrap();
    let sent = last_request.messages.to_vec().last().unwrap().text();
    assert!(
        sent.contains("<task-notification>") && sent.contains("exit code: 0"),
        "{sent}"
    );
    t.session.shutdown().await;
}
