//! The session's team as the lead's actor holds it, and what every teammate's start goes
//! through, local ([`super::team_launch`]) or on a worker (the worker layer's
//! `teammate_launch`, through [`super::host::Workers`]): its ids, its roster entry, its mailbox, and the
//! team actor adopting its actor linked under itself (so its failure is seen there).

use std::path::PathBuf;
use std::time::Duration;

use ractor::{Actor, ActorRef, rpc::CallResult};

use super::definition::AgentDefinition;
use super::delegate::SpawnRequest;
use crate::team::actor::{Mailbox, SpawnFn, TeamMsg};
use crate::team::{Member, MemberName, Team, TeamError};

/// How long the team actor may take to start a member's actor.
const ADOPT_TIMEOUT: Duration = Duration::from_secs(30);

/// The session's team, as the lead's actor holds it.
#[derive(Clone)]
pub struct TeamLink {
    /// The team actor.
    pub actor: ActorRef<TeamMsg>,
    /// The team's files.
    pub storage: Team,
}

/// Why the team did not take a member or start its actor.
#[derive(Debug, thiserror::Error)]
pub enum TeamLinkError {
    /// The team refused or failed (the roster could not be written, the actor did not
    /// start).
    #[error(transparent)]
    Team(#[from] TeamError),
    /// The blocking roster write did not finish (it panicked or was cancelled).
    #[error(transparent)]
    Join(#[from] tokio::task::JoinError),
    /// The team actor did not answer in time.
    #[error("the team did not answer; the teammate may not have started")]
    NoAnswer,
}

impl TeamLink {
    /// The mailbox of member `me`.
    pub fn mailbox(&self, me: MemberName) -> Mailbox {
        Mailbox::new(self.storage.clone(), me, self.actor.clone())
    }

    /// Adds `member` to the roster (on disk when this returns `Ok`).
    pub async fn add_member(&self, member: Member) -> Result<(), TeamLinkError> {
        let storage = self.storage.clone();
        Ok(tokio::task::spawn_blocking(move || storage.add_member(member)).await??)
    }

    /// Has the team actor spawn `actor` for member `name`, linked under itself.
    pub async fn adopt<A: Actor>(
        &self,
        name: &MemberName,
        actor: A,
        args: A::Arguments,
    ) -> Result<(), TeamLinkError> {
        let spawn: SpawnFn = Box::new(move |cell| {
            Box::pin(async move {
                Actor::spawn_linked(None, actor, args, cell)
                    .await
                    .map(|(actor, _)| actor.get_cell())
                    .map_err(|e| TeamError::StartFailed {
                        message: e.to_string(),
                    })
            })
        });
        let started = self
            .actor
            .call(
                |reply| TeamMsg::Adopt {
                    name: name.clone(),
                    spawn,
                    reply,
                },
                Some(ADOPT_TIMEOUT),
            )
            .await;
        match started {
            Ok(CallResult::Success(Ok(_))) => Ok(()),
            Ok(CallResult::Success(Err(e))) => Err(e.into()),
            _ => Err(TeamLinkError::NoAnswer),
        }
    }
}

/// A new teammate's ids: its agent id (`<definition>/<name>`), and the work id that names
/// its worktree (and its task on a worker): the name and a random suffix.
pub(crate) fn new_ids(def: &AgentDefinition, name: &MemberName) -> (String, String) {
    let agent_id = format!("{}/{name}", def.name);
    let work_id = format!("{name}-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    (agent_id, work_id)
}

/// A new teammate's roster entry: who it is, where it works, and what it was asked for.
pub(crate) fn roster_entry(
    name: &MemberName,
    agent_id: &str,
    def: &AgentDefinition,
    worktree: Option<PathBuf>,
    req: &SpawnRequest,
) -> Member {
    let mut member = Member::new(name.clone(), agent_id, &def.name, worktree);
    member.model = req.model.clone();
    member.description = req.description.clone();
    member
}
