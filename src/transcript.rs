//! Session transcripts: every event of a session (but streamed text deltas, whose text
//! arrives whole in `message_appended`) is appended as one JSON line to
//! `~/.crew/projects/<slug>/<session-id>.jsonl` and written through at once (fsynced by
//! group commit, `store::behind`), so a crash loses at most the line being written; subagents' events go beside it, to
//! `<session-id>/agents/<agent>.jsonl`. Loading rebuilds the lead's conversation (a
//! `compacted` event replaces it whole: one line, so never half a compaction), skipping a
//! torn last line and closing tool calls that never got their results.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::task::JoinHandle;

use crate::events::{Event, EventBus, EventJson, EventKind, Recorder};
use crate::protocol::{ContentBlock, Message, Role, ToolResult};

/// The transcript file of a session.
pub fn transcript_path(project_root: &Path, session_id: &str) -> Option<PathBuf> {
    Some(crate::store::project_dir(project_root)?.join(format!("{session_id}.jsonl")))
}

/// Starts appending the bus's events to the session's transcript files. The returned
/// task ends when the bus closes (or is dropped).
///
/// Durability: each line is written to the OS (one `write`) inside `publish`, before it
/// returns, so the assistant message with a call's `tool_use` and its `tool_call_started`
/// line are in the file before the tool runs, and survive a crash (SIGKILL) of crew. The
/// files are `fdatasync`ed by group commit (`store::behind`: at most once per flush
/// window, 1 s) and when the bus closes, never on a turn's path: a power loss can lose the
/// last window, a crash of crew nothing.
///
/// A failed write (a full disk) never leaves a torn line in the middle of a file: the
/// file is cut back to its last whole line, the lines are held in memory and written,
/// in order, with the next event (and once more when the bus closes). The user is told
/// once per failure streak, on the bus.
pub fn record(bus: &EventBus, main: PathBuf, agents_dir: PathBuf) -> JoinHandle<()> {
    let (closed, on_close) = tokio::sync::oneshot::channel();
    bus.add_recorder(Arc::new(Transcripts {
        main,
        agents_dir,
        files: Mutex::new(HashMap::new()),
        closed: Mutex::new(Some(closed)),
    }));
    // Ends when the bus closes (the sender fires) or is dropped with the recorder.
    tokio::spawn(async move {
        let _ = on_close.await;
    })
}

/// The session's transcript files, written through by the bus.
struct Transcripts {
    main: PathBuf,
    agents_dir: PathBuf,
    files: Mutex<HashMap<PathBuf, Sink>>,
    closed: Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
}

impl Transcripts {
    fn files(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Sink>> {
        // A poisoned lock only means a panic mid-append; each sink keeps whole lines.
        self.files.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends whole `lines` to `agent`'s transcript in one write; returns what the user
    /// should be told.
    fn append(&self, agent: &str, lines: &[u8]) -> Option<Event> {
        let path = if agent == "lead" || agent == "session" {
            self.main.clone()
        } else {
            agent_transcript_path(&self.agents_dir, agent)
        };
        let mut files = self.files();
        let sink = match files.entry(path) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => match Sink::open(v.key()) {
                Ok(sink) => v.insert(sink),
                Err(e) => {
                    tracing::warn!("cannot write the transcript {}: {e}", v.key().display());
                    return None;
                }
            },
        };
        let notice = sink.append(lines);
        notice.map(|message| Event {
            agent: "session".into(),
            kind: EventKind::Error { message },
        })
    }
}

impl Recorder for Transcripts {
    fn record(&self, event: &Event) -> Option<Event> {
        self.record_json(event, &EventJson::new(event))
    }

    fn record_json(&self, _event: &Event, json: &EventJson<'_>) -> Option<Event> {
        self.record_all(std::slice::from_ref(json)).pop()
    }

    fn record_all(&self, events: &[EventJson<'_>]) -> Vec<Event> {
        // Published together means one agent's: one file, one write.
        let Some(agent) = events.first().map(|e| e.event().agent.as_str()) else {
            return Vec::new();
        };
        let mut lines = String::new();
        for json in events {
            if matches!(json.event().kind, EventKind::TextDelta { .. }) {
                continue;
            }
            if let Some(line) = json.line() {
                lines.push_str(line);
                lines.push('\n');
            }
        }
        if lines.is_empty() {
            return Vec::new();
        }
        self.append(agent, lines.as_bytes()).into_iter().collect()
    }

    fn close(&self) {
        // Whatever a full disk held back gets one more try; then everything to the disk.
        for sink in self.files().values_mut() {
            if let Some(message) = sink.append(b"") {
                tracing::warn!("{message}");
            }
        }
        // Failures are logged by the flusher (and retried if anything runs on).
        let _ = crate::store::behind::flush_all();
        let closed = self.closed.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(closed) = closed {
            let _ = closed.send(());
        }
    }
}

/// One transcript file, with the lines a failed write held back.
struct Sink {
    path: PathBuf,
    /// Shared with the flusher, which syncs it.
    file: Arc<File>,
    /// The length of the file's whole lines.
    len: u64,
    /// Lines not yet written, in order.
    held: Vec<u8>,
    /// Whether the user was told about the current failure streak.
    told: bool,
}

impl Sink {
    fn open(path: &Path) -> std::io::Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        let len = file.metadata()?.len();
        if len == 0 {
            // Maybe a new file: its directory entry must reach the disk too.
            crate::store::behind::created(path);
        }
        Ok(Self {
            path: path.to_path_buf(),
            file: Arc::new(file),
            len,
            held: Vec::new(),
            told: false,
        })
    }

    /// Appends `line` after the held lines: one write, so a crash tears at most the last
    /// line; a failed write is cut back and held. Returns what the user should be told.
    fn append(&mut self, line: &[u8]) -> Option<String> {
        if self.held.is_empty() {
            if line.is_empty() {
                return None;
            }
            // The common case: nothing held, the line is written from where it is.
            return match write_through(&self.file, line) {
                Ok(()) => {
                    self.len += line.len() as u64;
                    crate::store::behind::written(&self.path, &self.file);
                    None
                }
                Err(e) => {
                    self.held.extend_from_slice(line);
                    self.failed(e)
                }
            };
        }
        self.held.extend_from_slice(line);
        match write_through(&self.file, &self.held) {
            Ok(()) => {
                self.len += self.held.len() as u64;
                self.held.clear();
                crate::store::behind::written(&self.path, &self.file);
                std::mem::take(&mut self.told).then(|| {
                    format!(
                        "the transcript {} caught up; no line was lost",
                        self.path.display()
                    )
                })
            }
            Err(e) => self.failed(e),
        }
    }

    fn failed(&mut self, e: std::io::Error) -> Option<String> {
        // Cut the part of a line that made it, so the file stays whole lines.
        let _ = self.file.set_len(self.len);
        (!std::mem::replace(&mut self.told, true)).then(|| {
            format!(
                "cannot append to the transcript {}: {e}; its lines are held in memory and written when the write succeeds",
                self.path.display()
            )
        })
    }
}

/// One `write_all`; under the test-only fault injector a write may fail part-way, as on a
/// full disk.
fn write_through(file: &File, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = file;
    if crate::supervise::faults::disk_full("transcript") {
        file.write_all(&bytes[..bytes.len() / 2])?;
        return Err(std::io::Error::from_raw_os_error(28)); // ENOSPC
    }
    file.write_all(bytes)
}

/// Why a transcript could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    /// The file could not be read.
    #[error("cannot read the session transcript {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A line other than the last is not valid.
    #[error("the session transcript {path} is damaged at line {line}: {message}")]
    Damaged {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// The lead's conversation as recorded in a transcript, ready to continue: when the
/// session stopped in the middle of tool calls, their "interrupted" results are added and
/// also appended to the transcript, so the record stays whole.
pub fn resume_conversation(path: &Path) -> Result<Vec<Message>, TranscriptError> {
    resume_agent_conversation(path, "lead")
}

/// `agent`'s conversation as recorded in a transcript, ready to continue (see
/// [`resume_conversation`]); a missing file is an empty conversation.
pub fn resume_agent_conversation(
    path: &Path,
    agent: &str,
) -> Result<Vec<Message>, TranscriptError> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let mut conversation = load_agent_conversation(path, agent)?;
    drop_torn_tail(path).map_err(|source| TranscriptError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let before = conversation.len();
    close_dangling_calls(&mut conversation);
    if let Some(added) = conversation.get(before) {
        let event = Event {
            agent: agent.into(),
            kind: EventKind::MessageAppended {
                message: added.clone(),
            },
        };
        let appended = serde_json::to_string(&event)
            .map_err(std::io::Error::other)
            .and_then(|line| {
                let mut f = std::fs::OpenOptions::new().append(true).open(path)?;
                f.write_all(format!("{line}\n").as_bytes())
            });
        appended.map_err(|source| TranscriptError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    }
    Ok(conversation)
}

/// Cuts off a last line that a crash left unfinished (every whole line ends with a
/// newline), so lines appended after a resume start clean.
fn drop_torn_tail(path: &Path) -> std::io::Result<()> {
    let bytes = std::fs::read(path)?;
    let keep = bytes
        .iter()
        .rposition(|&b| b == b'\n')
        .map(|i| i + 1)
        .unwrap_or(0);
    if keep < bytes.len() {
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)?
            .set_len(keep as u64)?;
    }
    Ok(())
}

/// The lead's conversation as recorded in a transcript (tool calls without results are
/// left as they are; see `resume_conversation`).
pub fn load_conversation(path: &Path) -> Result<Vec<Message>, TranscriptError> {
    load_agent_conversation(path, "lead")
}

/// The transcript file of a subagent or teammate (`agents/<agent id, / as ->.jsonl`).
pub fn agent_transcript_path(agents_dir: &Path, agent: &str) -> PathBuf {
    agents_dir.join(format!("{}.jsonl", agent.replace('/', "-")))
}

/// The conversation of `agent` as recorded in a transcript, tool calls without results
/// left as they are.
pub fn load_agent_conversation(path: &Path, agent: &str) -> Result<Vec<Message>, TranscriptError> {
    let text = std::fs::read_to_string(path).map_err(|source| TranscriptError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let lines: Vec<&str> = text.lines().collect();
    let mut conversation = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let event: Event = match serde_json::from_str(line) {
            Ok(e) => e,
            // A torn last line is what a crash mid-write leaves: skip it.
            Err(_) if i + 1 == lines.len() => break,
            Err(e) => {
                return Err(TranscriptError::Damaged {
                    path: path.to_path_buf(),
                    line: i + 1,
                    message: e.to_string(),
                });
            }
        };
        if event.agent != agent {
            continue;
        }
        match event.kind {
            EventKind::MessageAppended { message } => conversation.push(message),
            // A compaction replaces the conversation whole (one line: all or nothing).
            EventKind::Compacted { messages, .. } => conversation = messages,
            _ => {}
        }
    }
    Ok(conversation)
}

/// Gives every tool call without a result an error result saying the session stopped
/// while it ran (it may or may not have taken effect), so the conversation is valid and
/// the model checks before repeating it.
pub fn close_dangling_calls(conversation: &mut Vec<Message>) {
    let Some(last) = conversation.last() else {
        return;
    };
    if last.role != Role::Assistant {
        return;
    }
    let results: Vec<ContentBlock> = last
        .tool_calls()
        .map(|c| {
            ContentBlock::ToolResult(ToolResult::error(
                &c.id,
                "interrupted",
                "the session stopped while this call was running; it may or may not have taken effect — check before repeating it",
            ))
        })
        .collect();
    if !results.is_empty() {
        conversation.push(Message {
            role: Role::User,
            content: results,
        });
    }
}

/// A recorded session, for listings.
#[derive(Debug, Clone)]
pub struct SessionInfo {
    /// The session id.
    pub id: String,
    /// The transcript.
    pub path: PathBuf,
    /// Last modification.
    pub modified: std::time::SystemTime,
    /// The first task text, shortened.
    pub title: String,
}

/// The sessions of a project, newest first: none unless its directory records this root
/// (`store::owned_by`), so another project's sessions are never listed or resumed.
pub fn list_sessions(project_root: &Path) -> Vec<SessionInfo> {
    let Some(dir) = crate::store::project_dir(project_root) else {
        return Vec::new();
    };
    if !crate::store::owned_by(&dir, project_root) {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut sessions: Vec<SessionInfo> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .filter_map(|path| {
            let modified = path.metadata().ok()?.modified().ok()?;
            let id = path.file_stem()?.to_string_lossy().into_owned();
            Some(SessionInfo {
                title: first_task(&path).unwrap_or_default(),
                id,
                path,
                modified,
            })
        })
        .collect();
    sessions.sort_by_key(|s| std::cmp::Reverse(s.modified));
    sessions
}

fn first_task(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().find_map(|l| {
        let e: Event = serde_json::from_str(l).ok()?;
        match e.kind {
            EventKind::RunStarted { task, .. } if e.agent == "lead" => {
                Some(task.lines().next().unwrap_or("").chars().take(70).collect())
            }
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ToolCall;

    fn line(agent: &str, message: Message) -> String {
        serde_json::to_string(&Event {
            agent: agent.into(),
            kind: EventKind::MessageAppended { message },
        })
        .unwrap()
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_published_line_is_in_the_file_when_publish_returns() {
        // One thread and no await between publishing and reading: a background writer
        // could not have run yet; the line is there only if `publish` wrote it.
        let dir = tempfile::tempdir().unwrap();
        let (main, agents) = (dir.path().join("s.jsonl"), dir.path().join("agents"));
        let bus = EventBus::new();
        let done = record(&bus, main.clone(), agents.clone());
        let call = ToolCall {
            id: "c9".into(),
            name: "run_command".into(),
            arguments: "{}".into(),
        };
        bus.publish("lead", EventKind::ToolCallStarted { call: call.clone() });
        let text = std::fs::read_to_string(&main).unwrap();
        assert!(text.contains(r#""type":"tool_call_started""#) && text.contains("c9"));
        bus.publish("explore/t1", EventKind::ToolCallStarted { call });
        let sub = std::fs::read_to_string(agent_transcript_path(&agents, "explore/t1")).unwrap();
        assert_eq!(sub.lines().count(), 1);
        bus.close();
        done.await.unwrap();
    }

    #[test]
    fn loads_lead_messages_skips_a_torn_tail_and_closes_dangling_calls() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let call = ToolCall {
            id: "c1".into(),
            name: "write_file".into(),
            arguments: "{}".into(),
        };
        let text = [
            line("lead", Message::user_text("task")),
            line("explore/t1", Message::user_text("sub")),
            line(
                "lead",
                Message {
                    role: Role::Assistant,
                    content: vec![ContentBlock::ToolUse(call)],
                },
            ),
            "{\"agent\":\"lead\",\"type\":\"message_app".to_string(),
        ]
        .join("\n");
        std::fs::write(&path, text).unwrap();
        assert_eq!(load_conversation(&path).unwrap().len(), 2);
        let conv = resume_conversation(&path).unwrap();
        assert_eq!(conv.len(), 3);
        // The closing results were recorded, so the next load sees them too.
        assert_eq!(load_conversation(&path).unwrap(), conv);
        assert_eq!(conv[0].text(), "task");
        match &conv[2].content[0] {
            ContentBlock::ToolResult(r) => {
                assert_eq!(r.tool_use_id, "c1");
                assert_eq!(r.error_code.as_deref(), Some("interrupted"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_compaction_replaces_the_conversation_whole_and_later_messages_follow_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let compacted = serde_json::to_string(&Event {
            agent: "lead".into(),
            kind: EventKind::Compacted {
                trigger: "auto".into(),
                tokens_before: 10,
                tokens_after: 2,
                usage: Default::default(),
                messages: vec![Message::user_text("summary"), Message::assistant_text("b")],
            },
        })
        .unwrap();
        let text = [
            line("lead", Message::user_text("a")),
            line("lead", Message::assistant_text("b")),
            compacted,
            line("lead", Message::user_text("c")),
        ]
        .join("\n");
        std::fs::write(&path, text).unwrap();
        let texts: Vec<String> = load_conversation(&path)
            .unwrap()
            .iter()
            .map(Message::text)
            .collect();
        assert_eq!(texts, ["summary", "b", "c"]);
    }

    #[test]
    fn a_damaged_middle_line_is_an_error_naming_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(
            &path,
            format!("garbage\n{}\n", line("lead", Message::user_text("x"))),
        )
        .unwrap();
        let err = load_conversation(&path).unwrap_err().to_string();
        assert!(err.contains("line 1") && err.contains("s.jsonl"), "{err}");
    }
}
