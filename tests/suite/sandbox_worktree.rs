//! Subagent worktrees against real attacks (issue 9, class 6): a confined command in a
//! linked worktree commits on its own `crew/<task>/…` branch, but cannot move the user's
//! branches (`git update-ref`, `git branch -f`, a direct write of the ref file), rewrite
//! its `.git` link or `commondir`, or write git config — confined directly and end to end
//! through `crew -p` delegating to a worktree subagent under dontAsk.

use crate::support;

use crewmaster::sandbox::landlock;
use crewmaster::tools::{CommandSandbox, ToolContext};
use serde_json::json;
use support::git;
use support::sandbox::{crew, repo_with_worktree, run};

#[tokio::test]
async fn a_confined_worktree_commits_on_its_branch_but_cannot_move_main() {
    require_sandbox!();
    let (_d, repo, wt) = repo_with_worktree();
    git(&repo, &["branch", "feature"]);
    let main_before = git(&repo, &["rev-parse", "main"]);
    let mut roots = vec![wt.clone()];
    roots.extend(landlock::git_writable_dirs(&wt));
    let mut c = ToolContext::new(&wt, "test");
    c.sandbox = CommandSandbox::landlock(roots);
    let dot_git = std::fs::read(wt.join(".git")).unwrap();
    let commondir = repo.join(".git/worktrees/wt/commondir");
    let commondir_before = std::fs::read(&commondir).unwrap();

    let out = run(
        c.clone(),
        "echo hi > f.txt && git add f.txt && git commit -q -m add && echo committed",
    )
    .await;
    assert!(out.contains("committed"), "{out}");
    assert_eq!(
        git(&repo, &["log", "-1", "--format=%s", "crew/t1/work"]),
        "add"
    );

    let main_ref = repo.join(".git/refs/heads/main");
    let attacks = [
        "git update-ref refs/heads/main HEAD~1".to_string(),
        "git branch -f main HEAD~1".to_string(),
        // A branch not checked out anywhere, which git itself would let move.
        "git branch -f feature HEAD~1".to_string(),
        format!(
            "python3 -c \"open('{}','w').write('{}\\n')\"",
            main_ref.display(),
            "0".repeat(40)
        ),
        "python3 -c \"open('.g'+'it','w').write('gitdir: /tmp/evil\\n')\"".to_string(),
        format!(
            "python3 -c \"open('{}','w').write('/tmp/evil')\"",
            commondir.display()
        ),
        "git config core.fsmonitor 'touch /tmp/pwned'".to_string(),
        "git update-ref refs/heads/crew/t2/other HEAD".to_string(),
    ];
    for attack in &attacks {
        let out = run(c.clone(), attack).await;
        assert!(!out.contains("exit code: 0"), "{attack}: {out}");
    }
    assert_eq!(git(&repo, &["rev-parse", "main"]), main_before);
    assert_eq!(git(&repo, &["rev-parse", "feature"]), main_before);
    assert_eq!(std::fs::read(wt.join(".git")).unwrap(), dot_git);
    assert_eq!(std::fs::read(&commondir).unwrap(), commondir_before);
    let cfg = std::fs::read_to_string(repo.join(".git/config")).unwrap();
    assert!(!cfg.contains("fsmonitor"), "{cfg}");
    assert!(!repo.join(".git/refs/heads/crew/t2").exists());
    // The worktree still works after all that.
    let out = run(c, "git status --short && echo ok").await;
    assert!(out.contains("ok"), "{out}");
}

#[test]
fn a_worktree_subagent_under_dont_ask_cannot_move_the_users_branch() {
    require_sandbox!();
    let (_d, repo, _wt) = repo_with_worktree();
    let home = repo.parent().unwrap().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let main_before = git(&repo, &["rev-parse", "main"]);
    let script = repo.join("script.json");
    let sub_calls: Vec<_> = [
        "git update-ref refs/heads/main HEAD~1",
        "git branch -f main HEAD~1",
        "python3 -c \"import subprocess; open('.g'+'it','w').write('gitdir: /tmp/evil')\"",
        "echo work > w.txt && git add w.txt && git commit -q -m sub-work && echo committed",
    ]
    .iter()
    .map(|c| json!({"name": "run_command", "input": {"command": c}}))
    .collect();
    std::fs::write(
        &script,
        json!({
            "turns": [
                {"tool_calls": [{"name": "agent", "input": {"description": "sneaky", "prompt": "p", "subagent_type": "general-purpose"}}]},
                {"text": "done"}
            ],
            "agents": {"general-purpose": {"turns": [{"tool_calls": sub_calls}, {"text": "finished"}]}}
        })
        .to_string(),
    )
    .unwrap();
    let out = crew(&repo, &home, &script, "dontAsk", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(git(&repo, &["rev-parse", "main"]), main_before, "{stderr}");
    // Its own work landed on its own branch.
    let branches = git(
        &repo,
        &["branch", "--list", "crew/*", "--format=%(refname:short)"],
    );
    let branch = branches
        .lines()
        .find(|b| b.contains("sneaky"))
        .unwrap_or_else(|| panic!("no branch of the subagent: {branches}\n{stderr}"));
    assert_eq!(
        git(&repo, &["log", "-1", "--format=%s", branch]),
        "sub-work"
    );
}
