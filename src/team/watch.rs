//! Noticing mail written by other processes: `crew team send` from another terminal appends
//! to `inboxes/<name>.jsonl` directly, so a running session polls the inbox files' sizes
//! (every [`POLL_INTERVAL`], like the `tasks/<id>.stop` files) and reports each member whose
//! inbox grew. The Team actor turns a report into a wake-up for that member, which then reads
//! its unread messages through the delivery contract (`inbox.rs`).
//!
//! A report is only a hint: it may also fire for mail the session wrote itself (a second
//! wake-up finds nothing new), and several appends between two polls give one report.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{MemberName, Team};

/// How often [`watch`] looks at the inboxes.
pub const POLL_INTERVAL: Duration = Duration::from_millis(300);

/// The size of every inbox file of a team, by member.
pub type InboxSizes = BTreeMap<MemberName, u64>;

/// Reads the size of every `inboxes/<name>.jsonl` (files whose name is not a member name are
/// ignored; an unreadable directory reads as empty, and the next poll tries again).
pub fn inbox_sizes(team: &Team) -> InboxSizes {
    let Ok(entries) = std::fs::read_dir(team.inbox_dir()) else {
        return InboxSizes::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let file_name = e.file_name();
            let stem = file_name.to_str()?.strip_suffix(".jsonl")?;
            let name = MemberName::parse(stem).ok()?;
            Some((name, e.metadata().ok()?.len()))
        })
        .collect()
}

/// The members whose inbox is larger in `now` than in `before` (new inboxes included).
pub fn grown(before: &InboxSizes, now: &InboxSizes) -> Vec<MemberName> {
    now.iter()
        .filter(|(name, len)| before.get(*name).is_none_or(|old| *len > old))
        .map(|(name, _)| name.clone())
        .collect()
}

/// Polls `team`'s inboxes every `interval` until `cancel` fires, calling `on_growth` with
/// each member whose inbox grew since the previous poll. Growth before the first poll is not
/// reported: a consumer reads its unread messages when it starts.
pub fn watch(
    team: Arc<Team>,
    interval: Duration,
    cancel: CancellationToken,
    mut on_growth: impl FnMut(MemberName) + Send + 'static,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let scan = |team: Arc<Team>| async move {
            tokio::task::spawn_blocking(move || inbox_sizes(&team))
                .await
                .unwrap_or_default()
        };
        let mut before = scan(team.clone()).await;
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(interval) => {}
            }
            let now = scan(team.clone()).await;
            for name in grown(&before, &now) {
                on_growth(name);
            }
            // A shrunk file (a torn line cut off) is the new baseline too.
            before = now;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::team::{Member, Outgoing, Recipient};

    fn name(s: &str) -> MemberName {
        MemberName::parse(s).unwrap()
    }

    #[tokio::test]
    async fn reports_each_inbox_that_grows_within_a_poll_or_two() {
        let root = tempfile::tempdir().unwrap();
        let team = Arc::new(Team::open(root.path(), "w").unwrap());
        for n in ["alice", "bob"] {
            team.add_member(Member::new(name(n), n, "coder", None))
                .unwrap();
        }
        // Mail from before the watcher started is not reported.
        team.send(
            &MemberName::lead(),
            &Recipient::parse("bob").unwrap(),
            Outgoing::text("old"),
        )
        .unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let cancel = CancellationToken::new();
        let task = watch(
            team.clone(),
            Duration::from_millis(20),
            cancel.clone(),
            move |n| {
                let _ = tx.send(n);
            },
        );
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert!(rx.try_recv().is_err(), "no growth yet");

        // As `crew team send` would, from "another process": straight to the files.
        team.send(
            &MemberName::user(),
            &Recipient::parse("alice").unwrap(),
            Outgoing::text("hi"),
        )
        .unwrap();
        let got = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .expect("reported within the timeout");
        assert_eq!(got, Some(name("alice")));
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert!(rx.try_recv().is_err(), "one report per growth");

        team.send(
            &name("alice"),
            &Recipient::parse("bob").unwrap(),
            Outgoing::text("new"),
        )
        .unwrap();
        let got = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .unwrap();
        assert_eq!(got, Some(name("bob")));

        cancel.cancel();
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("stops when cancelled")
            .unwrap();
    }

    #[test]
    fn grown_compares_sizes_and_counts_new_inboxes() {
        let before: InboxSizes = [(name("a"), 10), (name("b"), 5)].into_iter().collect();
        let now: InboxSizes = [(name("a"), 10), (name("b"), 9), (name("c"), 1)]
            .into_iter()
            .collect();
        assert_eq!(grown(&before, &now), [name("b"), name("c")]);
        assert!(grown(&now, &now).is_empty());
    }
}
