//! Durable inboxes: `inboxes/<name>.jsonl`, one JSON message per line, appended under the
//! inbox's lock (`inboxes/<name>.lock`, a `flock` that also excludes other processes).
//!
//! # Durability
//!
//! A send counts as done once its line is written to the inbox file with `write(2)` under
//! the lock: a crash of crew (SIGKILL included) loses nothing acknowledged, since the kernel
//! holds the data. fsync happens by group commit: a flusher thread fsyncs every inbox
//! written to within a few milliseconds (a 5 ms window, plus the fsyncs themselves), and
//! [`Team::flush`] does it at once on shutdown and when a teammate goes idle; so a power
//! loss can lose at most the sends of that short window.
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
//! 3. only then `team.ack(me, last.index + 1)` (or `ack_later`, which writes the cursor
//!    file behind, with the flusher).
//!
//! On start or resume, before step 1, call `team.ack(me, i + 1)` with the highest index `i`
//! the transcript holds (`ack` is idempotent and never moves backwards). A crash before step 2
//! finishes re-delivers the batch (nothing lost); a crash between 2 and 3, or before a
//! written-behind cursor reached its file, is healed by that resume-time ack (nothing
//! duplicated).
//!
//! The cursor and where appends stand are kept in memory per process (`inbox_file.rs`), so
//! a send or a read costs a few system calls; appends by other processes (`crew team send`)
//! are picked up from the file's length under the lock. A crash mid-append leaves a torn last
//! line: readers skip it, and the next append cuts it off before writing.

use std::fs::File;
use std::path::PathBuf;

use super::error::{Result, io_at};
use super::flusher;
use super::inbox_file::{Held, Wait};
use super::inbox_read::scan;
use super::inbox_registry;
pub use super::message::{Envelope, MessageKind, Outgoing};
use super::{MemberName, Team};

impl Team {
    /// The messages of `name`'s inbox not yet acknowledged, in inbox order (which keeps each
    /// sender's order). See the module docs for the delivery contract.
    pub fn unread(&self, name: &MemberName) -> Result<Vec<Envelope>> {
        self.blocking(name, |held| held.unread())
    }

    /// [`Team::unread`] without waiting for the inbox lock (safe on the async runtime);
    /// `None` when it is taken: call [`Team::unread`] off the runtime.
    pub fn try_unread(&self, name: &MemberName) -> Result<Option<Vec<Envelope>>> {
        // No inbox file yet (a member nobody wrote to): nothing unread, and no lock to
        // take to learn that. A message being sent now is read on the next look, as if
        // the lock had been taken first.
        let path = self.inbox_path(name);
        if let Err(e) = std::fs::symlink_metadata(&path)
            && e.kind() == std::io::ErrorKind::NotFound
        {
            return Ok(Some(Vec::new()));
        }
        self.with_inbox(name, Wait::Try, |held| held.unread())
    }

    /// How many messages `name` has not had delivered.
    pub fn unread_count(&self, name: &MemberName) -> Result<usize> {
        self.blocking(name, |held| held.unread_count())
            .map(|n| n as usize)
    }

    /// Every message `name` ever received, delivered or not (for `crew team show` and resume).
    pub fn inbox_history(&self, name: &MemberName) -> Result<Vec<Envelope>> {
        let path = self.inbox_path(name);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_at(&path)(e)),
        };
        let len = file.metadata().map_err(io_at(&path))?.len();
        let scan = scan(&path, &file, 0, 0, len)?;
        Ok(scan.messages.into_iter().map(|(m, _)| m).collect())
    }

    /// Records that the first `delivered` messages of `name`'s inbox were delivered (call it
    /// with `last.index + 1` once they are in the transcript), and writes the cursor file
    /// before returning. Idempotent; never moves back.
    pub fn ack(&self, name: &MemberName, delivered: u64) -> Result<()> {
        self.blocking(name, |held| held.ack(delivered))?;
        // The messages first, then the cursor: a cursor on disk never points past them.
        self.inboxes.get(name).flush()
    }

    /// [`Team::ack`] with the cursor file written behind (by the flusher, within a few
    /// milliseconds): the resume-time ack from the transcript covers a crash before that.
    pub fn ack_later(&self, name: &MemberName, delivered: u64) -> Result<()> {
        if self.ack_read(name, delivered, Wait::Block) {
            return Ok(());
        }
        self.blocking(name, |held| held.ack(delivered)).map(|_| ())
    }

    /// [`Team::ack_later`] without waiting for the inbox lock (safe on the async runtime);
    /// `false` when it is taken: call [`Team::ack_later`] off the runtime.
    pub fn try_ack_later(&self, name: &MemberName, delivered: u64) -> Result<bool> {
        if self.ack_read(name, delivered, Wait::Try) {
            return Ok(true);
        }
        Ok(self
            .with_inbox(name, Wait::Try, |held| held.ack(delivered))?
            .is_some())
    }

    /// The in-memory acknowledgement after a read that ended at `delivered`; `false` when
    /// the full path is needed.
    fn ack_read(&self, name: &MemberName, delivered: u64, wait: Wait) -> bool {
        let inbox = self.inboxes.get(name);
        match inbox.ack_read(delivered, wait) {
            Some(schedule) => {
                if schedule {
                    flusher::schedule(inbox);
                }
                true
            }
            None => false,
        }
    }

    /// Makes every inbox of this team durable now: fsyncs what was appended and writes the
    /// cursors acknowledgements moved (the flusher does this within a few milliseconds; call
    /// it on shutdown).
    pub fn flush(&self) -> Result<()> {
        let mut first_error = None;
        for inbox in self.inboxes.all() {
            if let Err(e) = inbox.flush() {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// `inboxes/<name>.cursor`.
    pub fn cursor_path(&self, name: &MemberName) -> PathBuf {
        self.inbox_dir().join(format!("{name}.cursor"))
    }

    /// Runs `op` on `name`'s inbox under its lock; `None` when `wait` is `Try` and the lock
    /// is taken. Hands the inbox to the flusher when `op` left something to make durable.
    pub(super) fn with_inbox<T>(
        &self,
        name: &MemberName,
        wait: Wait,
        op: impl FnOnce(&mut Held<'_>) -> Result<T>,
    ) -> Result<Option<T>> {
        let inbox = self.inboxes.get(name);
        let Some(mut held) = inbox.hold(wait)? else {
            return Ok(None);
        };
        let out = op(&mut held);
        let schedule = held.needs_flusher();
        drop(held);
        if schedule {
            flusher::schedule(inbox);
        }
        out.map(Some)
    }

    fn blocking<T>(
        &self,
        name: &MemberName,
        op: impl FnOnce(&mut Held<'_>) -> Result<T>,
    ) -> Result<T> {
        self.with_inbox(name, Wait::Block, op)?
            .ok_or_else(|| self.inboxes.get(name).busy())
    }
}

/// Makes every inbox this process has open durable now (fsyncs appends, writes cursors):
/// call it before the process exits. Failures are logged, one per inbox.
pub(crate) fn flush_all() {
    for inbox in inbox_registry::every_open() {
        if let Err(e) = inbox.flush() {
            tracing::warn!("could not make {} durable: {e}", inbox.path().display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::team::Recipient;
    use std::fs::OpenOptions;
    use std::io::Write;

    use crate::team::test_team::{name, team};

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
    fn a_cursor_written_behind_reaches_its_file_and_another_writers_cursor_is_seen() {
        let (_root, team) = team();
        let bob = name("bob");
        for m in ["one", "two", "three"] {
            team.send(&name("alice"), &to("bob"), Outgoing::text(m))
                .unwrap();
        }
        let on_disk = |team: &Team| -> Option<u64> {
            let bytes = std::fs::read(team.cursor_path(&bob)).ok()?;
            serde_json::from_slice::<serde_json::Value>(&bytes).ok()?["delivered"].as_u64()
        };
        team.ack_later(&bob, 2).unwrap();
        assert_eq!(team.unread(&bob).unwrap()[0].message, "three");
        // The flusher writes it behind (waited for with a generous bound, not timed).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while on_disk(&team) != Some(2) {
            assert!(
                std::time::Instant::now() < deadline,
                "the cursor never reached its file"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        team.ack_later(&bob, 3).unwrap();
        team.flush().unwrap();
        assert_eq!(on_disk(&team), Some(3));
        // Another process (or a person) moves the cursor back to after the first message.
        let first = std::fs::read_to_string(team.inbox_path(&bob)).unwrap();
        let offset = first.find('\n').unwrap() + 1;
        crate::store::write_atomic(
            &team.cursor_path(&bob),
            format!(r#"{{"delivered":1,"offset":{offset}}}"#).as_bytes(),
        )
        .unwrap();
        let again: Vec<_> = team.unread(&bob).unwrap();
        assert_eq!(
            again.iter().map(|m| m.message.as_str()).collect::<Vec<_>>(),
            ["two", "three"]
        );
        assert_eq!(team.unread_count(&bob).unwrap(), 2);
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
        // A new process (no state in memory) rebuilds where appends stand from the inbox.
        drop(team);
        let team = Team::open(_root.path(), "t").unwrap();
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
