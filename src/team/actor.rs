//! The `Team` actor: routes messages between the lead and its teammates and keeps the lead
//! informed. A send is appended to the recipient's durable inbox right in the actor (a
//! `write(2)` under the inbox lock; the fsync is the flusher's group commit, see
//! [`super::inbox`]) and the recipient's actor is woken at once; only when an inbox lock is
//! held elsewhere (another process) does the append move to the blocking pool. The
//! recipient injects its unread mail at its next turn boundary ([`Mailbox::take`]) and
//! acknowledges it once it is in its conversation ([`Mailbox::ack`]); both run on the
//! caller's task, off the blocking pool, unless a lock is taken.
//!
//! Teammate actors are spawned linked under this actor, so a teammate that crashes reaches
//! [`Actor::handle_supervisor_evt`] here: its `in_progress` items go back to `pending`, its
//! roster entry is marked failed, and the lead is told. The lead is also told when a
//! teammate goes idle (without its output: teammates report by message or through the work
//! list) and when an item is completed. The `-p` driver asks [`TeamMsg::WaitLead`] whether
//! the lead has something to read or the team is quiet.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use ractor::{
    Actor, ActorCell, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent,
};

pub use super::mailbox::{Delivery, Mailbox, render};
use super::todos_stamp::TodosStamp;
use super::{Envelope, MemberName, MemberStatus, Outgoing, Recipient, Team};
use super::{TeamError, TodoId, TodoStatus};

/// How often the actor looks at the disk for changes it was not told about (a message from
/// `crew team send` in another terminal, a work-list change).
const POLL: Duration = Duration::from_millis(300);

/// Wakes a member's actor when mail arrives for it.
pub type Waker = Arc<dyn Fn() + Send + Sync>;

/// What the `-p` driver learns from [`TeamMsg::WaitLead`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeadWake {
    /// The lead has unread mail or notices: run it again.
    Mail,
    /// Every teammate is idle (or gone), no inbox holds unread mail and no item is in
    /// progress: the team is done.
    Quiet,
}

/// Messages the team actor accepts.
pub enum TeamMsg {
    /// A member's actor started: wake it with `waker` when mail arrives.
    Join(MemberName, Waker),
    /// Store a message in the recipients' inboxes, then wake them. Replies once every copy
    /// is on disk.
    Send {
        /// The sender.
        from: MemberName,
        /// The recipient(s).
        to: Recipient,
        /// The message.
        out: Outgoing,
        /// What was stored, or why not.
        reply: RpcReplyPort<Result<Vec<Envelope>, TeamError>>,
    },
    /// Internal: these members have new mail.
    Delivered(Vec<MemberName>),
    /// A teammate's status changed (recorded in the roster; idle tells the lead).
    Status(MemberName, MemberStatus),
    /// A teammate's actor ended normally (stopped or shut down).
    Left(MemberName, MemberStatus),
    /// Takes the lead's pending notices (teammate idle, item completed, teammate failed).
    TakeNotices(RpcReplyPort<Vec<String>>),
    /// Replies when the lead has something to read, or when the team is quiet.
    WaitLead(RpcReplyPort<LeadWake>),
    /// Spawns a teammate under this actor (so its crash is seen here) and records which
    /// actor it is before any other message is handled.
    Adopt {
        /// The teammate's name.
        name: MemberName,
        /// Spawns its actor.
        spawn: SpawnFn,
        /// Its actor id, or why it could not start.
        reply: RpcReplyPort<Result<ActorId, TeamError>>,
    },
    /// Stops a teammate (the lead or the user): its `in_progress` items return to
    /// `pending`, its roster entry says `stopped`, and the lead is told.
    StopMember(MemberName, RpcReplyPort<Result<(), TeamError>>),
    /// Internal: look at the disk again.
    Tick,
}

// Local-only: never sent across nodes (the `cluster` feature of ractor requires the impl).
impl ractor::Message for TeamMsg {}

/// The team actor (configuration only).
pub struct TeamActor;

/// The team actor's state.
pub struct TeamState {
    team: Team,
    /// Live members' wakers.
    wakers: HashMap<MemberName, Waker>,
    /// Which actor is which member (for supervision events).
    actors: HashMap<ActorId, MemberName>,
    /// Live teammates' actors, to stop them.
    cells: HashMap<MemberName, ActorCell>,
    /// The last status each member reported.
    status: HashMap<MemberName, MemberStatus>,
    /// Notices for the lead's next turn boundary.
    notices: Vec<String>,
    /// Items already reported as completed.
    completed: BTreeSet<TodoId>,
    /// `todos/` as it was when last listed for completions: unchanged, nothing to list.
    todos_seen: TodosStamp,
    /// Items already reported as stalled (in progress while nobody works or has mail).
    stalled: BTreeSet<TodoId>,
    /// The `-p` driver waiting for the lead to have something to do.
    waiting: Option<RpcReplyPort<LeadWake>>,
}

/// Spawns a teammate's actor linked under the given (team actor's) cell; returns its id.
pub type SpawnFn = Box<
    dyn FnOnce(ActorCell) -> futures::future::BoxFuture<'static, Result<ActorCell, TeamError>>
        + Send,
>;

impl Actor for TeamActor {
    type Msg = TeamMsg;
    type State = TeamState;
    type Arguments = Team;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        team: Team,
    ) -> Result<Self::State, ActorProcessingErr> {
        myself.send_interval(POLL, || TeamMsg::Tick);
        let storage = team.clone();
        let completed = blocking(move || storage.list_todos())
            .await
            .map(|items| {
                items
                    .values()
                    .filter(|i| i.status == TodoStatus::Completed)
                    .map(|i| i.id)
                    .collect()
            })
            .unwrap_or_default();
        Ok(TeamState {
            team,
            wakers: HashMap::new(),
            actors: HashMap::new(),
            cells: HashMap::new(),
            status: HashMap::new(),
            stalled: BTreeSet::new(),
            notices: Vec::new(),
            completed,
            todos_seen: TodosStamp::Unknown,
            waiting: None,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            TeamMsg::Adopt { name, spawn, reply } => {
                let result = spawn(myself.get_cell()).await.map(|cell| {
                    let id = cell.get_id();
                    state.actors.insert(id, name.clone());
                    state.cells.insert(name.clone(), cell);
                    state.status.insert(name, MemberStatus::Working);
                    id
                });
                let _ = reply.send(result);
            }
            TeamMsg::StopMember(name, reply) => {
                let result = match state.cells.get(&name) {
                    // Its termination reaches `handle_supervisor_evt`, which releases its items.
                    Some(cell) => {
                        cell.stop(Some("stopped by the lead".into()));
                        Ok(())
                    }
                    None => Err(TeamError::NotRunning { name }),
                };
                let _ = reply.send(result);
            }
            TeamMsg::Join(name, waker) => {
                state.wakers.insert(name, waker);
            }
            TeamMsg::Send {
                from,
                to,
                out,
                reply,
            } => {
                let mut pending = match state.team.prepare_send(&from, &to, out) {
                    Ok(p) => p,
                    Err(e) => {
                        let _ = reply.send(Err(e));
                        return Ok(());
                    }
                };
                match state.team.try_send(&mut pending) {
                    Ok(true) => {
                        let stored = pending.into_stored();
                        let names: Vec<MemberName> = stored.iter().map(|e| e.to.clone()).collect();
                        wake(state, names).await;
                        let _ = reply.send(Ok(stored));
                    }
                    // A lock is held elsewhere: finish off the actor so the others go on;
                    // the sender waits for the reply, so its own messages stay in order.
                    Ok(false) => {
                        let team = state.team.clone();
                        tokio::spawn(async move {
                            let result = blocking(move || {
                                team.finish_send(&mut pending)?;
                                Ok(pending.into_stored())
                            })
                            .await;
                            if let Ok(stored) = &result {
                                let names = stored.iter().map(|e| e.to.clone()).collect();
                                let _ = myself.cast(TeamMsg::Delivered(names));
                            }
                            let _ = reply.send(result);
                        });
                    }
                    Err(e) => {
                        let _ = reply.send(Err(e));
                    }
                }
            }
            TeamMsg::Delivered(names) => wake(state, names).await,
            TeamMsg::Status(name, status) => {
                let previous = state.status.insert(name.clone(), status);
                let team = state.team.clone();
                let who = name.clone();
                // Recorded in order (awaited here): the roster never shows an older status.
                if let Err(e) = blocking(move || {
                    team.update_member(&who, |m| m.status = status)?;
                    // An idle team makes its inboxes durable now, not a window later.
                    if status == MemberStatus::Idle {
                        team.flush()?;
                    }
                    Ok(())
                })
                .await
                {
                    tracing::warn!("could not record {name}'s status: {e}");
                }
                if status == MemberStatus::Idle && previous != Some(MemberStatus::Idle) {
                    push_notice(
                        state,
                        format!(
                            "<team-notice>Teammate {name} is idle (waiting for a message).</team-notice>"
                        ),
                    );
                }
                check_lead(state).await;
            }
            // A teammate leaving on its own (an approved shutdown): nothing to tell the lead
            // beyond its answer, but whatever it still held goes back to the list.
            TeamMsg::Left(name, status) => {
                state.actors.retain(|_, n| *n != name);
                let _ = ended(state, &name, status).await;
                check_lead(state).await;
            }
            TeamMsg::TakeNotices(reply) => {
                completed_notices(state).await;
                let _ = reply.send(std::mem::take(&mut state.notices));
            }
            TeamMsg::WaitLead(reply) => {
                state.waiting = Some(reply);
                check_lead(state).await;
            }
            TeamMsg::Tick => {
                if state.waiting.is_some() {
                    check_lead(state).await;
                }
                // Mail written by another process (`crew team send`): wake its reader.
                let team = state.team.clone();
                let names: Vec<MemberName> = state.wakers.keys().cloned().collect();
                let unread = blocking(move || {
                    Ok(names
                        .into_iter()
                        .filter(|n| team.unread_count(n).unwrap_or(0) > 0)
                        .collect::<Vec<_>>())
                })
                .await
                .unwrap_or_default();
                for name in unread {
                    if let Some(wake) = state.wakers.get(&name) {
                        wake();
                    }
                }
            }
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let team = state.team.clone();
        if let Err(e) = blocking(move || team.flush()).await {
            tracing::warn!("team {}: {e}", state.team.name());
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<Self::Msg>,
        evt: SupervisionEvent,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match evt {
            SupervisionEvent::ActorFailed(who, reason) => {
                if let Some(name) = state.actors.remove(&who.get_id()) {
                    let items = ended(state, &name, MemberStatus::Failed).await;
                    push_notice(
                        state,
                        format!(
                            "<team-notice>Teammate {name} failed ({}); {items}.</team-notice>",
                            crate::envelope::body(&reason.to_string())
                        ),
                    );
                    check_lead(state).await;
                }
            }
            // Still on the books: it was stopped, not shut down at its own answer.
            SupervisionEvent::ActorTerminated(who, _, _) => {
                if let Some(name) = state.actors.remove(&who.get_id()) {
                    let items = ended(state, &name, MemberStatus::Stopped).await;
                    push_notice(
                        state,
                        format!("<team-notice>Teammate {name} was stopped; {items}.</team-notice>"),
                    );
                    check_lead(state).await;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// Wakes the members who have new mail (the lead through its `-p` driver).
///
/// A woken teammate counts as working from here on: it may take and acknowledge its mail
/// before its own `Status(Working)` reaches this actor, and the team must not look quiet in
/// between. It always reports a status afterwards (working, idle, or it leaves).
async fn wake(state: &mut TeamState, names: impl IntoIterator<Item = MemberName>) {
    for name in names {
        if name.is_lead() {
            check_lead(state).await;
        } else if let Some(wake) = state.wakers.get(&name) {
            wake();
            state.status.insert(name, MemberStatus::Working);
        }
    }
}

/// A teammate's actor is gone: forget it, return its `in_progress` items to `pending`,
/// record `status`. Returns what happened to its items, for the lead.
async fn ended(state: &mut TeamState, name: &MemberName, status: MemberStatus) -> String {
    state.wakers.remove(name);
    state.cells.remove(name);
    state.status.insert(name.clone(), status);
    let team = state.team.clone();
    let who = name.clone();
    let released = blocking(move || {
        let released = team.release_owner(&who)?;
        team.set_member_status(&who, status, None)?;
        Ok(released)
    })
    .await;
    match released {
        Ok(ids) if ids.is_empty() => "it held no item".to_string(),
        Ok(ids) => format!(
            "its items {} were returned to pending with no owner",
            ids.iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Err(e) => format!("its items could not be released: {e}"),
    }
}

/// Queues a notice for the lead's next turn boundary, counted first (`Team::notice_queued`).
fn push_notice(state: &mut TeamState, notice: String) {
    state.team.notice_queued();
    state.notices.push(notice);
}

/// Adds a notice for every item completed since the last look.
async fn completed_notices(state: &mut TeamState) {
    // A stat, not a listing, on each of the lead's turns (the listing goes to a thread).
    let now = TodosStamp::of(&state.team.todo_dir());
    if state.todos_seen.unchanged(now) {
        return;
    }
    let team = state.team.clone();
    let Ok(items) = blocking(move || team.list_todos()).await else {
        return;
    };
    state.todos_seen = now;
    for item in items.values() {
        if item.status == TodoStatus::Completed && state.completed.insert(item.id) {
            let by = item
                .owner
                .as_ref()
                .map(|o| format!(" by {o}"))
                .unwrap_or_default();
            push_notice(
                state,
                format!(
                    "<team-notice>Item {} ({}) was completed{}.</team-notice>",
                    item.id,
                    crate::envelope::body(&item.subject),
                    crate::envelope::body(&by)
                ),
            );
        }
    }
}

/// Answers a waiting `-p` driver when the lead has something to read or the team is quiet.
async fn check_lead(state: &mut TeamState) {
    if state.waiting.is_none() {
        return;
    }
    completed_notices(state).await;
    let team = state.team.clone();
    let busy = state.status.values().any(|s| *s == MemberStatus::Working);
    /// What the team's files say about the lead's wait.
    enum Seen {
        /// The lead has mail.
        Mail,
        /// Someone works or has mail: keep waiting.
        Busy,
        /// Nobody works and nobody has mail; these items are still in progress.
        Idle(Vec<(TodoId, String)>),
    }
    let seen = blocking(move || {
        if team.unread_count(&MemberName::lead())? > 0 {
            return Ok(Seen::Mail);
        }
        if busy {
            return Ok(Seen::Busy);
        }
        let roster = team.roster()?;
        for m in &roster.members {
            if team.unread_count(&m.name)? > 0 {
                return Ok(Seen::Busy);
            }
        }
        let stalled = team
            .list_todos()?
            .into_iter()
            .filter(|(_, i)| i.status == TodoStatus::InProgress)
            .map(|(id, i)| (id, i.owner.map(|o| o.to_string()).unwrap_or_default()))
            .collect();
        Ok(Seen::Idle(stalled))
    })
    .await;
    let verdict = match seen {
        Ok(Seen::Idle(stalled)) => {
            // Nobody works and nobody has mail, so an item still in progress cannot move.
            // The lead is told once (it may finish, release or reassign it); after that the
            // team counts as quiet, so a run never waits forever on an abandoned item.
            let fresh: Vec<String> = stalled
                .into_iter()
                .filter(|(id, _)| state.stalled.insert(*id))
                .map(|(id, owner)| format!("#{id} (owner: {owner})"))
                .collect();
            if !fresh.is_empty() {
                push_notice(
                    state,
                    format!(
                        "Work items still in progress while every teammate is idle: {}. Complete, release or reassign them.",
                        fresh.join(", ")
                    ),
                );
            }
            Some(if state.notices.is_empty() {
                LeadWake::Quiet
            } else {
                LeadWake::Mail
            })
        }
        _ if !state.notices.is_empty() => Some(LeadWake::Mail),
        Ok(Seen::Mail) => Some(LeadWake::Mail),
        Ok(Seen::Busy) => None,
        // The team's files cannot be read: stop waiting rather than hang the run.
        Err(e) => {
            tracing::warn!("team {}: {e}", state.team.name());
            Some(LeadWake::Quiet)
        }
    };
    if let Some(v) = verdict
        && let Some(reply) = state.waiting.take()
    {
        let _ = reply.send(v);
    }
}

/// Runs a storage call on the blocking pool.
pub(super) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> super::Result<T> + Send + 'static,
) -> super::Result<T> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        Err(e) => Err(TeamError::StoreCall {
            message: e.to_string(),
        }),
    }
}
