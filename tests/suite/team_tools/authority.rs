//! Team authority: only the lead or an item's current owner changes its owner (a teammate
//! cannot claim an item assigned to another, nor give one away), each refusal an error
//! naming the rule with nothing written; and the team's lock cannot be taken by a
//! sandboxed command, so the lead's `todo_add` never waits on one.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Fixture, TodoId, TodoStatus, last_tool_results, name, support};

#[tokio::test]
async fn a_teammate_cannot_claim_or_reassign_an_item_assigned_to_another() {
    let f = Fixture::new();
    f.call("lead", "todo_add", json!({"subject": "write a.txt"}))
        .await
        .unwrap();
    f.call("lead", "todo_update", json!({"id": "1", "owner": "bob"}))
        .await
        .unwrap();
    let one = TodoId::parse("id", "1").unwrap();
    // alice, in both spellings, claiming or taking the owner field.
    for (tool, input) in [
        ("todo_update", json!({"id": "1", "status": "in_progress"})),
        ("TaskUpdate", json!({"taskId": 1, "status": "in_progress"})),
        ("TaskUpdate", json!({"taskId": "1", "owner": "alice"})),
        (
            "todo_update",
            json!({"id": "1", "owner": "alice", "status": "in_progress"}),
        ),
        ("todo_update", json!({"id": "1", "status": "completed"})),
    ] {
        let err = f.call("alice", tool, input.clone()).await.unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("only the lead or the current owner (bob)")
                || text.contains("only bob or the lead"),
            "{tool} {input}: {text}"
        );
        let item = f.team.get_todo(one).unwrap();
        assert_eq!(
            (item.status, item.owner),
            (TodoStatus::Pending, Some(name("bob"))),
            "{tool} {input} changed the item"
        );
    }
    // A teammate gives an unowned item away: refused, naming the rule.
    f.call("lead", "todo_add", json!({"subject": "write b.txt"}))
        .await
        .unwrap();
    let err = f
        .call("alice", "todo_update", json!({"id": "2", "owner": "bob"}))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("only the lead or the current owner may change the owner of item 2"),
        "{err}"
    );
    let two = f.team.get_todo(TodoId::parse("id", "2").unwrap()).unwrap();
    assert_eq!(two.owner, None);
    // bob, the owner, claims item 1; the lead reassigns it to alice.
    f.call(
        "bob",
        "todo_update",
        json!({"id": "1", "status": "in_progress"}),
    )
    .await
    .unwrap();
    f.call("lead", "todo_update", json!({"id": "1", "owner": "alice"}))
        .await
        .unwrap();
    assert_eq!(f.team.get_todo(one).unwrap().owner, Some(name("alice")));
}

/// A background command that tries to hold the team's lock for 30 s, by `flock(1)` and by
/// python's `fcntl.flock` on a read-only descriptor; it writes `tried-*` after trying
/// and `held-*` only if it got the lock.
const HOLDERS: &[&str] = &[
    r#"for f in "$HOME"/.crew/teams/*/todos.lock; do flock -x "$f" -c 'touch held-flock; sleep 30'; done; touch tried-flock"#,
    r#"python3 -c "
import fcntl, glob, os, time
for p in glob.glob(os.path.expanduser('~/.crew/teams/*/todos.lock')):
    f = open(p)
    fcntl.flock(f, fcntl.LOCK_EX)
    open('held-py', 'w').close()
    time.sleep(30)
open('tried-py', 'w').close()
""#,
];

#[test]
fn a_sandboxed_command_cannot_take_the_team_lock_and_todo_add_stays_prompt() {
    if !support::kernel::require(&[
        support::kernel::Feature::MountNamespaces,
        support::kernel::Feature::Python3,
    ]) {
        return;
    }
    // bypass: the widest sandbox; dontAsk: an opaque command runs in the write profile;
    // and with the user's `allowRead` lifting the veil over crew's home.
    let lifted = r#"{"sandbox": {"filesystem": {"allowRead": ["~/.crew"]}}}"#;
    for (mode, user_settings) in [
        ("bypassPermissions", None),
        ("dontAsk", None),
        ("dontAsk", Some(lifted)),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let (home, proj) = (base.join("home"), base.join("proj"));
        std::fs::create_dir_all(&home).unwrap();
        support::put(&proj, "README.md", "# p\n");
        if let Some(s) = user_settings {
            support::put(&home, ".crew/settings.json", s);
        }
        let call =
            |name: &str, input: Value| json!({"tool_calls": [{"name": name, "input": input}]});
        let mut turns = vec![call("todo_add", json!({"subject": "first"}))];
        for h in HOLDERS {
            turns.push(call(
                "run_command",
                json!({"command": h, "run_in_background": true}),
            ));
        }
        // Wait (bounded) until both holders have tried.
        turns.push(call(
            "run_command",
            json!({"command": "for i in $(seq 100); do [ -e tried-flock ] && [ -e tried-py ] && break; [ -e held-flock ] || [ -e held-py ] && break; sleep 0.1; done"}),
        ));
        turns.push(call("todo_add", json!({"subject": "second"})));
        turns.push(json!({"text": "done"}));
        let started = Instant::now();
        let (out, requests) = support::crew_scripted_output(
            &proj,
            &home,
            &json!({"turns": turns}),
            &[
                "-p",
                "plan",
                "--permission-mode",
                mode,
                "--output-format",
                "json",
            ],
        );
        let took = started.elapsed();
        let all = format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        for marker in ["held-flock", "held-py"] {
            assert!(
                !proj.join(marker).exists(),
                "{mode}: {marker}: a sandboxed command held the team lock\n{all}"
            );
        }
        for marker in ["tried-flock", "tried-py"] {
            assert!(
                proj.join(marker).exists(),
                "{mode}: {marker}: the holder never ran\n{all}"
            );
        }
        let results = last_tool_results(requests.last().expect("a recorded request"));
        let last = results.last().expect("the second todo_add's result");
        assert!(!last.0, "{mode}: todo_add failed: {}", last.1);
        assert!(last.1.contains("Added item #2"), "{mode}: {}", last.1);
        // Well under the holders' 30 s (and under the lock's own 5 s bound).
        assert!(took < Duration::from_secs(25), "{mode}: took {took:?}");
        let teams: Vec<_> = std::fs::read_dir(home.join(".crew/teams"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(teams.len(), 1, "{teams:?}");
        assert!(teams[0].join("todos/2.json").exists());
    }
}

/// Something outside every sandbox (here: this test) holds the team's lock: the lead's
/// `todo_add` is told so after the bound, naming the lock file, instead of waiting.
#[test]
fn a_lock_held_by_a_stranger_is_reported_after_the_bound_not_waited_on() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let (home, proj) = (base.join("home"), base.join("proj"));
    std::fs::create_dir_all(&home).unwrap();
    support::put(&proj, "README.md", "# p\n");
    let (started, locked) = (base.join("turn2.started"), base.join("locked"));
    let call = |name: &str, input: Value| json!({"name": name, "input": input});
    let script = json!({"turns": [
        {"tool_calls": [call("todo_add", json!({"subject": "first"}))]},
        {"touch": started.to_str().unwrap(), "wait_for": locked.to_str().unwrap(),
         "tool_calls": [call("todo_add", json!({"subject": "second"}))]},
        {"text": "done"}
    ]});
    let run = {
        let (proj, home) = (proj.clone(), home.clone());
        std::thread::spawn(move || {
            support::crew_scripted_output(
                &proj,
                &home,
                &script,
                &["-p", "plan", "--output-format", "json"],
            )
        })
    };
    support::wait_until_blocking("the second turn to start", || started.exists());
    let lock_path = std::fs::read_dir(home.join(".crew/teams"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("todos.lock");
    let file = std::fs::File::open(&lock_path).unwrap();
    let _held = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| e)
        .unwrap();
    let t = Instant::now();
    std::fs::write(&locked, "").unwrap();
    let (out, requests) = run.join().unwrap();
    let took = t.elapsed();
    // Its item stays pending (the lock kept the run from the list): it says so, exit 1.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("left undone: #1 first (pending)"),
        "{stderr}"
    );
    let results = last_tool_results(requests.last().expect("a recorded request"));
    let (is_error, text) = results
        .last()
        .expect("the second todo_add's result")
        .clone();
    assert!(is_error, "{text}");
    assert!(text.contains(&lock_path.display().to_string()), "{text}");
    assert!(text.contains("still locked"), "{text}");
    assert!(
        took >= Duration::from_secs(4) && took < Duration::from_secs(20),
        "took {took:?}"
    );
    assert!(!lock_path.with_file_name("todos").join("2.json").exists());
}
