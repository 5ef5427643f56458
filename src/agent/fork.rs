//! Forks: `agent {fork: true, prompt}` starts a child that inherits its caller's
//! conversation so far. The child is the caller again — same system prompt, model and
//! tool list — so its first request starts with exactly the messages the caller last
//! sent, and a provider's prompt cache serves that shared prefix. The child differs in
//! three ways: it works in its own worktree, every call of the caller's last turn is
//! answered for it with a placeholder result (the API requires an answer to each), and
//! its task is the fork's prompt. Its answer comes back as a subagent's does.

pub(crate) use crate::protocol::agent_spec::{FORK_TYPE, ForkBase};
use crate::protocol::{ContentBlock, Message, Role, ToolResult};

/// The result the child sees for each call of its parent's last turn, its own `agent`
/// call included.
pub(crate) const FORK_PLACEHOLDER: &str =
    "Fork started: you are the forked child, working in the background on the task below.";

/// The child's conversation before its run adds the task: the caller's messages and,
/// when the last one called tools, a user message answering each call with
/// [`FORK_PLACEHOLDER`].
pub(crate) fn seed(base: &ForkBase) -> Vec<Message> {
    let mut conversation = base.messages.clone();
    let answers: Vec<ContentBlock> = conversation
        .last()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| {
            m.tool_calls()
                .map(|c| ContentBlock::ToolResult(ToolResult::ok(&c.id, FORK_PLACEHOLDER)))
                .collect()
        })
        .unwrap_or_default();
    if !answers.is_empty() {
        conversation.push(Message {
            role: Role::User,
            content: answers,
        });
    }
    conversation
}

/// The child's task: the fork's prompt, with where it works (kept out of the system
/// prompt, which must stay the caller's for the shared prefix).
pub(crate) fn task(prompt: &str, worktree_note: &str) -> String {
    format!(
        "You are a fork of the agent whose conversation is above. Do only this task, then answer with a short \
report (it goes back to that agent as your result); do not start further forks.{worktree_note}\n\nTask: {prompt}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::runner::AgentSpec;
    use crate::protocol::ToolCall;
    use crate::protocol::mode::AgentMode;

    fn base(messages: Vec<Message>) -> ForkBase {
        ForkBase {
            spec: AgentSpec {
                id: "lead".into(),
                model: "m".into(),
                system_prompt: "s".into(),
                allowed_tools: None,
                max_turns: 3,
                max_tokens: 100,
            },
            mode: AgentMode::Chat,
            messages,
        }
    }

    #[test]
    fn every_call_of_the_last_turn_gets_a_placeholder_after_the_parents_messages() {
        let call = |id: &str| {
            ContentBlock::ToolUse(ToolCall {
                id: id.into(),
                name: "agent".into(),
                arguments: "{}".into(),
            })
        };
        let parent = vec![
            Message::user_text("task"),
            Message {
                role: Role::Assistant,
                content: vec![call("a"), call("b")],
            },
        ];
        let seeded = seed(&base(parent.clone()));
        assert_eq!(&seeded[..2], &parent[..]);
        let ids: Vec<&str> = seeded[2]
            .content
            .iter()
            .map(|b| match b {
                ContentBlock::ToolResult(r) => r.tool_use_id.as_str(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(ids, ["a", "b"]);
        // Nothing to answer: the conversation is the parent's as is.
        assert_eq!(seed(&base(parent[..1].to_vec())), parent[..1]);
    }
}
