//! The `Session` actor: the root supervisor. It starts the permission engine, approver,
//! executor, gate and lead agent as linked children and keeps going when one of them
//! fails (the default would stop the session): a crashed service is restarted from its
//! last good state (`services::Services`) and the restart is an event; a restart storm
//! ends the session with the reason. `SessionHandle` is the public face: start a session,
//! run requests on its lead, subscribe to its events, shut it down.

use ractor::{ActorRef, RpcReplyPort};

use crate::agent::lead_actor::LeadMsg;
use crate::tasks::actor::TaskMsg;
use crate::team::actor::TeamMsg;

mod actor;
pub(crate) mod build;
mod config;
mod config_builder;
mod handle;
pub mod live;
pub(crate) mod model;
pub(crate) mod recent;
pub(crate) mod render;
pub mod services;

pub use actor::{EndReason, Session, SessionState};
pub use config::{Orchestration, SessionConfig, SessionHooks};
pub use config_builder::SessionConfigBuilder;
pub use handle::SessionHandle;

/// Messages the session accepts.
pub enum SessionMsg {
    /// The lead agent's and the task manager's references.
    Refs(RpcReplyPort<SessionRefs>),
    /// The client of the session's hooks (fires `SessionEnd`).
    Hooks(RpcReplyPort<crate::hooks::HookClient>),
    /// Kill these services (`permission`, `gate`, …) from outside, answering once they
    /// are dead: the fault injector's `kill` (only sent when the `faults` feature is on).
    Kill(Vec<String>, RpcReplyPort<()>),
}

// Local-only: never sent across nodes (the `cluster` feature of ractor requires the impl).
impl ractor::Message for SessionMsg {}

/// The references `SessionHandle` keeps.
pub type SessionRefs = (
    ActorRef<LeadMsg>,
    Option<ActorRef<TaskMsg>>,
    Option<ActorRef<TeamMsg>>,
);

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// An actor could not be started.
    #[error("could not start the session: {0}")]
    Spawn(String),
    /// An actor did not answer.
    #[error("the session's {0} did not answer")]
    NoAnswer(&'static str),
    /// The lead refused the request (a run already going on, a compaction).
    #[error("{0}")]
    Refused(crate::agent::lead_actor::LeadError),
    /// The session ended by itself.
    #[error("the session ended: {0}")]
    Ended(String),
}
