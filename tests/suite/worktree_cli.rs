//! `crew worktrees list|diff|merge|discard` through the real binary, with HOME set to a
//! temporary directory so the default `~/.crew/worktrees` is the test's own.

use crate::support;

use std::path::Path;
use std::process::{Command, Output};

use crewmaster::worktree::Manager;
use support::git;
use support::worktree::{Fixture, commit_all, write};

fn crew(fx: &Fixture, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_crew"))
        .args(args)
        .current_dir(&fx.repo)
        .env("HOME", &fx.home)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("run crew")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Makes worktrees the way the actor would, in the folder `crew` finds from HOME.
fn manager(fx: &Fixture) -> Manager {
    Manager::open(&fx.repo, Some(&fx.base)).unwrap()
}

fn create(m: &Manager, id: &str) -> std::path::PathBuf {
    m.create(id, id, None).unwrap().path
}

#[test]
fn list_shows_id_branch_state_and_path_in_text_and_json() {
    let fx = Fixture::new();
    let m = manager(&fx);
    let clean = create(&m, "clean");
    let dirty = create(&m, "dirty");
    write(&dirty.join("x.txt"), "x\n");
    let ahead = create(&m, "ahead");
    write(&ahead.join("y.txt"), "y\n");
    commit_all(&ahead, "y");

    let out = crew(&fx, &["worktrees", "list"]);
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    let row = |id: &str| {
        text.lines()
            .find(|l| l.starts_with(id))
            .unwrap_or("")
            .to_string()
    };
    assert!(row("clean").contains("crew/clean/clean") && row("clean").contains("clean"));
    assert!(
        row("clean").ends_with(&clean.display().to_string()),
        "{text}"
    );
    assert!(row("dirty").contains(" dirty "), "{text}");
    assert!(row("ahead").contains(" ahead 1 "), "{text}");

    let out = crew(&fx, &["worktrees", "list", "--json"]);
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["clean", "dirty", "ahead"]);
    assert_eq!(rows[2]["state"], "ahead 1");
    assert_eq!(rows[2]["summary"]["commits_ahead"], 1);
    assert_eq!(rows[1]["path"], dirty.display().to_string());

    // `git worktree list` agrees.
    let git_list = git(&fx.repo, &["worktree", "list", "--porcelain"]);
    for p in [&clean, &dirty, &ahead] {
        assert!(
            git_list.contains(&format!("worktree {}\n", p.display())),
            "{git_list}"
        );
    }
}

#[test]
fn diff_merge_and_discard_do_what_they_say() {
    let fx = Fixture::new();
    let m = manager(&fx);
    let feature = create(&m, "feature");
    write(&feature.join("feature.txt"), "new feature\n");
    commit_all(&feature, "add the feature");
    let junk = create(&m, "junk");
    write(&junk.join("junk.txt"), "junk\n");

    let out = crew(&fx, &["worktrees", "diff", "feature"]);
    assert!(stdout(&out).contains("+new feature"), "{out:?}");

    let out = crew(&fx, &["worktrees", "merge", "feature", "--squash"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout(&out).contains("squashed into main"),
        "{}",
        stdout(&out)
    );
    assert!(git(&fx.repo, &["log", "--format=%s", "-1"]).contains("feature"));
    assert!(fx.repo.join("feature.txt").is_file() && !feature.exists());

    let out = crew(&fx, &["worktrees", "discard", "junk"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout(&out).contains("junk discarded (it was dirty)"),
        "{}",
        stdout(&out)
    );
    assert!(!junk.exists());
    assert!(fx.git_worktrees().is_empty());
    assert_eq!(fx.branches(), vec!["main".to_string()]);
    assert!(Path::new(&fx.home).join(".crew/worktrees").is_dir());
}

#[test]
fn a_refused_merge_exits_1_naming_the_conflicting_paths() {
    let fx = Fixture::new();
    let m = manager(&fx);
    let wt = create(&m, "clash");
    write(&wt.join("README.md"), "theirs\n");
    commit_all(&wt, "theirs");
    write(&fx.repo.join("README.md"), "ours\n");
    commit_all(&fx.repo, "ours");
    let head = fx.head();
    let out = crew(&fx, &["worktrees", "merge", "clash"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = stdout(&out);
    assert!(text.contains("would conflict in: README.md"), "{text}");
    assert_eq!(fx.head(), head);
    assert_eq!(fx.status(), "");
    let out = crew(&fx, &["worktrees", "discard", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("no worktree for task `nope`"));
}
