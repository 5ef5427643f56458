//! Teammates on worker machines (issue 16), end to end: `crew worker` processes on
//! loopback sharing a cookie file, an in-process scripted lead whose session has joined
//! them, real git. A remote teammate is woken by the lead's mail, writes in its worktree
//! on the worker, replies by mail, and its branch comes back to the lead; idle, it is
//! announced and its mail acknowledged as a local teammate's is; a lost worker fails it
//! with "worker lost" and keeps that branch, and a run that fails on the worker is
//! reported naming the kept worktree, as a local teammate's failure is. An explicit `ask` rule on a remote
//! teammate reaches the lead's approver: approved, the call runs on the worker (once —
//! a "for the session" answer does not widen the worker's rules); refused by the
//! headless policy, nothing is written. Waits are on files and events, each bounded.

use crate::support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crewmaster::approver::ApprovalAnswer;
use crewmaster::approver::actor::ApproverPolicy;
use crewmaster::events::EventKind;
use crewmaster::permission::{Layer, Verdict};
use crewmaster::team::{MemberName, MemberStatus};
use crewmaster::worker::pool_actor::Pool;
use crewmaster::worker::protocol::RuleWire;
use support::team::{chat, requests_of, shown, team_of, team_setup, worktree};
use support::worker::{WorkerProcess, start_worker, write_cookie};
use support::{git, start};

/// A teammate definition that always runs on a worker.
const REMOTE: &str = "---\nname: w\ndescription: remote teammate\nisolation: worktree\nplacement: remote\ntools: write_file, read_file, send_message\n---\nDo your part.\n";

/// The same, narrowed to acceptEdits (the lead runs in bypassPermissions, so its own
/// `agent` call does not ask): writes are allowed unless a rule asks.
const REMOTE_EDITS: &str = "---\nname: w\ndescription: remote teammate\nisolation: worktree\nplacement: remote\npermissionMode: acceptEdits\ntools: write_file, read_file, send_message\n---\nDo your part.\n";

/// The tests of this file share one process, and so ractor's process-wide registry of
/// groups where a joining lead finds its workers: one cluster at a time.
static ONE_CLUSTER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// One worker process and a pool joined to it, the worker's agents replaying `script`.
struct Cluster {
    home: tempfile::TempDir,
    worker: WorkerProcess,
    pool: Arc<Pool>,
}

async fn cluster(worker_script: &str, rules: Vec<RuleWire>) -> Cluster {
    let home = tempfile::tempdir().unwrap();
    let cookie = home.path().join("cookie");
    write_cookie(&cookie, "a-cookie-of-enough-length-1234");
    let script = home.path().join("worker-script.json");
    std::fs::write(&script, worker_script).unwrap();
    let worker = start_worker(home.path(), &cookie, "w1", 2);
    let pool = Pool::join(
        std::slice::from_ref(&worker.addr),
        "a-cookie-of-enough-length-1234".into(),
        rules,
        Some(format!("script:{}", script.display())),
        Default::default(),
    )
    .await
    .expect("the lead joins the worker");
    Cluster { home, worker, pool }
}

/// Every file called `name` under `dir`.
fn find(dir: &Path, name: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() && !p.is_symlink() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == name) {
                found.push(p);
            }
        }
    }
    found
}

fn ask_rule() -> Vec<RuleWire> {
    vec![RuleWire {
        text: "Write(asked.txt)".into(),
        kind: Verdict::Ask,
        layer: Layer::Project,
    }]
}

/// The lead starts alice on the worker and mails her; only that mail makes her write
/// (her first run just waits). Her note is written on the worker, her reply reaches the
/// lead's conversation, and her branch comes back with the file — none in the lead's
/// checkout. Idle, she is announced to the lead and the mail she read is acknowledged in
/// her inbox on the lead, as for a local teammate. Then her worker is killed: she is
/// failed with "worker lost", the lead is told where her kept worktree is, and the branch
/// that came back is still there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_teammate_is_woken_by_mail_writes_replies_and_its_branch_comes_back() {
    let _one = ONE_CLUSTER.lock().await;
    let worker_script = r#"{"agents": {"alice": {"turns": [
        {"text": "waiting for mail"},
        {"tool_calls": [{"name": "write_file", "input": {"path": "note.txt", "content": "from alice\n"}}]},
        {"tool_calls": [{"name": "send_message", "input": {"to": "lead", "message": "ALICE-WROTE-THE-NOTE"}}]},
        {"text": "done"}
    ]}}}"#;
    let mut c = cluster(worker_script, Vec::new()).await;
    let lead_script = r#"{"turns": [
        {"tool_calls": [
          {"name": "agent", "input": {"description": "notes", "prompt": "Wait for mail.", "subagent_type": "w", "name": "alice"}},
          {"name": "send_message", "input": {"to": "alice", "message": "LEAD-SAYS-WRITE-THE-NOTE"}}]},
        {"text": "started"},
        {"text": "read"}, {"text": "read"}, {"text": "read"}, {"text": "read"}
    ]}"#;
    let mut setup = team_setup(lead_script, vec![(".crew/agents/w.md", REMOTE.to_string())]);
    setup.workers = Some(c.pool.clone());
    let t = start(setup).await;
    tokio::time::timeout(
        Duration::from_secs(180),
        t.session.run_until_quiet(chat("go"), 10),
    )
    .await
    .expect("the team goes quiet")
    .unwrap();
    let all = t.provider.requests();
    assert!(
        requests_of(&all, "lead")
            .into_iter()
            .map(shown)
            .any(|s| s.contains("ALICE-WROTE-THE-NOTE") && s.contains("from=\\\"alice\\\"")),
        "alice's reply reached the lead, sent as alice"
    );
    let team = team_of(t.home.path());
    let alice = MemberName::parse("alice").unwrap();
    let dir = worktree(&team, "alice");
    assert_eq!(
        std::fs::read_to_string(dir.join("note.txt")).unwrap(),
        "from alice\n"
    );
    let branch = git(&dir, &["rev-parse", "--abbrev-ref", "HEAD"]);
    assert!(branch.starts_with("crew/alice-"), "{branch}");
    assert_eq!(
        git(&t.cwd(), &["show", &format!("{branch}:note.txt")]),
        "from alice"
    );
    assert!(
        !t.cwd().join("note.txt").exists(),
        "nothing in the lead's checkout"
    );
    assert!(
        !find(&c.worker.workdir, "note.txt").is_empty(),
        "the note was written on the worker"
    );
    let roster = team.roster().unwrap();
    assert_eq!(roster.member(&alice).unwrap().status, MemberStatus::Idle);
    // The shared lifecycle: idle is announced, and what she read is acknowledged (an
    // idle team's inbox cursors are on disk).
    assert!(
        told(&t, "Teammate alice is idle").await.is_some(),
        "the lead is told alice is idle"
    );
    assert_eq!(
        team.unread(&alice).unwrap(),
        Vec::new(),
        "the mail relayed to alice is acknowledged on the lead"
    );

    // The worker dies: alice fails with "worker lost"; her returned branch stays.
    c.worker.child.kill().unwrap();
    c.worker.child.wait().unwrap();
    support::wait_until("alice to be failed", || {
        team.roster()
            .unwrap()
            .member(&alice)
            .is_some_and(|m| m.status == MemberStatus::Failed)
    })
    .await;
    let notice = told(&t, "worker lost")
        .await
        .expect("the lead is told alice's worker was lost");
    assert!(
        notice.contains(&format!("kept at {} on branch {branch}", dir.display())),
        "the notice names her kept worktree: {notice}"
    );
    assert_eq!(
        git(&t.cwd(), &["show", &format!("{branch}:note.txt")]),
        "from alice",
        "a branch that came back is never deleted"
    );
    t.session.shutdown().await;
    drop(c.home);
}

/// What the lead was told containing `needle`: in a request it was sent, its pending
/// notices (taking them) or its inbox — the notice of a teammate's failure, as the lead
/// sees it wherever it is in its way.
async fn told(t: &support::TestSession, needle: &str) -> Option<String> {
    let all = t.provider.requests();
    let shown_to_lead = requests_of(&all, "lead").into_iter().map(shown);
    let inbox = std::fs::read_to_string(
        t.home
            .path()
            .canonicalize()
            .unwrap()
            .join("teams/session/inboxes/lead.jsonl"),
    )
    .unwrap_or_default();
    let found = shown_to_lead
        .chain(team_notices(t).await)
        .chain(inbox.lines().map(str::to_string))
        .find(|s| s.contains(needle));
    found.map(|s| {
        // The part from the needle on (a request holds the whole conversation).
        let from = s.find(needle).unwrap_or(0);
        s[from..].to_string()
    })
}

/// The lead's pending notices (what its next turn boundary would show).
async fn team_notices(t: &support::TestSession) -> Vec<String> {
    let team = t.session.team().expect("a team");
    match team
        .call(
            crewmaster::team::actor::TeamMsg::TakeNotices,
            Some(Duration::from_secs(10)),
        )
        .await
    {
        Ok(ractor::rpc::CallResult::Success(n)) => n,
        _ => Vec::new(),
    }
}

/// alice writes asked.txt twice under an `ask` rule in acceptEdits. Both Asks reach the
/// lead's approver naming her; the first is allowed "for the session" and runs on the
/// worker, the second asks again (the worker applied that answer to one call) and is
/// refused. Her branch comes back with the first content.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_rule_on_a_remote_teammate_reaches_the_leads_approver_and_runs_once() {
    let _one = ONE_CLUSTER.lock().await;
    let worker_script = r#"{"agents": {"alice": {"turns": [
        {"tool_calls": [{"name": "write_file", "input": {"path": "asked.txt", "content": "first"}}]},
        {"tool_calls": [{"name": "write_file", "input": {"path": "asked.txt", "content": "second"}}]},
        {"text": "done"}
    ]}}}"#;
    let c = cluster(worker_script, ask_rule()).await;
    let lead_script = r#"{"turns": [
        {"tool_calls": [
          {"name": "agent", "input": {"description": "asks", "prompt": "Write asked.txt.", "subagent_type": "w", "name": "alice"}}]},
        {"text": "started"},
        {"text": "read"}, {"text": "read"}, {"text": "read"}
    ]}"#;
    let (tx, mut asks) = tokio::sync::mpsc::unbounded_channel();
    let mut setup = team_setup(
        lead_script,
        vec![(".crew/agents/w.md", REMOTE_EDITS.to_string())],
    );
    setup.approver = ApproverPolicy::Forward(tx);
    setup.workers = Some(c.pool.clone());
    let t = start(setup).await;
    let approve = async {
        let mut seen = Vec::new();
        for answer in [
            ApprovalAnswer::AllowSession,
            ApprovalAnswer::Deny {
                message: Some("not twice".into()),
            },
        ] {
            let pending = asks.recv().await.expect("the approver channel is open");
            seen.push((
                pending.request.agent.clone(),
                pending.request.teammate.clone(),
                pending.request.call.name.clone(),
            ));
            let _ = pending.reply.send(answer);
        }
        seen
    };
    let (outcome, seen) = tokio::time::timeout(Duration::from_secs(180), async {
        tokio::join!(t.session.run_until_quiet(chat("go"), 10), approve)
    })
    .await
    .expect("both Asks arrive and the team goes quiet");
    outcome.unwrap();
    let alice = (
        "w/alice".to_string(),
        Some("alice".to_string()),
        "write_file".to_string(),
    );
    assert_eq!(
        seen,
        vec![alice.clone(), alice],
        "both Asks came to the lead, naming alice"
    );
    let team = team_of(t.home.path());
    let dir = worktree(&team, "alice");
    assert_eq!(
        std::fs::read_to_string(dir.join("asked.txt")).unwrap(),
        "first"
    );
    let on_worker = find(&c.worker.workdir, "asked.txt");
    assert_eq!(on_worker.len(), 1, "{on_worker:?}");
    assert_eq!(std::fs::read_to_string(&on_worker[0]).unwrap(), "first");
    assert!(!t.cwd().join("asked.txt").exists());
    t.session.shutdown().await;
}

/// The same Ask under the lead's headless approver is refused: the refusal is published
/// on the lead's bus for alice, and nothing is written on the worker or comes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_teammates_ask_refused_by_the_headless_lead_writes_nothing() {
    let _one = ONE_CLUSTER.lock().await;
    let worker_script = r#"{"agents": {"alice": {"turns": [
        {"tool_calls": [{"name": "write_file", "input": {"path": "asked.txt", "content": "never"}}]},
        {"text": "done"}
    ]}}}"#;
    let c = cluster(worker_script, ask_rule()).await;
    let lead_script = r#"{"turns": [
        {"tool_calls": [
          {"name": "agent", "input": {"description": "asks", "prompt": "Write asked.txt.", "subagent_type": "w", "name": "alice"}}]},
        {"text": "started"},
        {"text": "read"}, {"text": "read"}, {"text": "read"}
    ]}"#;
    let mut setup = team_setup(
        lead_script,
        vec![(".crew/agents/w.md", REMOTE_EDITS.to_string())],
    );
    setup.approver = ApproverPolicy::Headless;
    setup.workers = Some(c.pool.clone());
    let mut t = start(setup).await;
    tokio::time::timeout(
        Duration::from_secs(180),
        t.session.run_until_quiet(chat("go"), 10),
    )
    .await
    .expect("the team goes quiet")
    .unwrap();
    let mut refused = false;
    while let Ok(e) = t.events.try_recv() {
        if e.agent == "w/alice"
            && let EventKind::ApprovalRefused { reason, .. } = &e.kind
        {
            refused = reason.contains("headless");
        }
    }
    if !refused {
        for r in t.provider.requests() {
            eprintln!("REQ {}: {}", r.agent, shown(&r));
        }
        eprintln!("WORKER LOG: {}", c.worker.log());
    }
    assert!(refused, "the lead's headless approver refused alice's Ask");
    let team = team_of(t.home.path());
    assert!(!worktree(&team, "alice").join("asked.txt").exists());
    assert!(
        find(&c.worker.workdir, "asked.txt").is_empty(),
        "nothing on the worker"
    );
    assert!(!t.cwd().join("asked.txt").exists());
    t.session.shutdown().await;
}

/// The lead asks alice to shut down right after starting her: she answers (as alice),
/// her work comes back with her final branch, she leaves the team `finished`, and the
/// worker removes its copy once the lead holds the branch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_teammate_shuts_down_on_request_and_its_final_branch_comes_back() {
    let _one = ONE_CLUSTER.lock().await;
    let worker_script = r#"{"agents": {"alice": {"turns": [
        {"tool_calls": [{"name": "write_file", "input": {"path": "done.txt", "content": "done"}}]},
        {"text": "finished my part"}
    ]}}}"#;
    let c = cluster(worker_script, Vec::new()).await;
    let lead_script = r#"{"turns": [
        {"tool_calls": [
          {"name": "agent", "input": {"description": "part", "prompt": "Write done.txt.", "subagent_type": "w", "name": "alice"}},
          {"name": "send_message", "input": {"to": "alice", "message": "wrap up", "type": "shutdown_request"}}]},
        {"text": "started"},
        {"text": "read"}, {"text": "read"}, {"text": "read"}
    ]}"#;
    let mut setup = team_setup(lead_script, vec![(".crew/agents/w.md", REMOTE.to_string())]);
    setup.workers = Some(c.pool.clone());
    let t = start(setup).await;
    tokio::time::timeout(
        Duration::from_secs(180),
        t.session.run_until_quiet(chat("go"), 10),
    )
    .await
    .expect("the team goes quiet")
    .unwrap();
    let team = team_of(t.home.path());
    let alice = MemberName::parse("alice").unwrap();
    support::wait_until("alice to leave", || {
        team.roster()
            .unwrap()
            .member(&alice)
            .is_some_and(|m| m.status == MemberStatus::Finished)
    })
    .await;
    let inbox = std::fs::read_to_string(
        t.home
            .path()
            .canonicalize()
            .unwrap()
            .join("teams/session/inboxes/lead.jsonl"),
    )
    .unwrap();
    assert!(
        inbox.contains("shutdown_response") && inbox.contains("\"from\":\"alice\""),
        "{inbox}"
    );
    let branch = git(
        &t.cwd(),
        &[
            "branch",
            "--list",
            "crew/alice-*",
            "--format=%(refname:short)",
        ],
    );
    assert!(branch.starts_with("crew/alice-"), "{branch}");
    assert_eq!(
        git(&t.cwd(), &["show", &format!("{branch}:done.txt")]),
        "done"
    );
    assert!(!t.cwd().join("done.txt").exists());
    support::wait_until("the worker to drop its copy", || {
        find(&c.worker.workdir, "done.txt").is_empty()
    })
    .await;
    t.session.shutdown().await;
}

/// alice writes a file on the worker and then her model fails there: her branch comes
/// back with the file, she is failed, and the lead's notice gives the reason and names
/// her kept worktree and branch — the same notice a local teammate's failure gives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_teammate_whose_run_fails_is_reported_naming_its_kept_worktree() {
    let _one = ONE_CLUSTER.lock().await;
    let worker_script = r#"{"agents": {"alice": {"turns": [
        {"tool_calls": [{"name": "write_file", "input": {"path": "part.txt", "content": "half done"}}]},
        {"error": "REMOTE-UPSTREAM-EXPLODED"}
    ]}}}"#;
    let c = cluster(worker_script, Vec::new()).await;
    let lead_script = r#"{"turns": [
        {"tool_calls": [
          {"name": "agent", "input": {"description": "part", "prompt": "Write part.txt.", "subagent_type": "w", "name": "alice"}}]},
        {"text": "started"},
        {"text": "read"}, {"text": "read"}, {"text": "read"}
    ]}"#;
    let mut setup = team_setup(lead_script, vec![(".crew/agents/w.md", REMOTE.to_string())]);
    setup.workers = Some(c.pool.clone());
    let t = start(setup).await;
    tokio::time::timeout(
        Duration::from_secs(180),
        t.session.run_until_quiet(chat("go"), 10),
    )
    .await
    .expect("the team goes quiet")
    .unwrap();
    let team = team_of(t.home.path());
    let alice = MemberName::parse("alice").unwrap();
    support::wait_until("alice to be failed", || {
        team.roster()
            .unwrap()
            .member(&alice)
            .is_some_and(|m| m.status == MemberStatus::Failed)
    })
    .await;
    let dir = worktree(&team, "alice");
    let branch = git(
        &t.cwd(),
        &[
            "branch",
            "--list",
            "crew/alice-*",
            "--format=%(refname:short)",
        ],
    );
    assert!(branch.starts_with("crew/alice-"), "{branch}");
    assert_eq!(
        git(&t.cwd(), &["show", &format!("{branch}:part.txt")]),
        "half done",
        "her work came back before she was failed"
    );
    let notice = told(&t, "Teammate alice failed")
        .await
        .expect("the lead is told alice failed");
    assert!(
        notice.contains("REMOTE-UPSTREAM-EXPLODED"),
        "the notice gives the reason: {notice}"
    );
    assert!(
        notice.contains(&format!(
            "[worktree] kept at {} on branch {branch}",
            dir.display()
        )),
        "the notice names her kept worktree: {notice}"
    );
    assert!(!t.cwd().join("part.txt").exists());
    t.session.shutdown().await;
}
