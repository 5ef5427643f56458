//! Durable inboxes: `inboxes/<name>.jsonl`, one JSON message per line, appended under
//! `inboxes/<name>.lock` and fsynced before [`Team::send`] returns — a send counts as done
//! only once it is on disk.
//!
//! # Delivery contract (the inbox is the source of truth)
//!
//! Every message carries its `index` in the recipient's inbox (0, 1, 2, …) and a per-sender
//! `seq` (1, 2, 3, … for each sender in this inbox). `inboxes/<name>.cursor` records how many
//! messages were delivered. A consumer (the teammate's actor) delivers each message exactly
//! once, in per-sender order, even across crashes, by doing this:
//!
//! 1. `team.unread(me)` → the messages after the cursor, in inbox order;
//! 2. inject them into the conversation and **persist them in the transcript, with their
//!    `index`**;
//! 3. only then `team.ack(me, last.index + 1)`.
//!
//! On start or resume, before step 1, call `team.ack(me, i + 1)` with the highest index `i`
//! the transcript holds (`ack` is idempotent and never moves backwards). A crash before step 2
//! finishes re-delivers the batch (nothing lost); a crash between 2 and 3 is healed by that
//! resume-time ack (nothing duplicated).
//!
//! A crash mid-append leaves a torn last line: readers skip it, and the next append cuts it
//! off before writing. `inboxes/<name>.state.json` caches where the last append ended and each
//! sender's last `seq`; it is only a cache, rebuilt from the inbox when missing or behind.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::{Result, TeamError, io_at};
use super::{MemberName, Recipient, Team, USER, lock, now_ms};

/// What a message is: plain text or one of the structured requests and answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MessageKind {
    /// Plain text.
    Text,
    /// The lead asks a teammate to shut down.
    ShutdownRequest,
    /// A teammate's answer to a shutdown request.
    ShutdownResponse {
        /// Whether it agrees to shut down.
        approve: bool,
    },
    /// A `plan_first` teammate submits its plan (the message is the plan).
    PlanApprovalRequest,
    /// The lead's verdict on a plan.
    PlanApprovalResponse {
        /// Whether the teammate may go on in Do mode.
        approve: bool,
        /// What to change, when not approved.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        feedback: Option<String>,
    },
}

/// A message to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outgoing {
    /// The body (the plan, for a plan approval request).
    pub message: String,
    /// A short preview for notifications and the team panel.
    pub summary: Option<String>,
    /// What kind of message it is.
    pub kind: MessageKind,
}

impl Outgoing {
    /// A plain text message.
    pub fn text(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            summary: None,
            kind: MessageKind::Text,
        }
    }
}

/// A message as stored in (and read back from) a recipient's inbox.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    /// Its position in the recipient's inbox: 0, 1, 2, … (record it in the transcript).
    pub index: u64,
    /// A unique id.
    pub id: String,
    /// The sender (`lead`, `user` or a teammate).
    pub from: MemberName,
    /// The recipient (whose inbox this is).
    pub to: MemberName,
    /// The sender's sequence number in this inbox: 1, 2, 3, …
    pub seq: u64,
    /// When it was sent (Unix ms).
    pub sent_at_ms: u64,
    /// Whether it was sent to `*`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub broadcast: bool,
    /// A short preview.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The body.
    pub message: String,
    /// What kind of message it is.
    pub kind: MessageKind,
}

/// `inboxes/<name>.cursor`: how much of the inbox was delivered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Cursor {
    /// Messages delivered (the index of the next one).
    delivered: u64,
    /// The byte offset just after the last delivered message.
    offset: u64,
}

/// `inboxes/<name>.state.json`: a cache of where appends stand.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct AppendState {
    offset: u64,
    records: u64,
    seqs: BTreeMap<String, u64>,
}

/// The complete messages found after some offset, each with the offset just past it.
struct Scan {
    messages: Vec<(Envelope, u64)>,
    /// Just past the last complete line; bytes beyond it are a torn append.
    end: u64,
}

impl Team {
    /// Sends a message: appends it (fsynced) to the recipient's inbox, or to every member's
    /// but the sender's for `*` (the lead included). `from` is the lead, `user` or a teammate;
    /// `to` must be on the team (whatever its status: a stopped or finished teammate reads
    /// its mail when resumed). Returns what was stored, one envelope per recipient; when it
    /// returns, every one of them is on disk. A broadcast is not atomic across recipients: an
    /// error part-way leaves the earlier recipients' copies delivered.
    pub fn send(&self, from: &MemberName, to: &Recipient, out: Outgoing) -> Result<Vec<Envelope>> {
        if out.kind == MessageKind::Text && out.message.trim().is_empty() {
            return Err(TeamError::Empty { field: "message" });
        }
        let roster = self.roster()?;
        let unknown = |field, name: &MemberName| TeamError::UnknownMember {
            field,
            team: self.name.clone(),
            name: name.to_string(),
        };
        if from.as_str() != USER && !roster.has_address(from) {
            return Err(unknown("from", from));
        }
        let targets: Vec<MemberName> = match to {
            Recipient::Member(name) if name == from => {
                return Err(TeamError::InvalidName {
                    field: "to",
                    value: name.to_string(),
                    reason: "a member cannot message itself",
                });
            }
            Recipient::Member(name) if roster.has_address(name) => vec![name.clone()],
            Recipient::Member(name) => return Err(unknown("to", name)),
            Recipient::Broadcast => std::iter::once(MemberName::lead())
                .chain(roster.members.iter().map(|m| m.name.clone()))
                .filter(|n| n != from)
                .collect(),
        };
        let broadcast = *to == Recipient::Broadcast;
        targets
            .iter()
            .map(|target| self.append(from, target, &out, broadcast))
            .collect()
    }

    /// The messages of `name`'s inbox not yet acknowledged, in inbox order (which keeps each
    /// sender's order). See the module docs for the delivery contract.
    pub fn unread(&self, name: &MemberName) -> Result<Vec<Envelope>> {
        let cursor = self.cursor(name)?;
        let path = self.inbox_path(name);
        let Some(mut file) = open_existing(&path)? else {
            return Ok(Vec::new());
        };
        let scan = scan(&path, &mut file, cursor.offset, cursor.delivered)?;
        Ok(scan.messages.into_iter().map(|(m, _)| m).collect())
    }

    /// How many messages `name` has not had delivered.
    pub fn unread_count(&self, name: &MemberName) -> Result<usize> {
        Ok(self.unread(name)?.len())
    }

    /// Every message `name` ever received, delivered or not (for `crew team show` and resume).
    pub fn inbox_history(&self, name: &MemberName) -> Result<Vec<Envelope>> {
        let path = self.inbox_path(name);
        let Some(mut file) = open_existing(&path)? else {
            return Ok(Vec::new());
        };
        let scan = scan(&path, &mut file, 0, 0)?;
        Ok(scan.messages.into_iter().map(|(m, _)| m).collect())
    }

    /// Records that the first `delivered` messages of `name`'s inbox were delivered (call it
    /// with `last.index + 1` once they are in the transcript). Idempotent; never moves back.
    pub fn ack(&self, name: &MemberName, delivered: u64) -> Result<()> {
        let _locked = lock::exclusive(&self.inbox_lock(name))?;
        let cursor = self.cursor(name)?;
        if delivered <= cursor.delivered {
            return Ok(());
        }
        let path = self.inbox_path(name);
        let messages = match open_existing(&path)? {
            Some(mut file) => scan(&path, &mut file, cursor.offset, cursor.delivered)?.messages,
            None => Vec::new(),
        };
        let wanted = (delivered - cursor.delivered) as usize;
        // `wanted` ≥ 1 here: `delivered` > `cursor.delivered` was checked above.
        let Some((_, offset)) = messages.get(wanted - 1) else {
            return Err(TeamError::AckBeyondEnd {
                path,
                through: delivered,
                available: cursor.delivered + messages.len() as u64,
            });
        };
        let next = Cursor {
            delivered,
            offset: *offset,
        };
        write_json(&self.cursor_path(name), &next)
    }

    fn append(
        &self,
        from: &MemberName,
        to: &MemberName,
        out: &Outgoing,
        broadcast: bool,
    ) -> Result<Envelope> {
        let _locked = lock::exclusive(&self.inbox_lock(to))?;
        let path = self.inbox_path(to);
        let created = !path.exists();
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&path)
            .map_err(io_at(&path))?;
        let len = file.metadata().map_err(io_at(&path))?.len();
        let state_path = self.inbox_dir().join(format!("{to}.state.json"));
        let mut state: AppendState = std::fs::read(&state_path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .filter(|s: &AppendState| s.offset <= len)
            .unwrap_or_default();
        // Catch up with appends whose state write a crash interrupted.
        let scan = scan(&path, &mut file, state.offset, state.records)?;
        for (m, _) in &scan.messages {
            state.seqs.insert(m.from.to_string(), m.seq);
        }
        state.records += scan.messages.len() as u64;
        if scan.end < len {
            // A torn line from a crash mid-append: cut it off so the new line starts clean.
            file.set_len(scan.end).map_err(io_at(&path))?;
        }
        let seq = state.seqs.get(from.as_str()).copied().unwrap_or(0) + 1;
        let envelope = Envelope {
            index: state.records,
            id: uuid::Uuid::new_v4().to_string(),
            from: from.clone(),
            to: to.clone(),
            seq,
            sent_at_ms: now_ms(),
            broadcast,
            summary: out.summary.clone(),
            message: out.message.clone(),
            kind: out.kind.clone(),
        };
        let mut line = serde_json::to_vec(&envelope).map_err(|source| TeamError::Corrupt {
            path: path.clone(),
            source,
        })?;
        line.push(b'\n');
        file.write_all(&line).map_err(io_at(&path))?;
        file.sync_data().map_err(io_at(&path))?;
        if created {
            // A new inbox's directory entry must be durable too, or a crash could lose it.
            let dir = self.inbox_dir();
            File::open(&dir)
                .and_then(|d| d.sync_all())
                .map_err(io_at(&dir))?;
        }
        state.offset = scan.end + line.len() as u64;
        state.records += 1;
        state.seqs.insert(from.to_string(), seq);
        write_json(&state_path, &state)?;
        Ok(envelope)
    }

    fn cursor(&self, name: &MemberName) -> Result<Cursor> {
        let path = self.cursor_path(name);
        match std::fs::read(&path) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes).map_err(|source| TeamError::Corrupt { path, source })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Cursor::default()),
            Err(e) => Err(io_at(&path)(e)),
        }
    }

    /// `inboxes/<name>.cursor`.
    pub fn cursor_path(&self, name: &MemberName) -> PathBuf {
        self.inbox_dir().join(format!("{name}.cursor"))
    }

    fn inbox_lock(&self, name: &MemberName) -> PathBuf {
        self.inbox_dir().join(format!("{name}.lock"))
    }
}

fn open_existing(path: &Path) -> Result<Option<File>> {
    match File::open(path) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_at(path)(e)),
    }
}

/// Reads the complete lines after `offset`, the first of which must be message `index`.
fn scan(path: &Path, file: &mut File, offset: u64, index: u64) -> Result<Scan> {
    let len = file.metadata().map_err(io_at(path))?.len();
    if offset > len {
        return Err(TeamError::CorruptLine {
            path: path.to_path_buf(),
            line: index + 1,
            reason: format!(
                "the cursor says {offset} bytes were delivered but the file has {len}; the inbox was cut, restore it or delete its .cursor"
            ),
        });
    }
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(offset))
        .and_then(|_| file.read_to_end(&mut bytes))
        .map_err(io_at(path))?;
    let mut messages = Vec::new();
    let mut end = offset;
    let mut rest = bytes.as_slice();
    while let Some(newline) = rest.iter().position(|&b| b == b'\n') {
        let expected = index + messages.len() as u64;
        let bad = |reason: String| TeamError::CorruptLine {
            path: path.to_path_buf(),
            line: expected + 1,
            reason,
        };
        let envelope: Envelope = serde_json::from_slice(&rest[..newline])
            .map_err(|e| bad(format!("not a message ({e})")))?;
        if envelope.index != expected {
            return Err(bad(format!(
                "holds message {} where {expected} belongs",
                envelope.index
            )));
        }
        end += newline as u64 + 1;
        messages.push((envelope, end));
        rest = &rest[newline + 1..];
    }
    Ok(Scan { messages, end })
}

fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let bytes = serde_json::to_vec(value).map_err(|source| TeamError::Corrupt {
        path: path.to_path_buf(),
        source,
    })?;
    crate::store::write_atomic(path, &bytes).map_err(io_at(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::team::Member;

    fn name(s: &str) -> MemberName {
        MemberName::parse(s).unwrap()
    }

    fn team() -> (tempfile::TempDir, Team) {
        let root = tempfile::tempdir().unwrap();
        let team = Team::open(root.path(), "t").unwrap();
        for n in ["alice", "bob"] {
            team.add_member(Member::new(name(n), n, "coder", None))
                .unwrap();
        }
        (root, team)
    }

    fn to(s: &str) -> Recipient {
        Recipient::parse(s).unwrap()
    }

    #[test]
    fn send_appends_and_ack_advances_the_cursor() {
        let (_root, team) = team();
        let lead = MemberName::lead();
        team.send(&lead, &to("bob"), Outgoing::text("one")).unwrap();
        team.send(&name("alice"), &to("bob"), Outgoing::text("two"))
            .unwrap();
        team.send(&lead, &to("bob"), Outgoing::text("three"))
            .unwrap();
        let unread = team.unread(&name("bob")).unwrap();
        let seen: Vec<_> = unread
            .iter()
            .map(|m| (m.index, m.from.as_str(), m.seq, m.message.as_str()))
            .collect();
        assert_eq!(
            seen,
            [
                (0, "lead", 1, "one"),
                (1, "alice", 1, "two"),
                (2, "lead", 2, "three")
            ]
        );
        team.ack(&name("bob"), 2).unwrap();
        team.ack(&name("bob"), 1).unwrap(); // never moves back
        assert_eq!(team.unread(&name("bob")).unwrap()[0].message, "three");
        let err = team.ack(&name("bob"), 5).unwrap_err().to_string();
        assert!(
            err.contains("bob.jsonl") && err.contains("holds 3"),
            "{err}"
        );
        assert_eq!(team.inbox_history(&name("bob")).unwrap().len(), 3);
        assert_eq!(team.unread_count(&name("alice")).unwrap(), 0);
    }

    #[test]
    fn broadcast_reaches_everyone_but_the_sender() {
        let (_root, team) = team();
        let sent = team
            .send(&name("alice"), &to("*"), Outgoing::text("hi all"))
            .unwrap();
        let got: Vec<_> = sent.iter().map(|e| e.to.as_str()).collect();
        assert_eq!(got, ["lead", "bob"]);
        assert!(sent.iter().all(|e| e.broadcast));
        assert_eq!(team.unread_count(&name("alice")).unwrap(), 0);
        assert_eq!(team.unread_count(&MemberName::lead()).unwrap(), 1);
    }

    #[test]
    fn bad_addresses_and_empty_text_are_refused() {
        let (_root, team) = team();
        let err = team
            .send(&name("alice"), &to("carol"), Outgoing::text("x"))
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("to: team t has no member named carol"),
            "{err}"
        );
        let err = team
            .send(&name("mallory"), &to("bob"), Outgoing::text("x"))
            .unwrap_err();
        assert!(err.to_string().starts_with("from:"), "{err}");
        assert!(
            team.send(&name("bob"), &to("bob"), Outgoing::text("x"))
                .is_err()
        );
        assert!(
            team.send(&name("bob"), &to("lead"), Outgoing::text("  "))
                .is_err()
        );
        // The user may write to a running team from another terminal.
        team.send(&MemberName::user(), &to("alice"), Outgoing::text("hello"))
            .unwrap();
    }

    #[test]
    fn structured_kinds_round_trip_with_a_type_tag() {
        let (_root, team) = team();
        let reply = Outgoing {
            message: "add tests first".into(),
            summary: Some("plan rejected".into()),
            kind: MessageKind::PlanApprovalResponse {
                approve: false,
                feedback: Some("add tests first".into()),
            },
        };
        team.send(&MemberName::lead(), &to("alice"), reply.clone())
            .unwrap();
        let line = std::fs::read_to_string(team.inbox_path(&name("alice"))).unwrap();
        assert!(
            line.contains(r#""kind":{"type":"plan_approval_response","approve":false"#),
            "{line}"
        );
        let got = &team.unread(&name("alice")).unwrap()[0];
        assert_eq!((&got.kind, &got.summary), (&reply.kind, &reply.summary));
        let kind: MessageKind =
            serde_json::from_str(r#"{"type":"shutdown_response","approve":true}"#).unwrap();
        assert_eq!(kind, MessageKind::ShutdownResponse { approve: true });
    }

    #[test]
    fn a_torn_last_line_is_skipped_then_repaired() {
        let (_root, team) = team();
        let bob = name("bob");
        team.send(&name("alice"), &to("bob"), Outgoing::text("one"))
            .unwrap();
        let path = team.inbox_path(&bob);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(br#"{"index":1,"id":"x","from":"alice","#)
            .unwrap();
        assert_eq!(team.unread(&bob).unwrap().len(), 1);
        // The cache of the append state is lost too: it is rebuilt from the inbox.
        std::fs::remove_file(team.inbox_dir().join("bob.state.json")).unwrap();
        let sent = team
            .send(&name("alice"), &to("bob"), Outgoing::text("two"))
            .unwrap();
        assert_eq!((sent[0].index, sent[0].seq), (1, 2));
        let all = team.unread(&bob).unwrap();
        assert_eq!(
            all.iter().map(|m| m.message.as_str()).collect::<Vec<_>>(),
            ["one", "two"]
        );
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2);
    }

    #[test]
    fn a_garbage_middle_line_is_an_error_naming_the_line() {
        let (_root, team) = team();
        team.send(&name("alice"), &to("bob"), Outgoing::text("one"))
            .unwrap();
        let path = team.inbox_path(&name("bob"));
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.insert_str(0, "garbage\n");
        std::fs::write(&path, text).unwrap();
        let err = team.unread(&name("bob")).unwrap_err().to_string();
        assert!(err.contains("bob.jsonl line 1: not a message"), "{err}");
    }
}
