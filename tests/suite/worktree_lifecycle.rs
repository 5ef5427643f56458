//! End-to-end tests of the `WorktreeManager` actor on real temporary repositories: the
//! lifecycle of issue 5 (clean removed, work kept, merge, discard, conflicts refused),
//! checked with the real `git`.

use crate::support;

use crewmaster::worktree::{Finished, MergeStyle, Worktree, WorktreeError, WorktreeMsg};
use ractor::ActorRef;
use support::git;
use support::worktree::{Fixture, call, commit_all, write};

async fn create(actor: &ActorRef<WorktreeMsg>, id: &str, description: &str) -> Worktree {
    let (task_id, description) = (id.to_string(), description.to_string());
    call(actor, |reply| WorktreeMsg::Create {
        task_id,
        description,
        base: None,
        reply,
    })
    .await
    .expect("create")
}

async fn finish(actor: &ActorRef<WorktreeMsg>, id: &str) -> Result<Finished, WorktreeError> {
    let task_id = id.to_string();
    call(actor, |reply| WorktreeMsg::Finish { task_id, reply }).await
}

async fn merge(
    actor: &ActorRef<WorktreeMsg>,
    id: &str,
    style: MergeStyle,
) -> Result<crewmaster::worktree::Merged, WorktreeError> {
    let task_id = id.to_string();
    call(actor, |reply| WorktreeMsg::Merge {
        task_id,
        style,
        reply,
    })
    .await
}

#[tokio::test]
async fn a_worktree_is_made_outside_the_repo_on_its_own_branch_from_head() {
    let fx = Fixture::new();
    let actor = fx.spawn().await;
    let wt = create(&actor, "t1", "Fix the Login bug!").await;
    assert_eq!(wt.branch, "crew/t1/fix-the-login-bug");
    assert_eq!(wt.base_commit, fx.head());
    assert_eq!(wt.repo_root, fx.repo);
    assert!(wt.path.starts_with(&fx.base) && !wt.path.starts_with(&fx.repo));
    let dir = wt
        .path
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy();
    assert!(
        dir.starts_with("repo-") && dir.len() == "repo-".len() + 8,
        "{dir}"
    );
    assert!(wt.path.join("src/lib.txt").is_file());
    assert_eq!(fx.git_worktrees(), vec![wt.path.clone()]);
    assert!(fx.branches().contains(&wt.branch));
    assert_eq!(
        git(&wt.path, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        wt.branch
    );
    assert_eq!(fx.status(), "", "the main checkout must stay clean");
}

#[tokio::test]
async fn a_clean_worktree_and_its_branch_are_removed_on_finish() {
    let fx = Fixture::new();
    let actor = fx.spawn().await;
    let wt = create(&actor, "clean", "nothing to do").await;
    assert_eq!(finish(&actor, "clean").await.unwrap(), Finished::Removed);
    assert!(!wt.path.exists());
    assert!(fx.git_worktrees().is_empty());
    assert!(!fx.branches().contains(&wt.branch), "{:?}", fx.branches());
    let listed = call(&actor, |reply| WorktreeMsg::List { reply })
        .await
        .unwrap();
    assert!(listed.is_empty());
}

#[tokio::test]
async fn a_dirty_worktree_is_kept_with_a_summary() {
    let fx = Fixture::new();
    let actor = fx.spawn().await;
    let wt = create(&actor, "dirty", "write a file").await;
    write(&wt.path.join("new.txt"), "a\nb\n");
    let Finished::Kept { reason, summary } = finish(&actor, "dirty").await.unwrap() else {
        panic!("an untracked file was deleted");
    };
    assert!(
        summary.uncommitted && summary.commits_ahead == 0,
        "{summary:?}"
    );
    assert_eq!((summary.files_changed, summary.insertions), (1, 2));
    assert!(
        reason.contains("uncommitted") && reason.contains(&wt.branch),
        "{reason}"
    );
    assert!(wt.path.join("new.txt").is_file());
    assert!(fx.branches().contains(&wt.branch));
    assert_eq!(fx.git_worktrees(), vec![wt.path.clone()]);
}

#[tokio::test]
async fn a_worktree_with_a_commit_is_kept() {
    let fx = Fixture::new();
    let actor = fx.spawn().await;
    let wt = create(&actor, "ahead", "commit").await;
    write(&wt.path.join("src/lib.txt"), "one\nTWO\nthree\n");
    commit_all(&wt.path, "change two");
    let Finished::Kept { summary, .. } = finish(&actor, "ahead").await.unwrap() else {
        panic!("a commit beyond base was deleted");
    };
    assert!(
        !summary.uncommitted && summary.commits_ahead == 1,
        "{summary:?}"
    );
    assert_eq!((summary.insertions, summary.deletions), (1, 1));
    assert!(fx.branches().contains(&wt.branch));
    let listed = call(&actor, |reply| WorktreeMsg::List { reply })
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].state_label(), "ahead 1");
    assert_eq!(listed[0].status, crewmaster::worktree::Status::Kept);
}

#[tokio::test]
async fn merge_brings_the_commit_into_the_main_branch_and_removes_the_worktree() {
    let fx = Fixture::new();
    let actor = fx.spawn().await;
    let wt = create(&actor, "m1", "add feature").await;
    write(&wt.path.join("feature.txt"), "feature\n");
    commit_all(&wt.path, "add feature file");
    let before = fx.head();
    let merged = merge(&actor, "m1", MergeStyle::Merge).await.unwrap();
    assert_eq!(merged.into, "main");
    assert_eq!(merged.files, vec!["feature.txt".to_string()]);
    assert!(git(&fx.repo, &["log", "--format=%s", "main"]).contains("add feature file"));
    assert_eq!(fx.head(), merged.commit);
    let parents = git(&fx.repo, &["rev-list", "--parents", "-n1", "HEAD"]);
    assert_eq!(
        parents.split_whitespace().count(),
        3,
        "a merge commit has two parents"
    );
    assert!(parents.contains(&before));
    assert_eq!(
        std::fs::read_to_string(fx.repo.join("feature.txt")).unwrap(),
        "feature\n"
    );
    assert_eq!(fx.status(), "");
    assert!(!wt.path.exists() && fx.git_worktrees().is_empty());
    assert!(!fx.branches().contains(&wt.branch));
}

#[tokio::test]
async fn squash_merge_makes_one_commit_and_keeps_unrelated_local_changes() {
    let fx = Fixture::new();
    let actor = fx.spawn().await;
    let wt = create(&actor, "sq", "two steps").await;
    write(&wt.path.join("a.txt"), "a\n");
    commit_all(&wt.path, "step one");
    write(&wt.path.join("b.txt"), "b\n");
    commit_all(&wt.path, "step two");
    // The user is editing a file the merge does not touch: it must survive.
    write(&fx.repo.join("README.md"), "hello, edited\n");
    let before = fx.head();
    let merged = merge(&actor, "sq", MergeStyle::Squash).await.unwrap();
    assert!(merged.squash);
    let log = git(
        &fx.repo,
        &["log", "--format=%s", &format!("{before}..HEAD")],
    );
    assert_eq!(log.lines().collect::<Vec<_>>(), vec!["two steps"]);
    let parents = git(&fx.repo, &["rev-list", "--parents", "-n1", "HEAD"]);
    assert_eq!(
        parents.split_whitespace().count(),
        2,
        "a squash has one parent"
    );
    assert!(fx.repo.join("a.txt").is_file() && fx.repo.join("b.txt").is_file());
    assert_eq!(fx.status(), " M README.md");
    assert!(!fx.branches().contains(&wt.branch));
}

#[tokio::test]
async fn a_conflicting_merge_is_refused_and_the_main_checkout_is_untouched() {
    let fx = Fixture::new();
    let actor = fx.spawn().await;
    let wt = create(&actor, "c1", "conflict").await;
    write(&wt.path.join("src/lib.txt"), "one\nsubagent\nthree\n");
    commit_all(&wt.path, "subagent edit");
    write(&fx.repo.join("src/lib.txt"), "one\nuser\nthree\n");
    commit_all(&fx.repo, "user edit");
    let head = fx.head();
    let err = merge(&actor, "c1", MergeStyle::Merge).await.unwrap_err();
    let WorktreeError::Conflict { paths, into, .. } = &err else {
        panic!("expected a conflict, got {err}");
    };
    assert_eq!(paths, &vec!["src/lib.txt".to_string()]);
    assert_eq!(into, "main");
    assert!(err.to_string().contains("nothing was changed"), "{err}");
    assert_eq!(fx.status(), "", "the main checkout was touched");
    assert_eq!(fx.head(), head);
    assert!(!fx.repo.join(".git/MERGE_HEAD").exists());
    assert_eq!(
        std::fs::read_to_string(fx.repo.join("src/lib.txt")).unwrap(),
        "one\nuser\nthree\n"
    );
    assert!(
        wt.path.exists() && fx.branches().contains(&wt.branch),
        "work lost"
    );
}

#[tokio::test]
async fn merge_is_refused_when_the_main_checkout_has_changes_to_a_file_it_touches() {
    let fx = Fixture::new();
    let actor = fx.spawn().await;
    let wt = create(&actor, "d1", "edit readme").await;
    write(&wt.path.join("README.md"), "hello from subagent\n");
    commit_all(&wt.path, "readme");
    write(&fx.repo.join("README.md"), "user's unsaved work\n");
    let head = fx.head();
    let err = merge(&actor, "d1", MergeStyle::Merge).await.unwrap_err();
    assert!(
        matches!(&err, WorktreeError::MainCheckoutDirty { paths, .. } if paths == &["README.md"]),
        "{err}"
    );
    assert_eq!(fx.head(), head);
    assert_eq!(
        std::fs::read_to_string(fx.repo.join("README.md")).unwrap(),
        "user's unsaved work\n"
    );
    assert!(wt.path.exists());
}

#[tokio::test]
async fn merge_commits_work_left_uncommitted_then_merges_it() {
    // Subagents leave their edits in the working tree: merging must bring those in too.
    let fx = Fixture::new();
    let actor = fx.spawn().await;
    let wt = create(&actor, "u1", "half done").await;
    write(&wt.path.join("a.txt"), "a\n");
    commit_all(&wt.path, "a");
    write(&wt.path.join("b.txt"), "not committed\n");
    let head = fx.head();
    merge(&actor, "u1", MergeStyle::Merge).await.unwrap();
    assert_ne!(fx.head(), head);
    assert_eq!(
        std::fs::read_to_string(fx.repo.join("a.txt")).unwrap(),
        "a\n"
    );
    assert_eq!(
        std::fs::read_to_string(fx.repo.join("b.txt")).unwrap(),
        "not committed\n"
    );
    assert_eq!(fx.status(), "");
    assert!(!wt.path.exists(), "a merged worktree is removed");
    let log = git(&fx.repo, &["log", "--format=%s", "-3"]);
    assert!(log.contains("half done"), "{log}");
    let nothing = create(&actor, "n1", "idle").await;
    let err = merge(&actor, "n1", MergeStyle::Merge).await.unwrap_err();
    assert!(matches!(err, WorktreeError::NothingToMerge { .. }), "{err}");
    assert!(nothing.path.exists());
}

#[tokio::test]
async fn merge_refuses_when_a_subagent_repointed_its_head_at_the_users_branch() {
    // The attack: a confined subagent may write its worktree's private git dir, so it
    // points HEAD at `main` and leaves changes uncommitted, hoping the (unconfined)
    // merge commits them straight onto the user's branch.
    let fx = Fixture::new();
    let actor = fx.spawn().await;
    let wt = create(&actor, "h1", "sneaky").await;
    write(&wt.path.join("evil.txt"), "planted\n");
    let private = git(&wt.path, &["rev-parse", "--git-dir"]);
    std::fs::write(
        std::path::Path::new(private.trim()).join("HEAD"),
        "ref: refs/heads/main\n",
    )
    .unwrap();
    let head = fx.head();
    let err = merge(&actor, "h1", MergeStyle::Merge).await.unwrap_err();
    assert!(
        err.to_string().contains("HEAD is no longer branch"),
        "{err}"
    );
    assert_eq!(fx.head(), head, "main moved");
    assert!(!fx.repo.join("evil.txt").exists());
}

#[tokio::test]
async fn discard_removes_a_dirty_worktree_and_its_branch() {
    let fx = Fixture::new();
    let actor = fx.spawn().await;
    let wt = create(&actor, "x1", "throwaway").await;
    write(&wt.path.join("a.txt"), "a\n");
    commit_all(&wt.path, "a");
    write(&wt.path.join("b.txt"), "b\n");
    let task_id = "x1".to_string();
    let held = call(&actor, |reply| WorktreeMsg::Discard { task_id, reply })
        .await
        .unwrap()
        .expect("summary");
    assert!(held.uncommitted && held.commits_ahead == 1);
    assert!(!wt.path.exists() && fx.git_worktrees().is_empty());
    assert!(!fx.branches().contains(&wt.branch));
    assert_eq!(fx.status(), "");
}

#[tokio::test]
async fn diff_shows_committed_and_uncommitted_changes_against_the_base() {
    let fx = Fixture::new();
    let actor = fx.spawn().await;
    let wt = create(&actor, "df", "diff").await;
    write(&wt.path.join("src/lib.txt"), "one\nTWO\nthree\n");
    commit_all(&wt.path, "c");
    write(&wt.path.join("untracked.txt"), "brand new\n");
    let task_id = "df".to_string();
    let diff = call(&actor, |reply| WorktreeMsg::Diff { task_id, reply })
        .await
        .unwrap();
    assert!(
        diff.contains("diff --git a/src/lib.txt b/src/lib.txt"),
        "{diff}"
    );
    assert!(diff.contains("-two\n+TWO\n"), "{diff}");
    assert!(diff.contains("+brand new\n"), "{diff}");
}

#[tokio::test]
async fn git_worktree_list_agrees_with_list() {
    let fx = Fixture::new();
    let actor = fx.spawn().await;
    let mut paths = Vec::new();
    for id in ["a", "b", "c"] {
        paths.push(create(&actor, id, id).await.path);
    }
    write(&paths[1].join("work.txt"), "w\n");
    finish(&actor, "a").await.unwrap();
    finish(&actor, "b").await.unwrap();
    let listed = call(&actor, |reply| WorktreeMsg::List { reply })
        .await
        .unwrap();
    let mut ours: Vec<_> = listed.iter().map(|l| l.path.clone()).collect();
    let mut theirs = fx.git_worktrees();
    ours.sort();
    theirs.sort();
    assert_eq!(ours, theirs);
    assert_eq!(ours, vec![paths[1].clone(), paths[2].clone()]);
}

#[tokio::test]
async fn worktreeinclude_copies_ignored_files_only() {
    let fx = Fixture::with_files(&[
        (".gitignore", ".env\nbuild/\n"),
        (
            ".worktreeinclude",
            ".env\nnotes.txt\ntracked.txt\nbuild/keep.txt\n",
        ),
        ("tracked.txt", "tracked\n"),
    ]);
    write(&fx.repo.join(".env"), "SECRET=1\n");
    write(&fx.repo.join("notes.txt"), "untracked, not ignored\n");
    write(&fx.repo.join("build/keep.txt"), "keep\n");
    write(&fx.repo.join("build/other.txt"), "other\n");
    let actor = fx.spawn().await;
    let wt = create(&actor, "inc", "include").await;
    assert_eq!(
        std::fs::read_to_string(wt.path.join(".env")).unwrap(),
        "SECRET=1\n"
    );
    assert!(wt.path.join("build/keep.txt").is_file());
    assert!(!wt.path.join("build/other.txt").exists(), "not listed");
    // Not ignored, so not copied: it is in the worktree's base, the snapshot of the
    // working state, as the user's work in progress (not the agent's).
    assert_eq!(
        std::fs::read_to_string(wt.path.join("notes.txt")).unwrap(),
        "untracked, not ignored\n"
    );
    let copied: Vec<String> = wt.copied.iter().map(|p| p.display().to_string()).collect();
    assert_eq!(copied, vec![".env", "build/keep.txt"]);
    // Copied ignored files are not work: the worktree still counts as clean.
    assert_eq!(finish(&actor, "inc").await.unwrap(), Finished::Removed);
}

#[tokio::test]
async fn the_setup_command_runs_in_the_worktree_and_a_failure_is_reported() {
    let fx = Fixture::with_files(&[
        (".gitignore", "setup.out\n"),
        (
            ".crew/settings.json",
            r#"{"worktree": {"setup": "pwd > setup.out; echo failing >&2; exit 7"}}"#,
        ),
    ]);
    let actor = fx.spawn().await;
    let wt = create(&actor, "s1", "setup").await;
    let setup = wt.setup.expect("setup report");
    assert!(!setup.success && setup.exit_code == Some(7), "{setup:?}");
    assert!(setup.output_tail.contains("failing"));
    let pwd = std::fs::read_to_string(wt.path.join("setup.out")).unwrap();
    assert_eq!(pwd.trim(), wt.path.display().to_string());
    assert!(!fx.repo.join("setup.out").exists());
}

#[tokio::test]
async fn base_ref_is_configurable_and_bad_input_is_refused() {
    let fx = Fixture::new();
    let first = fx.head();
    write(&fx.repo.join("second.txt"), "2\n");
    commit_all(&fx.repo, "second");
    let actor = fx.spawn().await;
    let (task_id, description, base) = (
        "old".to_string(),
        "from first".to_string(),
        Some("HEAD~1".to_string()),
    );
    let wt = call(&actor, |reply| WorktreeMsg::Create {
        task_id,
        description,
        base,
        reply,
    })
    .await
    .unwrap();
    assert_eq!(wt.base_commit, first);
    assert!(!wt.path.join("second.txt").exists());
    let (task_id, description) = ("old".to_string(), "again".to_string());
    let err = call(&actor, |reply| WorktreeMsg::Create {
        task_id,
        description,
        base: None,
        reply,
    })
    .await
    .unwrap_err();
    assert!(matches!(err, WorktreeError::AlreadyExists { .. }), "{err}");
    let (task_id, description) = ("../escape".to_string(), "x".to_string());
    let err = call(&actor, |reply| WorktreeMsg::Create {
        task_id,
        description,
        base: None,
        reply,
    })
    .await
    .unwrap_err();
    assert!(matches!(err, WorktreeError::InvalidTaskId { .. }), "{err}");
    assert!(!fx.base.join("escape").exists());
    let (task_id, description, base) = (
        "nb".to_string(),
        "x".to_string(),
        Some("no-such-ref".to_string()),
    );
    let err = call(&actor, |reply| WorktreeMsg::Create {
        task_id,
        description,
        base,
        reply,
    })
    .await
    .unwrap_err();
    assert!(err.to_string().contains("no-such-ref"), "{err}");
    assert!(!fx.branches().iter().any(|b| b.starts_with("crew/nb")));
}

#[tokio::test]
async fn commits_on_a_detached_head_are_kept_and_block_merge() {
    let fx = Fixture::new();
    let actor = fx.spawn().await;
    let wt = create(&actor, "det", "detached").await;
    git(&wt.path, &["checkout", "-q", "--detach"]);
    write(&wt.path.join("d.txt"), "d\n");
    commit_all(&wt.path, "on a detached head");
    let err = merge(&actor, "det", MergeStyle::Merge).await.unwrap_err();
    assert!(matches!(err, WorktreeError::HeadMoved { .. }), "{err}");
    let Finished::Kept { summary, .. } = finish(&actor, "det").await.unwrap() else {
        panic!("a detached commit was deleted");
    };
    assert_eq!(summary.commits_ahead, 1);
    assert!(wt.path.join("d.txt").is_file());
}

#[tokio::test]
async fn concurrent_creations_and_finishes_lose_nothing() {
    let fx = Fixture::new();
    let actor = fx.spawn().await;
    let creates = (0..8).map(|i| {
        let actor = actor.clone();
        async move { create(&actor, &format!("p{i}"), "parallel").await }
    });
    let made = futures::future::join_all(creates).await;
    let listed = call(&actor, |reply| WorktreeMsg::List { reply })
        .await
        .unwrap();
    assert_eq!(listed.len(), 8, "a registry update was lost");
    let mut theirs = fx.git_worktrees();
    theirs.sort();
    let mut ours: Vec<_> = made.iter().map(|w| w.path.clone()).collect();
    ours.sort();
    assert_eq!(ours, theirs);
    let finishes = (0..8).map(|i| {
        let actor = actor.clone();
        async move { finish(&actor, &format!("p{i}")).await }
    });
    for r in futures::future::join_all(finishes).await {
        assert_eq!(r.unwrap(), Finished::Removed);
    }
    assert!(fx.git_worktrees().is_empty());
    assert_eq!(fx.branches(), vec!["main".to_string()]);
}

#[tokio::test]
async fn creations_in_flight_finish_before_an_exclusive_operation_runs() {
    let fx = Fixture::new();
    let actor = fx.spawn().await;
    // Sent in this order, without waiting: eight creations (run in parallel), then a
    // reconcile, which must not see a half-made worktree as an orphan or prune it.
    let mut replies = Vec::new();
    for i in 0..8 {
        let (tx, rx) = ractor::concurrency::oneshot();
        actor
            .send_message(WorktreeMsg::Create {
                task_id: format!("q{i}"),
                description: "parallel".into(),
                base: None,
                reply: tx.into(),
            })
            .unwrap();
        replies.push(rx);
    }
    let report = call(&actor, |reply| WorktreeMsg::Reconcile { reply })
        .await
        .unwrap();
    assert!(report.pruned.is_empty(), "{report:?}");
    assert!(report.orphaned.is_empty(), "{report:?}");
    for rx in replies {
        let wt = rx.await.unwrap().expect("created");
        // Each checkout is complete: the files are there and git sees nothing changed.
        assert_eq!(
            std::fs::read_to_string(wt.path.join("README.md")).unwrap(),
            "hello\n"
        );
        assert_eq!(git(&wt.path, &["status", "--porcelain"]), "");
    }
    assert_eq!(fx.git_worktrees().len(), 8);
}

#[tokio::test]
async fn main_checkout_paths_map_into_the_worktree() {
    let fx = Fixture::new();
    let actor = fx.spawn().await;
    let wt = create(&actor, "map", "map").await;
    let mapped = wt.map_path(&fx.repo.join("src/lib.txt")).unwrap();
    assert_eq!(mapped, wt.path.join("src/lib.txt"));
    assert!(mapped.is_file());
    assert_eq!(wt.map_path(std::path::Path::new("/etc/passwd")), None);
}

#[tokio::test]
async fn a_manager_opened_inside_a_worktree_uses_the_main_repository() {
    let fx = Fixture::new();
    let actor = fx.spawn().await;
    let outer = create(&actor, "outer", "outer").await;
    write(&outer.path.join("outer.txt"), "o\n");
    commit_all(&outer.path, "outer work");
    // A subagent's own subagent: its manager starts in the outer worktree.
    let nested = crewmaster::worktree::Manager::open(&outer.path, Some(&fx.base)).unwrap();
    assert_eq!(nested.root(), fx.repo.as_path());
    let inner = nested.create("inner", "inner", None).unwrap();
    assert_eq!(
        inner.base_commit,
        git(&outer.path, &["rev-parse", "HEAD"]).trim()
    );
    assert!(
        inner.path.join("outer.txt").is_file(),
        "branched from the outer HEAD"
    );
    let listed = call(&actor, |reply| WorktreeMsg::List { reply })
        .await
        .unwrap();
    assert_eq!(listed.len(), 2, "one registry per repository");
}
