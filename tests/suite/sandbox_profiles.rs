//! The sandbox profile of each call, end to end through the real actors: the permission
//! engine chooses it from the decision, the permit carries it, the gate puts it in the
//! call's context, and `run_command` runs the real command in it. Each test checks the
//! disk afterwards: an auto-allowed read cannot write, a granted `git status --short`
//! cannot redirect into README.md, an approved command cannot write outside the roots,
//! and only the explicit "run it outside the sandbox" answer runs it unconfined.

use crate::support;
use crewmaster::tools::rule_names::LoadPolicy;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crewmaster::agent::mode::AgentMode;
use crewmaster::approver::actor::{Approver, ApproverMsg, ApproverPolicy};
use crewmaster::approver::{ApprovalAnswer, ApprovalRequest, Outcome};
use crewmaster::engine::{PermissionEngine, PermissionMsg};
use crewmaster::executor::actor::{ExecutorArgs, ToolExecutor};
use crewmaster::gate::GatePolicy;
use crewmaster::gate::actor::{Gate, GateArgs, GateMsg};
use crewmaster::permission::{Checked, PermissionMode, Permit, Policy};
use crewmaster::protocol::ToolResult;
use crewmaster::tools::run_command::RunCommand;
use crewmaster::tools::{CommandSandbox, Registry, SandboxProfile, Tool, ToolContext};
use ractor::rpc::CallResult;
use ractor::{Actor, ActorRef, RpcReplyPort};
use support::permission::{cmd, request};

async fn rpc<M: ractor::Message, T: Send + 'static>(
    actor: &ActorRef<M>,
    build: impl FnOnce(RpcReplyPort<T>) -> M,
) -> T {
    match actor.call(build, Some(Duration::from_secs(30))).await {
        Ok(CallResult::Success(v)) => v,
        _ => panic!("the actor did not answer"),
    }
}

/// A project (a git repository with a README), a directory outside it, and the real
/// engine, gate and executor with the real `run_command`.
struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    engine: ActorRef<PermissionMsg>,
    gate: ActorRef<GateMsg>,
}

async fn world(local_settings: &str) -> World {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let (root, outside, home) = (base.join("proj"), base.join("outside"), base.join("home"));
    for d in [&root, &outside, &home] {
        std::fs::create_dir_all(d).unwrap();
    }
    support::git(&root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("README.md"), "original\n").unwrap();
    std::fs::create_dir_all(root.join(".crew")).unwrap();
    std::fs::write(root.join(".crew/settings.local.json"), local_settings).unwrap();
    let (policy, _) = Policy::load(&root, Some(&home)).unwrap();
    let (engine, _) = Actor::spawn(None, PermissionEngine, policy.into())
        .await
        .unwrap();
    let registry =
        Arc::new(Registry::with_tools([Arc::new(RunCommand::new()) as Arc<dyn Tool>]).unwrap());
    let (executor, _) = Actor::spawn(
        None,
        ToolExecutor,
        ExecutorArgs {
            registry: registry.clone(),
            default_timeout: Duration::from_secs(60),
            results: None,
        },
    )
    .await
    .unwrap();
    let (gate, _) = Actor::spawn(
        None,
        Gate,
        GateArgs {
            registry,
            executor: crewmaster::supervise::Slot::new(executor),
            memory: None,
        },
    )
    .await
    .unwrap();
    gate.cast(GateMsg::Register {
        agent: "lead".into(),
        policy: GatePolicy::new(AgentMode::Do, None),
    })
    .unwrap();
    World {
        _dir: dir,
        root,
        outside,
        engine,
        gate,
    }
}

impl World {
    async fn authorize(&self, command: &str, mode: PermissionMode) -> Checked {
        self.authorize_args(&cmd(command), mode).await
    }

    async fn authorize_args(&self, args: &str, mode: PermissionMode) -> Checked {
        let req = request("run_command", args, &self.root, mode);
        rpc(&self.engine, |reply| PermissionMsg::Authorize {
            agent: "lead".into(),
            request: req,
            hook: Default::default(),
            reply,
        })
        .await
    }

    /// Submits the permit with the session's context (confined below the project, in
    /// the write profile as the session sets it): the gate must put the permit's own
    /// profile in its place.
    async fn submit(&self, permit: Permit) -> ToolResult {
        let mut ctx = ToolContext::new(&self.root, "lead");
        ctx.sandbox = CommandSandbox::landlock(vec![self.root.clone()]);
        rpc(&self.gate, |reply| GateMsg::Submit {
            permit,
            ctx,
            reply: reply.into(),
        })
        .await
    }

    /// Asks a human (the approver, forwarding to this test) and answers `answer`.
    async fn approve(&self, command: &str, answer: ApprovalAnswer) -> Permit {
        self.approve_args(&cmd(command), answer).await
    }

    async fn approve_args(&self, args: &str, answer: ApprovalAnswer) -> Permit {
        let Checked::Asked(pending) = self.authorize_args(args, PermissionMode::Default).await
        else {
            panic!("default mode should ask before `{args}`");
        };
        let (tx, mut questions) = tokio::sync::mpsc::unbounded_channel();
        let (approver, _) = Actor::spawn(None, Approver, ApproverPolicy::Forward(tx))
            .await
            .unwrap();
        let question = ApprovalRequest {
            agent: "lead".into(),
            call: pending.call().clone(),
            decision: pending.decision().clone(),
            mode: PermissionMode::Default,
            teammate: None,
        };
        let human = async {
            let q = questions.recv().await.unwrap();
            q.reply.send(answer).unwrap();
        };
        let (outcome, ()) = tokio::join!(
            rpc(&approver, |reply| ApproverMsg::Ask(question, reply)),
            human
        );
        let Outcome::Approved(approval) = outcome else {
            panic!("an allow answer is an approval");
        };
        Permit::approved(pending, &approval).unwrap()
    }
}

fn allowed(c: Checked) -> Permit {
    match c {
        Checked::Allowed { permit, .. } => permit,
        other => panic!("expected the engine to allow it, got {other:?}"),
    }
}

/// A python3 program writing `path` (assembled at run time, so no argument names it).
fn python_writes(path: &Path) -> String {
    let text = path.display().to_string();
    let (a, b) = text.split_at(text.len() / 2);
    format!("python3 -c \"open('{a}'+'{b}','w').write('written')\"")
}

#[tokio::test]
async fn an_auto_allowed_read_runs_in_the_read_profile_and_cannot_write() {
    require_features!(Landlock, Python3);
    let w = world("{}").await;
    // The engine allows `git status` in default mode as a read: the read profile.
    let permit = allowed(w.authorize("git status", PermissionMode::Default).await);
    assert_eq!(permit.profile(), SandboxProfile::Read);
    let r = w.submit(permit).await;
    assert!(r.content.contains("exit code: 0"), "{}", r.content);
    // A program in that profile writes nothing, inside the project or outside it, and
    // opens no TCP connection; the result says the sandbox stopped it.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut ctx = ToolContext::new(&w.root, "lead");
    ctx.sandbox = CommandSandbox::landlock(vec![w.root.clone()]).for_call(SandboxProfile::Read);
    for target in [
        w.root.join("README.md"),
        w.root.join("new.txt"),
        w.outside.join("x"),
    ] {
        let out = RunCommand::new()
            .run(
                serde_json::json!({"command": python_writes(&target)}),
                ctx.clone(),
            )
            .await
            .unwrap();
        assert!(out.contains("Permission denied"), "{out}");
        assert!(
            out.contains("the OS sandbox may have stopped this command"),
            "{out}"
        );
        assert!(out.contains("read profile"), "{out}");
    }
    assert_eq!(
        std::fs::read_to_string(w.root.join("README.md")).unwrap(),
        "original\n"
    );
    assert!(!w.root.join("new.txt").exists() && !w.outside.join("x").exists());
    for command in [
        format!("python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}))\""),
        format!("bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}'"),
    ] {
        let out = RunCommand::new()
            .run(serde_json::json!({"command": command}), ctx.clone())
            .await
            .unwrap();
        assert!(!out.contains("exit code: 0"), "{command}: {out}");
    }
    listener.set_nonblocking(true).unwrap();
    assert!(
        listener.accept().is_err(),
        "a read-profile command connected"
    );
    // The same write in the write profile lands, so the read profile is what stopped it.
    let mut write = ctx.clone();
    write.sandbox = write.sandbox.for_call(SandboxProfile::Write);
    let out = RunCommand::new()
        .run(
            serde_json::json!({"command": python_writes(&w.root.join("new.txt"))}),
            write,
        )
        .await
        .unwrap();
    assert!(out.contains("exit code: 0"), "{out}");
    assert!(w.root.join("new.txt").exists());
}

/// The OS cannot tell this redirect from the project's own writes (README.md is below
/// the roots): the engine must check each redirect target as a write (issue 25 item 5),
/// which the engine's side of this issue does. Un-ignore it with that change.
#[tokio::test]
async fn a_granted_git_status_cannot_redirect_into_the_project_without_asking() {
    require_features!(Landlock);
    let w = world(r#"{"permissions": {"allow": ["Bash(git status --short)"]}}"#).await;
    for (command, target) in [
        ("git status --short > README.md", "README.md"),
        ("git status --short >> README.md", "README.md"),
        ("git status --short 2> README.md", "README.md"),
        ("git status --short | tee README.md", "README.md"),
    ] {
        match w.authorize(command, PermissionMode::Default).await {
            // Asking is the engine's answer; the human is not asked here.
            Checked::Asked(_) | Checked::Denied(_) => {}
            // Allowed without a human, it must run where it cannot write.
            Checked::Allowed { permit, .. } => {
                assert_eq!(permit.profile(), SandboxProfile::Read, "{command}");
                let _ = w.submit(permit).await;
            }
        }
        assert_eq!(
            std::fs::read_to_string(w.root.join(target)).unwrap(),
            "original\n",
            "{command}"
        );
    }
}

#[tokio::test]
async fn an_approved_command_runs_confined_and_outside_the_sandbox_only_when_so_answered() {
    require_features!(Landlock, Python3);
    let w = world("{}").await;
    let outside = w.outside.join("approved.txt");
    let inside = w.root.join("approved.txt");
    let command = format!("{}; {}", python_writes(&inside), python_writes(&outside));
    // "Allow once": the approved profile, confined below the roots.
    let permit = w.approve(&command, ApprovalAnswer::AllowOnce).await;
    assert_eq!(permit.profile(), SandboxProfile::Approved);
    let r = w.submit(permit).await;
    assert!(
        !outside.exists(),
        "an approved command wrote outside the roots: {}",
        r.content
    );
    assert_eq!(std::fs::read_to_string(&inside).unwrap(), "written");
    assert!(r.content.contains("outside the sandbox"), "{}", r.content);
    std::fs::remove_file(&inside).unwrap();
    // "Run it outside the sandbox": the human's explicit answer, and only then.
    let permit = w
        .approve(&command, ApprovalAnswer::AllowOutsideSandbox)
        .await;
    assert_eq!(permit.profile(), SandboxProfile::Unsandboxed);
    let r = w.submit(permit).await;
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "written",
        "{}",
        r.content
    );
}

#[tokio::test]
async fn a_context_cannot_carry_a_wider_profile_than_its_permit() {
    require_features!(Landlock, Python3);
    let w = world("{}").await;
    let target = w.root.join("README.md");
    // `cat` of a project file is a read; the caller's context says "unsandboxed".
    let permit = allowed(w.authorize("cat README.md", PermissionMode::Default).await);
    assert_eq!(permit.profile(), SandboxProfile::Read);
    let mut ctx = ToolContext::new(&w.root, "lead");
    ctx.sandbox =
        CommandSandbox::landlock(vec![w.root.clone()]).for_call(SandboxProfile::Unsandboxed);
    let r = rpc(&w.gate, |reply| GateMsg::Submit {
        permit,
        ctx,
        reply: reply.into(),
    })
    .await;
    assert!(r.content.contains("original"), "{}", r.content);
    // And under dontAsk a writing command gets the write profile, never more.
    let permit = allowed(
        w.authorize(
            &python_writes(&w.outside.join("d.txt")),
            PermissionMode::DontAsk,
        )
        .await,
    );
    assert_eq!(permit.profile(), SandboxProfile::Write);
    let _ = w.submit(permit).await;
    assert!(!w.outside.join("d.txt").exists());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "original\n");
}

#[tokio::test]
async fn a_request_to_run_outside_the_sandbox_always_asks_a_human() {
    require_features!(Landlock, Python3);
    let outside_args = |w: &World| {
        serde_json::json!({
            "command": python_writes(&w.outside.join("o.txt")),
            "outside_sandbox": true
        })
        .to_string()
    };
    let w = world("{}").await;
    // Even a read-only command asks when it wants out; nobody answers under dontAsk.
    let read = serde_json::json!({"command": "ls", "outside_sandbox": true}).to_string();
    assert!(matches!(
        w.authorize_args(&read, PermissionMode::Default).await,
        Checked::Asked(_)
    ));
    for mode in [PermissionMode::DontAsk, PermissionMode::Auto] {
        match w.authorize_args(&outside_args(&w), mode).await {
            Checked::Denied(d) => assert!(d.reason.contains("outside the OS sandbox"), "{d:?}"),
            other => panic!("{mode:?}: expected a refusal, got {other:?}"),
        }
    }
    // "Allow once" runs it in the approved profile: still confined.
    let permit = w
        .approve_args(&outside_args(&w), ApprovalAnswer::AllowOnce)
        .await;
    assert_eq!(permit.profile(), SandboxProfile::Approved);
    let _ = w.submit(permit).await;
    assert!(!w.outside.join("o.txt").exists());
    // Only "run it outside the sandbox" runs it unconfined.
    let permit = w
        .approve_args(&outside_args(&w), ApprovalAnswer::AllowOutsideSandbox)
        .await;
    let _ = w.submit(permit).await;
    assert!(w.outside.join("o.txt").exists());
    // With the user's `allowUnsandboxedCommands`, approving the request is enough.
    let w = world(r#"{"sandbox": {"allowUnsandboxedCommands": true}}"#).await;
    let permit = w
        .approve_args(&outside_args(&w), ApprovalAnswer::AllowOnce)
        .await;
    assert_eq!(permit.profile(), SandboxProfile::Unsandboxed);
    let _ = w.submit(permit).await;
    assert!(w.outside.join("o.txt").exists());
}
