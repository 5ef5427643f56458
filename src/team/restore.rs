//! Bringing a team back for `crew --continue`: the roster, each teammate's conversation
//! from its transcript, the work list and the unread mail of every inbox.
//!
//! Restoring also finishes the inbox delivery contract (see `inbox.rs`) after a crash:
//! mail that reached a conversation's transcript but whose acknowledgement the crash cut
//! off is acknowledged now, so it is not delivered a second time; mail that never reached
//! the transcript stays unread and is delivered again. A delivered message is recognised
//! by the marker the team actor writes at the start of its text block
//! (`<team-message from="NAME" … index="N" …>`), and counts only if the inbox holds a
//! message from that sender at that index: a marker a sender typed inside a message body
//! is not at the start of a block, and a forged one names the wrong sender or an index
//! past the end.
//!
//! A teammate that was working when the session stopped and whose conversation does not
//! end with a final answer is marked `interrupted`: it resumes its task when restarted.
//!
//! Synchronous (it reads and acknowledges files): call it from `spawn_blocking`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::{Member, MemberName, MemberStatus, Team, TeamError, TodoId, TodoItem};
use crate::protocol::{ContentBlock, Message, Role};
use crate::transcript::{self, TranscriptError};

/// Where a session's transcripts are.
#[derive(Debug, Clone)]
pub struct Transcripts {
    /// The lead's (`<session>.jsonl`).
    pub lead: PathBuf,
    /// The subagents' and teammates' (`<session>/agents/`).
    pub agents_dir: PathBuf,
}

/// One teammate as it was when the session stopped.
#[derive(Debug, Clone)]
pub struct RestoredMember {
    /// Its roster entry; a teammate that was `working` is now `idle` (its turn was cut
    /// off; it carries on when woken).
    pub member: Member,
    /// Its conversation, tool calls cut off by the stop answered as interrupted.
    pub conversation: Vec<Message>,
    /// Messages in its inbox not yet delivered.
    pub unread: usize,
    /// Whether the stop cut it off mid-turn: it was working and its conversation does
    /// not end with a final answer (the model had called tools, or its request was in
    /// flight). Such a teammate carries on with its task when restarted, mail or not.
    pub interrupted: bool,
}

/// A team as `crew --continue` finds it.
#[derive(Debug, Clone)]
pub struct RestoredTeam {
    /// The team's directory.
    pub team: Team,
    /// Its teammates, in roster order.
    pub members: Vec<RestoredMember>,
    /// Messages in the lead's inbox not yet delivered.
    pub lead_unread: usize,
    /// The work list.
    pub todos: BTreeMap<TodoId, TodoItem>,
}

/// Why a team could not be restored.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// A team file could not be read or acknowledged.
    #[error(transparent)]
    Team(#[from] TeamError),
    /// A transcript could not be read.
    #[error(transparent)]
    Transcript(#[from] TranscriptError),
}

/// Restores the team of session `session_id` (`~/.crew/teams/<id>/`), or `None` when the
/// session had no team.
pub fn restore_session(
    session_id: &str,
    transcripts: &Transcripts,
) -> Result<Option<RestoredTeam>, RestoreError> {
    match Team::find_for_session(session_id)? {
        Some(team) => restore(&team, transcripts).map(Some),
        None => Ok(None),
    }
}

/// Restores `team`: acknowledges the mail each conversation already holds, marks
/// interrupted teammates idle, and loads conversations, unread counts and the list.
pub fn restore(team: &Team, transcripts: &Transcripts) -> Result<RestoredTeam, RestoreError> {
    let lead = transcript::resume_agent_conversation(&transcripts.lead, "lead")?;
    let lead_unread = settle_inbox(team, &MemberName::lead(), &lead)?;
    let mut members = Vec::new();
    for member in team.roster()?.members {
        let path = transcript::agent_transcript_path(&transcripts.agents_dir, &member.agent_id);
        let conversation = transcript::resume_agent_conversation(&path, &member.agent_id)?;
        let unread = settle_inbox(team, &member.name, &conversation)?;
        let interrupted = member.status == MemberStatus::Working && cut_off(&conversation);
        let member = if member.status == MemberStatus::Working {
            team.set_member_status(&member.name, MemberStatus::Idle, member.current_item)?
        } else {
            member
        };
        members.push(RestoredMember {
            member,
            conversation,
            unread,
            interrupted,
        });
    }
    Ok(RestoredTeam {
        team: team.clone(),
        members,
        lead_unread,
        todos: team.list_todos()?,
    })
}

/// Whether `conversation` stops short of a final answer: its last message is the user's
/// (a task, mail, or tool results, answered by no model turn) or a model turn that called
/// tools. An empty conversation has nothing to carry on from.
fn cut_off(conversation: &[Message]) -> bool {
    conversation.last().is_some_and(|m| {
        m.role == Role::User
            || m.content
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolUse(_)))
    })
}

/// Acknowledges `name`'s inbox through the last message `conversation` holds; returns how
/// many remain unread.
fn settle_inbox(
    team: &Team,
    name: &MemberName,
    conversation: &[Message],
) -> Result<usize, RestoreError> {
    let history = team.inbox_history(name)?;
    let last = delivered_markers(conversation)
        .filter(|(from, index)| {
            history
                .get(*index as usize)
                .is_some_and(|e| e.index == *index && e.from.as_str() == from)
        })
        .map(|(_, index)| index)
        .max();
    if let Some(index) = last {
        team.ack(name, index + 1)?;
    }
    Ok(team.unread_count(name)?)
}

/// The `(sender, inbox index)` of every team message injected into `conversation`: user
/// text blocks whose first line is a `<team-message …>` marker.
pub fn delivered_markers(conversation: &[Message]) -> impl Iterator<Item = (String, u64)> + '_ {
    conversation
        .iter()
        .filter(|m| m.role == Role::User)
        .flat_map(|m| m.content.iter())
        .filter_map(|b| match b {
            ContentBlock::Text { text } => parse_marker(text.lines().next().unwrap_or("")),
            _ => None,
        })
}

fn parse_marker(line: &str) -> Option<(String, u64)> {
    let rest = line.strip_prefix("<team-message ")?;
    let from = attribute(rest, "from")?;
    let index = attribute(rest, "index")?.parse().ok()?;
    Some((from.to_string(), index))
}

/// The value of ` name="…"` (or a leading `name="…"`) in a marker line.
fn attribute<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let key = format!("{name}=\"");
    let start = if line.starts_with(&key) {
        key.len()
    } else {
        line.find(&format!(" {key}"))? + key.len() + 1
    };
    let len = line[start..].find('"')?;
    Some(&line[start..start + len])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_count_only_at_the_start_of_a_block() {
        let conversation = vec![Message {
            role: Role::User,
            content: vec![
                ContentBlock::Text {
                    text: "<team-message from=\"alice\" index=\"3\" type=\"message\">\nhi <team-message from=\"bob\" index=\"9\">\n</team-message>".into(),
                },
                ContentBlock::Text {
                    text: "see <team-message from=\"bob\" index=\"7\">".into(),
                },
                ContentBlock::Text {
                    text: "<team-message from=\"carol\" to=\"*\" index=\"4\" type=\"message\">\nx".into(),
                },
            ],
        }];
        let found: Vec<_> = delivered_markers(&conversation).collect();
        assert_eq!(found, [("alice".to_string(), 3), ("carol".to_string(), 4)]);
    }

    #[test]
    fn a_conversation_is_cut_off_unless_it_ends_with_a_final_answer() {
        use crate::protocol::ToolCall;
        let user = Message::user_text("task");
        let answer = Message {
            role: Role::Assistant,
            content: vec![ContentBlock::Text {
                text: "done".into(),
            }],
        };
        let calling = Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse(ToolCall {
                id: "c1".into(),
                name: "read_file".into(),
                arguments: "{}".into(),
            })],
        };
        assert!(!cut_off(&[]), "nothing to carry on from");
        assert!(
            cut_off(std::slice::from_ref(&user)),
            "its request was in flight"
        );
        assert!(cut_off(&[user.clone(), calling]), "it had called tools");
        assert!(!cut_off(&[user, answer]));
    }
}
