//! Reconciliation after a killed process: registry entries whose directory was deleted,
//! directories and git worktrees the registry does not know, and entries left `active`.
//! Nothing holding work may be lost.

use crate::support;

use crewmaster::worktree::{Pruned, Status, WorktreeMsg};
use support::git;
use support::worktree::{Fixture, call, commit_all, write};

#[tokio::test]
async fn reconciliation_after_a_killed_process_loses_nothing() {
    let fx = Fixture::new();
    let first = fx.spawn().await;
    let mut made = Vec::new();
    for id in ["gone-with-work", "gone-clean", "interrupted"] {
        let (task_id, description) = (id.to_string(), id.to_string());
        let wt = call(&first, |reply| WorktreeMsg::Create {
            task_id,
            description,
            base: None,
            reply,
        })
        .await
        .unwrap();
        made.push(wt);
    }
    write(&made[0].path.join("precious.txt"), "work\n");
    commit_all(&made[0].path, "precious work");
    write(&made[2].path.join("wip.txt"), "wip\n");
    // The process dies; then somebody deletes two worktree directories by hand.
    first.stop(None);
    std::fs::remove_dir_all(&made[0].path).unwrap();
    std::fs::remove_dir_all(&made[1].path).unwrap();
    // A directory the registry never heard of (e.g. a create cut short), with a file in it,
    // and a git worktree made by hand in our folder.
    let folder = made[0].path.parent().unwrap().to_path_buf();
    let orphan = folder.join("half-made");
    write(&orphan.join("important.txt"), "do not delete\n");
    let rogue = folder.join("rogue");
    git(
        &fx.repo,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "rogue",
            rogue.to_str().unwrap(),
        ],
    );

    let second = fx.spawn().await;
    let report = call(&second, |reply| WorktreeMsg::Reconcile { reply })
        .await
        .unwrap();

    assert_eq!(
        report.pruned,
        vec![
            Pruned {
                id: "gone-with-work".into(),
                branch: made[0].branch.clone(),
                branch_kept: true,
                commits_ahead: 1,
            },
            Pruned {
                id: "gone-clean".into(),
                branch: made[1].branch.clone(),
                branch_kept: false,
                commits_ahead: 0,
            },
        ]
    );
    assert_eq!(report.orphaned, vec![orphan.clone(), rogue.clone()]);
    assert_eq!(report.interrupted, vec!["interrupted".to_string()]);

    // The commit made in the deleted worktree is still on its branch.
    let branches = fx.branches();
    assert!(branches.contains(&made[0].branch), "{branches:?}");
    assert!(git(&fx.repo, &["log", "--format=%s", &made[0].branch]).contains("precious work"));
    assert!(
        !branches.contains(&made[1].branch),
        "an empty branch is tidied away"
    );
    // Git's metadata for the deleted directories is pruned; the rest is untouched.
    let mut listed = fx.git_worktrees();
    listed.sort();
    assert_eq!(listed, vec![made[2].path.clone(), rogue.clone()]);
    assert_eq!(
        std::fs::read_to_string(orphan.join("important.txt")).unwrap(),
        "do not delete\n"
    );
    assert!(made[2].path.join("wip.txt").is_file());

    let items = call(&second, |reply| WorktreeMsg::List { reply })
        .await
        .unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].id, "interrupted");
    assert_eq!(items[0].status, Status::Kept);
    assert_eq!(items[0].state_label(), "dirty");

    // A second reconciliation finds nothing new to prune and still deletes nothing.
    let again = call(&second, |reply| WorktreeMsg::Reconcile { reply })
        .await
        .unwrap();
    assert!(again.pruned.is_empty() && again.interrupted.is_empty());
    assert_eq!(again.orphaned, vec![orphan.clone(), rogue]);
    assert!(orphan.join("important.txt").is_file());
}
