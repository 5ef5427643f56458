//! `team::restore` on real files (issue 10, `crew --continue`): the roster, each
//! teammate's conversation from its transcript, unread counts and the work list come
//! back; mail a conversation already holds is acknowledged (not delivered twice), mail it
//! does not hold stays unread (not lost). The crash test SIGKILLs a real writer process
//! appending to an inbox, tears the inbox's last line as a kill mid-write leaves it, and
//! crashes the consumer between persisting and acknowledging.
//!
//! What this covers of the SIGKILL acceptance test: the storage and restore
//! layer (inbox files, cursors, transcripts, roster, list) under a killed writer and a
//! crashed consumer. The team actor and teammate actors restarting on top of
//! `restore` under `crew --continue -p` are not exercised here.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crewmaster::events::{Event, EventKind};
use crewmaster::protocol::{ContentBlock, Message, Role};
use crewmaster::team::restore::{Transcripts, delivered_markers, restore};
use crewmaster::team::{
    Envelope, Member, MemberName, MemberStatus, NewTodo, Outgoing, Recipient, Team, TodoStatus,
    TodoUpdate,
};

fn name(s: &str) -> MemberName {
    MemberName::parse(s).unwrap()
}

fn to(s: &str) -> Recipient {
    Recipient::Member(name(s))
}

/// A message as the team actor injects it into a conversation.
fn marker(e: &Envelope) -> ContentBlock {
    ContentBlock::Text {
        text: format!(
            "<team-message from=\"{}\" index=\"{}\" type=\"message\">\n{}\n</team-message>",
            e.from, e.index, e.message
        ),
    }
}

/// Appends `agent`'s messages to its transcript as the recorder does.
fn record(path: &Path, agent: &str, messages: &[Message]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    for message in messages {
        let event = Event {
            agent: agent.into(),
            kind: EventKind::MessageAppended {
                message: message.clone(),
            },
        };
        writeln!(f, "{}", serde_json::to_string(&event).unwrap()).unwrap();
    }
}

fn assistant(text: &str) -> Message {
    Message {
        role: Role::Assistant,
        content: vec![ContentBlock::Text { text: text.into() }],
    }
}

fn transcripts(root: &Path) -> Transcripts {
    Transcripts {
        lead: root.join("projects/s1.jsonl"),
        agents_dir: root.join("projects/s1/agents"),
    }
}

#[test]
fn restore_brings_back_members_conversations_unread_mail_and_the_list() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let team = Team::open(&root.join("teams"), "s1").unwrap();
    for n in ["alice", "bob"] {
        team.add_member(Member::new(name(n), &format!("coder/{n}"), "coder", None))
            .unwrap();
    }
    let first = team
        .add_todo(
            &MemberName::lead(),
            NewTodo {
                subject: "one".into(),
                description: None,
                blocked_by: vec![],
            },
        )
        .unwrap();
    team.add_todo(
        &MemberName::lead(),
        NewTodo {
            subject: "two".into(),
            description: None,
            blocked_by: vec![first.id],
        },
    )
    .unwrap();
    team.update_todo(
        &name("alice"),
        first.id,
        TodoUpdate {
            status: Some(TodoStatus::InProgress),
            owner: Some(name("alice")),
            add_blocked_by: vec![],
        },
    )
    .unwrap();
    team.set_member_status(&name("alice"), MemberStatus::Working, Some(first.id))
        .unwrap();
    let mut to_alice = Vec::new();
    for i in 0..4 {
        let from = if i == 1 {
            MemberName::lead()
        } else {
            name("bob")
        };
        to_alice.extend(
            team.send(&from, &to("alice"), Outgoing::text(format!("m{i}")))
                .unwrap(),
        );
    }
    let to_lead = team
        .send(&name("alice"), &to("lead"), Outgoing::text("done"))
        .unwrap();

    // Alice's transcript holds messages 0 and 1 (the crash came before their ack), and a
    // line torn by the crash.
    let t = transcripts(root);
    let alice_log = t.agents_dir.join("coder-alice.jsonl");
    let alice_conv = vec![
        Message::user_text("you are alice"),
        assistant("waiting"),
        Message {
            role: Role::User,
            content: vec![marker(&to_alice[0]), marker(&to_alice[1])],
        },
        assistant("working on it"),
    ];
    record(&alice_log, "coder/alice", &alice_conv);
    std::fs::OpenOptions::new()
        .append(true)
        .open(&alice_log)
        .unwrap()
        .write_all(b"{\"agent\":\"coder/alice\",\"type\":\"mess")
        .unwrap();
    // The lead delivered and acknowledged its message.
    record(
        &t.lead,
        "lead",
        &[
            Message::user_text("lead task"),
            Message {
                role: Role::User,
                content: vec![marker(&to_lead[0])],
            },
        ],
    );
    team.ack(&MemberName::lead(), 1).unwrap();

    let restored = restore(&team, &t).unwrap();
    assert_eq!(restored.members.len(), 2);
    let alice = &restored.members[0];
    assert_eq!(alice.member.name, name("alice"));
    assert_eq!(alice.conversation, alice_conv);
    assert_eq!(alice.unread, 2, "messages 2 and 3 are still to deliver");
    assert_eq!(alice.member.status, MemberStatus::Idle, "its cut-off turn");
    assert_eq!(alice.member.current_item, Some(first.id));
    let unread: Vec<String> = team
        .unread(&name("alice"))
        .unwrap()
        .into_iter()
        .map(|e| e.message)
        .collect();
    assert_eq!(unread, ["m2", "m3"]);
    let bob = &restored.members[1];
    assert!(bob.conversation.is_empty() && bob.unread == 0);
    assert_eq!(restored.lead_unread, 0);
    assert_eq!(restored.todos.len(), 2);
    assert_eq!(restored.todos[&first.id].owner, Some(name("alice")));
    assert_eq!(restored.todos[&first.id].status, TodoStatus::InProgress);
    // The torn line is gone, so the recorder's next line starts clean.
    assert!(std::fs::read(&alice_log).unwrap().ends_with(b"\n"));
    assert_eq!(team.roster().unwrap().members[0].status, MemberStatus::Idle);

    // Restoring again changes nothing: nothing is delivered twice.
    let again = restore(&team, &t).unwrap();
    assert_eq!(again.members[0].unread, 2);
    assert_eq!(again.members[0].conversation, alice_conv);
}

const KILL_DIR: &str = "CREW_TEAM_KILL_DIR";

/// The writer process of the crash test: sends bob → alice until killed, writing each
/// message's number to `confirmed` once its send has returned.
#[test]
fn kill_writer_child() {
    let Some(dir) = std::env::var_os(KILL_DIR) else {
        return;
    };
    let dir = Path::new(&dir);
    let team = Team::open(&dir.join("teams"), "s1").unwrap();
    let mut confirmed = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("confirmed"))
        .unwrap();
    for n in 0.. {
        team.send(&name("bob"), &to("alice"), Outgoing::text(format!("m{n}")))
            .unwrap();
        writeln!(confirmed, "{n}").unwrap();
    }
}

/// The consumer process of the cursor crash test: delivers alice's mail into her transcript,
/// acknowledges it the way a teammate's mailbox does (the cursor file is written behind),
/// and is SIGKILLed before the flusher writes that cursor.
#[test]
fn kill_consumer_child() {
    let Some(dir) = std::env::var_os(KILL_DIR) else {
        return;
    };
    let dir = Path::new(&dir);
    let team = Team::open(&dir.join("teams"), "s1").unwrap();
    let log = transcripts(dir).agents_dir.join("coder-alice.jsonl");
    let unread = team.unread(&name("alice")).unwrap();
    record(
        &log,
        "coder/alice",
        &[Message {
            role: Role::User,
            content: unread.iter().map(marker).collect(),
        }],
    );
    team.ack_later(&name("alice"), unread.last().unwrap().index + 1)
        .unwrap();
    nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL).unwrap();
}

#[test]
fn a_consumer_killed_after_its_transcript_but_before_its_cursor_write_delivers_nothing_twice() {
    use std::os::unix::process::ExitStatusExt;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    let team = Team::open(&root.join("teams"), "s1").unwrap();
    for n in ["alice", "bob"] {
        team.add_member(Member::new(name(n), &format!("coder/{n}"), "coder", None))
            .unwrap();
    }
    for n in 0..5 {
        team.send(&name("bob"), &to("alice"), Outgoing::text(format!("m{n}")))
            .unwrap();
    }
    // The flusher's window is stretched so the kill surely lands before the cursor write.
    let status = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            &crate::support::own_test(module_path!(), "kill_consumer_child"),
            "--nocapture",
            "--test-threads=1",
        ])
        .env(KILL_DIR, &root)
        .env("CREW_TEAM_FLUSH_WINDOW_MS", "600000")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.signal(), Some(9), "the consumer was SIGKILLed");
    let t = transcripts(&root);
    let log = t.agents_dir.join("coder-alice.jsonl");
    let held = crewmaster::transcript::load_agent_conversation(&log, "coder/alice").unwrap();
    assert_eq!(
        delivered_markers(&held).count(),
        5,
        "the transcript holds the batch"
    );
    // The acknowledgement died with the process: the inbox alone would deliver it again.
    assert!(!team.cursor_path(&name("alice")).exists());
    assert_eq!(team.unread_count(&name("alice")).unwrap(), 5);

    // `crew --continue`: the transcript acknowledges what it holds.
    let restored = restore(&team, &t).unwrap();
    assert_eq!(restored.members[0].unread, 0);
    team.send(&name("bob"), &to("alice"), Outgoing::text("m5"))
        .unwrap();
    while deliver(&team, &log, 7, false) > 0 {}
    let conversation =
        crewmaster::transcript::load_agent_conversation(&log, "coder/alice").unwrap();
    let indices: Vec<u64> = delivered_markers(&conversation).map(|(_, i)| i).collect();
    assert_eq!(
        indices,
        [0, 1, 2, 3, 4, 5],
        "each message once, in inbox order"
    );
}

/// Delivers alice's unread mail into her transcript as the contract says (persist, then
/// ack), in batches of at most `batch`; `crash_before_ack` skips the ack of one batch.
fn deliver(team: &Team, log: &Path, batch: usize, crash_before_ack: bool) -> usize {
    let unread = team.unread(&name("alice")).unwrap();
    let taken: Vec<Envelope> = unread.into_iter().take(batch).collect();
    if taken.is_empty() {
        return 0;
    }
    record(
        log,
        "coder/alice",
        &[Message {
            role: Role::User,
            content: taken.iter().map(marker).collect(),
        }],
    );
    if !crash_before_ack {
        team.ack(&name("alice"), taken.last().unwrap().index + 1)
            .unwrap();
    }
    taken.len()
}

#[test]
fn a_sigkilled_writer_and_a_crashed_consumer_lose_nothing_and_deliver_nothing_twice() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    let team = Team::open(&root.join("teams"), "s1").unwrap();
    for n in ["alice", "bob"] {
        team.add_member(Member::new(name(n), &format!("coder/{n}"), "coder", None))
            .unwrap();
    }
    let t = transcripts(&root);
    let log = t.agents_dir.join("coder-alice.jsonl");

    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            &crate::support::own_test(module_path!(), "kill_writer_child"),
            "--nocapture",
            "--test-threads=1",
        ])
        .env(KILL_DIR, &root)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Deliver while the writer appends; crash the consumer once between persisting and
    // acknowledging, and heal that with `restore`, as `crew --continue` does.
    let deadline = Instant::now() + Duration::from_secs(60);
    let confirmed_count = || {
        std::fs::read_to_string(root.join("confirmed"))
            .map(|s| s.lines().count())
            .unwrap_or(0)
    };
    let mut crashed = false;
    // (Until the consumer has crashed once, too: the writer may confirm 150 quickly.)
    while !crashed || confirmed_count() < 150 {
        assert!(Instant::now() < deadline, "the writer made no progress");
        let crash = !crashed && confirmed_count() >= 40;
        if deliver(&team, &log, 7, crash) > 0 && crash {
            crashed = true;
            restore(&team, &t).unwrap();
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    // SIGKILL mid-run, then the torn line a kill mid-append leaves.
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(crashed);
    let inbox = team.inbox_path(&name("alice"));
    std::fs::OpenOptions::new()
        .append(true)
        .open(&inbox)
        .unwrap()
        .write_all(b"{\"index\":99999,\"id\":\"torn")
        .unwrap();
    let confirmed: Vec<u64> = std::fs::read_to_string(root.join("confirmed"))
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();

    // `crew --continue`: restore, a new send after the torn line, deliver the rest.
    let restored = restore(&team, &t).unwrap();
    assert_eq!(
        restored.members[0].unread,
        team.unread_count(&name("alice")).unwrap()
    );
    let after = team
        .send(
            &MemberName::lead(),
            &to("alice"),
            Outgoing::text("after the crash"),
        )
        .unwrap();
    while deliver(&team, &log, 7, false) > 0 {}

    // Every confirmed message delivered exactly once, in order; the new one after them.
    let conversation =
        crewmaster::transcript::load_agent_conversation(&log, "coder/alice").unwrap();
    let indices: Vec<u64> = delivered_markers(&conversation).map(|(_, i)| i).collect();
    let expected: Vec<u64> = (0..indices.len() as u64).collect();
    assert_eq!(indices, expected, "each message once, in inbox order");
    let history = team.inbox_history(&name("alice")).unwrap();
    assert_eq!(history.len(), indices.len());
    let bodies: BTreeMap<u64, String> = history
        .iter()
        .filter(|e| e.from == name("bob"))
        .map(|e| (e.seq, e.message.clone()))
        .collect();
    for n in &confirmed {
        assert_eq!(
            bodies.get(&(n + 1)).map(String::as_str),
            Some(format!("m{n}").as_str()),
            "confirmed message {n} lost or out of order"
        );
    }
    assert!(bodies.len() >= confirmed.len() && bodies.len() <= confirmed.len() + 1);
    assert_eq!(history.last().unwrap().id, after[0].id);
    assert_eq!(team.unread_count(&name("alice")).unwrap(), 0);
}
