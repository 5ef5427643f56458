//! The `Hooks` actor: holds the session's hooks (from the settings layers) and the hooks
//! of agent definitions (for subagents of their type), and answers which hooks
//! an event of an agent runs: those whose matcher matches the event's subject, identical
//! commands once (a plugin's in its own directory). It runs nothing itself (its mailbox never waits on a hook): the caller
//! runs the selected hooks in its own task (`client.rs`).
//!
//! The table is read once, when the session starts, and never replaced (hooks are not
//! reloaded mid-session, as in Claude Code). So which events have a hook at all
//! ([`Configured`]) is known up front: the client answers "none" for the others without a
//! message. Whatever replaces the table must replace the client's `Configured` with it.

use std::collections::{HashMap, HashSet};

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use super::config::Hook;
use super::event::{HookEvent, MatchOn};

/// Messages the hooks actor accepts.
pub enum HooksMsg {
    /// The hooks `agent` runs for `event` with this subject (a tool's names, a kind, an
    /// agent type; empty when the event has no matcher subject), deduplicated by command.
    Select {
        /// The event.
        event: HookEvent,
        /// The agent the event happens to.
        agent: String,
        /// The names the event's matchers are matched against.
        subject: Vec<String>,
        /// Receives the hooks to run.
        reply: RpcReplyPort<Vec<Hook>>,
    },
}

// Local-only: never sent across nodes (the `cluster` feature of ractor requires the impl).
impl ractor::Message for HooksMsg {}

/// The actor (configuration only; state is built in `pre_start`).
pub struct Hooks;

/// The hooks of the session (every settings layer) and of each agent type's definition.
#[derive(Debug, Clone, Default)]
pub struct HookTable {
    /// Hooks from the settings layers: they run for every agent.
    pub session: Vec<Hook>,
    /// Hooks from agent definitions, by agent type: they run only for subagents and
    /// teammates of that type (ids `type/task`, `type/name`).
    pub by_agent_type: HashMap<String, Vec<Hook>>,
}

impl HookTable {
    /// Which events have a hook in this table, and for which agents.
    pub fn configured(&self) -> Configured {
        Configured {
            session: EventSet::of(&self.session),
            by_agent_type: self
                .by_agent_type
                .iter()
                .map(|(kind, hooks)| (kind.clone(), EventSet::of(hooks)))
                .collect(),
        }
    }

    /// The hooks that may run for `agent`: the session's, then its type's.
    pub(crate) fn for_agent<'a>(&'a self, agent: &str) -> impl Iterator<Item = &'a Hook> {
        let own = agent_type(agent)
            .and_then(|kind| self.by_agent_type.get(kind))
            .into_iter()
            .flatten();
        self.session.iter().chain(own)
    }
}

/// The type of a subagent or teammate (`type/id`, `type/name`); `None` for the lead.
fn agent_type(agent: &str) -> Option<&str> {
    agent.split_once('/').map(|(kind, _)| kind)
}

/// A set of hook events.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct EventSet(u32);

impl EventSet {
    fn of(hooks: &[Hook]) -> Self {
        Self(hooks.iter().fold(0, |bits, h| bits | Self::bit(h.event)))
    }

    fn bit(event: HookEvent) -> u32 {
        1 << (event as u32)
    }

    fn contains(self, event: HookEvent) -> bool {
        self.0 & Self::bit(event) != 0
    }
}

/// Which events of a [`HookTable`] have any hook, for whom: enough to know that an event
/// runs nothing without asking the actor (whether a matcher matches still needs it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Configured {
    session: EventSet,
    by_agent_type: HashMap<String, EventSet>,
}

impl Configured {
    /// Whether `event` of `agent` may run a hook (false: it surely runs none).
    pub fn may_run(&self, event: HookEvent, agent: &str) -> bool {
        self.session.contains(event)
            || agent_type(agent)
                .and_then(|kind| self.by_agent_type.get(kind))
                .is_some_and(|set| set.contains(event))
    }
}

/// The actor's state.
pub struct HooksState {
    table: HookTable,
}

/// The hooks of `hooks` that `event` with `subject` runs, each command once.
pub(crate) fn select<'a>(
    hooks: impl Iterator<Item = &'a Hook>,
    event: HookEvent,
    subject: &[String],
) -> Vec<Hook> {
    let mut seen = HashSet::new();
    hooks
        .filter(|h| h.event == event)
        .filter(|h| event.match_on() == MatchOn::Nothing || h.matcher.matches_any(subject))
        // Two plugins' `${CLAUDE_PLUGIN_ROOT}/x.sh` are two commands.
        .filter(|h| seen.insert((h.command.clone(), h.plugin_root.clone())))
        .cloned()
        .collect()
}

impl Actor for Hooks {
    type Msg = HooksMsg;
    type State = HooksState;
    type Arguments = HookTable;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        table: HookTable,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(HooksState { table })
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            HooksMsg::Select {
                event,
                agent,
                subject,
                reply,
            } => {
                let chosen = select(state.table.for_agent(&agent), event, &subject);
                // A caller that gave up has dropped its port; nothing to do.
                let _ = reply.send(chosen);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::config::{DEFAULT_TIMEOUT, Origin};
    use crate::hooks::matcher::Matcher;

    fn hook(event: HookEvent, matcher: &str, command: &str) -> Hook {
        Hook {
            event,
            matcher: Matcher::parse(matcher).unwrap(),
            command: command.into(),
            timeout: DEFAULT_TIMEOUT,
            origin: Origin {
                file: "f".into(),
                scope: "user".into(),
                from_project: false,
            },
            place: "p".into(),
            plugin_root: None,
        }
    }

    #[test]
    fn matching_and_dedup() {
        let hooks = [
            hook(HookEvent::PreToolUse, "Bash", "guard"),
            hook(HookEvent::PreToolUse, "Bash|Write", "guard"),
            hook(HookEvent::PreToolUse, "Write", "fmt"),
            hook(HookEvent::PostToolUse, "Bash", "log"),
            hook(HookEvent::Stop, "ignored", "done"),
        ];
        let bash = vec!["run_command".to_string(), "Bash".to_string()];
        let chosen = select(hooks.iter(), HookEvent::PreToolUse, &bash);
        assert_eq!(chosen.len(), 1);
        assert_eq!(chosen[0].command, "guard");
        let stop = select(hooks.iter(), HookEvent::Stop, &[]);
        assert_eq!(stop.len(), 1, "events without a subject ignore the matcher");
    }
}
