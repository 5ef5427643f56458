//! Overlay workspaces through the real binary: a subagent's workspace is an overlay over
//! one shared checkout of its base, mounted in crew's own namespace; it holds only what
//! the agent changed, git inside it sees a normal worktree without hashing every file
//! again, its work survives crew's SIGKILL, `crew worktrees open` makes exactly its
//! content an ordinary checkout, and without overlays workspaces are full checkouts.

use crate::support;

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::{crew, git, put};

/// A repository with a few files in folders, a writer agent, and HOME beside it.
struct Place {
    _tmp: tempfile::TempDir,
    repo: PathBuf,
    home: PathBuf,
}

fn place() -> Place {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let (repo, home) = (root.join("repo"), root.join("home"));
    std::fs::create_dir_all(&home).unwrap();
    for i in 0..40 {
        put(
            &repo,
            &format!("src/m{}/f{i}.txt", i % 4),
            &format!("file {i}\n"),
        );
    }
    put(&repo, "keep.txt", "keep\n");
    put(&repo, "change.txt", "before\n");
    put(&repo, "gone.txt", "gone\n");
    put(
        &repo,
        ".crew/agents/w.md",
        "---\nname: w\ndescription: worker\nisolation: worktree\ntools: write_file, run_command\n---\nWork.\n",
    );
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "user.name", "crew test"]);
    git(&repo, &["config", "user.email", "test@crewmaster.invalid"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "initial"]);
    Place {
        _tmp: tmp,
        repo,
        home,
    }
}

/// The changes the subagent makes: a new file (by the file tool), and by a command an
/// edit, a deletion, a whole folder deleted and made again, and a new nested folder;
/// then `git status` inside the workspace, with the index's link count beside it.
const CHANGES: &str = "echo after > change.txt && rm gone.txt && rm -r src/m1 && mkdir src/m1 \
     && echo fresh > src/m1/only.txt && mkdir -p new/deep && echo deep > new/deep/x.txt \
     && git status --porcelain > /dev/null";

fn script(then: &str) -> Value {
    json!({"turns": [
        {"tool_calls": [{"name": "agent", "input": {"description": "worker", "prompt": "p", "subagent_type": "w"}}]},
        {"text": "done"}],
      "agents": {"w": {"turns": [
        {"tool_calls": [
            {"name": "write_file", "input": {"path": "added.txt", "content": "added\n"}},
            {"name": "run_command", "input": {"command": CHANGES}},
            {"name": "run_command", "input": {"command": then}}]},
        {"text": "worked"}]}}})
}

/// Every file below `dir` (`.git` left out) with its content.
fn tree(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p == dir.join(".git") {
                continue;
            }
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                out.insert(rel, std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    out
}

/// What the workspace must hold: the base with the subagent's changes.
fn expected(repo: &Path) -> BTreeMap<String, String> {
    let mut t = tree(repo);
    t.retain(|k, _| !k.starts_with("src/m1/") && k != "gone.txt");
    t.insert("change.txt".into(), "after\n".into());
    t.insert("added.txt".into(), "added\n".into());
    t.insert("src/m1/only.txt".into(), "fresh\n".into());
    t.insert("new/deep/x.txt".into(), "deep\n".into());
    t
}

fn registry(home: &Path) -> (PathBuf, Value) {
    let dir = std::fs::read_dir(home.join(".crew/worktrees"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(dir.join("registry.json")).unwrap();
    (dir, serde_json::from_str(&text).unwrap())
}

/// `crew -p go` in the repository on the scripted model `script` (kept in `files`), not
/// yet run.
fn crew_p(p: &Place, files: &Path, script: &Value, mode: &str) -> std::process::Command {
    let path = files.join("script.json");
    std::fs::write(&path, script.to_string()).unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_crew"));
    cmd.args(["-p", "go", "--permission-mode", mode, "--model"])
        .arg(format!("script:{}", path.display()))
        .current_dir(&p.repo)
        .env("HOME", &p.home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("ANTHROPIC_API_KEY");
    cmd
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn a_workspace_holds_only_the_agents_changes_and_opens_as_exactly_its_content() {
    require_features!(Overlays);
    let p = place();
    let (out, _) = support::crew_scripted(
        &p.repo,
        &p.home,
        &script("true"),
        &["-p", "go", "--permission-mode", "acceptEdits"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("full checkouts"), "{stderr}");
    let (dir, reg) = registry(&p.home);
    let rec = &reg["worktrees"][0];
    assert_eq!(rec["layout"], "overlay", "{reg}");
    let id = rec["id"].as_str().unwrap();
    let path = PathBuf::from(rec["path"].as_str().unwrap());

    // Outside crew: a notice and no `.git` (a shell there finds no repository), and the
    // worktree is locked in git so that a prune keeps it.
    let outside: Vec<String> = std::fs::read_dir(&path)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(outside, ["CREW-WORKSPACE.txt"], "{}", path.display());
    git(&p.repo, &["worktree", "prune"]);
    let listed = git(&p.repo, &["worktree", "list", "--porcelain"]);
    assert!(
        listed.contains(&format!("worktree {}\nHEAD", path.display())),
        "{listed}"
    );
    assert!(listed.contains("locked crew workspace"), "{listed}");

    // The upper layer holds what changed and nothing else: the five files written, the
    // recreated folder, the whiteout of the deleted file, and the workspace's `.git`.
    let upper = dir.join(".layers").join(id).join("upper");
    let mut held: Vec<String> = walk(&upper)
        .iter()
        .map(|f| f.strip_prefix(&upper).unwrap().display().to_string())
        .collect();
    held.sort();
    assert_eq!(
        held,
        [
            ".git",
            "added.txt",
            "change.txt",
            "gone.txt",
            "new/deep/x.txt",
            "src/m1/only.txt"
        ],
        "the upper layer holds only the changes"
    );
    // `git status` inside found every base file unchanged without hashing it again: the
    // index is still the base's (a hard link), never rewritten.
    let index = p.repo.join(".git/worktrees").join(id).join("index");
    assert!(
        std::fs::metadata(&index).unwrap().nlink() >= 2,
        "the index was rewritten"
    );

    let diff = crew(&p.repo, &p.home, &["worktrees", "diff", id]);
    let diff = stdout(&diff);
    for line in [
        "+added",
        "-before",
        "+after",
        "-gone",
        "+fresh",
        "+deep",
        "-file 1\n",
    ] {
        assert!(
            diff.contains(line),
            "{line:?} missing from the diff:\n{diff}"
        );
    }

    let scoped = summary(&p, id);
    let opened = crew(&p.repo, &p.home, &["worktrees", "open", id]);
    assert!(opened.status.success(), "{opened:?}");
    assert_eq!(tree(&path), expected(&p.repo));
    // Read from the upper layer's paths alone, the summary is the one git gives after
    // reading every file of the checkout.
    assert_eq!(scoped, summary(&p, id));
    assert_eq!(scoped["files_changed"], 15, "{scoped}");
    let status = git(&path, &["status", "--porcelain"]);
    let mut changed: Vec<&str> = status.lines().collect();
    changed.sort();
    assert_eq!(
        changed,
        [
            " D gone.txt",
            " D src/m1/f1.txt",
            " D src/m1/f13.txt",
            " D src/m1/f17.txt",
            " D src/m1/f21.txt",
            " D src/m1/f25.txt",
            " D src/m1/f29.txt",
            " D src/m1/f33.txt",
            " D src/m1/f37.txt",
            " D src/m1/f5.txt",
            " D src/m1/f9.txt",
            " M change.txt",
            "?? added.txt",
            "?? new/",
            "?? src/m1/only.txt",
        ]
    );
    assert!(
        !dir.join(".layers").join(id).exists(),
        "the layers are gone once opened"
    );
    assert!(!git(&p.repo, &["worktree", "list", "--porcelain"]).contains("locked"));
    // The base checkout is swept once no workspace uses it.
    let listed = crew(&p.repo, &p.home, &["worktrees", "merge", id]);
    assert!(listed.status.success(), "{listed:?}");
    assert_eq!(
        std::fs::read_to_string(p.repo.join("added.txt")).unwrap(),
        "added\n"
    );
}

/// A worktree's summary as `crew worktrees list --json` gives it.
fn summary(p: &Place, id: &str) -> Value {
    let out = crew(&p.repo, &p.home, &["worktrees", "list", "--json"]);
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap();
    row["summary"].clone()
}

#[test]
fn commits_and_staged_changes_count_in_a_workspaces_summary_as_in_a_checkouts() {
    require_features!(Overlays);
    let p = place();
    // A commit, then a change only the index holds (a file taken out of it, left on disk),
    // and one staged edit: none of them is a path the upper layer alone would name.
    let (_, _) = support::crew_scripted(
        &p.repo,
        &p.home,
        &script(
            "git commit -qam work && git rm -q --cached keep.txt && echo staged > src/m2/f2.txt \
             && git add src/m2/f2.txt",
        ),
        &["-p", "go", "--permission-mode", "acceptEdits"],
    );
    let (_, reg) = registry(&p.home);
    let id = reg["worktrees"][0]["id"].as_str().unwrap().to_string();
    let scoped = summary(&p, &id);
    assert_eq!(scoped["commits_ahead"], 1, "{scoped}");
    assert_eq!(scoped["uncommitted"], true, "{scoped}");
    let diff = stdout(&crew(&p.repo, &p.home, &["worktrees", "diff", &id]));
    let opened = crew(&p.repo, &p.home, &["worktrees", "open", &id]);
    assert!(opened.status.success(), "{opened:?}");
    assert_eq!(scoped, summary(&p, &id));
    assert_eq!(
        diff,
        stdout(&crew(&p.repo, &p.home, &["worktrees", "diff", &id]))
    );
}

#[test]
fn a_workspace_keeps_its_uncommitted_work_through_a_sigkill_of_crew() {
    require_features!(Overlays);
    let p = place();
    let files = tempfile::tempdir().unwrap();
    let mut child = crew_p(
        &p,
        files.path(),
        &script(": hold-7c1e; sleep 600 & wait"),
        "bypassPermissions",
    )
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    // Its commands run one after the other: the changes are made once this one runs.
    support::wait_until_blocking("the subagent's changes to be made", || {
        support::faults::processes()
            .iter()
            .any(|q| q.cmdline.contains("hold-7c1e"))
    });
    let (_, reg) = registry(&p.home);
    let id = reg["worktrees"][0]["id"].as_str().unwrap().to_string();
    // While its agent works in it, no other crew may take the workspace away.
    let refused = crew(&p.repo, &p.home, &["worktrees", "open", &id]);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    assert!(
        stdout(&refused).contains("in use by a running crew"),
        "{refused:?}"
    );
    child.kill().unwrap();
    child.wait().unwrap();

    let path = PathBuf::from(reg["worktrees"][0]["path"].as_str().unwrap());
    // A new crew mounts the workspace again and sees every change.
    let listed = stdout(&crew(&p.repo, &p.home, &["worktrees", "list"]));
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with(&id) && l.contains(" dirty ")),
        "{listed}"
    );
    let diff = stdout(&crew(&p.repo, &p.home, &["worktrees", "diff", &id]));
    assert!(diff.contains("+added") && diff.contains("+after"), "{diff}");
    let opened = crew(&p.repo, &p.home, &["worktrees", "open", &id]);
    assert!(opened.status.success(), "{opened:?}");
    assert_eq!(tree(&path), expected(&p.repo));
    support::faults::assert_no_process_with("hold-7c1e");
}

#[test]
fn without_overlays_workspaces_are_full_checkouts_and_crew_says_so_once() {
    let p = place();
    let two = json!({"turns": [
        {"tool_calls": [
            {"name": "agent", "input": {"description": "one", "prompt": "p", "subagent_type": "w", "run_in_background": true}},
            {"name": "agent", "input": {"description": "two", "prompt": "p", "subagent_type": "w", "run_in_background": true}}]},
        {"text": "started"}, {"text": "noted"}, {"text": "noted"}],
      "agents": {"w": {"turns": [
        {"tool_calls": [{"name": "write_file", "input": {"path": "added.txt", "content": "added\n"}}]},
        {"text": "worked"}]}}});
    let files = tempfile::tempdir().unwrap();
    let out = crew_p(&p, files.path(), &two, "acceptEdits")
        .env("CREW_TEST_SIMULATE_NO_OVERLAY", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stderr
            .matches("workspaces are full checkouts: overlays missing (simulated")
            .count(),
        1,
        "{stderr}"
    );
    let (dir, reg) = registry(&p.home);
    let recs = reg["worktrees"].as_array().unwrap();
    assert_eq!(recs.len(), 2, "{reg}");
    for rec in recs {
        assert!(rec.get("layout").is_none(), "a checkout: {rec}");
        let path = PathBuf::from(rec["path"].as_str().unwrap());
        // Seen from this process, outside crew: a real checkout with the new file.
        assert!(path.join("keep.txt").is_file() && path.join(".git").is_file());
        assert_eq!(git(&path, &["status", "--porcelain"]), "?? added.txt");
    }
    assert!(!dir.join(".bases").exists() && !dir.join(".layers").exists());
}

/// Every file below `dir`, `.git` included, folders left out.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out
}

#[test]
fn an_unprivileged_crew_mounts_its_workspaces_in_a_user_namespace_of_its_own() {
    // crew as another, unprivileged user (uid 65534): no mount namespace without a user
    // namespace, which maps only that user.
    require_features!(Overlays, OtherUser, UserNamespaces);
    let p = place();
    let files = tempfile::tempdir().unwrap();
    let path = files.path().join("script.json");
    std::fs::write(&path, script("id -u > uid.txt").to_string()).unwrap();
    for dir in [p._tmp.path(), files.path()] {
        let chown = std::process::Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(dir)
            .status()
            .unwrap();
        assert!(chown.success());
    }
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_crew"))
        .args(["-p", "go", "--permission-mode", "acceptEdits", "--model"])
        .arg(format!("script:{}", path.display()))
        .current_dir(&p.repo)
        .env("HOME", &p.home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("full checkouts"), "{stderr}");
    let (dir, reg) = registry(&p.home);
    let rec = &reg["worktrees"][0];
    assert_eq!(rec["layout"], "overlay", "{reg}");
    let upper = dir
        .join(".layers")
        .join(rec["id"].as_str().unwrap())
        .join("upper");
    // The agent's command ran as that user, and what it wrote is in the upper layer,
    // owned by that user on disk.
    assert_eq!(
        std::fs::read_to_string(upper.join("uid.txt")).unwrap(),
        "65534\n"
    );
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        std::fs::metadata(upper.join("added.txt")).unwrap().uid(),
        65534
    );
}

#[test]
fn an_agent_cannot_write_the_base_its_workspace_and_others_stand_on() {
    // The attack: the shared base checkout is a folder beside the workspace. The agent
    // writes into it by a relative path, by globs the engine cannot resolve, by the file
    // tool, and tries to delete it; had any landed, every workspace on that base would
    // see it.
    require_features!(Overlays, Landlock, MountNamespaces);
    let p = place();
    let home = p.home.display();
    // Globs and a loop variable the engine cannot resolve: the command runs, sandboxed.
    let writes = format!(
        "echo pwned > ../.bases/*/tree/keep.txt; \
         for f in {home}/.crew/worktrees/*/.bases/*/tree/keep.txt; do echo pwned > \"$f\"; done; \
         for d in ../.bases/*; do mv \"$d\" \"$d.gone\"; done; true"
    );
    let script = json!({"turns": [
        {"tool_calls": [{"name": "agent", "input": {"description": "worker", "prompt": "p", "subagent_type": "w"}}]},
        {"text": "done"}],
      "agents": {"w": {"turns": [
        {"tool_calls": [
            {"name": "write_file", "input": {"path": "added.txt", "content": "added\n"}},
            {"name": "write_file", "input": {"path": "../.bases/x/tree/keep.txt", "content": "pwned"}},
            {"name": "run_command", "input": {"command": writes}},
            {"name": "run_command", "input": {"command": "rm -rf ../.bases"}}]},
        {"text": "worked"}]}}});
    support::crew_scripted(
        &p.repo,
        &p.home,
        &script,
        &["-p", "go", "--permission-mode", "acceptEdits"],
    );
    let (dir, reg) = registry(&p.home);
    assert_eq!(reg["worktrees"][0]["layout"], "overlay", "{reg}");
    // The command ran (the OS sandbox, not the engine, stood in its way).
    let log = std::fs::read_dir(p.home.join(".crew/projects"))
        .unwrap()
        .flatten()
        .flat_map(|d| walk(&d.path()))
        .filter(|f| f.extension().is_some_and(|e| e == "log"))
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect::<String>();
    assert!(
        log.contains("→ run_command {\"command\":\"echo pwned") && log.contains("✓ run_command"),
        "the writes ran, confined: {log}"
    );
    let bases: Vec<PathBuf> = std::fs::read_dir(dir.join(".bases"))
        .expect("the base is still there")
        .flatten()
        .map(|e| e.path())
        .filter(|b| b.is_dir())
        .collect();
    assert_eq!(bases.len(), 1, "{bases:?}");
    let base = &bases[0];
    assert_eq!(
        std::fs::read_to_string(base.join("tree/keep.txt")).unwrap(),
        "keep\n"
    );
    assert_eq!(
        tree(&base.join("tree")),
        tree(&p.repo),
        "the base is the commit, untouched"
    );
    assert!(!dir.join(".bases/x").exists());
    // The agent's own work landed, in its own layer.
    let id = reg["worktrees"][0]["id"].as_str().unwrap();
    let upper = dir.join(".layers").join(id).join("upper");
    assert_eq!(
        std::fs::read_to_string(upper.join("added.txt")).unwrap(),
        "added\n"
    );
}
