//! The `Hooks` actor: holds the session's hooks (from the settings layers) and the hooks
//! of agent definitions (for subagents of their type), and answers which hooks
//! an event of an agent runs: those whose matcher matches the event's subject, identical
//! commands once. It runs nothing itself (its mailbox never waits on a hook): the caller
//! runs the selected hooks in its own task (`client.rs`).

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

/// The actor's state.
pub struct HooksState {
    table: HookTable,
}

/// The hooks of `hooks` that `event` with `subject` runs, each command once.
pub fn select<'a>(
    hooks: impl Iterator<Item = &'a Hook>,
    event: HookEvent,
    subject: &[String],
) -> Vec<Hook> {
    let mut seen = HashSet::new();
    hooks
        .filter(|h| h.event == event)
        .filter(|h| event.match_on() == MatchOn::Nothing || h.matcher.matches_any(subject))
        .filter(|h| seen.insert(h.command.clone()))
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
                let own = agent
                    .split_once('/')
                    .and_then(|(kind, _)| state.table.by_agent_type.get(kind))
                    .into_iter()
                    .flatten();
                let chosen = select(state.table.session.iter().chain(own), event, &subject);
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
            },
            place: "p".into(),
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
