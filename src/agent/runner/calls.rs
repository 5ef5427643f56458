//! A turn's tool calls through the pipeline: consecutive read-only calls concurrently,
//! side-effecting calls (and skill loads) one at a time in order, results in call order.

use futures::FutureExt;
use futures::stream::{FuturesUnordered, StreamExt};

use super::Runner;
use crate::agent::pipeline::CallerContext;
use crate::gate::actor::GateMsg;
use crate::protocol::{ToolCall, ToolResult};
use crate::tools::Safety;

impl Runner {
    /// Runs calls: consecutive read-only calls concurrently, side-effecting calls one at
    /// a time in order; results come back in call order.
    pub(super) async fn run_calls(
        &self,
        caller: &CallerContext,
        calls: Vec<ToolCall>,
    ) -> Vec<ToolResult> {
        let mut results = Vec::with_capacity(calls.len());
        let mut batch: Vec<ToolCall> = Vec::new();
        for call in calls {
            let read_only = self.pipeline.registry.safety(&call.name) == Some(Safety::ReadOnly);
            // Loading a skill changes what the calls after it may run: it runs alone.
            let skill =
                self.pipeline.registry.canonical(&call.name) == Some(crate::tools::skill::NAME);
            if read_only && !skill {
                batch.push(call);
                continue;
            }
            results.extend(self.run_batch(caller, std::mem::take(&mut batch)).await);
            let args = call.arguments.clone();
            let result = self.pipeline.dispatch(caller, call).await;
            if skill && !result.is_error {
                self.activate_skill(&args);
            }
            results.push(result);
        }
        results.extend(self.run_batch(caller, batch).await);
        results
    }

    /// Puts a just-loaded skill's `allowed-tools` in force at the gate for this agent
    /// (before its next call is submitted: one sender, one mailbox, in order).
    fn activate_skill(&self, arguments: &str) {
        if let Some(limit) = self.pipeline.registry.skills().limit_for(arguments) {
            let agent = self.spec.id.clone();
            self.pipeline.gate.cast(GateMsg::Narrow { agent, limit });
        }
    }

    /// Runs read-only calls concurrently. Their starts are published together, their
    /// allowing decisions too, and the ends of calls that finish together (one transcript
    /// write each, not one a call).
    async fn run_batch(&self, caller: &CallerContext, mut calls: Vec<ToolCall>) -> Vec<ToolResult> {
        if calls.is_empty() {
            return Vec::new();
        }
        let pipeline = &self.pipeline;
        pipeline.announce(caller, &mut calls).await;
        let ways = pipeline.decide_all(caller, calls.clone()).await;
        let mut running: FuturesUnordered<_> = ways
            .into_iter()
            .enumerate()
            .map(|(i, way)| way.map(move |result| (i, result)))
            .collect();
        let mut results = Vec::with_capacity(calls.len());
        while let Some(first) = running.next().await {
            let mut ended = vec![first];
            while let Some(Some(more)) = running.next().now_or_never() {
                ended.push(more);
            }
            pipeline.finished(caller, ended.iter().map(|(i, r)| (&calls[*i], r)));
            results.extend(ended);
        }
        results.sort_by_key(|(i, _)| *i);
        results.into_iter().map(|(_, r)| r).collect()
    }
}
