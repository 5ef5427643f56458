//! The `Session` actor: the root supervisor that starts the services and the lead, restarts a
//! crashed service from its last good state, and ends the session on a restart storm.

use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio::sync::Semaphore;

use super::services::{Service, ServiceArgs, Services};
use super::{Orchestration, SessionConfig, SessionHooks, SessionMsg};
use crate::agent::lead_actor::{LeadAgent, LeadArgs, LeadMsg};
use crate::agent::pipeline::Pipeline;
use crate::agent::runner::{RunPlace, Runner};
use crate::agent::subagent_actor::{SubagentEnv, Workspaces};
use crate::agent::team_launch::TeamLink;
use crate::agent::workspaces::WorktreeWorkspaces;
use crate::events::{EventBus, EventKind};
use crate::permission::SharedMode;
use crate::protocol::Message;
use crate::supervise::{RestartBudget, RestartLimit};
use crate::tasks::actor::{TaskArgs, TaskMsg};
use crate::team::Team;
use crate::team::actor::{TeamActor, TeamMsg};
use crate::team::restore::Transcripts;
use crate::worktree::actor::{WorktreeManagerArgs, WorktreeMsg};

/// The session supervisor (configuration only).
pub struct Session;

/// Why a session ended by itself (a restart storm), shared with its handle.
pub type EndReason = Arc<std::sync::OnceLock<String>>;

/// The session's state: its children.
pub struct SessionState {
    lead: ActorRef<LeadMsg>,
    tasks: Option<ActorRef<TaskMsg>>,
    team: Option<ActorRef<TeamMsg>>,
    events: EventBus,
    hooks: crate::hooks::HookClient,
    services: Services,
    budget: RestartBudget,
    ended: EndReason,
}

impl Actor for Session {
    type Msg = SessionMsg;
    type State = SessionState;
    type Arguments = (SessionConfig, EndReason);

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        (cfg, ended): (SessionConfig, EndReason),
    ) -> Result<Self::State, ActorProcessingErr> {
        let cell = myself.get_cell();
        let walk = Arc::new(crate::permission::walk::WalkFilter::new(&cfg.policy));
        let budget = crate::agent::budget::Budget::new(cfg.policy.max_budget_usd);
        let trusted = cfg.policy.trusted;
        let (limit, bad_limit) = RestartLimit::from_env();
        if let Some(message) = bad_limit {
            cfg.events.publish("session", EventKind::Error { message });
        }
        // The executor's reference stays with the gate and this supervisor: no agent has it.
        let mut services = Services::start(
            ServiceArgs {
                policy: cfg.policy,
                approver: cfg.approver,
                registry: cfg.registry.clone(),
                default_timeout: cfg.default_tool_timeout,
                results: cfg
                    .orchestration
                    .as_ref()
                    .map(|o| crate::offload::ResultsDir::of_session(&o.session_dir)),
            },
            cell.clone(),
        )
        .await?;
        // Everyone gets the manager's front, which reaches a restarted manager.
        let tasks = match &cfg.orchestration {
            Some(o) => {
                let args = TaskArgs::new(o.session_dir.clone(), Some(cfg.events.clone()));
                Some(services.start_tasks(args).await?)
            }
            None => None,
        };
        let mut conversation = cfg.conversation;
        let hooks = match cfg.hooks {
            Some(h) => start_hooks(h, &cfg.cwd, &mut conversation, &cell, &cfg.events).await?,
            None => crate::hooks::HookClient::none(),
        };
        let runner = Runner {
            pipeline: Pipeline {
                registry: cfg.registry,
                permission: services.permission.clone(),
                approver: services.approver.clone(),
                gate: services.gate.clone(),
                events: cfg.events.clone(),
                hooks: hooks.clone(),
                auto: cfg.auto.clone(),
                budget,
                context: Arc::new(cfg.context),
            },
            provider: cfg.provider,
            spec: cfg.lead,
        };
        let workspaces = match &cfg.orchestration {
            Some(o) if o.worktrees => {
                let base = o.worktree_base.clone();
                start_worktrees(&cfg.cwd, base, trusted, &mut services, &cfg.events).await
            }
            _ => None,
        };
        let team = match &cfg.orchestration {
            Some(Orchestration {
                teams_dir: Some(dir),
                session_dir,
                ..
            }) => {
                let name = session_dir
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or("session");
                // Without its team directory the session still runs; named agents are
                // then refused with the reason.
                match Team::open(dir, name) {
                    Ok(storage) => {
                        hooks.set_team_name(storage.name());
                        let (actor, _) =
                            Actor::spawn_linked(None, TeamActor, storage.clone(), cell.clone())
                                .await?;
                        Some(TeamLink { actor, storage })
                    }
                    Err(e) => {
                        cfg.events.publish(
                            "session",
                            EventKind::Error {
                                message: format!("teams are unavailable in this session: {e}"),
                            },
                        );
                        None
                    }
                }
            }
            _ => None,
        };
        let restore_team = cfg
            .orchestration
            .as_ref()
            .and_then(|o| o.restore_team.clone());
        let lead_mode = SharedMode::new(cfg.permission_mode);
        let subagents = match (cfg.orchestration, &tasks) {
            (Some(o), Some(tasks)) => Some(SubagentEnv {
                runner: runner.clone(),
                catalog: o.catalog,
                tasks: tasks.clone(),
                workspaces,
                slots: Arc::new(Semaphore::new(o.max_concurrent_agents.max(1))),
                main_cwd: cfg.cwd.clone(),
                default_max_turns: o.subagent_max_turns,
                walk: walk.clone(),
                team: team.clone(),
                finished: Default::default(),
                workers: o.workers,
                lead_mode: lead_mode.clone(),
            }),
            _ => None,
        };
        if let Some(auto) = &cfg.auto {
            // The breaker switches the lead out of auto, and subagents follow its mode.
            auto.watch_lead(lead_mode.clone());
        }
        if let (Some(transcripts), Some(link), Some(env)) = (restore_team, &team, &subagents) {
            restore_team_members(env, link, &transcripts, lead_mode.clone(), &cfg.events).await;
        }
        let (lead, _) = Actor::spawn_linked(
            None,
            LeadAgent,
            LeadArgs {
                runner,
                place: RunPlace {
                    cwd: cfg.cwd,
                    permission_mode: lead_mode,
                    sandbox: cfg.sandbox,
                    delegate: None,
                    tasks: tasks.clone(),
                    walk,
                    team: team.as_ref().map(|link| {
                        crate::team::TeamHandle::new(
                            Arc::new(link.storage.clone()),
                            crate::team::MemberName::lead(),
                        )
                        .with_events(cfg.events.clone())
                    }),
                    mail: None,
                },
                conversation,
                subagents,
            },
            cell,
        )
        .await?;
        let me = myself.clone();
        crate::supervise::faults::start_killer(std::sync::Arc::new(move |names| {
            let me = me.clone();
            Box::pin(async move {
                let killed = me.call(
                    |done| SessionMsg::Kill(names, done),
                    Some(std::time::Duration::from_secs(30)),
                );
                matches!(killed.await, Ok(ractor::rpc::CallResult::Success(())))
            })
        }));
        Ok(SessionState {
            lead,
            tasks,
            team: team.map(|t| t.actor),
            events: cfg.events,
            hooks,
            services,
            budget: RestartBudget::new(limit),
            ended,
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            SessionMsg::Refs(reply) => {
                let _ = reply.send((state.lead.clone(), state.tasks.clone(), state.team.clone()));
            }
            SessionMsg::Hooks(reply) => {
                let _ = reply.send(state.hooks.clone());
            }
            SessionMsg::Kill(names, done) => {
                for service in names.iter().filter_map(|n| Service::from_name(n)) {
                    state.services.kill(service).await;
                }
                let _ = done.send(());
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        evt: SupervisionEvent,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // A panic (failed) or a kill (terminated as "killed"); a clean stop is no crash.
        let (who, reason) = match evt {
            SupervisionEvent::ActorFailed(who, reason) => (who, reason.to_string()),
            SupervisionEvent::ActorTerminated(who, _, Some(r)) if r == "killed" => (who, r),
            _ => return Ok(()),
        };
        tracing::error!("actor {who:?} failed: {reason}");
        let Some(service) = state.services.which(&who) else {
            // Contain the failure of another child: report it, keep the session alive.
            state.events.publish(
                "session",
                EventKind::Error {
                    message: format!("an actor failed: {reason}"),
                },
            );
            return Ok(());
        };
        if state.ended.get().is_some() {
            return Ok(());
        }
        let restarted = match state.budget.spend(std::time::Instant::now()) {
            Ok(restarts) => match state.services.restart(service).await {
                Ok(()) => Ok(restarts),
                Err(e) => Err(format!("could not restart the {}: {e}", service.name())),
            },
            Err(storm) => Err(storm.to_string()),
        };
        match restarted {
            Ok(restarts) => state.events.publish(
                "session",
                EventKind::ActorRestarted {
                    actor: service.name().to_string(),
                    reason,
                    restarts,
                },
            ),
            Err(why) => end_session(&myself, state, why),
        }
        Ok(())
    }
}

/// Ends the session by itself: the reason is kept for the handle and published, background
/// work is stopped, and the session's actors are stopped with the reason.
fn end_session(myself: &ActorRef<SessionMsg>, state: &mut SessionState, why: String) {
    let _ = state.ended.set(why.clone());
    state.events.publish(
        "session",
        EventKind::Error {
            message: format!("the session ends: {why}"),
        },
    );
    if let Some(tasks) = &state.tasks {
        let _ = tasks.cast(TaskMsg::StopAll);
    }
    myself.stop_children(Some(why.clone()));
    myself.stop(Some(why));
}

/// Starts the `Hooks` actor under the session and fires `SessionStart`; its context goes
/// into the conversation ahead of the first task.
async fn start_hooks(
    h: SessionHooks,
    cwd: &Path,
    conversation: &mut Vec<Message>,
    supervisor: &ractor::ActorCell,
    events: &EventBus,
) -> Result<crate::hooks::HookClient, ActorProcessingErr> {
    use crate::hooks::{HookClient, HookEvent, Hooks};
    // Without hooks, nothing to ask on each call.
    if h.hooks.session.is_empty() && h.hooks.by_agent_type.is_empty() {
        return Ok(HookClient::none());
    }
    let configured = h.hooks.configured();
    let (actor, _) = Actor::spawn_linked(None, Hooks, h.hooks, supervisor.clone()).await?;
    let client = HookClient::new(
        actor,
        configured,
        h.project_dir,
        h.session_id,
        h.transcript_path.display().to_string(),
        events.clone(),
    );
    let report = client.session(HookEvent::SessionStart, cwd, h.source).await;
    for c in report.context {
        let text = crate::hooks::agent_events::context_text(HookEvent::SessionStart, &c);
        conversation.push(Message::user_text(text));
    }
    Ok(client)
}

/// Brings a resumed session's team back: restores the roster, inboxes and list from the
/// transcripts (see `team::restore`) and restarts each teammate that had not finished,
/// failed or been stopped, idle with its conversation. What cannot be restored is reported
/// on the bus; the session runs on without it.
async fn restore_team_members(
    env: &SubagentEnv,
    link: &TeamLink,
    transcripts: &Transcripts,
    mode: SharedMode,
    events: &EventBus,
) {
    let report = |message: String| events.publish("session", EventKind::Error { message });
    let (storage, paths) = (link.storage.clone(), transcripts.clone());
    let restored =
        match tokio::task::spawn_blocking(move || crate::team::restore::restore(&storage, &paths))
            .await
        {
            Ok(Ok(restored)) => restored,
            Ok(Err(e)) => return report(format!("the team could not be restored: {e}")),
            Err(e) => return report(format!("the team could not be restored: {e}")),
        };
    for member in restored.members {
        use crate::team::MemberStatus::{Failed, Finished, Stopped};
        if matches!(member.member.status, Finished | Failed | Stopped) {
            continue;
        }
        if let Err(e) = crate::agent::team_launch::relaunch(env, link, member, mode.clone()).await {
            report(e.to_string());
        }
    }
}

/// Starts the worktree manager when `cwd` is inside a git repository, reconciles its
/// registry (reporting orphans, deleting nothing), and wraps it for subagents.
async fn start_worktrees(
    cwd: &Path,
    base: Option<PathBuf>,
    trusted: bool,
    services: &mut Services,
    events: &EventBus,
) -> Option<Arc<dyn Workspaces>> {
    let repo_root = crate::worktree::manager::Manager::open(cwd, base.as_deref())
        .ok()?
        .root()
        .to_path_buf();
    let args = WorktreeManagerArgs {
        repo: cwd.to_path_buf(),
        base_dir: base,
        trusted,
    };
    let actor = services.start_worktrees(args).await.ok()?;
    match actor
        .call(
            |reply| WorktreeMsg::Reconcile { reply },
            Duration::from_secs(60),
        )
        .await
    {
        Ok(Ok(report)) if !report.orphaned.is_empty() => events.publish(
            "session",
            EventKind::Error {
                message: format!(
                    "worktree directories not in the registry were left untouched: {}",
                    report
                        .orphaned
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            },
        ),
        Ok(Err(e)) => events.publish(
            "session",
            EventKind::Error {
                message: format!("could not reconcile the worktrees: {e}"),
            },
        ),
        _ => {}
    }
    Some(Arc::new(WorktreeWorkspaces::new(actor, repo_root)))
}
