//! A teammate's own subagents: how deep they start, and how the teammate hears that one
//! ended. A teammate that has started subagents is idle only once they have all ended and
//! been reported to it: until then it counts as working (so a `-p` run does not end under
//! a background subagent), and each one that ends starts a run that receives its notice.

use std::time::Duration;

use ractor::ActorRef;
use ractor::rpc::CallResult;

use super::teammate_actor::TeammateMsg;
use crate::tasks::actor::TaskMsg;

/// The depth of a teammate's subagents: a teammate is started by the lead, as a subagent
/// of depth 1 is, so its subagents are one deeper (and, at the limit, cannot delegate).
pub(super) const SUBAGENT_DEPTH: u32 = 2;

/// The task of a run started because one of the teammate's subagents ended (the runner
/// appends the completion notice to it).
pub(super) const TASK_NEWS: &str =
    "A subagent you started has ended (its notice is below). Act on its result.";

/// In its own task: waits for the next subagent of `agent` to end (at once if one ended
/// unreported), or learns that none is running, and tells the teammate which.
pub(super) fn watch(myself: ActorRef<TeammateMsg>, tasks: ActorRef<TaskMsg>, agent: String) {
    tokio::spawn(async move {
        // Bounded like the session's own waits: a subagent may run for hours.
        let next = tasks
            .call(
                |r| TaskMsg::WaitNext(agent, r),
                Some(Duration::from_secs(24 * 3600)),
            )
            .await;
        let ended = matches!(next, Ok(CallResult::Success(Some(_))));
        let _ = myself.cast(TeammateMsg::TaskNews { ended });
    });
}
