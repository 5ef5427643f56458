//! The team panel's I/O: the team's state, a teammate's transcript, and mail from the user,
//! all read and written through the team's files on the blocking pool; and the watch that
//! wakes the lead when its teammates write to it.

use tokio::sync::mpsc::UnboundedSender;

use super::app::App;
use super::jobs::{Done, JobError};
use crate::team::{MemberName, MessageKind, Outgoing, Recipient, Team};

/// Reports `Done::TeamMail` once the lead has team mail or notices to read. A quiet team
/// (every teammate idle) is asked again every second, so mail that comes later (a
/// teammate woken by `crew team send`) still wakes the lead. Abort it to stop watching.
pub(super) fn watch_mail(
    team: ractor::ActorRef<crate::team::actor::TeamMsg>,
    done: UnboundedSender<Done>,
) -> tokio::task::JoinHandle<()> {
    use crate::team::actor::{LeadWake, TeamMsg};
    use std::time::Duration;
    tokio::spawn(async move {
        loop {
            let asked = team.call(TeamMsg::WaitLead, Some(Duration::from_secs(24 * 3600)));
            match asked.await {
                Ok(ractor::rpc::CallResult::Success(LeadWake::Mail)) => {
                    let _ = done.send(Done::TeamMail);
                    return;
                }
                Ok(ractor::rpc::CallResult::Success(LeadWake::Quiet)) => {
                    tokio::time::sleep(Duration::from_secs(1)).await
                }
                _ => return,
            }
        }
    })
}

/// The largest transcript tail the panel loads.
const TRANSCRIPT_TAIL_BYTES: usize = 64 * 1024;

/// Reports the team of `session` (none before it has one).
pub(super) fn load_view(session: &str, done: UnboundedSender<Done>) {
    let session = session.to_string();
    tokio::task::spawn_blocking(move || {
        let view = Team::find_for_session(&session)
            .ok()
            .flatten()
            .and_then(|t| crate::team::view::view(&t).ok());
        let _ = done.send(Done::Team(view));
    });
}

fn deliver(
    session: String,
    to: String,
    out: Outgoing,
    what: &'static str,
) -> Result<String, JobError> {
    let team = Team::find_for_session(&session)?.ok_or(JobError::NoTeam(session))?;
    let recipient = Recipient::parse(&to)?;
    team.send(&MemberName::user(), &recipient, out)?;
    Ok(format!("{what} {to}."))
}

/// Sends the user's `message` to teammate `to` and reports how it went.
pub(super) fn send(session: &str, to: String, message: String, done: UnboundedSender<Done>) {
    let session = session.to_string();
    tokio::task::spawn_blocking(move || {
        let r = deliver(session, to, Outgoing::text(message), "Sent your message to");
        let _ = done.send(Done::TeamNotice(r));
    });
}

/// Stopping a teammate is a `shutdown_request` in its inbox: it answers and shuts down
/// at its next turn boundary, and its claimed items return to the list.
pub(super) fn ask_to_stop(session: &str, to: String, done: UnboundedSender<Done>) {
    let session = session.to_string();
    tokio::task::spawn_blocking(move || {
        let out = Outgoing {
            message: "The user asks you to stop.".into(),
            summary: Some("stop".into()),
            kind: MessageKind::ShutdownRequest,
        };
        let r = deliver(session, to, out, "Asked to shut down:");
        let _ = done.send(Done::TeamNotice(r));
    });
}

/// Loads the recorded transcript of teammate `name` (`<session>/agents/<agent id>.jsonl`)
/// as readable lines.
pub(super) fn load_transcript(app: &App, name: String, done: UnboundedSender<Done>) {
    let agent_id = app
        .team
        .teammates()
        .iter()
        .find(|m| m.name == name)
        .and_then(|m| m.agent_id.clone());
    let dir = crate::store::session_dir(&app.info.project_root, &app.info.session_id);
    let (Some(agent_id), Some(dir)) = (agent_id, dir) else {
        return;
    };
    let path = dir
        .join("agents")
        .join(format!("{}.jsonl", agent_id.replace('/', "-")));
    tokio::spawn(async move {
        let text = match tokio::fs::read(&path).await {
            Ok(bytes) => {
                let tail = &bytes[bytes.len().saturating_sub(TRANSCRIPT_TAIL_BYTES)..];
                readable(&String::from_utf8_lossy(tail))
            }
            Err(e) => format!("(no transcript yet at {}: {e})", path.display()),
        };
        let _ = done.send(Done::Transcript(name, text));
    });
}

/// Messages and tool calls of a transcript, one line each.
fn readable(jsonl: &str) -> String {
    use crate::events::{Event, EventKind};
    jsonl
        .lines()
        .filter_map(|l| serde_json::from_str::<Event>(l).ok())
        .filter_map(|e| match e.kind {
            EventKind::MessageAppended { message } => {
                let text = message.text();
                let role = format!("{:?}", message.role).to_lowercase();
                (!text.trim().is_empty()).then(|| format!("{role}: {text}"))
            }
            EventKind::ToolCallStarted { call } => {
                Some(format!("→ {} {}", call.name, call.arguments))
            }
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_transcript_reads_as_messages_and_tool_calls() {
        let jsonl = [
            r#"{"agent":"general-purpose/t1","type":"message_appended","message":{"role":"user","content":[{"type":"text","text":"from lead: take #2"}]}}"#,
            r#"{"agent":"general-purpose/t1","type":"tool_call_started","call":{"id":"c1","name":"todo_update","arguments":"{\"id\":\"2\"}"}}"#,
            r#"{"agent":"general-purpose/t1","type":"text_delta","text":"x"}"#,
            "torn {",
        ]
        .join("\n");
        assert_eq!(
            super::readable(&jsonl),
            "user: from lead: take #2\n→ todo_update {\"id\":\"2\"}"
        );
    }
}
