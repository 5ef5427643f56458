//! Agent teams end to end (issue 10), through the real actors, inboxes and worktrees with
//! per-agent scripted models: the lead starts named teammates, they message each other and
//! the lead, each message reaches the recipient's next request marked with its sender, each
//! teammate writes only in its own worktree, the lead is told when teammates go idle, and
//! the run ends once the team is quiet. A panicking teammate's items return to pending and
//! the lead is told.

use crate::support;

use crewmaster::provider::ModelRequest;
use crewmaster::team::{MemberName, MemberStatus, NewTodo, Team, TodoStatus, TodoUpdate};
use support::team::{WRITER, chat, requests_of, shown, team_of, worktree};
use support::{Setup, committed_repo, faults, git, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn teammates_message_each_other_and_the_lead_in_their_own_worktrees() {
    let script = r#"{
      "turns": [
        {"tool_calls": [
          {"name": "agent", "input": {"description": "writer a", "prompt": "Write a.txt, then tell bob.", "subagent_type": "w", "name": "alice"}},
          {"name": "agent", "input": {"description": "writer b", "prompt": "Wait for alice, then write b.txt.", "subagent_type": "w", "name": "bob"}}]},
        {"text": "team started"}
      ],
      "agents": {
        "alice": {"turns": [
          {"delay_ms": 300, "tool_calls": [{"name": "write_file", "input": {"path": "a.txt", "content": "from alice"}}]},
          {"tool_calls": [{"name": "send_message", "input": {"to": "bob", "message": "a.txt is ready, your turn", "summary": "a done"}}]},
          {"text": "ALICE-PRIVATE-OUTPUT"}
        ]},
        "bob": {"turns": [
          {"text": "waiting for alice"},
          {"tool_calls": [
            {"name": "write_file", "input": {"path": "b.txt", "content": "from bob"}},
            {"name": "send_message", "input": {"to": "lead", "message": "b.txt written after alice"}}]},
          {"text": "bob done"}
        ]}
      }
    }"#;
    let mut setup = Setup::new(script, crewmaster::tools::builtin_tools());
    setup.orchestration = true;
    setup.git = true;
    setup.files = vec![(".crew/agents/w.md", WRITER.to_string())];
    let t = start(setup).await;
    let main = t.cwd();

    let outcome = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        t.session.run_until_quiet(chat("split the work"), 20),
    )
    .await
    .expect("the team goes quiet")
    .unwrap();
    assert_eq!(outcome.status.as_str(), "completed");

    let all = t.provider.requests();
    // bob's next request after alice's message holds it, marked with the sender.
    let bob = requests_of(&all, "w/bob");
    assert!(bob.len() >= 2, "bob was woken by alice's message: {bob:?}");
    assert!(
        !shown(bob[0]).contains("a.txt is ready"),
        "bob's first request came before alice wrote"
    );
    let got = shown(bob[1]);
    assert!(
        got.contains(r#"from=\"alice\""#) && got.contains("a.txt is ready, your turn"),
        "bob's second request: {got}"
    );
    // The lead's next request holds bob's message, and idle notices without output.
    let lead = requests_of(&all, "lead");
    let first = lead
        .iter()
        .find(|r| shown(r).contains("b.txt written after alice"))
        .expect("bob's message reached the lead");
    assert!(shown(first).contains(r#"from=\"bob\""#));
    // Delivered once: the whole conversation, as last sent, holds it once.
    let last = shown(lead.last().unwrap());
    assert_eq!(
        last.matches("b.txt written after alice").count(),
        1,
        "{last}"
    );
    let lead_text: String = lead.iter().map(|r| shown(r)).collect();
    assert!(lead_text.contains("Teammate alice is idle"), "{lead_text}");
    assert!(
        !lead_text.contains("ALICE-PRIVATE-OUTPUT"),
        "an idle notice carries no output"
    );
    // Each message was delivered exactly once: nobody has unread mail.
    let team = team_of(t.home.path());
    for name in ["lead", "alice", "bob"] {
        let n = MemberName::parse(name).unwrap();
        assert_eq!(team.unread_count(&n).unwrap(), 0, "{name} has unread mail");
    }
    let roster = team.roster().unwrap();
    assert!(
        roster
            .members
            .iter()
            .all(|m| m.status == MemberStatus::Idle),
        "{roster:?}"
    );

    // Files: each teammate's only in its own worktree; the main checkout is clean.
    let (a, b) = (worktree(&team, "alice"), worktree(&team, "bob"));
    assert_ne!(a, b);
    assert_eq!(
        std::fs::read_to_string(a.join("a.txt")).unwrap(),
        "from alice"
    );
    assert!(!a.join("b.txt").exists());
    assert_eq!(
        std::fs::read_to_string(b.join("b.txt")).unwrap(),
        "from bob"
    );
    assert!(!b.join("a.txt").exists());
    assert!(!main.join("a.txt").exists() && !main.join("b.txt").exists());
    assert_eq!(git(&main, &["status", "--porcelain"]), "");
    t.session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_teammate_returns_its_items_and_the_lead_is_told() {
    // carol's first turn holds until the test has claimed item 1 for her.
    let sig = tempfile::tempdir().unwrap();
    let claimed = sig.path().join("claimed");
    // Before going idle she writes a file and runs a command that leaves a child behind
    // in its group: work and a process for the fault properties to look after.
    let leave_child = format!(
        "{}sleep 600 &",
        faults::record_group(std::path::Path::new("carol.pgid"))
    );
    let script = serde_json::json!({
      "turns": [
        {"tool_calls": [
          {"name": "agent", "input": {"description": "crasher", "prompt": "Work on item 1.", "subagent_type": "wc", "name": "carol"}}]},
        {"text": "started"}
      ],
      "agents": {
        "carol": {"turns": [
          {"wait_for": claimed, "tool_calls": [
            {"name": "write_file", "input": {"path": "carol.txt", "content": "half done"}},
            {"name": "run_command", "input": {"command": leave_child}}]},
          {"text": "about to crash"},
          {"panic": true}
        ]}
      }
    })
    .to_string();
    let mut setup = Setup::new(script, crewmaster::tools::builtin_tools());
    setup.orchestration = true;
    setup.git = true;
    setup.transcript = true;
    setup.files = vec![(".crew/agents/wc.md", WRITER_WITH_COMMANDS.to_string())];
    let t = start(setup).await;
    let team = team_of(t.home.path());
    let lead = MemberName::lead();
    let carol = MemberName::parse("carol").unwrap();

    t.session.run(chat("go")).await.unwrap();
    // carol claims item 1 (as the work-list tools would) while its first turn is pending.
    let item = team
        .add_todo(
            &lead,
            NewTodo {
                subject: "the crashing part".into(),
                description: None,
                blocked_by: Vec::new(),
            },
        )
        .unwrap();
    team.update_todo(
        &carol,
        item.id,
        TodoUpdate {
            status: Some(TodoStatus::InProgress),
            owner: Some(carol.clone()),
            ..Default::default()
        },
    )
    .unwrap();
    std::fs::write(&claimed, b"").unwrap();
    // Its first run ends idle; a message wakes it and its second turn panics.
    let mailbox = crewmaster::team::actor::Mailbox::new(
        team.clone(),
        lead.clone(),
        t.session.team().unwrap().clone(),
    );
    support::wait_until("carol to be idle after her first run", || {
        t.provider
            .requests()
            .iter()
            .any(|r| r.agent.ends_with("carol"))
            && team
                .roster()
                .ok()
                .and_then(|r| r.member(&carol).map(|m| m.status == MemberStatus::Idle))
                .unwrap_or(false)
    })
    .await;
    // What carol holds before she crashes: a file in her worktree, a command's group.
    let work = faults::work_in(&t.cwd());
    let carols = work
        .iter()
        .find(|w| w.dirty.iter().any(|(f, _)| f == "carol.txt"))
        .map(|w| w.path.clone())
        .unwrap_or_else(|| panic!("carol wrote in her worktree: {work:?}"));
    let group = faults::recorded_group(&carols.join("carol.pgid"));
    mailbox
        .send(
            crewmaster::team::Recipient::Member(carol.clone()),
            crewmaster::team::Outgoing::text("go on"),
        )
        .await
        .unwrap();

    let outcome = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        t.session.run_until_quiet(chat("continue"), 10),
    )
    .await
    .expect("the team goes quiet")
    .unwrap();
    assert_eq!(outcome.status.as_str(), "completed");
    let item = team.get_todo(item.id).unwrap();
    assert_eq!(item.status, TodoStatus::Pending, "{item:?}");
    assert_eq!(item.owner, None);
    let member = team.roster().unwrap().member(&carol).cloned().unwrap();
    assert_eq!(member.status, MemberStatus::Failed);
    let told = t
        .provider
        .requests()
        .iter()
        .filter(|r| r.agent == "lead")
        .map(shown)
        .find(|s| s.contains("Teammate carol failed"))
        .expect("the lead is told of the failure");
    assert!(
        told.contains("returned to pending") && told.contains(&item.id.to_string()),
        "{told}"
    );
    // The fault matrix's four properties: the transcripts whole, the lead's holding its
    // conversation exactly; her command's processes gone; her uncommitted file kept; the
    // lead told of the failure and where her work is.
    let conversation = t.session.conversation().await.unwrap();
    let lines = faults::assert_in_process_transcript(t.home.path(), &conversation);
    faults::assert_group_gone(&group);
    faults::assert_work_kept(&t.cwd(), &work);
    let to_lead: Vec<_> = lines
        .iter()
        .filter(|l| l["agent"] == "lead")
        .cloned()
        .collect();
    faults::assert_told("", &to_lead, "Teammate carol failed");
    faults::assert_told("", &to_lead, &carols.display().to_string());
    let (cwd, home) = (t.cwd(), t.home.path().to_path_buf());
    t.session.shutdown().await;
    faults::assert_no_process_under(&cwd);
    faults::assert_no_process_under(&home);
}

/// A teammate that writes and runs commands (for the crash test).
const WRITER_WITH_COMMANDS: &str = "---\nname: wc\ndescription: test teammate\nisolation: worktree\ntools: write_file, read_file, send_message, run_command\n---\nDo your part.\n";

/// 16 members send 2,000 messages to each other through the team actor (the path
/// `send_message` takes) while each drains its inbox on wake-ups, acknowledging as the
/// runner does: every message arrives exactly once, and each sender's arrive in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_members_exchange_2000_messages_none_lost_none_twice_in_order() {
    use crewmaster::team::actor::{Mailbox, TeamActor, TeamMsg};
    use crewmaster::team::{Member, Outgoing, Recipient};
    use std::collections::HashMap;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const MEMBERS: usize = 16;
    const TOTAL: usize = 2000;
    let root = tempfile::tempdir().unwrap();
    let team = Team::open(root.path(), "load").unwrap();
    let names: Vec<MemberName> = (0..MEMBERS)
        .map(|i| MemberName::parse(&format!("m{i}")).unwrap())
        .collect();
    for n in &names {
        team.add_member(Member::new(n.clone(), n.as_str(), "w", None))
            .unwrap();
    }
    let (actor, handle) = ractor::Actor::spawn(None, TeamActor, team.clone())
        .await
        .unwrap();
    let received = Arc::new(AtomicUsize::new(0));
    let wakes = Arc::new(AtomicUsize::new(0));
    let mut consumers = Vec::new();
    let mut senders = Vec::new();
    for (i, me) in names.iter().enumerate() {
        let mailbox = Mailbox::new(team.clone(), me.clone(), actor.clone());
        let notify = Arc::new(tokio::sync::Notify::new());
        let (n, w) = (notify.clone(), wakes.clone());
        actor
            .cast(TeamMsg::Join(
                me.clone(),
                Arc::new(move || {
                    w.fetch_add(1, Ordering::Relaxed);
                    n.notify_one();
                }),
            ))
            .unwrap();
        let (mb, got) = (mailbox.clone(), received.clone());
        consumers.push(tokio::spawn(async move {
            let mut seen: Vec<(String, u64, String)> = Vec::new();
            while got.load(Ordering::SeqCst) < TOTAL {
                let d = mb.take().await;
                for e in &d.envelopes {
                    seen.push((e.from.to_string(), e.seq, e.message.clone()));
                }
                if let Some(n) = d.ack {
                    mb.ack(n).await;
                }
                got.fetch_add(d.envelopes.len(), Ordering::SeqCst);
                tokio::select! {
                    _ = notify.notified() => {}
                    _ = tokio::time::sleep(std::time::Duration::from_millis(200)) => {}
                }
            }
            seen
        }));
        let targets = names.clone();
        senders.push(tokio::spawn(async move {
            for k in 0..TOTAL / MEMBERS {
                let to = targets[(i + 1 + k % (MEMBERS - 1)) % MEMBERS].clone();
                mailbox
                    .send(Recipient::Member(to), Outgoing::text(format!("{i}:{k}")))
                    .await
                    .unwrap();
            }
        }));
    }
    for s in senders {
        s.await.unwrap();
    }
    let mut by_pair: HashMap<(String, String), Vec<usize>> = HashMap::new();
    for (r, c) in consumers.into_iter().enumerate() {
        let seen = tokio::time::timeout(std::time::Duration::from_secs(120), c)
            .await
            .expect("every message arrives")
            .unwrap();
        for (from, seq, body) in seen {
            let k: usize = body.split(':').nth(1).unwrap().parse().unwrap();
            let list = by_pair.entry((from, format!("m{r}"))).or_default();
            assert_eq!(seq as usize, list.len() + 1, "per-sender seq without gaps");
            list.push(k);
        }
    }
    let total: usize = by_pair.values().map(Vec::len).sum();
    assert_eq!(total, TOTAL, "none lost, none twice");
    for ((from, to), ks) in &by_pair {
        assert!(
            ks.windows(2).all(|w| w[0] < w[1]),
            "{from}→{to} out of order: {ks:?}"
        );
    }
    for n in &names {
        assert_eq!(team.unread_count(n).unwrap(), 0);
    }
    assert!(
        wakes.load(Ordering::Relaxed) > 0,
        "deliveries woke the recipients"
    );
    actor.stop(None);
    handle.await.unwrap();
}

/// `crew -p` with a team: the run ends by itself once the lead has finished and the team
/// is quiet (exit 0), with both teammates idle in `config.json`, the lead having received
/// bob's message, and the files only in the teammates' worktrees.
#[test]
fn crew_p_ends_when_the_team_is_quiet() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let (home, repo) = (base.join("home"), base.join("repo"));
    std::fs::create_dir_all(&home).unwrap();
    support::put(&repo, "README.md", "# repo\n");
    support::put(&repo, ".crew/agents/w.md", WRITER);
    committed_repo(&repo, &[]);
    let script = base.join("script.json");
    std::fs::write(
        &script,
        r#"{"turns": [
            {"tool_calls": [
              {"name": "agent", "input": {"description": "a", "prompt": "Write a.txt, tell bob.", "subagent_type": "w", "name": "alice"}},
              {"name": "agent", "input": {"description": "b", "prompt": "Wait for alice.", "subagent_type": "w", "name": "bob"}}]},
            {"text": "team started"}],
          "agents": {
            "alice": {"turns": [
              {"delay_ms": 300, "tool_calls": [{"name": "write_file", "input": {"path": "a.txt", "content": "a"}}]},
              {"tool_calls": [{"name": "send_message", "input": {"to": "bob", "message": "your turn"}}]},
              {"text": "alice done"}]},
            "bob": {"turns": [
              {"text": "waiting"},
              {"tool_calls": [
                {"name": "write_file", "input": {"path": "b.txt", "content": "b"}},
                {"name": "SendMessage", "input": {"to": "lead", "message": "BOB-REPORTS-DONE"}}]},
              {"text": "bob done"}]}}}"#,
    )
    .unwrap();
    let record = base.join("requests.jsonl");
    let out = support::crew(
        &repo,
        &home,
        &[
            "-p",
            "split the work",
            "--permission-mode",
            "acceptEdits",
            "--model",
            &format!("script:{}", script.display()),
            "--record-requests",
            record.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let requests = std::fs::read_to_string(&record).unwrap();
    assert!(
        requests
            .lines()
            .any(|l| l.contains("\"agent\":\"lead\"") && l.contains("BOB-REPORTS-DONE")),
        "the lead received bob's message before the run ended"
    );
    let teams = home.join(".crew/teams");
    let dir = std::fs::read_dir(&teams).unwrap().next().unwrap().unwrap();
    let team = Team::open(&teams, dir.file_name().to_str().unwrap()).unwrap();
    let roster = team.roster().unwrap();
    assert_eq!(roster.members.len(), 2, "{roster:?}");
    assert!(
        roster
            .members
            .iter()
            .all(|m| m.status == MemberStatus::Idle),
        "{roster:?}"
    );
    // Kept worktrees (they hold work) have the files; the main checkout is clean.
    let a = worktree(&team, "alice");
    support::worktree::open_workspace(&repo, &home, &a);
    assert!(a.join("a.txt").exists() && !a.join("b.txt").exists());
    let b = worktree(&team, "bob");
    support::worktree::open_workspace(&repo, &home, &b);
    assert!(b.join("b.txt").exists() && !b.join("a.txt").exists());
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
}

/// `plan_first`: the teammate works in Plan mode (no write tools), its plan goes to the lead
/// as a `plan_approval_request`, and only the lead's approval moves it to Do mode, where it
/// carries the plan out. Then the lead's `shutdown_request` is answered with a
/// `shutdown_response` and the teammate's actor ends (`finished` in the roster).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_first_waits_for_approval_and_shutdown_is_answered() {
    let script = r#"{
      "turns": [
        {"tool_calls": [
          {"name": "agent", "input": {"description": "planner", "prompt": "Plan p.txt first.", "subagent_type": "w", "name": "pat", "plan_first": true}}]},
        {"text": "started"},
        {"delay_ms": 300, "tool_calls": [{"name": "send_message", "input": {"to": "pat", "type": "plan_approval_response", "approve": true, "message": "plan approved"}}]},
        {"text": "approved"},
        {"tool_calls": [{"name": "send_message", "input": {"to": "pat", "type": "shutdown_request", "message": "wrap up"}}]},
        {"text": "asked"}
      ],
      "agents": {
        "pat": {"turns": [
          {"delay_ms": 300, "text": "PLAN: write p.txt"},
          {"tool_calls": [{"name": "write_file", "input": {"path": "p.txt", "content": "planned"}}]},
          {"text": "built"}
        ]}
      }
    }"#;
    let mut setup = Setup::new(script, crewmaster::tools::builtin_tools());
    setup.orchestration = true;
    setup.git = true;
    setup.files = vec![(".crew/agents/w.md", WRITER.to_string())];
    let t = start(setup).await;
    let outcome = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        t.session.run_until_quiet(chat("plan it"), 20),
    )
    .await
    .expect("the team goes quiet")
    .unwrap();
    assert_eq!(outcome.status.as_str(), "completed");

    let all = t.provider.requests();
    let pat = requests_of(&all, "w/pat");
    assert!(pat.len() >= 2, "{pat:?}");
    let tools = |r: &ModelRequest| r.tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    assert!(
        !tools(pat[0]).contains(&"write_file".to_string()),
        "Plan mode hides write tools: {:?}",
        tools(pat[0])
    );
    let second = shown(pat[1]);
    assert!(
        second.contains("plan_approval_response") && second.contains("PLAN: write p.txt"),
        "pat's Do run starts from the approval and its plan: {second}"
    );
    assert!(tools(pat[1]).contains(&"write_file".to_string()));
    let lead: String = requests_of(&all, "lead").into_iter().map(shown).collect();
    assert!(
        lead.contains(r#"from=\"pat\""#) && lead.contains("plan_approval_request"),
        "{lead}"
    );
    assert!(
        lead.contains(r#"shutdown_response\" approve=\"true"#),
        "{lead}"
    );
    let team = team_of(t.home.path());
    let p = worktree(&team, "pat");
    assert_eq!(std::fs::read_to_string(p.join("p.txt")).unwrap(), "planned");
    let roster = team.roster().unwrap();
    assert_eq!(
        roster.members[0].status,
        MemberStatus::Finished,
        "{roster:?}"
    );
    t.session.shutdown().await;
}

/// The lead is told when an item is completed (and by whom), at its next turn boundary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lead_is_told_when_an_item_is_completed() {
    let script = r#"{
      "turns": [
        {"tool_calls": [
          {"name": "agent", "input": {"description": "worker", "prompt": "Do item 1.", "subagent_type": "w", "name": "dan"}}]},
        {"text": "started"}
      ],
      "agents": {"dan": {"turns": [{"delay_ms": 600, "text": "did it"}]}}
    }"#;
    let mut setup = Setup::new(script, crewmaster::tools::builtin_tools());
    setup.orchestration = true;
    setup.git = true;
    setup.files = vec![(".crew/agents/w.md", WRITER.to_string())];
    let t = start(setup).await;
    let team = team_of(t.home.path());
    let dan = MemberName::parse("dan").unwrap();
    t.session.run(chat("go")).await.unwrap();
    // dan claims and completes item 1 (as todo_update would) during its turn.
    let item = team
        .add_todo(
            &MemberName::lead(),
            NewTodo {
                subject: "ship it".into(),
                description: None,
                blocked_by: Vec::new(),
            },
        )
        .unwrap();
    for status in [TodoStatus::InProgress, TodoStatus::Completed] {
        team.update_todo(
            &dan,
            item.id,
            TodoUpdate {
                status: Some(status),
                ..Default::default()
            },
        )
        .unwrap();
    }
    tokio::time::timeout(
        std::time::Duration::from_secs(30),
        t.session.run_until_quiet(chat("continue"), 10),
    )
    .await
    .expect("the team goes quiet")
    .unwrap();
    let lead: Vec<String> = requests_of(&t.provider.requests(), "lead")
        .into_iter()
        .map(shown)
        .collect();
    let told = format!("Item {} (ship it) was completed by dan", item.id);
    let last = lead.last().unwrap();
    assert_eq!(last.matches(&told).count(), 1, "told once: {last}");
    t.session.shutdown().await;
}

/// Stopping a teammate (the lead or the user) returns its claimed items to pending, marks
/// it `stopped`, and tells the lead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_teammate_returns_its_items_and_the_lead_is_told() {
    let script = r#"{
      "turns": [
        {"tool_calls": [
          {"name": "agent", "input": {"description": "slow", "prompt": "Work on item 1.", "subagent_type": "w", "name": "sam"}}]},
        {"text": "started"}
      ],
      "agents": {"sam": {"turns": [{"delay_ms": 60000, "text": "never"}]}}
    }"#;
    let mut setup = Setup::new(script, crewmaster::tools::builtin_tools());
    setup.orchestration = true;
    setup.git = true;
    setup.files = vec![(".crew/agents/w.md", WRITER.to_string())];
    let t = start(setup).await;
    let team = team_of(t.home.path());
    let sam = MemberName::parse("sam").unwrap();
    t.session.run(chat("go")).await.unwrap();
    let item = team
        .add_todo(
            &MemberName::lead(),
            NewTodo {
                subject: "long job".into(),
                description: None,
                blocked_by: Vec::new(),
            },
        )
        .unwrap();
    team.update_todo(
        &sam,
        item.id,
        TodoUpdate {
            status: Some(TodoStatus::InProgress),
            ..Default::default()
        },
    )
    .unwrap();
    let actor = t.session.team().unwrap().clone();
    let stopped = actor
        .call(
            |r| crewmaster::team::actor::TeamMsg::StopMember(sam.clone(), r),
            None,
        )
        .await
        .unwrap();
    assert!(matches!(stopped, ractor::rpc::CallResult::Success(Ok(()))));
    tokio::time::timeout(
        std::time::Duration::from_secs(30),
        t.session.run_until_quiet(chat("continue"), 10),
    )
    .await
    .expect("the team goes quiet")
    .unwrap();
    let item = team.get_todo(item.id).unwrap();
    assert_eq!((item.status, item.owner), (TodoStatus::Pending, None));
    let member = team.roster().unwrap().member(&sam).cloned().unwrap();
    assert_eq!(member.status, MemberStatus::Stopped);
    let lead: String = requests_of(&t.provider.requests(), "lead")
        .into_iter()
        .map(shown)
        .collect();
    assert!(
        lead.contains("Teammate sam was stopped") && lead.contains("returned to pending"),
        "{lead}"
    );
    t.session.shutdown().await;
}

/// The issue's whole acceptance scenario, work list included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acceptance_with_the_work_list() {
    let script = r#"{
      "turns": [
        {"tool_calls": [
          {"name": "todo_add", "input": {"subject": "write a.txt"}},
          {"name": "todo_add", "input": {"subject": "write b.txt", "blocked_by": ["1"]}},
          {"name": "agent", "input": {"description": "a", "prompt": "Do item 1, then tell bob.", "subagent_type": "w", "name": "alice"}},
          {"name": "agent", "input": {"description": "b", "prompt": "Do item 2.", "subagent_type": "w", "name": "bob"}}]},
        {"text": "team started"}
      ],
      "agents": {
        "alice": {"turns": [
          {"delay_ms": 400, "tool_calls": [{"name": "todo_update", "input": {"id": "1", "status": "in_progress"}}]},
          {"tool_calls": [{"name": "write_file", "input": {"path": "a.txt", "content": "a"}}]},
          {"tool_calls": [{"name": "todo_update", "input": {"id": "1", "status": "completed"}}]},
          {"tool_calls": [{"name": "send_message", "input": {"to": "bob", "message": "item 1 done, take 2"}}]},
          {"text": "alice done"}
        ]},
        "bob": {"turns": [
          {"tool_calls": [{"name": "todo_update", "input": {"id": "2", "status": "in_progress"}}]},
          {"text": "blocked, waiting"},
          {"tool_calls": [{"name": "todo_update", "input": {"id": "2", "status": "in_progress"}}]},
          {"tool_calls": [{"name": "write_file", "input": {"path": "b.txt", "content": "b"}}]},
          {"tool_calls": [{"name": "todo_update", "input": {"id": "2", "status": "completed"}}]},
          {"tool_calls": [{"name": "send_message", "input": {"to": "lead", "message": "item 2 done"}}]},
          {"text": "bob done"}
        ]}
      }
    }"#;
    let mut setup = Setup::new(script, crewmaster::tools::builtin_tools());
    setup.orchestration = true;
    setup.git = true;
    let writer = WRITER.replace(
        "send_message",
        "send_message, todo_update, todo_get, todo_list",
    );
    setup.files = vec![(".crew/agents/w.md", writer)];
    let t = start(setup).await;
    let main = t.cwd();
    tokio::time::timeout(
        std::time::Duration::from_secs(60),
        t.session.run_until_quiet(chat("split the work"), 30),
    )
    .await
    .expect("the team goes quiet")
    .unwrap();
    let all = t.provider.requests();
    let bob = requests_of(&all, "w/bob");
    // bob's first claim was refused, naming the blocker.
    let refused = shown(bob[1]);
    assert!(refused.contains("blocked by #1"), "{refused}");
    assert!(
        bob.iter()
            .any(|r| shown(r).contains(r#"from=\"alice\""#) && shown(r).contains("item 1 done"))
    );
    assert!(
        requests_of(&all, "lead")
            .iter()
            .any(|r| shown(r).contains(r#"from=\"bob\""#) && shown(r).contains("item 2 done"))
    );
    let team = team_of(t.home.path());
    let items = team.list_todos().unwrap();
    let owners: Vec<_> = items
        .values()
        .map(|i| (i.status, i.owner.as_ref().map(|o| o.to_string())))
        .collect();
    assert_eq!(
        owners,
        vec![
            (TodoStatus::Completed, Some("alice".to_string())),
            (TodoStatus::Completed, Some("bob".to_string()))
        ]
    );
    let (a, b) = (worktree(&team, "alice"), worktree(&team, "bob"));
    assert!(a.join("a.txt").exists() && !a.join("b.txt").exists());
    assert!(b.join("b.txt").exists() && !b.join("a.txt").exists());
    assert_eq!(git(&main, &["status", "--porcelain"]), "");
    // `crew team show --json` on such a list: tests/suite/team_cli.rs.
    t.session.shutdown().await;
}
