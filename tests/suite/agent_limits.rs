//! `maxConcurrentAgents` itself, end to end: a `crew -p` run whose user settings allow two
//! agents at once starts four background subagents. Each subagent's first turn signals
//! that it started and holds until the test releases it; its second turn signals that it
//! is done. The test releases one agent at a time and, at every look, counts the agents
//! running (started, not yet done): never more than two, and two are reached. Nothing
//! depends on timing: a held agent cannot finish, so a missing limit shows as a third
//! agent starting while two are held.

use crate::support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};

/// Agent names (`{agent}` of the script) with a signal file `prefix-NAME` in `dir`.
fn signalled(dir: &Path, prefix: &str) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_prefix(&format!("{prefix}-"))
                .map(str::to_string)
        })
        .collect()
}

/// Kills `crew` if the test fails while agents are held.
struct KillOnDrop(Option<std::process::Child>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn no_more_agents_run_at_once_than_max_concurrent_agents_allows() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let (proj, home, sig) = (root.join("proj"), root.join("home"), root.join("sig"));
    for d in [&proj, &home.join(".crew"), &sig] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(
        home.join(".crew/settings.json"),
        r#"{"maxConcurrentAgents": 2}"#,
    )
    .unwrap();
    let s = sig.display();
    let spawn = |n: u32| {
        serde_json::json!({"name": "agent", "input": {
            "description": format!("helper {n}"), "prompt": "p",
            "subagent_type": "explore", "run_in_background": true}})
    };
    let script = serde_json::json!({
        "turns": [
            {"tool_calls": [spawn(1), spawn(2), spawn(3), spawn(4)]},
            {"text": "started"}
        ],
        "agents": {"explore": {"turns": [
            {"text": "holding", "touch": format!("{s}/started-{{agent}}"),
             "wait_for": format!("{s}/release-{{agent}}"),
             "tool_calls": [{"name": "find_files", "input": {"pattern": "*.none"}}]},
            {"text": "finished", "touch": format!("{s}/done-{{agent}}")}
        ]}}
    });
    let script_path = root.join("script.json");
    std::fs::write(&script_path, script.to_string()).unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_crew"))
        .args([
            "-p",
            "fan out",
            "--permission-mode",
            "bypassPermissions",
            "--model",
        ])
        .arg(format!("script:{}", script_path.display()))
        .current_dir(&proj)
        .env("HOME", &home)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut run = KillOnDrop(Some(run));

    // Running = started and not done. Read `started` first: `done` only grows, so the
    // count can only be overstated by a late `done`, never hide an extra agent.
    let mut peak = 0;
    let look = |peak: &mut usize| {
        let started = signalled(&sig, "started");
        let done = signalled(&sig, "done");
        let running = started.difference(&done).count();
        assert!(
            running <= 2,
            "{running} agents ran at once with maxConcurrentAgents 2: started {started:?}, done {done:?}"
        );
        *peak = (*peak).max(running);
        (started, done)
    };
    let mut released = BTreeSet::new();
    while released.len() < 4 {
        let want = (released.len() + 2).min(4);
        support::wait_until_blocking(&format!("{want} agents to have started"), || {
            look(&mut peak).0.len() >= want
        });
        // Release one held agent and wait until it is done.
        let (started, _) = look(&mut peak);
        let next = started.difference(&released).next().unwrap().clone();
        std::fs::write(sig.join(format!("release-{next}")), b"").unwrap();
        released.insert(next.clone());
        support::wait_until_blocking(&format!("agent {next} to finish"), || {
            look(&mut peak).1.contains(&next)
        });
    }
    let out = run.0.take().unwrap().wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (started, done) = look(&mut peak);
    assert_eq!((started.len(), done.len()), (4, 4));
    // The limit was reached, not merely respected by running one at a time.
    assert_eq!(peak, 2);
}
