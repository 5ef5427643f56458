//! The `ToolExecutor` actor. It accepts only `ClearedCall`s (which only the gate can
//! build) and replies when the tool finishes. A tool that has to wait goes on in its own
//! task, so a slow or hung tool never blocks the mailbox.

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use ractor::{Actor, ActorProcessingErr, ActorRef};

use super::run_cleared;
use crate::offload::ResultsDir;
use crate::tools::Registry;

/// Messages the executor accepts: defined by the gate, its only sender.
pub use crate::gate::port::ExecutorMsg;

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
        let ExecutorMsg::Execute(calls) = msg;
        for (cleared, reply) in calls {
            crate::supervise::faults::point("executor");
            let registry = state.registry.clone();
            let timeout = state.default_timeout;
            let results = state.results.clone();
            let mut run = Box::pin(run_cleared(registry, cleared, timeout, results));
            // A tool that finishes in its first poll (most read-only calls: nothing to
            // wait for) is answered from here, with no task of its own and no hop to one;
            // one that waits (a process, a file read on the blocking pool, a timer) goes
            // on in its own task, which polls it again, so the mailbox never waits on it.
            // A panic is a result either way (`run_cleared` never panics).
            match (&mut run).now_or_never() {
                // The caller may have given up (cancelled turn); the result is then unwanted.
                Some(result) => reply.send(result),
                None => {
                    tokio::spawn(async move { reply.send(run.await) });
                }
            }
        }
        Ok(())
    }
}
