//! The `ToolExecutor` actor. It accepts only `ClearedCall`s (which only the gate can
//! build) and runs each in its own task, replying when the tool finishes, so a slow or
//! hung tool never blocks the mailbox.

use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef};

use super::run_cleared;
use crate::gate::ClearedCall;
use crate::gate::port::ResultPort;
use crate::offload::ResultsDir;
use crate::tools::Registry;

/// Messages the executor accepts.
pub enum ExecutorMsg {
    /// Run a cleared call and send its result.
    Execute(ClearedCall, ResultPort),
}

// Local-only: never sent across nodes (the `cluster` feature of ractor requires the impl).
impl ractor::Message for ExecutorMsg {}

/// The executor actor (configuration only).
pub struct ToolExecutor;

/// The executor's state.
pub struct ExecutorState {
    registry: Arc<Registry>,
    default_timeout: Duration,
    results: Option<Arc<ResultsDir>>,
}

/// What the executor needs to start.
pub struct ExecutorArgs {
    /// The tools it can run.
    pub registry: Arc<Registry>,
    /// Timeout for tools that set none.
    pub default_timeout: Duration,
    /// Where large results are offloaded (`None`: they are cut instead).
    pub results: Option<ResultsDir>,
}

impl Actor for ToolExecutor {
    type Msg = ExecutorMsg;
    type State = ExecutorState;
    type Arguments = ExecutorArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: ExecutorArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(ExecutorState {
            registry: args.registry,
            default_timeout: args.default_timeout,
            results: args.results.map(Arc::new),
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        crate::supervise::faults::point("executor");
        let ExecutorMsg::Execute(cleared, reply) = msg;
        let registry = state.registry.clone();
        let timeout = state.default_timeout;
        let results = state.results.clone();
        tokio::spawn(async move {
            let result = run_cleared(registry, cleared, timeout, results).await;
            // The caller may have given up (cancelled turn); the result is then unwanted.
            reply.send(result);
        });
        Ok(())
    }
}
