//! What a compaction sends and what it leaves: the summary request's instructions, the
//! cut between the summarised past and the newest exchanges kept verbatim, and the
//! compacted conversation (the summary, then those exchanges). Pure functions over
//! messages; `summarize.rs` talks to the model.
//!
//! The cut always falls just before an assistant message, so every tool result kept has
//! its call kept too: a tool-call/result pair is never split. The facts (`facts.rs`) are
//! written into the summary by this code, verbatim, not left to the model to remember.

use crate::protocol::{ContentBlock, Message, Role};

use super::accounting::{message_tokens, messages_tokens};
use super::facts::{Facts, defuse};

/// How the summary message starts (tests and readers recognise it by this).
pub(crate) const SUMMARY_TAG: &str = "<compact-summary";
/// How the summary request's instructions start.
pub(crate) const REQUEST_TAG: &str = "<compact-request>";

/// What started a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// The context reached the `autoCompact` threshold.
    Auto,
    /// The user asked (`/compact`).
    Manual,
}

impl Trigger {
    /// `auto` or `manual` (the PreCompact hook's `trigger`, the event's field).
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Auto => "auto",
            Trigger::Manual => "manual",
        }
    }
}

/// The instructions appended to the conversation for the summary turn.
pub(crate) fn request_text(facts: &Facts, custom: Option<&str>, hook_context: &[String]) -> String {
    let mut text = format!(
        "{REQUEST_TAG}\nThe context window is nearly full. Write a summary of the whole conversation \
so far; it will replace the earlier messages, and the newest exchanges will follow it verbatim. \
Do not call any tools: answer with the summary only, under these headings:\n\
1. Task and plan: the task and the approved plan, and where the work stands on each step.\n\
2. Decisions: what was decided, and why.\n\
3. Files: every file read, created or changed, with its current state.\n\
4. Open work: background tasks, subagents and teammates still running or waiting, and \
work-list items not completed, with their ids.\n\
5. Errors and fixes: problems met and how they were solved.\n\
6. Next step: what you were about to do.\n\n\
The task (verbatim):\n{}\n",
        facts.task.trim()
    );
    if let Some(plan) = &facts.plan {
        text.push_str(&format!(
            "\nThe approved plan (verbatim):\n{}\n",
            plan.trim()
        ));
    }
    if !facts.open_work.is_empty() {
        text.push_str("\nOpen work the session has now:\n");
        for line in &facts.open_work {
            text.push_str(&format!("- {line}\n"));
        }
    }
    if let Some(custom) = custom.map(str::trim).filter(|c| !c.is_empty()) {
        text.push_str(&format!("\nThe user asks this of the summary:\n{custom}\n"));
    }
    for context in hook_context {
        text.push_str(&format!("\n{context}\n"));
    }
    text.push_str("</compact-request>");
    text
}

/// The summary message that replaces the older messages: the model's summary (its fact
/// tags defused), then the facts, verbatim.
pub(crate) fn summary_message(summary: &str, facts: &Facts, trigger: Trigger) -> Message {
    let mut text = format!(
        "{SUMMARY_TAG} trigger=\"{}\">\nThis conversation was compacted to stay within the context \
window. This summary replaces the earlier messages (the session transcript keeps them all); the \
newest exchanges follow it verbatim.\n\n{}\n\n<task>\n{}\n</task>\n",
        trigger.as_str(),
        defuse(summary.trim()),
        facts.task.trim()
    );
    if let Some(plan) = &facts.plan {
        text.push_str(&format!(
            "<approved-plan>\n{}\n</approved-plan>\n",
            plan.trim()
        ));
    }
    if !facts.files.is_empty() {
        text.push_str("Files touched so far (from the tool calls):\n<files-touched>\n");
        for (path, state) in &facts.files {
            text.push_str(&format!("{path} ({state})\n"));
        }
        text.push_str("</files-touched>\n");
    }
    if !facts.open_work.is_empty() {
        text.push_str("Open work at the time of this summary:\n");
        for line in &facts.open_work {
            text.push_str(&format!("- {line}\n"));
        }
    }
    if !facts.instructions.is_empty() {
        text.push_str("The user's last instructions, verbatim, oldest first:\n");
        for i in &facts.instructions {
            text.push_str(&format!("<user-instruction>\n{i}\n</user-instruction>\n"));
        }
    }
    text.push_str("</compact-summary>");
    Message::user_text(text)
}

/// Where the kept tail of `conversation` starts: just before an assistant message, with
/// at most `keep_exchanges` exchanges and at most `budget` estimated tokens after it
/// (`conversation.len()`: nothing is kept). `sizes` holds each message's estimate
/// ([`message_tokens`]). Index 0 is never kept verbatim, so there is always something to
/// summarise.
pub(crate) fn split_point(
    conversation: &[Message],
    sizes: &[u64],
    keep_exchanges: usize,
    budget: u64,
) -> usize {
    let mut cut = conversation.len();
    let mut exchanges = 0;
    let mut tokens = 0;
    for i in (1..conversation.len()).rev() {
        tokens += sizes
            .get(i)
            .copied()
            .unwrap_or_else(|| message_tokens(&conversation[i]));
        if tokens > budget {
            break;
        }
        if conversation[i].role == Role::Assistant {
            if exchanges == keep_exchanges {
                break;
            }
            exchanges += 1;
            cut = i;
        }
    }
    cut
}

/// The ids of tool results in `messages` whose call does not come before them.
pub(crate) fn orphaned_results(messages: &[Message]) -> Vec<String> {
    let mut calls = std::collections::HashSet::new();
    let mut orphans = Vec::new();
    for block in messages.iter().flat_map(|m| &m.content) {
        match block {
            ContentBlock::ToolUse(c) => {
                calls.insert(c.id.as_str());
            }
            ContentBlock::ToolResult(r) if !calls.contains(r.tool_use_id.as_str()) => {
                orphans.push(r.tool_use_id.clone())
            }
            _ => {}
        }
    }
    orphans
}

/// `messages`, with their largest texts and tool results shortened (oldest first) until
/// they take at most `budget` estimated tokens; `None` when even that is not enough. Only
/// the summary request is shortened this way: the conversation keeps every byte.
pub(crate) fn fit(messages: Vec<Message>, budget: u64) -> Option<Vec<Message>> {
    const KEEP: usize = 1_000;
    let mut messages = messages;
    let mut total = messages_tokens(&messages);
    if total <= budget {
        return Some(messages);
    }
    // The last message carries the instructions: it is never shortened.
    let last = messages.len().saturating_sub(1);
    for m in messages[..last].iter_mut() {
        let before = message_tokens(m);
        for block in m.content.iter_mut() {
            let text = match block {
                ContentBlock::Text { text } => text,
                ContentBlock::ToolResult(r) => &mut r.content,
                _ => continue,
            };
            if text.len() > 3 * KEEP {
                *text = shorten(text, KEEP);
            }
        }
        total = total - before + message_tokens(m);
        if total <= budget {
            return Some(messages);
        }
    }
    None
}

/// The head and tail of `text` (about `keep` bytes each) around a note of what was left out.
fn shorten(text: &str, keep: usize) -> String {
    let head_end = (0..=keep)
        .rev()
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(0);
    let tail_start = (text.len() - keep..text.len())
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(text.len());
    format!(
        "{}\n[… {} bytes left out of the summary request …]\n{}",
        &text[..head_end],
        tail_start - head_end,
        &text[tail_start..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ToolCall, ToolResult};

    fn call(id: &str) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse(ToolCall {
                id: id.into(),
                name: "read_file".into(),
                arguments: "{}".into(),
            })],
        }
    }

    fn result(id: &str, size: usize) -> Message {
        Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult(ToolResult::ok(
                id,
                "x".repeat(size),
            ))],
        }
    }

    fn conversation(exchanges: usize, size: usize) -> Vec<Message> {
        let mut conv = vec![Message::user_text("task")];
        for i in 0..exchanges {
            conv.push(call(&format!("c{i}")));
            conv.push(result(&format!("c{i}"), size));
        }
        conv
    }

    #[test]
    fn the_cut_keeps_whole_exchanges_within_count_and_budget() {
        let conv = conversation(10, 400);
        let sizes: Vec<u64> = conv.iter().map(message_tokens).collect();
        let split_point = |conv: &[Message], keep, budget| split_point(conv, &sizes, keep, budget);
        let cut = split_point(&conv, 3, u64::MAX);
        assert_eq!(cut, conv.len() - 6);
        assert_eq!(conv[cut].role, Role::Assistant);
        assert!(orphaned_results(&conv[cut..]).is_empty());
        // A budget for one and a half exchanges keeps one.
        let one = messages_tokens(&conv[conv.len() - 2..]);
        let cut = split_point(&conv, 3, one + one / 2);
        assert_eq!(cut, conv.len() - 2);
        // Nothing fits: nothing is kept.
        assert_eq!(split_point(&conv, 3, 10), conv.len());
        assert_eq!(split_point(&conv, 0, u64::MAX), conv.len());
        // A cut after a result (never before it) leaves no orphan, whatever the budget.
        for budget in (0..4_000).step_by(37) {
            let cut = split_point(&conv, 5, budget);
            assert!(cut == conv.len() || conv[cut].role == Role::Assistant);
            assert!(orphaned_results(&conv[cut..]).is_empty());
        }
        assert_eq!(orphaned_results(&conv[2..]), ["c0"]);
    }

    #[test]
    fn fit_shortens_old_results_but_never_the_instructions() {
        let mut conv = conversation(4, 20_000);
        conv.push(Message::user_text("i".repeat(8_000)));
        let full = messages_tokens(&conv);
        let fitted = fit(conv.clone(), full / 2).unwrap();
        assert!(messages_tokens(&fitted) <= full / 2);
        assert_eq!(fitted.last(), conv.last());
        assert!(
            fitted[2].content.iter().any(
                |b| matches!(b, ContentBlock::ToolResult(r) if r.content.contains("left out"))
            )
        );
        assert!(fit(conv.clone(), 100).is_none());
        assert_eq!(fit(conv.clone(), full).as_ref(), Some(&conv));
        assert_eq!(shorten("ééééé", 3).chars().filter(|c| *c == 'é').count(), 2);
    }

    /// The bound by which `compact` knows the summary request fits without counting it:
    /// the messages as sent (the instructions joined to
    /// the last user message, messages of one role in a row joined) take at most the
    /// estimates of the messages apart plus that of the instructions alone.
    #[test]
    fn what_is_sent_takes_at_most_its_parts_apart() {
        let mut conv = conversation(3, 700);
        conv.push(Message::user_text("mail \" quoted\n"));
        conv.push(Message::user_text("more mail"));
        for instructions in ["", "summarise", &"long \"instructions\"\n".repeat(300)] {
            let parts = messages_tokens(&conv) + message_tokens(&Message::user_text(instructions));
            let sent = crate::provider::Messages::from(conv.clone())
                .with_reminder(Some(instructions.to_string()))
                .to_vec();
            assert!(
                sent.len() < conv.len() + 1,
                "the last user messages are one"
            );
            assert!(
                messages_tokens(&sent) <= parts,
                "{} > {parts}",
                messages_tokens(&sent)
            );
        }
    }
}
