//! The typed path between the real actors (design.md invariant 1): the gate runs only a
//! `Permit`, and only for an agent that registered its policy, in the agent's own context;
//! a `Pending` call becomes a `Permit` only with the approver's `Approval` for that very
//! call. (That nothing outside the engine, the approver and the gate can build a
//! `Permit`, an `Approval` or a `ClearedCall` is shown by the compile_fail doctests in
//! `permission::permit`, `approver` and `gate`.)

use crate::support;

use std::path::Path;
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
use crewmaster::tools::{Registry, Safety, Tool, ToolContext};
use ractor::rpc::CallResult;
use ractor::{Actor, ActorRef, RpcReplyPort};
use support::permission::request;
use support::{Behaviour, FakeTool};

async fn rpc<M: ractor::Message, T: Send + 'static>(
    actor: &ActorRef<M>,
    build: impl FnOnce(RpcReplyPort<T>) -> M,
) -> T {
    match actor.call(build, Some(Duration::from_secs(10))).await {
        Ok(CallResult::Success(v)) => v,
        _ => panic!("the actor did not answer"),
    }
}

struct Actors {
    engine: ActorRef<PermissionMsg>,
    gate: ActorRef<GateMsg>,
    tool: Arc<FakeTool>,
    cwd: tempfile::TempDir,
}

async fn actors() -> Actors {
    let tool = Arc::new(FakeTool::new(
        "read_file",
        Safety::ReadOnly,
        false,
        Behaviour::Succeed,
    ));
    let registry = Arc::new(Registry::with_tools([tool.clone() as Arc<dyn Tool>]).unwrap());
    let (engine, _) = Actor::spawn(None, PermissionEngine, Policy::default().into())
        .await
        .unwrap();
    let (executor, _) = Actor::spawn(
        None,
        ToolExecutor,
        ExecutorArgs {
            registry: registry.clone(),
            default_timeout: Duration::from_secs(10),
            results: None,
        },
    )
    .await
    .unwrap();
    let executor = crewmaster::supervise::Slot::new(executor);
    let (gate, _) = Actor::spawn(
        None,
        Gate,
        GateArgs {
            registry,
            executor,
            memory: None,
        },
    )
    .await
    .unwrap();
    Actors {
        engine,
        gate,
        tool,
        cwd: tempfile::tempdir().unwrap(),
    }
}

impl Actors {
    fn cwd(&self) -> std::path::PathBuf {
        self.cwd.path().canonicalize().unwrap()
    }

    async fn authorize(
        &self,
        agent: &str,
        tool: &str,
        args: &str,
        mode: PermissionMode,
    ) -> Checked {
        let req = request(tool, args, &self.cwd(), mode);
        rpc(&self.engine, |reply| PermissionMsg::Authorize {
            agent: agent.into(),
            request: req,
            hook: Default::default(),
            reply,
        })
        .await
    }

    /// A permit for a read the engine allows (default mode allows reads).
    async fn permit(&self, agent: &str) -> Permit {
        match self
            .authorize(
                agent,
                "read_file",
                r#"{"path":"."}"#,
                PermissionMode::Default,
            )
            .await
        {
            Checked::Allowed { permit, .. } => permit,
            other => panic!("expected a permit, got {other:?}"),
        }
    }

    async fn submit(&self, permit: Permit, ctx_agent: &str, cwd: &Path) -> ToolResult {
        let ctx = ToolContext::new(cwd, ctx_agent);
        rpc(&self.gate, |reply| GateMsg::Submit {
            permit,
            ctx,
            reply: reply.into(),
        })
        .await
    }
}

#[tokio::test]
async fn the_gate_runs_a_permit_only_for_a_registered_agent_in_its_own_context() {
    let a = actors().await;
    let cwd = a.cwd();
    // Allowed by the engine, but the agent registered no policy: refused, never run.
    let r = a.submit(a.permit("ghost").await, "ghost", &cwd).await;
    assert_eq!(r.error_code.as_deref(), Some("tool_not_allowed"));
    assert!(r.content.contains("not registered"), "{}", r.content);
    assert_eq!(a.tool.runs(), 0);

    a.gate
        .cast(GateMsg::Register {
            agent: "ghost".into(),
            policy: GatePolicy::new(AgentMode::Chat, None),
        })
        .unwrap();
    let r = a.submit(a.permit("ghost").await, "ghost", &cwd).await;
    assert!(!r.is_error, "{}", r.content);
    assert_eq!(a.tool.runs(), 1);

    // A permit is bound to its agent and its working directory.
    let r = a.submit(a.permit("ghost").await, "lead", &cwd).await;
    assert!(r.content.contains("issued to `ghost`"), "{}", r.content);
    let r = a
        .submit(a.permit("ghost").await, "ghost", Path::new("/"))
        .await;
    assert_eq!(r.error_code.as_deref(), Some("tool_not_allowed"));
    assert_eq!(a.tool.runs(), 1);

    // The registered policy decides, not the caller: Plan Mode refuses what Chat ran…
    let names = Some(["write_file".to_string()].into());
    a.gate
        .cast(GateMsg::Update {
            agent: "ghost".into(),
            policy: GatePolicy::new(AgentMode::Chat, names),
        })
        .unwrap();
    let r = a.submit(a.permit("ghost").await, "ghost", &cwd).await;
    assert!(
        r.content.contains("not in this agent's tool list"),
        "{}",
        r.content
    );
    // …and the query answers the same without running anything.
    let call = a.permit("ghost").await.into_parts().0;
    let refused = rpc(&a.gate, |reply| GateMsg::Refusal {
        agent: "ghost".into(),
        call,
        reply,
    })
    .await;
    assert!(refused.is_some());

    // Once unregistered, its permits are refused again; a late update does not revive it.
    a.gate
        .cast(GateMsg::Unregister {
            agent: "ghost".into(),
        })
        .unwrap();
    a.gate
        .cast(GateMsg::Update {
            agent: "ghost".into(),
            policy: GatePolicy::new(AgentMode::Chat, None),
        })
        .unwrap();
    let r = a.submit(a.permit("ghost").await, "ghost", &cwd).await;
    assert!(r.content.contains("not registered"), "{}", r.content);
    assert_eq!(a.tool.runs(), 1);
}

#[tokio::test]
async fn an_approval_turns_only_its_own_pending_call_into_a_permit() {
    let a = actors().await;
    let write = |p: &str| serde_json::json!({"path": p, "content": "x"}).to_string();
    let pending = |c: Checked| match c {
        Checked::Asked(p) => p,
        other => panic!("default mode should ask before a write, got {other:?}"),
    };
    let first = pending(
        a.authorize(
            "lead",
            "write_file",
            &write("a.txt"),
            PermissionMode::Default,
        )
        .await,
    );
    let second = pending(
        a.authorize(
            "lead",
            "write_file",
            &write("b.txt"),
            PermissionMode::Default,
        )
        .await,
    );
    let (tx, mut questions) = tokio::sync::mpsc::unbounded_channel();
    let (approver, _) = Actor::spawn(None, Approver, ApproverPolicy::Forward(tx))
        .await
        .unwrap();
    let decision = first.decision().clone();
    let ask = |call: &crewmaster::protocol::ToolCall| ApprovalRequest {
        agent: "lead".into(),
        call: call.clone(),
        decision: decision.clone(),
        mode: PermissionMode::Default,
        teammate: None,
    };
    let human = async {
        let q = questions.recv().await.unwrap();
        q.reply.send(ApprovalAnswer::AllowOnce).unwrap();
    };
    let question = ask(first.call());
    let (outcome, ()) = tokio::join!(
        rpc(&approver, |reply| ApproverMsg::Ask(question, reply)),
        human
    );
    let Outcome::Approved(approval) = outcome else {
        panic!("an allow answer is an approval");
    };
    // The approval of a.txt does not let b.txt through…
    let err = Permit::approved(second, &approval).unwrap_err();
    assert!(err.to_string().contains("does not belong"), "{err}");
    // …but makes the permit for a.txt.
    let permit = Permit::approved(first, &approval).unwrap();
    assert!(permit.call().arguments.contains("a.txt"));
    assert_eq!(permit.agent(), "lead");

    // A deny answer makes no approval.
    let third = pending(
        a.authorize(
            "lead",
            "write_file",
            &write("c.txt"),
            PermissionMode::Default,
        )
        .await,
    );
    let question = ask(third.call());
    let human = async {
        let q = questions.recv().await.unwrap();
        q.reply
            .send(ApprovalAnswer::Deny { message: None })
            .unwrap();
    };
    let (outcome, ()) = tokio::join!(
        rpc(&approver, |reply| ApproverMsg::Ask(question, reply)),
        human
    );
    assert!(matches!(outcome, Outcome::Refused { .. }));
}
