//! Worker machines, end to end on loopback with real processes: `crew worker` nodes
//! sharing a cookie file, a scripted `crew -p` lead with `--workers`, real git. Each test
//! checks the disk and the lead's records afterwards. Synchronisation is on files (a
//! worker's log line, a marker the remote agent writes), each wait with a generous bound.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use support::worker::{WorkerProcess, start_worker, start_worker_with, write_cookie};
use support::{git, put};

/// `crew workers list` asking the running lead (tests/workers/listing.rs).
#[path = "workers/listing.rs"]
mod listing;
/// TLS between lead and workers (tests/workers/tls.rs).
#[path = "workers/tls.rs"]
mod tls;

/// Waits until `check` holds (the suite's one bounded wait).
fn wait_for(what: &str, check: impl FnMut() -> bool) {
    support::wait_until_blocking(what, check);
}

/// A git repository with one commit and the given agent definitions committed.
fn repo(root: &Path, agents: &[(&str, &str)]) {
    std::fs::create_dir_all(root).unwrap();
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["config", "user.name", "t"]);
    git(root, &["config", "user.email", "t@t"]);
    put(root, "README.md", "project\n");
    for (name, body) in agents {
        put(root, &format!(".crew/agents/{name}.md"), body);
    }
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "init"]);
}

fn remote_agent(name: &str, tools: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: works on a worker\nplacement: remote\ntools: {tools}\n---\nYou work.\n"
    )
}

fn spawn_call(ty: &str, description: &str) -> serde_json::Value {
    serde_json::json!({"name": "agent", "input": {
        "description": description, "prompt": format!("do {description}"),
        "subagent_type": ty, "run_in_background": true}})
}

/// Runs the scripted lead with `--workers`; returns its output.
fn lead(
    root: &Path,
    home: &Path,
    script: &serde_json::Value,
    workers: &[&WorkerProcess],
    cookie: &Path,
    extra: &[&str],
) -> std::process::Output {
    let script_path = home.join("script.json");
    std::fs::write(&script_path, script.to_string()).unwrap();
    let list: Vec<&str> = workers.iter().map(|w| w.addr.as_str()).collect();
    Command::new(env!("CARGO_BIN_EXE_crew"))
        .args(["-p", "fan out", "--model"])
        .arg(format!("script:{}", script_path.display()))
        .args(["--workers", &list.join(","), "--cookie-file"])
        .arg(cookie)
        .arg("--record-requests")
        .arg(home.join("requests.jsonl"))
        .args(extra)
        .current_dir(root)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap()
}

fn tasks_json(root: &Path, home: &Path) -> Vec<serde_json::Value> {
    let out = support::crew(root, home, &["tasks", "list", "--json"]);
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn branch_of(root: &Path, task: &str) -> String {
    git(
        root,
        &[
            "branch",
            "--list",
            &format!("crew/{task}/*"),
            "--format=%(refname:short)",
        ],
    )
    .trim()
    .to_string()
}

fn text(out: &std::process::Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

struct Fixture {
    _dir: tempfile::TempDir,
    home: PathBuf,
    root: PathBuf,
    cookie: PathBuf,
}

fn fixture(agents: &[(&str, &str)]) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let home = base.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let root = base.join("repo");
    repo(&root, agents);
    let cookie = home.join("cookie");
    write_cookie(&cookie, "7f3a9c1e5b2d4f6a8c0e1b3d5f7a9c2e");
    Fixture {
        _dir: dir,
        home,
        root,
        cookie,
    }
}

#[test]
fn nine_remote_subagents_on_three_workers_bring_their_branches_back() {
    let names: Vec<String> = (1..=9).map(|i| format!("w{i}")).collect();
    let defs: Vec<(String, String)> = names
        .iter()
        .map(|n| (n.clone(), remote_agent(n, "write_file")))
        .collect();
    let defs_ref: Vec<(&str, &str)> = defs.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let f = fixture(&defs_ref);
    let workers: Vec<WorkerProcess> = ["a", "b", "c"]
        .iter()
        .map(|n| start_worker(&f.home, &f.cookie, n, 4))
        .collect();
    let mut agents = serde_json::Map::new();
    for n in &names {
        agents.insert(
            n.clone(),
            serde_json::json!({"turns": [
                {"tool_calls": [{"name": "write_file", "input": {"path": format!("{n}.txt"), "content": format!("from {n}\n")}}]},
                {"text": format!("{n} done")}
            ]}),
        );
    }
    let script = serde_json::json!({
        "turns": [{"tool_calls": names.iter().map(|n| spawn_call(n, &format!("job {n}"))).collect::<Vec<_>>()}],
        "agents": agents,
    });
    let refs: Vec<&WorkerProcess> = workers.iter().collect();
    let out = lead(&f.root, &f.home, &script, &refs, &f.cookie, &[]);
    assert!(out.status.success(), "{}", text(&out));

    let tasks = tasks_json(&f.root, &f.home);
    assert_eq!(tasks.len(), 9, "{tasks:#?}");
    let mut nodes = std::collections::BTreeSet::new();
    for t in &tasks {
        assert_eq!(t["status"], "completed", "{t:#}");
        let node = t["node"].as_str().expect("every task names its node");
        nodes.insert(node.split('@').next().unwrap().to_string());
        let ty = t["agent_type"].as_str().unwrap();
        let branch = branch_of(&f.root, t["id"].as_str().unwrap());
        assert!(!branch.is_empty(), "no branch came back for {t:#}");
        let file = git(&f.root, &["show", &format!("{branch}:{ty}.txt")]);
        assert_eq!(file, format!("from {ty}"));
    }
    // The work was spread: 9 tasks, 4 slots each, every worker used.
    assert_eq!(nodes.len(), 3, "{nodes:?}");
    // Nothing landed in the lead's main checkout.
    for n in &names {
        assert!(!f.root.join(format!("{n}.txt")).exists());
    }
    assert_eq!(git(&f.root, &["status", "--porcelain"]).trim(), "");
    // The returned branches are ordinary worktree branches: diffable and mergeable.
    let id = tasks[0]["id"].as_str().unwrap();
    let diff = support::crew(&f.root, &f.home, &["worktrees", "diff", id]);
    assert!(
        String::from_utf8_lossy(&diff.stdout).contains("+from "),
        "{diff:?}"
    );
    let merged = support::crew(&f.root, &f.home, &["worktrees", "merge", id]);
    assert!(merged.status.success(), "{}", text(&merged));
    let ty = tasks[0]["agent_type"].as_str().unwrap();
    assert!(f.root.join(format!("{ty}.txt")).exists());
    // Each worker handed its copies back and removed them.
    for w in &workers {
        wait_for("handed-back copies to go", || {
            std::fs::read_dir(&w.workdir)
                .map(|d| d.count())
                .unwrap_or(0)
                == 0
        });
    }
}

#[test]
fn a_wrong_cookie_is_refused_and_logged_on_both_sides() {
    let f = fixture(&[("r", &remote_agent("r", "write_file"))]);
    let worker = start_worker(&f.home, &f.cookie, "a", 1);
    let wrong = f.home.join("wrong-cookie");
    write_cookie(&wrong, "00000000000000000000000000000000");
    let out = support::crew(
        &f.root,
        &f.home,
        &[
            "workers",
            "list",
            "--workers",
            &worker.addr,
            "--cookie-file",
            wrong.to_str().unwrap(),
        ],
    );
    assert!(!out.status.success());
    let said = text(&out);
    assert!(
        said.contains("refused the connection") && said.contains("cookie"),
        "{said}"
    );
    wait_for("the worker to log the refusal", || {
        worker.log().contains("refused a connection")
    });
    // The right cookie is accepted and lists the node.
    let out = support::crew(
        &f.root,
        &f.home,
        &[
            "workers",
            "list",
            "--workers",
            &worker.addr,
            "--cookie-file",
            f.cookie.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("a@127.0.0.1  0/1 slots in use"));
}

#[test]
fn a_killed_worker_fails_its_task_which_is_rescheduled_and_no_branch_is_lost() {
    let release = tempfile::tempdir().unwrap();
    let signal = release.path().join("release");
    let f = fixture(&[
        ("quick", &remote_agent("quick", "write_file")),
        (
            "blocker",
            &remote_agent("blocker", "write_file, run_command"),
        ),
    ]);
    let a = start_worker(&f.home, &f.cookie, "a", 1);
    let b = start_worker(&f.home, &f.cookie, "b", 1);
    // The blocker marks that it runs, then waits for the test's signal file: "mid-task"
    // is a state, not a moment.
    let wait = format!(
        "touch started && while [ ! -f {} ]; do sleep 0.05; done && echo released",
        signal.display()
    );
    let script = serde_json::json!({
        // The lead's first run starts the quick task and ends; its completion starts the
        // second run, which starts the blocker.
        "turns": [
            {"tool_calls": [spawn_call("quick", "quick job")]},
            {"text": "waiting"},
            {"tool_calls": [spawn_call("blocker", "blocking job")]},
            {"text": "waiting again"},
        ],
        "agents": {
            "quick": {"turns": [
                {"tool_calls": [{"name": "write_file", "input": {"path": "quick.txt", "content": "quick\n"}}]},
                {"text": "quick done"}]},
            "blocker": {"turns": [
                {"tool_calls": [{"name": "run_command", "input": {"command": wait}}]},
                {"tool_calls": [{"name": "write_file", "input": {"path": "blocked.txt", "content": "after\n"}}]},
                {"text": "blocker done"}]},
        }
    });
    let root = f.root.clone();
    let home = f.home.clone();
    let cookie = f.cookie.clone();
    let (a_addr, b_addr) = (a.addr.clone(), b.addr.clone());
    let lead_run = std::thread::spawn(move || {
        let script_path = home.join("script.json");
        std::fs::write(&script_path, script.to_string()).unwrap();
        Command::new(env!("CARGO_BIN_EXE_crew"))
            .args(["-p", "fan out", "--model"])
            .arg(format!("script:{}", script_path.display()))
            .args(["--workers", &format!("{a_addr},{b_addr}"), "--cookie-file"])
            .arg(&cookie)
            .arg("--record-requests")
            .arg(home.join("requests.jsonl"))
            .current_dir(&root)
            .env("HOME", &home)
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .output()
            .unwrap()
    });
    // The quick task ran on `a` (first, least loaded) and its branch came back; then the
    // blocker started on `a` as well.
    let started = || {
        std::fs::read_dir(&a.workdir)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| e.path().join("wt/started").exists())
    };
    wait_for("the blocker to start on worker a", started);
    let quick_before = tasks_json(&f.root, &f.home)
        .into_iter()
        .find(|t| t["agent_type"] == "quick")
        .expect("the quick task is recorded");
    assert_eq!(quick_before["status"], "completed", "{quick_before:#}");
    let quick_branch = branch_of(&f.root, quick_before["id"].as_str().unwrap());
    assert!(!quick_branch.is_empty());
    // kill -9 the worker mid-task.
    let mut a = a;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(a.child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let _ = a.child.wait();
    std::fs::write(&signal, "go").unwrap();
    let out = lead_run.join().unwrap();
    assert!(out.status.success(), "{}", text(&out));

    let tasks = tasks_json(&f.root, &f.home);
    let blockers: Vec<_> = tasks
        .iter()
        .filter(|t| t["agent_type"] == "blocker")
        .collect();
    assert_eq!(blockers.len(), 2, "{tasks:#?}");
    let lost = blockers
        .iter()
        .find(|t| t["status"] == "failed")
        .expect("a failed try");
    let lost_result = lost["result"].as_str().unwrap();
    assert!(lost_result.contains("worker lost"), "{lost_result}");
    assert!(lost["node"].as_str().unwrap().starts_with("a@"));
    let again = blockers
        .iter()
        .find(|t| t["status"] == "completed")
        .expect("a rescheduled try");
    assert!(
        again["node"].as_str().unwrap().starts_with("b@"),
        "{again:#}"
    );
    assert!(
        lost_result.contains(again["id"].as_str().unwrap()),
        "{lost_result}"
    );
    let branch = branch_of(&f.root, again["id"].as_str().unwrap());
    assert_eq!(
        git(&f.root, &["show", &format!("{branch}:blocked.txt")]),
        "after"
    );
    // The branch that came back from the killed worker before it died is still there.
    assert_eq!(
        git(&f.root, &["show", &format!("{quick_branch}:quick.txt")]),
        "quick"
    );
    // The lead was told: a request after the loss carries the failure.
    let requests = std::fs::read_to_string(f.home.join("requests.jsonl")).unwrap();
    assert!(
        requests
            .lines()
            .filter(|l| l.contains("\"agent\":\"lead\""))
            .any(|l| l.contains("worker lost")),
        "the lead never heard of the loss"
    );
    drop(b);
}

#[test]
fn a_workers_sandbox_refuses_writes_outside_its_worktree_under_a_bypass_lead() {
    assert!(
        crewmaster::tools::landlock::kernel_support()
            == crewmaster::tools::landlock::KernelSupport::Available
            || std::env::var_os("CREW_ALLOW_NO_LANDLOCK").is_some(),
        "this safety test needs Landlock (set CREW_ALLOW_NO_LANDLOCK=1 to run without it knowingly)"
    );
    let outside = tempfile::tempdir().unwrap();
    let outside = outside.path().canonicalize().unwrap();
    let f = fixture(&[(
        "escaper",
        &remote_agent("escaper", "write_file, run_command"),
    )]);
    // The lead's deny rule travels with the spawn and holds on the worker.
    put(
        &f.home,
        ".crew/settings.json",
        r#"{"permissions": {"deny": ["Write(denied.txt)"]}}"#,
    );
    let worker = start_worker(&f.home, &f.cookie, "a", 1);
    let by_tool = outside.join("by-tool.txt");
    let by_program = outside.join("by-program.txt");
    let script = serde_json::json!({
        "turns": [{"tool_calls": [spawn_call("escaper", "escape")]}],
        "agents": {"escaper": {"turns": [
            {"tool_calls": [
                {"name": "write_file", "input": {"path": by_tool.to_str().unwrap(), "content": "x"}},
                {"name": "run_command", "input": {"command": format!(
                    "python3 -c \"open('{}','w').write('x')\"; echo rc=$?", by_program.display())}},
                {"name": "run_command", "input": {"command": "echo inside > inside.txt"}},
                {"name": "write_file", "input": {"path": "denied.txt", "content": "x"}},
            ]},
            {"text": "tried"}]}}
    });
    let out = lead(
        &f.root,
        &f.home,
        &script,
        &[&worker],
        &f.cookie,
        &["--permission-mode", "bypassPermissions"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        !by_tool.exists(),
        "the file tool wrote outside the worktree"
    );
    assert!(
        !by_program.exists(),
        "an opaque program wrote outside the worktree"
    );
    // Writing inside still works, and came back on the branch.
    let task = &tasks_json(&f.root, &f.home)[0];
    let branch = branch_of(&f.root, task["id"].as_str().unwrap());
    assert_eq!(
        git(&f.root, &["show", &format!("{branch}:inside.txt")]),
        "inside"
    );
    let tree = git(&f.root, &["ls-tree", "-r", "--name-only", &branch]);
    assert!(!tree.contains("denied.txt"), "{tree}");
    let log = std::fs::read_to_string(task["output_file"].as_str().unwrap()).unwrap();
    // The engine refused the file tool; the python program was let through (dontAsk) and
    // the worker's Landlock sandbox is what stopped it.
    assert!(log.contains("✗ write_file [permission_denied]"), "{log}");
    assert!(!log.contains("✗ run_command"), "{log}");
}

#[test]
fn a_lead_that_dies_leaves_its_branch_on_the_worker_after_the_orphan_timeout() {
    let release = tempfile::tempdir().unwrap();
    let signal = release.path().join("release");
    let f = fixture(&[(
        "blocker",
        &remote_agent("blocker", "write_file, run_command"),
    )]);
    let w = start_worker_with(&f.home, &f.cookie, "a", 1, &["--orphan-timeout", "1"]);
    let wait = format!(
        "echo work > started && while [ ! -f {} ]; do sleep 0.05; done",
        signal.display()
    );
    let script = serde_json::json!({
        "turns": [{"tool_calls": [spawn_call("blocker", "orphaned job")]}],
        "agents": {"blocker": {"turns": [
            {"tool_calls": [{"name": "run_command", "input": {"command": wait}}]},
            {"text": "done"}]}}
    });
    let script_path = f.home.join("script.json");
    std::fs::write(&script_path, script.to_string()).unwrap();
    let mut lead = Command::new(env!("CARGO_BIN_EXE_crew"))
        .args(["-p", "fan out", "--model"])
        .arg(format!("script:{}", script_path.display()))
        .args(["--workers", &w.addr, "--cookie-file"])
        .arg(&f.cookie)
        .current_dir(&f.root)
        .env("HOME", &f.home)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let task_dir = || {
        std::fs::read_dir(&w.workdir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.join("wt/started").exists())
    };
    wait_for("the task to start on the worker", || task_dir().is_some());
    let dir = task_dir().unwrap();
    lead.kill().unwrap();
    let _ = lead.wait();
    std::fs::write(&signal, "go").unwrap();
    wait_for("the worker to give up on the orphan", || {
        w.log().contains("never handed back")
    });
    wait_for("the orphan's worktree to go", || !dir.join("wt").exists());
    // Its branch, with the work, stays in the task's repository on the worker.
    let repo = dir.join("repo.git");
    let branches = git(
        &repo,
        &["branch", "--list", "crew/*", "--format=%(refname:short)"],
    );
    let branch = branches.trim();
    assert!(!branch.is_empty(), "{}", w.log());
    assert_eq!(git(&repo, &["show", &format!("{branch}:started")]), "work");
    assert!(w.log().contains("went away"), "{}", w.log());
}
