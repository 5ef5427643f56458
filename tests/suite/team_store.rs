//! The team store through its public interface: the shared work list (blockers, unblocking,
//! releasing a dead teammate's claims, claims raced by threads and by two real processes)
//! and the durable inboxes (2,000 messages from 16 concurrent senders, consumers that crash
//! between reading and acknowledging, nothing lost or duplicated, per-sender order kept).

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crewmaster::team::{
    Envelope, Member, MemberName, NewTodo, Outgoing, Recipient, Team, TeamError, TodoId,
    TodoStatus, TodoUpdate,
};
use support::faults;

fn name(s: &str) -> MemberName {
    MemberName::parse(s).unwrap()
}

/// A team under `root` with teammates `names`.
fn team_with(root: &Path, names: &[&str]) -> Team {
    let team = Team::open(root, "session-1").unwrap();
    for n in names {
        team.add_member(Member::new(name(n), &format!("agent-{n}"), "coder", None))
            .unwrap();
    }
    team
}

fn add(team: &Team, subject: &str, blocked_by: &[&str]) -> TodoId {
    let blocked_by = blocked_by
        .iter()
        .map(|b| TodoId::parse("blocked_by", b).unwrap())
        .collect();
    let new = NewTodo {
        subject: subject.into(),
        description: None,
        blocked_by,
    };
    team.add_todo(&MemberName::lead(), new).unwrap().id
}

fn set(status: TodoStatus) -> TodoUpdate {
    TodoUpdate {
        status: Some(status),
        ..TodoUpdate::default()
    }
}

fn id(s: &str) -> TodoId {
    TodoId::parse("id", s).unwrap()
}

#[test]
fn a_blocked_claim_names_its_blockers_and_completion_unblocks() {
    let root = tempfile::tempdir().unwrap();
    let team = team_with(root.path(), &["alice", "bob"]);
    assert_eq!(add(&team, "write a.txt", &[]), id("1"));
    assert_eq!(add(&team, "write b.txt", &["1"]), id("2"));

    let err = team
        .update_todo(&name("bob"), id("2"), set(TodoStatus::InProgress))
        .unwrap_err();
    match &err {
        TeamError::Blocked {
            id: refused,
            blockers,
        } => {
            assert_eq!((*refused, blockers.as_slice()), (id("2"), &[id("1")][..]))
        }
        other => panic!("expected Blocked, got {other}"),
    }
    assert_eq!(
        err.to_string(),
        "item 2 is blocked by #1; finish those first"
    );
    let item = team.get_todo(id("2")).unwrap();
    assert_eq!(
        (item.status, item.owner),
        (TodoStatus::Pending, None),
        "a refused claim wrote nothing"
    );

    team.update_todo(&name("alice"), id("1"), set(TodoStatus::InProgress))
        .unwrap();
    // Still blocked while its blocker is only in progress.
    assert!(matches!(
        team.update_todo(&name("bob"), id("2"), set(TodoStatus::InProgress)),
        Err(TeamError::Blocked { .. })
    ));
    team.update_todo(&name("alice"), id("1"), set(TodoStatus::Completed))
        .unwrap();
    team.update_todo(&name("bob"), id("2"), set(TodoStatus::InProgress))
        .unwrap();
    team.update_todo(&name("bob"), id("2"), set(TodoStatus::Completed))
        .unwrap();

    // A fresh handle (another process) sees both completed with their owners.
    let list = Team::open(root.path(), "session-1")
        .unwrap()
        .list_todos()
        .unwrap();
    let done: Vec<_> = list
        .values()
        .map(|i| {
            (
                i.id.to_string(),
                i.status,
                i.owner.as_ref().map(|o| o.to_string()),
            )
        })
        .collect();
    assert_eq!(
        done,
        [
            ("1".into(), TodoStatus::Completed, Some("alice".into())),
            ("2".into(), TodoStatus::Completed, Some("bob".into())),
        ]
    );
    assert!(list.keys().all(|k| team.todo_path(*k).is_file()));
}

#[test]
fn deleting_a_blocker_also_unblocks() {
    let root = tempfile::tempdir().unwrap();
    let team = team_with(root.path(), &["bob"]);
    add(&team, "a", &[]);
    add(&team, "b", &[]);
    add(&team, "c", &["1", "2"]);
    team.update_todo(&MemberName::lead(), id("1"), set(TodoStatus::Deleted))
        .unwrap();
    let err = team
        .update_todo(&name("bob"), id("3"), set(TodoStatus::InProgress))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "item 3 is blocked by #2; finish those first"
    );
    team.update_todo(&MemberName::lead(), id("2"), set(TodoStatus::Completed))
        .unwrap();
    team.update_todo(&name("bob"), id("3"), set(TodoStatus::InProgress))
        .unwrap();
}

#[test]
fn release_owner_returns_a_dead_teammates_claims_to_pending() {
    let root = tempfile::tempdir().unwrap();
    let team = team_with(root.path(), &["alice", "bob"]);
    for s in ["a", "b", "c", "d"] {
        add(&team, s, &[]);
    }
    team.update_todo(&name("alice"), id("1"), set(TodoStatus::InProgress))
        .unwrap();
    team.update_todo(&name("bob"), id("2"), set(TodoStatus::InProgress))
        .unwrap();
    team.update_todo(&name("alice"), id("3"), set(TodoStatus::InProgress))
        .unwrap();
    team.update_todo(&name("alice"), id("4"), set(TodoStatus::InProgress))
        .unwrap();
    team.update_todo(&name("alice"), id("4"), set(TodoStatus::Completed))
        .unwrap();

    assert_eq!(
        team.release_owner(&name("alice")).unwrap(),
        [id("1"), id("3")]
    );
    let list = team.list_todos().unwrap();
    for (item, status, owner) in [
        ("1", TodoStatus::Pending, None),
        ("2", TodoStatus::InProgress, Some(name("bob"))),
        ("3", TodoStatus::Pending, None),
        ("4", TodoStatus::Completed, Some(name("alice"))),
    ] {
        let got = &list[&id(item)];
        assert_eq!(
            (got.status, got.owner.clone()),
            (status, owner),
            "item {item}"
        );
    }
    // The released item is free again.
    team.update_todo(&name("bob"), id("1"), set(TodoStatus::InProgress))
        .unwrap();
    assert!(team.release_owner(&name("alice")).unwrap().is_empty());
}

#[test]
fn threads_racing_for_an_item_have_exactly_one_winner() {
    let root = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..8).map(|i| format!("t{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let team = team_with(root.path(), &refs);
    for i in 0..30 {
        add(&team, &format!("item {i}"), &[]);
    }
    let barrier = std::sync::Barrier::new(names.len());
    let wins: Vec<Vec<TodoId>> = std::thread::scope(|s| {
        let handles: Vec<_> = names
            .iter()
            .map(|n| {
                let (team, barrier) = (team.clone(), &barrier);
                s.spawn(move || {
                    let me = name(n);
                    let mut won = Vec::new();
                    for i in 1..=30u64 {
                        barrier.wait();
                        let item = id(&i.to_string());
                        match team.update_todo(&me, item, set(TodoStatus::InProgress)) {
                            Ok(_) => won.push(item),
                            Err(TeamError::AlreadyClaimed { .. }) => {}
                            Err(e) => panic!("{n}: {e}"),
                        }
                    }
                    won
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let all: Vec<TodoId> = wins.iter().flatten().copied().collect();
    let unique: BTreeSet<TodoId> = all.iter().copied().collect();
    assert_eq!(
        (all.len(), unique.len()),
        (30, 30),
        "each item exactly one winner"
    );
    for (n, won) in names.iter().zip(&wins) {
        for item in won {
            assert_eq!(team.get_todo(*item).unwrap().owner, Some(name(n)));
        }
    }
}

const RACE_DIR: &str = "CREW_TEAM_RACE_DIR";
const RACE_ROUNDS: u64 = 100;

/// The child side of the two-process race (a no-op unless the parent set `CREW_TEAM_RACE_DIR`):
/// for each round, meet the other process at a file barrier, then try to claim the round's item.
#[test]
fn race_child() {
    let Some(dir) = std::env::var_os(RACE_DIR) else {
        return;
    };
    let dir = Path::new(&dir);
    let me = std::env::var("CREW_TEAM_RACE_ME").unwrap();
    let other = std::env::var("CREW_TEAM_RACE_OTHER").unwrap();
    let team = Team::open(dir, "session-1").unwrap();
    let mut report = String::new();
    for round in 1..=RACE_ROUNDS {
        std::fs::write(dir.join(format!("barrier/{round}.{me}")), b"").unwrap();
        let theirs = dir.join(format!("barrier/{round}.{other}"));
        let deadline = Instant::now() + Duration::from_secs(60);
        while !theirs.exists() {
            assert!(
                Instant::now() < deadline,
                "{other} never reached round {round}"
            );
            std::thread::sleep(Duration::from_micros(50));
        }
        let outcome = match team.update_todo(
            &name(&me),
            id(&round.to_string()),
            set(TodoStatus::InProgress),
        ) {
            Ok(_) => "won".to_string(),
            // The loser is told who holds it (the parent checks).
            Err(e @ TeamError::AlreadyClaimed { .. }) => format!("lost {e}"),
            Err(e) => panic!("{me} round {round}: {e}"),
        };
        report.push_str(&format!("{me} {round} {outcome}\n"));
    }
    std::fs::write(dir.join(format!("result.{me}")), report).unwrap();
}

#[test]
fn two_processes_racing_for_an_item_have_exactly_one_winner_each_round() {
    let root = tempfile::tempdir().unwrap();
    let team = team_with(root.path(), &["p0", "p1"]);
    for round in 1..=RACE_ROUNDS {
        add(&team, &format!("round {round}"), &[]);
    }
    std::fs::create_dir(root.path().join("barrier")).unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = [("p0", "p1"), ("p1", "p0")]
        .iter()
        .map(|(me, other)| {
            Command::new(&exe)
                .args(["--exact", &support::own_test(module_path!(), "race_child")])
                .args(["--nocapture", "--test-threads=1"])
                .env(RACE_DIR, root.path())
                .env("CREW_TEAM_RACE_ME", me)
                .env("CREW_TEAM_RACE_OTHER", other)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .process_group(0)
                .spawn()
                .unwrap()
        })
        .collect();
    let groups: Vec<u32> = children.iter().map(|c| c.id()).collect();
    let mut winners: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    let mut reports: Vec<(String, u64)> = Vec::new();
    let mut losses: Vec<(u64, String)> = Vec::new();
    let mut results = 0;
    for (child, me) in children.into_iter().zip(["p0", "p1"]) {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "child {me} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let report = std::fs::read_to_string(root.path().join(format!("result.{me}"))).unwrap();
        for line in report.lines() {
            let parts: Vec<&str> = line.split(' ').collect();
            results += 1;
            let round: u64 = parts[1].parse().unwrap();
            reports.push((parts[0].to_string(), round));
            if parts[2] == "won" {
                winners.entry(round).or_default().push(parts[0].to_string());
            } else {
                losses.push((round, line.to_string()));
            }
        }
    }
    assert_eq!(
        results,
        2 * RACE_ROUNDS,
        "both processes reported every round"
    );
    for round in 1..=RACE_ROUNDS {
        let won = winners.get(&round).cloned().unwrap_or_default();
        assert_eq!(won.len(), 1, "round {round}: winners {won:?}");
        let item = team.get_todo(id(&round.to_string())).unwrap();
        assert_eq!(
            item.owner,
            Some(name(&won[0])),
            "round {round}: the file names the winner"
        );
        assert_eq!(item.status, TodoStatus::InProgress);
    }
    // The fault matrix's four properties, for a store written by two processes: every
    // round reported once by each (none lost or twice), every item on the list once with
    // one owner (no work lost), neither process left behind, each loser told the winner.
    let rounds = || 1..=RACE_ROUNDS;
    faults::assert_each_once(
        "round report",
        rounds().flat_map(|r| [("p0".to_string(), r), ("p1".to_string(), r)]),
        reports,
    );
    faults::assert_each_once(
        "won round",
        rounds(),
        winners.iter().flat_map(|(r, w)| w.iter().map(move |_| *r)),
    );
    faults::assert_each_once(
        "work-list item",
        rounds().map(|r| r.to_string()),
        team.list_todos().unwrap().keys().map(|k| k.to_string()),
    );
    for group in groups {
        faults::assert_no_orphans(group);
    }
    for (round, line) in &losses {
        faults::assert_told(line, &[], &format!("owned by {}", winners[round][0]));
    }
    let p0 = winners.values().filter(|w| w[0] == "p0").count();
    eprintln!(
        "two-process race: p0 won {p0} rounds, p1 won {}",
        RACE_ROUNDS as usize - p0
    );
}

const MEMBERS: usize = 16;
const PER_SENDER: usize = 125;

/// Whom sender `i` addresses its `k`th message to (never itself).
fn recipient(i: usize, k: usize) -> usize {
    (i + 1 + k % (MEMBERS - 1)) % MEMBERS
}

/// One consumer, the way the actor layer must do it: read the unread messages, record them
/// in the transcript (here a Vec that survives the "crash", as a transcript file would), then
/// acknowledge. Every few batches it crashes: its handle is dropped either before recording
/// (the batch must come again) or between recording and acknowledging (the resume-time ack
/// from the transcript must stop it coming again).
fn consume(root: &Path, me: &MemberName, expected: usize) -> (Vec<Envelope>, [usize; 2]) {
    let mut transcript: Vec<Envelope> = Vec::new();
    let mut batches = 0;
    let mut crashes = [0; 2];
    let deadline = Instant::now() + Duration::from_secs(120);
    'restart: loop {
        let team = Team::open(root, "session-1").unwrap();
        if let Some(last) = transcript.last() {
            team.ack(me, last.index + 1).unwrap();
        }
        while transcript.len() < expected {
            assert!(
                Instant::now() < deadline,
                "{me} got {} of {expected}",
                transcript.len()
            );
            let batch = team.unread(me).unwrap();
            if batch.is_empty() {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            batches += 1;
            // The schedule starts at the first batch and the second, so both crash points
            // are exercised even when a loaded machine delivers everything in one batch.
            if batches % 5 == 1 {
                crashes[0] += 1;
                continue 'restart; // crash before the transcript recorded the batch
            }
            transcript.extend(batch.iter().cloned());
            if batches % 3 == 2 {
                crashes[1] += 1;
                continue 'restart; // crash after recording, before the ack
            }
            team.ack(me, batch.last().unwrap().index + 1).unwrap();
        }
        return (transcript, crashes);
    }
}

#[test]
fn two_thousand_messages_from_sixteen_senders_arrive_once_in_order_across_crashes() {
    let root = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..MEMBERS).map(|i| format!("m{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    team_with(root.path(), &refs);
    let mut expected = vec![0; MEMBERS];
    for i in 0..MEMBERS {
        for k in 0..PER_SENDER {
            expected[recipient(i, k)] += 1;
        }
    }

    let consumed: Vec<(Vec<Envelope>, [usize; 2])> = std::thread::scope(|s| {
        for (i, n) in names.iter().enumerate() {
            let root = root.path();
            s.spawn(move || {
                let team = Team::open(root, "session-1").unwrap();
                for k in 0..PER_SENDER {
                    let to = Recipient::Member(name(&format!("m{}", recipient(i, k))));
                    team.send(&name(n), &to, Outgoing::text(format!("{n} #{k}")))
                        .unwrap();
                }
            });
        }
        let consumers: Vec<_> = names
            .iter()
            .zip(&expected)
            .map(|(n, &count)| {
                let root = root.path();
                s.spawn(move || consume(root, &name(n), count))
            })
            .collect();
        consumers.into_iter().map(|h| h.join().unwrap()).collect()
    });

    let crashes = consumed
        .iter()
        .fold([0, 0], |a, (_, c)| [a[0] + c[0], a[1] + c[1]]);
    assert!(
        crashes[0] > 0 && crashes[1] > 0,
        "both crash points were exercised: {crashes:?}"
    );
    let transcripts: Vec<Vec<Envelope>> = consumed.into_iter().map(|(t, _)| t).collect();
    let mut ids = BTreeSet::new();
    let mut total = 0;
    for (j, transcript) in transcripts.iter().enumerate() {
        let indices: Vec<u64> = transcript.iter().map(|m| m.index).collect();
        assert_eq!(
            indices,
            (0..expected[j] as u64).collect::<Vec<_>>(),
            "m{j}: each index once, in order"
        );
        let mut per_sender: BTreeMap<String, Vec<(u64, usize)>> = BTreeMap::new();
        for m in transcript {
            assert_eq!(m.to.as_str(), format!("m{j}"));
            assert!(ids.insert(m.id.clone()), "message {} delivered twice", m.id);
            let k: usize = m.message.rsplit('#').next().unwrap().parse().unwrap();
            per_sender
                .entry(m.from.to_string())
                .or_default()
                .push((m.seq, k));
        }
        for (sender, got) in per_sender {
            let i: usize = sender[1..].parse().unwrap();
            let sent: Vec<usize> = (0..PER_SENDER).filter(|&k| recipient(i, k) == j).collect();
            let seqs: Vec<u64> = (1..=sent.len() as u64).collect();
            assert_eq!(
                got.iter().map(|g| g.1).collect::<Vec<_>>(),
                sent,
                "{sender} → m{j}: order"
            );
            assert_eq!(
                got.iter().map(|g| g.0).collect::<Vec<_>>(),
                seqs,
                "{sender} → m{j}: seq"
            );
        }
        total += transcript.len();
    }
    assert_eq!(
        (total, ids.len()),
        (MEMBERS * PER_SENDER, MEMBERS * PER_SENDER)
    );
    let team = Team::open(root.path(), "session-1").unwrap();
    for n in &names {
        assert_eq!(
            team.unread_count(&name(n)).unwrap(),
            0,
            "{n} has nothing left unread"
        );
    }
    // The fault matrix's four properties, through the shared assertions: the inbox files
    // whole and holding each message sent exactly once; what each consumer recorded, each
    // once; no consumer's "crash" left a process (threads only); and each message told to
    // its recipient (above: in order, by sequence).
    let sent = || (0..MEMBERS).flat_map(|i| (0..PER_SENDER).map(move |k| format!("m{i} #{k}")));
    let on_disk = faults::assert_jsonl_whole(root.path());
    faults::assert_each_once(
        "inbox line",
        sent(),
        on_disk
            .iter()
            .map(|l| l["message"].as_str().unwrap_or_default().to_string()),
    );
    faults::assert_each_once(
        "message recorded by its recipient",
        sent(),
        transcripts.iter().flatten().map(|m| m.message.clone()),
    );
    faults::assert_no_process_under(root.path());
}
