//! Worker machines, end to end on loopback with real processes: `crew worker` nodes
//! sharing a cookie file, a scripted `crew -p` lead with `--workers`, real git. Each test
//! checks the disk and the lead's records afterwards. Synchronisation is on files (a
//! worker's log line, a marker the remote agent writes), each wait with a generous bound.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use support::worker::{WorkerProcess, start_worker, start_worker_with, write_cookie};
use support::{git, put};

/// A remote subagent under a lead in auto (tests/workers/auto.rs).
#[path = "workers/auto.rs"]
mod auto;
/// A worker or the lead dying mid-run (tests/workers/failures.rs).
#[path = "workers/failures.rs"]
mod failures;
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
        "---\nname: {name}\ndescription: works on a worker\nisolation: worktree\nplacement: remote\ntools: {tools}\n---\nYou work.\n"
    )
}

fn spawn_call(ty: &str, description: &str) -> serde_json::Value {
    serde_json::json!({"name": "agent", "input": {
        "description": description, "prompt": format!("do {description}"),
        "subagent_type": ty, "run_in_background": true}})
}

/// Runs the scripted lead with `--workers ADDRS`; returns its output.
fn lead(
    root: &Path,
    home: &Path,
    script: &serde_json::Value,
    addrs: &[&str],
    cookie: &Path,
    extra: &[&str],
) -> std::process::Output {
    lead_command(root, home, script, addrs, cookie, extra)
        .output()
        .unwrap()
}

/// The command of [`lead`], not yet started.
fn lead_command(
    root: &Path,
    home: &Path,
    script: &serde_json::Value,
    addrs: &[&str],
    cookie: &Path,
    extra: &[&str],
) -> Command {
    let script_path = home.join("script.json");
    std::fs::write(&script_path, script.to_string()).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_crew"));
    cmd.args(["-p", "fan out", "--model"])
        .arg(format!("script:{}", script_path.display()))
        .args(["--workers", &addrs.join(","), "--cookie-file"])
        .arg(cookie)
        .arg("--record-requests")
        .arg(home.join("requests.jsonl"))
        .args(extra)
        .current_dir(root)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY");
    cmd
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
    let addrs: Vec<&str> = workers.iter().map(|w| w.addr.as_str()).collect();
    let out = lead(&f.root, &f.home, &script, &addrs, &f.cookie, &[]);
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
fn a_workers_sandbox_refuses_writes_outside_its_worktree_under_a_bypass_lead() {
    assert!(
        crewmaster::sandbox::landlock::kernel_support()
            == crewmaster::sandbox::landlock::KernelSupport::Available
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
        &[worker.addr.as_str()],
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
