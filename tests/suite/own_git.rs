//! Crew's own git never runs the agent's code (issue 31, item 1): each test plants, where
//! an agent could write it, a configuration naming programs (filter drivers — clean,
//! smudge, process —, textconv, external diff, fsmonitor, hooks) that each leave a marker
//! file outside the project, runs one of crew's own git operations on the tree through
//! the real code path (the worker's ship-back, the lead's fetch of a worker's bundle, the
//! merge of a subagent's worktree, review diff and status, worktree add), and checks on
//! disk that the work arrived and that no marker exists.

use crate::support;

use std::path::{Path, PathBuf};

use crewmaster::worker::bundle::{self, TaskCopy};
use crewmaster::worktree::{Manager, MergeStyle};
use support::git;
use support::worktree::write;

/// A temporary directory with `outside/` (where planted programs leave markers).
struct Scene {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
}

impl Scene {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let outside = root.join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        Self {
            _tmp: tmp,
            root,
            outside,
        }
    }

    /// A configuration defining, under the names `.gitattributes` of [`ATTRIBUTES`] uses,
    /// every kind of driver and an fsmonitor, each leaving marker `<prefix>-<kind>`.
    fn evil_config(&self, prefix: &str) -> String {
        let m = |kind: &str| format!("{}/{prefix}-{kind}", self.outside.display());
        format!(
            "[filter \"evil\"]\n\tclean = \"touch {}; cat\"\n\tsmudge = \"touch {}; cat\"\n\
             [filter \"proc\"]\n\tprocess = \"touch {}; false\"\n\
             [diff \"evil\"]\n\ttextconv = \"touch {}; cat\"\n\
             [diff]\n\texternal = \"touch {}; true #\"\n\
             [core]\n\tfsmonitor = \"touch {}; false #\"\n",
            m("clean"),
            m("smudge"),
            m("process"),
            m("textconv"),
            m("external"),
            m("fsmonitor"),
        )
    }

    /// Appends [`Self::evil_config`] to the config file `file`.
    fn plant_config(&self, file: &Path, prefix: &str) {
        let mut text = std::fs::read_to_string(file).unwrap_or_default();
        text.push_str(&self.evil_config(prefix));
        write(file, &text);
    }

    /// Executable hooks `names` in `hooks_dir`, each leaving marker `hook-<name>`.
    fn plant_hooks(&self, hooks_dir: &Path, names: &[&str]) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(hooks_dir).unwrap();
        for name in names {
            let path = hooks_dir.join(name);
            let marker = self.outside.join(format!("hook-{name}"));
            std::fs::write(&path, format!("#!/bin/sh\ntouch '{}'\n", marker.display())).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }

    /// Panics naming every marker a planted program left.
    fn assert_nothing_ran(&self) {
        let ran: Vec<String> = std::fs::read_dir(&self.outside)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(ran.is_empty(), "crew's git ran planted programs: {ran:?}");
    }
}

/// Names the drivers of [`Scene::evil_config`] for every file.
const ATTRIBUTES: &str = "* filter=evil diff=evil\nproc*.txt filter=proc\n";

const HOOKS: &[&str] = &[
    "pre-commit",
    "commit-msg",
    "post-commit",
    "post-merge",
    "post-checkout",
    "post-rewrite",
    "reference-transaction",
    "pre-auto-gc",
];

/// A lead repository at `dir` (branch `main`, one commit of `a.txt`).
fn lead_repo(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    write(&dir.join("a.txt"), "a\n");
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "initial"]);
}

/// The worker's side up to the agent's work: the lead's `main` unpacked into a task copy
/// on branch `task`.
async fn worker_copy(scene: &Scene, lead: &Path) -> (TaskCopy, String) {
    let base = git(lead, &["rev-parse", "HEAD"]);
    let b = bundle::create(lead, "main").await.unwrap();
    let copy = TaskCopy::at(scene.root.join("worker/task"));
    bundle::checkout(&b, &copy, "task", &base).await.unwrap();
    (copy, base)
}

#[tokio::test]
async fn shipping_work_back_runs_no_driver_of_a_nested_repository() {
    let scene = Scene::new();
    let lead = scene.root.join("lead");
    lead_repo(&lead);
    let (copy, base) = worker_copy(&scene, &lead).await;
    // The agent (its own git, confined) makes a nested repository and commits it as a
    // gitlink, then plants drivers and hooks in the nested repository's own config and
    // leaves it with a change: the outer `git add -A` asks the nested one for its status.
    let sub = copy.worktree.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    git(&sub, &["init", "-q"]);
    write(&sub.join("f.txt"), "one\n");
    write(&sub.join("proc1.txt"), "one\n");
    git(&sub, &["add", "-A"]);
    git(&sub, &["commit", "-q", "-m", "sub"]);
    git(&copy.worktree, &["add", "sub"]);
    git(&copy.worktree, &["commit", "-q", "-m", "add sub"]);
    scene.plant_config(&sub.join(".git/config"), "sub");
    scene.plant_hooks(&sub.join(".git/hooks"), HOOKS);
    write(&sub.join(".gitattributes"), ATTRIBUTES);
    write(&sub.join("f.txt"), "two\n");
    write(&sub.join("proc1.txt"), "two\n");
    write(&copy.worktree.join("work.txt"), "done\n");

    let committed = bundle::commit_all(&copy.worktree, "agent work").await;
    scene.assert_nothing_ran();
    assert!(committed.unwrap());
    let (head, _) = bundle::since(&copy.repo, "task", &base)
        .await
        .unwrap()
        .expect("the work is bundled");
    let shipped = git(&copy.repo, &["show", &format!("{head}:work.txt")]);
    assert_eq!(shipped, "done");
    scene.assert_nothing_ran();
}

#[tokio::test]
async fn a_nested_repository_moved_to_a_new_commit_is_still_shipped() {
    let scene = Scene::new();
    let lead = scene.root.join("lead");
    lead_repo(&lead);
    let (copy, base) = worker_copy(&scene, &lead).await;
    let sub = copy.worktree.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    git(&sub, &["init", "-q"]);
    git(&sub, &["commit", "-q", "--allow-empty", "-m", "one"]);
    git(&copy.worktree, &["add", "sub"]);
    git(&copy.worktree, &["commit", "-q", "-m", "add sub"]);
    git(&sub, &["commit", "-q", "--allow-empty", "-m", "two"]);
    let moved = git(&sub, &["rev-parse", "HEAD"]);

    assert!(bundle::commit_all(&copy.worktree, "bump").await.unwrap());
    let (head, _) = bundle::since(&copy.repo, "task", &base)
        .await
        .unwrap()
        .unwrap();
    let tree = git(&copy.repo, &["ls-tree", &head, "sub"]);
    assert!(tree.contains(&moved), "{tree}");
    scene.assert_nothing_ran();
}

#[tokio::test]
async fn shipping_work_back_runs_no_oddly_named_driver_from_an_included_file() {
    let scene = Scene::new();
    let lead = scene.root.join("lead");
    lead_repo(&lead);
    let (copy, base) = worker_copy(&scene, &lead).await;
    let sub = copy.worktree.join("deep/er/sub");
    std::fs::create_dir_all(&sub).unwrap();
    git(&sub, &["init", "-q"]);
    write(&sub.join("f.txt"), "one\n");
    git(&sub, &["add", "-A"]);
    git(&sub, &["commit", "-q", "-m", "sub"]);
    git(&copy.worktree, &["add", "deep"]);
    git(&copy.worktree, &["commit", "-q", "-m", "add sub"]);
    // The nested config only includes a file of the agent's, whose driver's name has
    // dots, an equals sign and capitals (a `-c` override would split it wrongly).
    let marker = scene.outside.join("odd-clean");
    write(
        &copy.worktree.join("drivers.inc"),
        &format!(
            "[filter \"My.odd=Name\"]\n\tclean = \"touch {}; cat\"\n",
            marker.display()
        ),
    );
    let mut config = std::fs::read_to_string(sub.join(".git/config")).unwrap();
    config.push_str("[include]\n\tpath = ../../../../drivers.inc\n");
    write(&sub.join(".git/config"), &config);
    write(&sub.join(".gitattributes"), "* filter=My.odd=Name\n");
    write(&sub.join("f.txt"), "two\n");
    write(&copy.worktree.join("work.txt"), "done\n");

    let committed = bundle::commit_all(&copy.worktree, "agent work").await;
    scene.assert_nothing_ran();
    assert!(committed.unwrap());
    let (head, _) = bundle::since(&copy.repo, "task", &base)
        .await
        .unwrap()
        .expect("the work is bundled");
    assert_eq!(
        git(&copy.repo, &["show", &format!("{head}:work.txt")]),
        "done"
    );
}

#[tokio::test]
async fn shipping_work_back_runs_no_driver_of_the_worktree_config() {
    let scene = Scene::new();
    let lead = scene.root.join("lead");
    lead_repo(&lead);
    let (copy, base) = worker_copy(&scene, &lead).await;
    // The per-worktree config in the task worktree's private git dir, and the agent's
    // attributes naming its drivers.
    // (The bare repository's `core.bare` would apply to the worktree too: it says no.)
    git(&copy.repo, &["config", "extensions.worktreeConfig", "true"]);
    let wt_config = copy.repo.join("worktrees/wt/config.worktree");
    write(&wt_config, "[core]\n\tbare = false\n");
    scene.plant_config(&wt_config, "wt");
    write(&copy.worktree.join(".gitattributes"), ATTRIBUTES);
    write(&copy.worktree.join("work.txt"), "done\n");
    write(&copy.worktree.join("proc1.txt"), "done\n");

    let committed = bundle::commit_all(&copy.worktree, "agent work").await;
    scene.assert_nothing_ran();
    assert!(committed.unwrap());
    let (head, _) = bundle::since(&copy.repo, "task", &base)
        .await
        .unwrap()
        .expect("the work is bundled");
    // Committed as written: no clean filter touched it.
    let shipped = git(&copy.repo, &["show", &format!("{head}:work.txt")]);
    assert_eq!(shipped, "done");
    bundle::drop_worktree(&copy).await.unwrap();
    scene.assert_nothing_ran();
}

#[tokio::test]
async fn the_leads_fetch_of_a_workers_bundle_runs_no_driver_or_hook() {
    let scene = Scene::new();
    let lead = scene.root.join("lead");
    lead_repo(&lead);
    let (copy, base) = worker_copy(&scene, &lead).await;
    write(&copy.worktree.join(".gitattributes"), ATTRIBUTES);
    write(&copy.worktree.join("work.txt"), "done\n");
    write(&copy.worktree.join("proc1.txt"), "done\n");
    assert!(
        bundle::commit_all(&copy.worktree, "agent work")
            .await
            .unwrap()
    );
    let (head, shipped) = bundle::since(&copy.repo, "task", &base)
        .await
        .unwrap()
        .unwrap();
    // The lead's task worktree, on the task branch at the base, with drivers in its
    // per-worktree config and hooks in the repository.
    let lw = scene.root.join("lead-task");
    let lw_s = lw.to_string_lossy().to_string();
    git(
        &lead,
        &["worktree", "add", "-q", "-b", "task", &lw_s, &base],
    );
    git(&lead, &["config", "extensions.worktreeConfig", "true"]);
    scene.plant_config(&lead.join(".git/worktrees/lead-task/config.worktree"), "lw");
    scene.plant_hooks(&lead.join(".git/hooks"), HOOKS);

    let fetched = bundle::fetch_into(&lw, &shipped, "task", &head).await;
    scene.assert_nothing_ran();
    fetched.unwrap();
    assert_eq!(
        std::fs::read_to_string(lw.join("work.txt")).unwrap(),
        "done\n"
    );
    assert_eq!(git(&lw, &["rev-parse", "HEAD"]), head);
    scene.assert_nothing_ran();
}

/// A lead repository with a subagent's worktree `t1` holding uncommitted work whose
/// attributes name the planted drivers; returns the manager and the worktree's path.
fn subagent_work(scene: &Scene) -> (Manager, PathBuf) {
    let lead = scene.root.join("lead");
    lead_repo(&lead);
    let mgr = Manager::open(&lead, Some(&scene.root.join("home/.crew/worktrees"))).unwrap();
    let wt = mgr.create("t1", "planted drivers", None).unwrap();
    write(&wt.path.join(".gitattributes"), ATTRIBUTES);
    write(&wt.path.join("work.txt"), "done\n");
    write(&wt.path.join("proc1.txt"), "done\n");
    (mgr, wt.path)
}

#[test]
fn merging_a_subagents_worktree_runs_no_driver_or_hook_of_the_repository() {
    let scene = Scene::new();
    let (mgr, _) = subagent_work(&scene);
    let lead = scene.root.join("lead");
    // Drivers and hooks in the main repository (protected from a confined agent; crew's
    // merge runs none of them all the same).
    scene.plant_config(&lead.join(".git/config"), "main");
    scene.plant_hooks(&lead.join(".git/hooks"), HOOKS);

    let merged = mgr.merge("t1", MergeStyle::Merge);
    scene.assert_nothing_ran();
    let merged = merged.unwrap();
    assert!(merged.files.iter().any(|f| f == "work.txt"), "{merged:?}");
    assert_eq!(
        std::fs::read_to_string(lead.join("work.txt")).unwrap(),
        "done\n"
    );
    scene.assert_nothing_ran();
}

#[test]
fn merging_runs_no_driver_of_a_nested_repository_in_the_main_checkout() {
    let scene = Scene::new();
    let (mgr, _) = subagent_work(&scene);
    let lead = scene.root.join("lead");
    // A nested repository in the user's checkout, tracked as a gitlink, with a change
    // and planted drivers and hooks.
    let sub = lead.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    git(&sub, &["init", "-q"]);
    write(&sub.join("f.txt"), "one\n");
    git(&sub, &["add", "-A"]);
    git(&sub, &["commit", "-q", "-m", "sub"]);
    git(&lead, &["add", "sub"]);
    git(&lead, &["commit", "-q", "-m", "add sub"]);
    scene.plant_config(&sub.join(".git/config"), "sub");
    scene.plant_hooks(&sub.join(".git/hooks"), HOOKS);
    write(&sub.join(".gitattributes"), ATTRIBUTES);
    write(&sub.join("f.txt"), "two\n");

    // The worktree's base is the commit before the gitlink: a real merge.
    mgr.merge("t1", MergeStyle::Merge).unwrap();
    assert_eq!(
        std::fs::read_to_string(lead.join("work.txt")).unwrap(),
        "done\n"
    );
    scene.assert_nothing_ran();
}

#[test]
fn review_diff_and_status_of_a_subagents_worktree_run_no_driver() {
    let scene = Scene::new();
    let (mgr, path) = subagent_work(&scene);
    let lead = scene.root.join("lead");
    git(&lead, &["config", "extensions.worktreeConfig", "true"]);
    scene.plant_config(&lead.join(".git/worktrees/t1/config.worktree"), "wt");
    scene.plant_config(&lead.join(".git/config"), "main");
    // And a nested repository with its own drivers in the worktree.
    let sub = path.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    git(&sub, &["init", "-q"]);
    write(&sub.join("f.txt"), "one\n");
    scene.plant_config(&sub.join(".git/config"), "sub");
    write(&sub.join(".gitattributes"), ATTRIBUTES);

    let diff = mgr.diff("t1").unwrap();
    assert!(diff.contains("+done"), "{diff}");
    let listed = mgr.list().unwrap();
    assert_eq!(listed.len(), 1);
    scene.assert_nothing_ran();
}

#[test]
fn adding_a_worktree_runs_no_checkout_driver_or_hook() {
    let scene = Scene::new();
    let lead = scene.root.join("lead");
    lead_repo(&lead);
    write(&lead.join(".gitattributes"), ATTRIBUTES);
    write(&lead.join("proc1.txt"), "x\n");
    git(&lead, &["add", "-A"]);
    git(&lead, &["commit", "-q", "-m", "attributes"]);
    scene.plant_config(&lead.join(".git/config"), "main");
    scene.plant_hooks(&lead.join(".git/hooks"), HOOKS);

    let mgr = Manager::open(&lead, Some(&scene.root.join("home/.crew/worktrees"))).unwrap();
    let wt = mgr.create("t1", "checkout", None).unwrap();
    assert_eq!(
        std::fs::read_to_string(wt.path.join("a.txt")).unwrap(),
        "a\n"
    );
    scene.assert_nothing_ran();
}

#[test]
fn crews_git_writes_only_below_the_trees_it_works_on() {
    if !support::kernel::require(&[support::kernel::Feature::Landlock]) {
        return;
    }
    let scene = Scene::new();
    let lead = scene.root.join("lead");
    lead_repo(&lead);
    // A program git starts that no override names (an alias here; a driver from the
    // user's own configuration in real life): it may write in the repository only.
    let outside = scene.outside.join("escaped");
    let inside = lead.join("stayed");
    let alias = format!(
        "alias.x=!touch '{}'; touch '{}'",
        outside.display(),
        inside.display()
    );
    let safe = crewmaster::worktree::safe_git::SafeGit::for_trees(&[&lead]).unwrap();
    let out = safe
        .confined_command(&lead, &[&lead])
        .unwrap()
        .args(["-c", &alias, "x"])
        .output()
        .unwrap();
    assert!(inside.exists(), "{out:?}");
    assert!(!outside.exists(), "{out:?}");
    scene.assert_nothing_ran();
}

#[tokio::test]
async fn the_agents_read_only_git_status_runs_a_planted_filter_confined() {
    // Default mode and speculation auto-allow `git status` as a read: it runs in the read
    // profile, so a nested repository's planted filter runs but can write nowhere.
    if !support::kernel::require(&[support::kernel::Feature::Landlock]) {
        return;
    }
    use crewmaster::tools::{CommandSandbox, SandboxProfile, Tool, ToolContext};
    let scene = Scene::new();
    let project = scene.root.join("project");
    lead_repo(&project);
    let sub = project.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    git(&sub, &["init", "-q"]);
    write(&sub.join("f.txt"), "one\n");
    git(&sub, &["add", "-A"]);
    git(&sub, &["commit", "-q", "-m", "sub"]);
    git(&project, &["add", "sub"]);
    git(&project, &["commit", "-q", "-m", "add sub"]);
    scene.plant_config(&sub.join(".git/config"), "sub");
    write(&sub.join(".gitattributes"), ATTRIBUTES);
    write(&sub.join("f.txt"), "two\n");

    let mut ctx = ToolContext::new(&project, "lead");
    ctx.sandbox = CommandSandbox::landlock(vec![project.clone()]).for_call(SandboxProfile::Read);
    let out = crewmaster::tools::run_command::RunCommand::new()
        .run(serde_json::json!({"command": "git status"}), ctx)
        .await;
    let out = format!("{out:?}");
    assert!(out.contains("sub"), "{out}");
    scene.assert_nothing_ran();
}
