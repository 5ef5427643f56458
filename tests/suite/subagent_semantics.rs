//! Subagents and teammates as Claude Code runs them, through `crew -p` on the scripted
//! model: a definition the user wrote without `isolation` works in the caller's checkout
//! (it reads the user's uncommitted code, and writes only as the lead's mode allows);
//! `isolation: worktree` and crew's built-ins keep their worktrees; a teammate in its
//! worktree works unattended there, as a subagent does.

use crate::support;

use std::path::Path;

use serde_json::{Value, json};

/// A committed repository whose `calc.py` the user has changed without committing.
fn dirty_repo() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let (tmp, home, repo) = support::repo_and_home();
    support::put(&repo, "calc.py", "def add(a, b):\n    return a + b\n");
    support::committed_repo(&repo, &[]);
    support::put(&repo, "calc.py", "def add(a, b):\n    return b + a\n");
    (tmp, home, repo)
}

fn linked_worktrees(repo: &Path) -> usize {
    support::git(repo, &["worktree", "list", "--porcelain"])
        .lines()
        .filter(|l| l.starts_with("worktree "))
        .count()
        - 1
}

/// The tool results one agent's last request carried, as text.
fn results_seen_by(requests: &[Value], agent: &str) -> String {
    requests
        .iter()
        .rev()
        .find(|r| r["agent"].as_str().is_some_and(|a| a.starts_with(agent)))
        .map(|r| r["messages"].to_string())
        .unwrap_or_default()
}

fn spawn(kind: &str, extra: Value) -> Value {
    let mut input = json!({"description": kind, "prompt": "go", "subagent_type": kind});
    if let (Some(i), Some(e)) = (input.as_object_mut(), extra.as_object()) {
        i.extend(e.clone());
    }
    json!({"tool_calls": [{"name": "agent", "input": input}]})
}

#[test]
fn a_users_agent_without_isolation_reads_the_callers_uncommitted_code() {
    let (_tmp, home, repo) = dirty_repo();
    support::put(
        &repo,
        ".claude/agents/reviewer.md",
        "---\nname: reviewer\ndescription: Reviews code\ntools: Read\n---\nReview it.\n",
    );
    let script = json!({
        "turns": [spawn("reviewer", json!({})), {"text": "reviewed"}],
        "agents": {"reviewer": {"turns": [
            {"tool_calls": [{"name": "read_file", "input": {"path": "calc.py"}}]},
            {"text": "looks fine"}
        ]}}
    });
    let (out, requests) = support::crew_scripted(&repo, &home, &script, &["-p", "review calc.py"]);
    let seen = results_seen_by(&requests, "reviewer");
    assert!(
        seen.contains("return b + a"),
        "the reviewer read stale code: {seen}"
    );
    assert!(!seen.contains("return a + b"), "{seen}");
    assert_eq!(linked_worktrees(&repo), 0, "{out:?}");
}

#[test]
fn a_users_writer_without_isolation_writes_as_the_leads_mode_allows() {
    let script = json!({
        "turns": [spawn("fixer", json!({})), {"text": "fixed"}],
        "agents": {"fixer": {"turns": [
            {"tool_calls": [{"name": "write_file", "input": {"path": "fixed.txt", "content": "done\n"}}]},
            {"text": "wrote it"}
        ]}}
    });
    let fixer = "---\nname: fixer\ndescription: Fixes code\ntools: Read, Write\n---\nFix it.\n";
    for (mode, lands) in [("acceptEdits", true), ("default", false)] {
        let (_tmp, home, repo) = dirty_repo();
        support::put(&repo, ".claude/agents/fixer.md", fixer);
        let (out, _) = support::crew_scripted_output(
            &repo,
            &home,
            &script,
            &["-p", "fix it", "--permission-mode", mode],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        // It starts without approval either way; its write is the lead's to allow.
        assert!(!stderr.contains("✗ agent"), "{mode}: {stderr}");
        assert_eq!(repo.join("fixed.txt").exists(), lands, "{mode}: {stderr}");
        assert_eq!(linked_worktrees(&repo), 0, "{mode}");
        if !lands {
            assert!(
                stderr.contains("✗ write_file [permission_denied]"),
                "{stderr}"
            );
        }
    }
}

#[test]
fn isolation_worktree_and_the_built_in_writer_keep_their_worktrees() {
    let writes = json!({"turns": [
        {"tool_calls": [{"name": "write_file", "input": {"path": "w.txt", "content": "w\n"}}]},
        {"text": "wrote"}
    ]});
    for (kind, file) in [
        (
            "isolated",
            Some(
                "---\nname: isolated\ndescription: d\nisolation: worktree\ntools: Write\n---\nW.\n",
            ),
        ),
        ("general-purpose", None),
    ] {
        let (_tmp, home, repo) = dirty_repo();
        if let Some(text) = file {
            support::put(&repo, &format!(".claude/agents/{kind}.md"), text);
        }
        let script = json!({
            "turns": [spawn(kind, json!({})), {"text": "ok"}],
            "agents": {kind: writes.clone()}
        });
        let (out, _) = support::crew_scripted_output(&repo, &home, &script, &["-p", "go"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        // Default mode, headless: in its worktree the write needs nobody.
        assert!(
            !repo.join("w.txt").exists(),
            "{kind} wrote in place: {stderr}"
        );
        assert_eq!(linked_worktrees(&repo), 1, "{kind}: {stderr}");
        assert!(stderr.contains("✓ write_file"), "{kind}: {stderr}");
    }
}

/// The run of the issue: headless in default mode, subagents wrote in their worktrees but
/// teammates were denied. A teammate in its worktree works unattended, as they do.
#[test]
fn a_teammate_in_its_worktree_writes_unattended_as_a_subagent_does() {
    let (_tmp, home, repo) = dirty_repo();
    support::put(
        &repo,
        ".crew/agents/w.md",
        "---\nname: w\ndescription: teammate\nisolation: worktree\ntools: write_file, send_message\n---\nDo it.\n",
    );
    let script = json!({
        "turns": [spawn("w", json!({"name": "alice"})), {"text": "started"}, {"text": "noted"}],
        "agents": {"alice": {"turns": [
            {"tool_calls": [{"name": "write_file", "input": {"path": "a.txt", "content": "alice\n"}}]},
            {"text": "alice done"}
        ]}}
    });
    let (out, _) = support::crew_scripted_output(
        &repo,
        &home,
        &script,
        &[
            "-p",
            "team up",
            "--permission-mode",
            "default",
            "--output-format",
            "json",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("✗ write_file"), "{stderr}");
    let session: Value = serde_json::from_slice(&out.stdout).unwrap();
    let team = crewmaster::team::Team::open(
        &home.join(".crew/teams"),
        session["session_id"].as_str().unwrap(),
    )
    .unwrap();
    let wt = support::team::worktree(&team, "alice");
    support::worktree::open_workspace(&repo, &home, &wt);
    assert_eq!(
        std::fs::read_to_string(wt.join("a.txt")).unwrap(),
        "alice\n"
    );
    assert!(!repo.join("a.txt").exists());
}

/// The worktree starts from the user's working state: HEAD plus one snapshot commit of the
/// uncommitted changes. The agent reads the user's code; diff and merge carry only its own
/// work, and the user's uncommitted change stays uncommitted in their checkout.
#[test]
fn a_worktree_starts_from_the_working_state_and_lands_only_the_agents_work() {
    for squash in [false, true] {
        let (_tmp, home, repo) = dirty_repo();
        let head_before = support::git(&repo, &["rev-parse", "HEAD"]);
        support::put(
            &repo,
            ".crew/agents/isolated.md",
            "---\nname: isolated\ndescription: d\nisolation: worktree\ntools: Read, Write\n---\nW.\n",
        );
        // The agent file is the user's too: commit it, so only calc.py is uncommitted.
        support::git(&repo, &["config", "user.email", "u@example.invalid"]);
        support::git(&repo, &["config", "user.name", "u"]);
        support::git(&repo, &["add", ".crew"]);
        support::git(&repo, &["commit", "-qm", "agent"]);
        let head = support::git(&repo, &["rev-parse", "HEAD"]);
        assert_ne!(head, head_before);
        let script = json!({
            "turns": [spawn("isolated", json!({})), {"text": "ok"}],
            "agents": {"isolated": {"turns": [
                {"tool_calls": [{"name": "read_file", "input": {"path": "calc.py"}}]},
                {"tool_calls": [{"name": "write_file", "input": {"path": "notes.txt", "content": "agent\n"}}]},
                {"text": "wrote"}
            ]}}
        });
        let (_, requests) = support::crew_scripted(&repo, &home, &script, &["-p", "go"]);
        let seen = results_seen_by(&requests, "isolated");
        assert!(
            seen.contains("return b + a"),
            "the agent read HEAD, not the user's code: {seen}"
        );

        let list = support::crew(&repo, &home, &["worktrees", "list", "--json"]);
        let rows: Vec<Value> = serde_json::from_slice(&list.stdout).unwrap();
        assert_eq!(rows.len(), 1, "{rows:?}");
        let id = rows[0]["id"].as_str().unwrap();
        let diff = support::crew(&repo, &home, &["worktrees", "diff", id]);
        let diff = String::from_utf8_lossy(&diff.stdout).into_owned();
        assert!(diff.contains("notes.txt"), "{diff}");
        assert!(
            !diff.contains("calc.py"),
            "the user's change is not the agent's: {diff}"
        );

        let mut merge = vec!["worktrees", "merge", id];
        if squash {
            merge.push("--squash");
        }
        let out = support::crew(&repo, &home, &merge);
        assert!(out.status.success(), "squash {squash}: {out:?}");
        // Landed on the user's HEAD: the agent's file, committed; calc.py's committed
        // content unchanged and its uncommitted change still in the checkout.
        assert_eq!(
            support::git(
                &repo,
                &["rev-list", "--count", &format!("{}..HEAD", head.trim())]
            )
            .trim(),
            "1",
            "one commit on top of the user's HEAD (squash {squash})"
        );
        assert!(
            support::git(&repo, &["log", "--format=%s"])
                .lines()
                .all(|s| !s.contains("snapshot"))
        );
        assert_eq!(
            std::fs::read_to_string(repo.join("notes.txt")).unwrap(),
            "agent\n"
        );
        assert_eq!(
            support::git(&repo, &["show", "HEAD:calc.py"]),
            "def add(a, b):\n    return a + b"
        );
        let status = support::git_output(&repo, &["status", "--porcelain"]);
        assert_eq!(String::from_utf8_lossy(&status.stdout), " M calc.py\n");
        assert_eq!(
            std::fs::read_to_string(repo.join("calc.py")).unwrap(),
            "def add(a, b):\n    return b + a\n"
        );
    }
}
