//! Sending to durable inboxes: a send is checked against the roster (sender, recipients,
//! text), then appended to each recipient's inbox under its lock, with its `index` and
//! per-sender `seq` (see `inbox.rs` for the delivery contract and durability).

use std::collections::VecDeque;
use std::sync::Arc;

use super::error::{Result, TeamError, io_at};
use super::inbox_file::{Held, IfAbsent, Wait, relock};
use super::inbox_read::Stamp;
use super::message::{Envelope, MessageKind, Outgoing};
use super::{MemberName, Recipient, Roster, Team, USER, now_ms};

/// A send whose sender and recipients were checked ([`Team::prepare_send`]):
/// [`Team::try_send`] appends what it can without waiting for a lock, [`Team::finish_send`]
/// the rest.
#[derive(Debug)]
pub struct PendingSend {
    from: MemberName,
    out: Outgoing,
    broadcast: bool,
    /// Recipients still to append to, in order.
    targets: VecDeque<MemberName>,
    /// What was stored so far, one envelope per recipient.
    stored: Vec<Envelope>,
}

impl PendingSend {
    /// What was stored so far, one envelope per recipient.
    pub fn stored(&self) -> &[Envelope] {
        &self.stored
    }

    /// What was stored, one envelope per recipient.
    pub fn into_stored(self) -> Vec<Envelope> {
        self.stored
    }
}

impl Team {
    /// Sends a message: appends it to the recipient's inbox, or to every member's but the
    /// sender's for `*` (the lead included). `from` is the lead, `user` or a teammate; `to`
    /// must be on the team (whatever its status: a stopped or finished teammate reads its
    /// mail when resumed). Returns what was stored, one envelope per recipient; when it
    /// returns, every one of them is written to its inbox (durable against a crash of this
    /// process, fsynced by group commit: see the module docs). A broadcast is not atomic
    /// across recipients: an error part-way leaves the earlier recipients' copies delivered.
    pub fn send(&self, from: &MemberName, to: &Recipient, out: Outgoing) -> Result<Vec<Envelope>> {
        let mut pending = self.prepare_send(from, to, out)?;
        self.finish_send(&mut pending)?;
        Ok(pending.stored)
    }

    /// Checks a send (the text, the sender, the recipients) and lists its recipients.
    pub fn prepare_send(
        &self,
        from: &MemberName,
        to: &Recipient,
        out: Outgoing,
    ) -> Result<PendingSend> {
        if out.kind == MessageKind::Text && out.message.trim().is_empty() {
            return Err(TeamError::Empty { field: "message" });
        }
        let roster = self.cached_roster()?;
        let unknown = |field, name: &MemberName| TeamError::UnknownMember {
            field,
            team: self.name.clone(),
            name: name.to_string(),
        };
        if from.as_str() != USER && !roster.has_address(from) {
            return Err(unknown("from", from));
        }
        let targets: VecDeque<MemberName> = match to {
            Recipient::Member(name) if name == from => {
                return Err(TeamError::InvalidName {
                    field: "to",
                    value: name.to_string(),
                    reason: "a member cannot message itself",
                });
            }
            Recipient::Member(name) if roster.has_address(name) => [name.clone()].into(),
            Recipient::Member(name) => return Err(unknown("to", name)),
            Recipient::Broadcast => std::iter::once(MemberName::lead())
                .chain(roster.members.iter().map(|m| m.name.clone()))
                .filter(|n| n != from)
                .collect(),
        };
        Ok(PendingSend {
            from: from.clone(),
            out,
            broadcast: *to == Recipient::Broadcast,
            targets,
            stored: Vec::new(),
        })
    }

    /// Appends `pending` to the inboxes whose locks are free, without waiting (safe on the
    /// async runtime). `true` when every recipient has it; otherwise call
    /// [`Team::finish_send`] off the runtime.
    pub fn try_send(&self, pending: &mut PendingSend) -> Result<bool> {
        self.push(pending, Wait::Try)
    }

    /// Appends `pending` to the inboxes it has not reached yet, waiting for their locks.
    pub fn finish_send(&self, pending: &mut PendingSend) -> Result<()> {
        self.push(pending, Wait::Block).map(|_| ())
    }

    fn push(&self, p: &mut PendingSend, wait: Wait) -> Result<bool> {
        while let Some(target) = p.targets.front().cloned() {
            let appended = self.with_inbox(&target, wait, |held| {
                append(held, &p.from, &target, &p.out, p.broadcast)
            })?;
            let Some(envelope) = appended else {
                return Ok(false);
            };
            p.stored.push(envelope);
            p.targets.pop_front();
        }
        Ok(true)
    }

    /// The roster, read again only when `config.json` changed (its `stat` stamp).
    fn cached_roster(&self) -> Result<Arc<Roster>> {
        let path = self.config_path();
        let stamp = match std::fs::metadata(&path) {
            Ok(m) => Some(Stamp::of(&m)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io_at(&path)(e)),
        };
        let mut cache = relock(&self.inboxes.roster);
        if let Some((seen, roster)) = &*cache
            && *seen == stamp
        {
            return Ok(roster.clone());
        }
        let roster = Arc::new(self.roster()?);
        *cache = Some((stamp, roster.clone()));
        Ok(roster)
    }
}

/// Appends one message for `to` (the lock is held): cuts a torn last line off first.
fn append(
    held: &mut Held<'_>,
    from: &MemberName,
    to: &MemberName,
    out: &Outgoing,
    broadcast: bool,
) -> Result<Envelope> {
    let path = held.path().to_path_buf();
    let (file, len) = held.data(IfAbsent::Create)?.ok_or_else(|| TeamError::Io {
        path: path.clone(),
        source: std::io::Error::other("the inbox vanished while it was being opened"),
    })?;
    let appended = held.appended(&file, len)?;
    let (index, end) = (appended.records, appended.end);
    let seq = appended.seqs.get(from.as_str()).copied().unwrap_or(0) + 1;
    let envelope = Envelope {
        index,
        // A v4 id from the thread's generator (no system call per message).
        id: uuid::Builder::from_random_bytes(rand::random())
            .into_uuid()
            .to_string(),
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
    if end < len {
        // A torn line from a crash mid-append: cut it off so the new line starts clean.
        file.set_len(end).map_err(io_at(&path))?;
    }
    held.append(&file, &line, from.as_str(), seq)?;
    Ok(envelope)
}
