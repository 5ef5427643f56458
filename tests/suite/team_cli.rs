//! `crew team show [--json]` and `crew team send NAME MESSAGE`, run as the real binary with
//! HOME in a temp dir, against the team directory a real `crew -p` run created (the lead adds
//! the items through its tools; teammates and mail are added through the storage core, as the
//! Team actor would).

use crate::support;

use std::path::{Path, PathBuf};

use crewmaster::team::{
    Member, MemberName, MemberStatus, Outgoing, Recipient, Team, TodoId, TodoStatus, TodoUpdate,
};
use serde_json::{Value, json};

struct Run {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    proj: PathBuf,
    session: String,
}

/// A `crew -p` run whose lead adds item 1 and item 2 blocked by 1.
fn lead_run() -> Run {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let (home, proj) = (base.join("home"), base.join("proj"));
    std::fs::create_dir_all(&home).unwrap();
    support::put(&proj, "README.md", "# p\n");
    let script = base.join("script.json");
    std::fs::write(
        &script,
        // Priced as claude-sonnet-4-5: the first turn costs $0.003.
        json!({"model": "claude-sonnet-4-5", "turns": [
            {"tool_calls": [
                {"name": "todo_add", "input": {"subject": "write a.txt"}},
                {"name": "todo_add", "input": {"subject": "write b.txt", "blocked_by": [1]}}
            ], "usage": {"input_tokens": 1000, "output_tokens": 0}},
            {"text": "listed"}
        ]})
        .to_string(),
    )
    .unwrap();
    let out = support::crew(
        &proj,
        &home,
        &[
            "-p",
            "plan",
            "--output-format",
            "json",
            "--model",
            &format!("script:{}", script.display()),
        ],
    );
    // The run leaves its list undone on purpose (the tests read it): it says so, and
    // exits 1, naming the item nothing blocks.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("1 work item(s) left undone: #1 write a.txt (pending)"),
        "{stderr}"
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["unfinished_items"], json!(["#1 write a.txt (pending)"]));
    let session = v["session_id"].as_str().unwrap().to_string();
    Run {
        _tmp: tmp,
        home,
        proj,
        session,
    }
}

fn team_of(run: &Run) -> Team {
    Team::open(&run.home.join(".crew/teams"), &run.session).unwrap()
}

fn name(s: &str) -> MemberName {
    MemberName::parse(s).unwrap()
}

fn crew(run: &Run, args: &[&str]) -> std::process::Output {
    support::crew(&run.proj, &run.home, args)
}

fn show_json(run: &Run, args: &[&str]) -> Value {
    let mut all = vec!["team", "show", "--json"];
    all.extend_from_slice(args);
    let out = crew(run, &all);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

fn member<'a>(v: &'a Value, n: &str) -> &'a Value {
    v["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == n)
        .unwrap_or_else(|| panic!("no member {n} in {v:#}"))
}

#[test]
fn show_lists_members_items_blockers_and_unread_counts() {
    let run = lead_run();
    let team = team_of(&run);
    for n in ["alice", "bob"] {
        team.add_member(Member::new(name(n), &format!("{n}-1"), "coder", None))
            .unwrap();
    }
    let one = TodoId::parse("id", "1").unwrap();
    team.update_todo(
        &name("alice"),
        one,
        TodoUpdate {
            status: Some(TodoStatus::InProgress),
            ..TodoUpdate::default()
        },
    )
    .unwrap();
    team.update_roster(|r| {
        let alice = r.member_mut(&name("alice")).unwrap();
        alice.status = MemberStatus::Working;
        alice.current_item = Some(one);
        Ok(())
    })
    .unwrap();
    let bob = Recipient::parse("bob").unwrap();
    team.send(&name("alice"), &bob, Outgoing::text("1 is under way"))
        .unwrap();
    team.send(&MemberName::lead(), &bob, Outgoing::text("then take 2"))
        .unwrap();
    team.ack(&name("bob"), 1).unwrap();

    // With no --session, the project's newest session with a team is shown.
    let v = show_json(&run, &[]);
    assert_eq!(v["team"], run.session.as_str());
    let alice = member(&v, "alice");
    assert_eq!(
        (&alice["status"], &alice["current_item"], &alice["unread"]),
        (&json!("working"), &json!("1"), &json!(0))
    );
    assert!(alice["last_activity_ms"].as_u64().unwrap() > 0);
    let bob = member(&v, "bob");
    assert_eq!(
        (&bob["status"], &bob["current_item"], &bob["unread"]),
        (&json!("idle"), &Value::Null, &json!(1))
    );
    assert_eq!(member(&v, "lead")["unread"], 0);
    // Each member's cost: the lead's from its run, none yet for the teammates.
    let lead_cost = member(&v, "lead")["cost_usd"].as_f64().unwrap();
    assert!((lead_cost - 0.003).abs() < 1e-9, "{lead_cost}");
    assert_eq!(member(&v, "bob")["cost_usd"], Value::Null);
    let items = v["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(
        (&items[0]["status"], &items[0]["owner"]),
        (&json!("in_progress"), &json!("alice"))
    );
    assert_eq!(
        (&items[1]["blocked_by"], &items[1]["open_blockers"]),
        (&json!(["1"]), &json!(["1"]))
    );

    // The text form says the same.
    let out = crew(&run, &["team", "show", "--session", &run.session]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("#1 [in_progress] write a.txt — owner alice"),
        "{text}"
    );
    assert!(
        text.contains("#2 [pending] write b.txt — blocked by #1"),
        "{text}"
    );
    let bob_line = text
        .lines()
        .find(|l| l.trim_start().starts_with("bob"))
        .unwrap();
    assert!(
        bob_line.contains("idle") && bob_line.contains("unread 1") && bob_line.ends_with("cost -"),
        "{bob_line}"
    );
    let lead_line = text
        .lines()
        .find(|l| l.trim_start().starts_with("lead"))
        .unwrap();
    assert!(lead_line.ends_with("cost $0.0030"), "{lead_line}");
}

#[test]
fn send_appends_to_the_inbox_as_the_user() {
    let run = lead_run();
    let team = team_of(&run);
    team.add_member(Member::new(name("alice"), "a-1", "coder", None))
        .unwrap();
    let out = crew(
        &run,
        &[
            "team",
            "send",
            "alice",
            "please add tests",
            "--summary",
            "tests",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("sent to alice (message 1"));
    let got = team.unread(&name("alice")).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(
        (
            got[0].from.as_str(),
            got[0].message.as_str(),
            got[0].summary.as_deref()
        ),
        ("user", "please add tests", Some("tests"))
    );
    assert_eq!(member(&show_json(&run, &[]), "alice")["unread"], 1);

    // `*` reaches the lead and every teammate.
    let out = crew(&run, &["team", "send", "*", "stand-up in 5"]);
    assert!(out.status.success());
    assert_eq!(team.unread_count(&MemberName::lead()).unwrap(), 1);
    assert_eq!(team.unread_count(&name("alice")).unwrap(), 2);

    // Unknown and unsafe names are refused, and nothing is written for them.
    for bad in ["carol", "../alice"] {
        let out = crew(&run, &["team", "send", bad, "hi"]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("to"), "{err}");
        assert!(!team.inbox_dir().join(format!("{bad}.jsonl")).exists());
    }
    let err =
        String::from_utf8_lossy(&crew(&run, &["team", "send", "carol", "hi"]).stderr).to_string();
    assert!(err.contains("no member named carol"), "{err}");
}

#[test]
fn without_a_team_the_commands_say_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let dir: &Path = tmp.path();
    let out = support::crew(dir, dir, &["team", "show"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--session"));
    let out = support::crew(
        dir,
        dir,
        &["team", "send", "bob", "hi", "--session", "nope"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--session nope: that session has no team")
    );
}

/// A live team (the real team actor, a member joined with its waker, its inbox state warm
/// from a first delivery) picks up mail that `crew team send` appends from another process:
/// the actor's poll wakes the member, which takes exactly the new message; once the team is
/// flushed, `crew team show` in another process sees the write-behind acknowledgement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_team_wakes_its_member_for_mail_sent_from_another_terminal() {
    use crewmaster::team::actor::{Mailbox, TeamActor, TeamMsg};
    use ractor::Actor;

    let run = lead_run();
    let team = team_of(&run);
    team.add_member(Member::new(name("alice"), "a-1", "coder", None))
        .unwrap();
    let (actor, _) = Actor::spawn(None, TeamActor, team.clone()).await.unwrap();
    let (tx, mut woken) = tokio::sync::mpsc::unbounded_channel();
    actor
        .cast(TeamMsg::Join(
            name("alice"),
            std::sync::Arc::new(move || {
                let _ = tx.send(());
            }),
        ))
        .unwrap();
    let mailbox = |me: &str| Mailbox::new(team.clone(), name(me), actor.clone());
    let alice = mailbox("alice");
    let bound = std::time::Duration::from_secs(30);

    mailbox("lead")
        .send(Recipient::Member(name("alice")), Outgoing::text("first"))
        .await
        .unwrap();
    tokio::time::timeout(bound, woken.recv()).await.unwrap();
    let first = alice.take().await;
    assert_eq!(first.envelopes.len(), 1);
    alice.ack(first.ack.unwrap()).await;

    let out = {
        let (proj, home) = (run.proj.clone(), run.home.clone());
        tokio::task::spawn_blocking(move || {
            support::crew(&proj, &home, &["team", "send", "alice", "from afar"])
        })
        .await
        .unwrap()
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let second = loop {
        tokio::time::timeout(bound, woken.recv())
            .await
            .expect("the team actor's poll wakes alice for mail from another process");
        let delivery = alice.take().await;
        if !delivery.envelopes.is_empty() {
            break delivery;
        }
    };
    let got: Vec<_> = second
        .envelopes
        .iter()
        .map(|e| (e.index, e.from.as_str(), e.message.as_str()))
        .collect();
    assert_eq!(got, [(1, "user", "from afar")]);
    alice.ack(second.ack.unwrap()).await;
    team.flush().unwrap();
    assert_eq!(member(&show_json(&run, &[]), "alice")["unread"], 0);
    actor.stop(None);
}
