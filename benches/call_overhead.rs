//! Per-call overhead of the actors (issue 15): a no-op read-only tool driven through the
//! real pipeline — permission engine → gate → executor, each a ractor actor, with the
//! events published — against the same checks called directly in one thread
//! (`permission::check`, `gate::refusal`, the tool's `run`). Prints the criterion times,
//! then p50/p99 per call and calls/s for 1 agent and for 4 concurrent agents, each next to
//! the direct baseline measured in the same run. Targets: p50 ≤ 20 µs, ≥ 50k calls/s
//! across 4 agents.
//!
//! `cargo bench --bench call_overhead -- --measurement-time 3 --warm-up-time 1`
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark: it fails loudly and prints what it measures"
)]

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use crewmaster::agent::mode::AgentMode;
use crewmaster::agent::pipeline::{CallerContext, Pipeline};
use crewmaster::approver::actor::{Approver, ApproverPolicy};
use crewmaster::engine::{EngineArgs, PermissionEngine};
use crewmaster::events::EventBus;
use crewmaster::executor::actor::{ExecutorArgs, ToolExecutor};
use crewmaster::gate::GatePolicy;
use crewmaster::gate::actor::{Gate, GateArgs, GateMsg};
use crewmaster::permission::{
    Category, CheckRequest, PermissionMode, PermissionSpec, Policy, RuleName, SharedMode,
    TargetSpec, check,
};
use crewmaster::protocol::ToolCall;
use crewmaster::supervise::Slot;
use crewmaster::tools::{Definition, Registry, Safety, Tool, ToolContext, ToolError};
use criterion::Criterion;
use ractor::Actor;
use serde_json::{Value, json};

/// Concurrent agents in the throughput measurement.
const AGENTS: usize = 4;
/// Calls per sample of the p50 and throughput measurements.
const CALLS: usize = 20_000;

/// A read-only tool that does nothing: what is left is the path's own cost.
struct Noop {
    def: Definition,
}

impl Noop {
    fn new() -> Self {
        Self {
            def: Definition {
                name: "noop".into(),
                aliases: Vec::new(),
                description: "does nothing".into(),
                input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
                safety: Safety::ReadOnly,
                system: false,
                timeout: None,
                permission: Some(PermissionSpec::new(
                    Category::Read,
                    [RuleName::Read],
                    TargetSpec::Path {
                        field: "path".into(),
                        required: false,
                        writes: false,
                        glob_fields: Vec::new(),
                    },
                )),
            },
        }
    }
}

#[async_trait]
impl Tool for Noop {
    fn definition(&self) -> &Definition {
        &self.def
    }

    async fn run(&self, _input: Value, _ctx: ToolContext) -> Result<String, ToolError> {
        Ok("ok".into())
    }
}

/// How the session's event subscriber drains: the TUI wakes for the first event and
/// drains the rest at its next frame (`tui::runtime`); the `-p` printer wakes per event.
#[derive(Clone, Copy)]
enum Drain {
    PerFrame,
    PerEvent,
}

/// The TUI's frame (`tui::runtime::FRAME`).
const FRAME: Duration = Duration::from_millis(16);

/// The real actors, spawned as the session spawns them.
struct Rig {
    pipeline: Pipeline,
    registry: Arc<Registry>,
    policy: Policy,
    cwd: PathBuf,
    _tmp: tempfile::TempDir,
}

async fn rig(drain: Drain) -> Rig {
    let tmp = tempfile::tempdir().expect("tempdir");
    let cwd = tmp.path().canonicalize().expect("canonical").join("proj");
    std::fs::create_dir_all(&cwd).expect("mkdir");
    let policy = Policy {
        project_root: Some(cwd.clone()),
        home: Some(tmp.path().canonicalize().expect("canonical")),
        ..Policy::default()
    };
    let registry = Arc::new(
        Registry::with_tools(vec![Arc::new(Noop::new()) as Arc<dyn Tool>]).expect("registry"),
    );
    let (permission, _) = Actor::spawn(None, PermissionEngine, EngineArgs::from(policy.clone()))
        .await
        .expect("engine");
    let (approver, _) = Actor::spawn(None, Approver, ApproverPolicy::Headless)
        .await
        .expect("approver");
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
    .expect("executor");
    let (gate, _) = Actor::spawn(
        None,
        Gate,
        GateArgs {
            registry: registry.clone(),
            executor: Slot::new(executor),
            memory: None,
        },
    )
    .await
    .expect("gate");
    for i in 0..AGENTS {
        gate.send_message(GateMsg::Register {
            agent: agent(i),
            policy: GatePolicy::new(AgentMode::Chat, None),
        })
        .expect("register");
    }
    // A subscriber draining events, as the TUI or the `-p` printer does.
    let events = EventBus::new();
    let mut rx = events.subscribe();
    tokio::spawn(async move {
        match drain {
            Drain::PerEvent => while rx.recv().await.is_some() {},
            Drain::PerFrame => {
                let mut drawn_at = tokio::time::Instant::now();
                while rx.recv().await.is_some() {
                    tokio::time::sleep_until(drawn_at + FRAME).await;
                    while rx.try_recv().is_ok() {}
                    drawn_at = tokio::time::Instant::now();
                }
            }
        }
    });
    Rig {
        pipeline: Pipeline {
            registry: registry.clone(),
            permission: Slot::new(permission),
            approver: Slot::new(approver),
            gate: Slot::new(gate),
            events,
            auto: None,
            budget: crewmaster::agent::budget::Budget::new(None),
            context: Default::default(),
            hooks: crewmaster::hooks::HookClient::none(),
        },
        registry,
        policy,
        cwd,
        _tmp: tmp,
    }
}

fn agent(i: usize) -> String {
    format!("agent{i}")
}

fn caller(rig: &Rig, i: usize) -> CallerContext {
    CallerContext {
        agent: agent(i),
        mode: SharedMode::new(PermissionMode::Default),
        tool_ctx: ToolContext::new(&rig.cwd, agent(i)),
        hook_stop: Arc::default(),
        intent: Default::default(),
    }
}

fn call(n: usize) -> ToolCall {
    ToolCall {
        id: format!("c{n}"),
        name: "noop".into(),
        arguments: "{}".into(),
    }
}

/// The same checks with no actor in between, in one thread.
async fn direct(rig: &Rig, caller: &CallerContext, n: usize) -> String {
    let call = call(n);
    let def = rig.registry.definition("noop").expect("noop");
    let request = CheckRequest {
        call: call.clone(),
        spec: def.permission.clone(),
        cwd: rig.cwd.clone(),
        mode: caller.mode.get(),
    };
    let decision = check(&request, &rig.policy);
    let policy = GatePolicy::new(AgentMode::Chat, None);
    let refused = crewmaster::gate::refusal(&rig.registry, &policy, &call);
    assert!(refused.is_none(), "the gate refuses: {refused:?}");
    let tool = rig.registry.get("noop").expect("noop");
    let out = tool
        .run(
            serde_json::from_str(&call.arguments).unwrap_or(Value::Null),
            caller.tool_ctx.clone(),
        )
        .await;
    black_box(&decision);
    out.unwrap_or_default()
}

/// p50 and p99 of `CALLS` sequential calls of one agent through the actors.
async fn latencies(rig: &Rig) -> (Duration, Duration) {
    let c = caller(rig, 0);
    let mut v = Vec::with_capacity(CALLS);
    for n in 0..CALLS {
        let t = Instant::now();
        let r = rig.pipeline.dispatch(&c, call(n)).await;
        v.push(t.elapsed());
        black_box(r);
    }
    v.sort();
    (v[v.len() / 2], v[v.len() * 99 / 100])
}

/// Calls per second with `agents` agents calling concurrently, `CALLS` calls in all.
async fn throughput(rig: &Arc<Rig>, agents: usize) -> f64 {
    let t = Instant::now();
    let tasks: Vec<_> = (0..agents)
        .map(|i| {
            let rig = rig.clone();
            tokio::spawn(async move {
                let c = caller(&rig, i);
                for n in 0..CALLS / agents {
                    black_box(rig.pipeline.dispatch(&c, call(n)).await);
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("agent task");
    }
    CALLS as f64 / t.elapsed().as_secs_f64()
}

/// Direct calls per second in one thread.
async fn direct_rate(rig: &Rig) -> f64 {
    let c = caller(rig, 0);
    let t = Instant::now();
    for n in 0..CALLS {
        black_box(direct(rig, &c, n).await);
    }
    CALLS as f64 / t.elapsed().as_secs_f64()
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let per_event = Arc::new(rt.block_on(rig(Drain::PerEvent)));
    let rig = Arc::new(rt.block_on(rig(Drain::PerFrame)));
    let first = rt.block_on(rig.pipeline.dispatch(&caller(&rig, 0), call(0)));
    assert!(
        !first.is_error,
        "the no-op call must be allowed: {}",
        first.content
    );
    assert_eq!(rt.block_on(direct(&rig, &caller(&rig, 0), 0)), "ok");

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("call_overhead");
    group.bench_function("actors: engine → gate → executor", |b| {
        b.iter_custom(|iters| {
            let c = caller(&rig, 0);
            rt.block_on(async {
                let t = Instant::now();
                for n in 0..iters as usize {
                    black_box(rig.pipeline.dispatch(&c, call(n)).await);
                }
                t.elapsed()
            })
        })
    });
    group.bench_function("direct: the same checks in one thread", |b| {
        b.iter_custom(|iters| {
            let c = caller(&rig, 0);
            rt.block_on(async {
                let t = Instant::now();
                for n in 0..iters as usize {
                    black_box(direct(&rig, &c, n).await);
                }
                t.elapsed()
            })
        })
    });
    group.finish();
    c.final_summary();

    // An agent is an actor on the runtime's worker threads: measure its calls from a task
    // there. From `block_on` (the main thread, outside the pool) every hop back also
    // wakes a parked thread, which no agent pays; that figure is printed too.
    let (p50, p99) = rt.block_on({
        let rig = rig.clone();
        async move {
            tokio::spawn(async move { latencies(&rig).await })
                .await
                .expect("latency task")
        }
    });
    let (event50, event99) = rt.block_on({
        let rig = per_event.clone();
        async move {
            tokio::spawn(async move { latencies(&rig).await })
                .await
                .expect("latency task")
        }
    });
    let event_one = rt.block_on(throughput(&per_event, 1));
    let (outside50, outside99) = rt.block_on(latencies(&rig));
    let one = rt.block_on(throughput(&rig, 1));
    let four = rt.block_on(throughput(&rig, AGENTS));
    let base = rt.block_on(direct_rate(&rig));
    println!(
        "through the actors: p50 {:.1} µs, p99 {:.1} µs per call from an agent's task (target p50 ≤ 20 µs); from outside the runtime (block_on): p50 {:.1} µs, p99 {:.1} µs",
        micros(p50),
        micros(p99),
        micros(outside50),
        micros(outside99)
    );
    println!(
        "with a subscriber woken by every event (the -p printer; the TUI drains once a frame): p50 {:.1} µs, p99 {:.1} µs, {event_one:.0} calls/s (1 agent)",
        micros(event50),
        micros(event99)
    );
    println!(
        "through the actors: {one:.0} calls/s (1 agent), {four:.0} calls/s ({AGENTS} concurrent agents; target ≥ 50,000) on {} cores",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!(
        "direct, one thread: {base:.0} calls/s ({:.2} µs per call); actors/direct time per call: {:.1}× (1 agent)",
        1e6 / base,
        base / one
    );
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
