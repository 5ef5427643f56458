//! `TaskFront`: the task manager's stable address. Agents, tools and the session hold the
//! front's reference; it forwards each message to the manager the supervisor's `Slot`
//! holds now, so a restarted manager is reached without anyone refreshing a reference.
//! It keeps no state and does nothing that can fail.

use ractor::{Actor, ActorProcessingErr, ActorRef};

use super::actor::TaskMsg;
use crate::supervise::Slot;

/// The forwarding actor (configuration only).
pub(crate) struct TaskFront;

impl Actor for TaskFront {
    type Msg = TaskMsg;
    type State = Slot<TaskMsg>;
    type Arguments = Slot<TaskMsg>;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        manager: Slot<TaskMsg>,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(manager)
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        manager: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // A message no manager took drops its reply port: the caller gets its error.
        manager.cast(msg);
        Ok(())
    }
}
