//! The one set of test helpers, shared by every integration test (`mod support;`): fake
//! tools that record whether they ran, a session builder over the scripted provider,
//! `crew` runs, one `git` helper, and waits on events (never on time). Topic helpers live
//! in submodules: `kernel` (the kernel features safety tests need, and the safety ledger),
//! `permission`, `sandbox`, `worktree`, `hooks`, `provider`, `team` and `faults` (the four
//! properties every fault test asserts).
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use crewmaster::agent::runner::AgentSpec;
use crewmaster::approver::actor::ApproverPolicy;
use crewmaster::events::{Event, EventBus};
use crewmaster::permission::PermissionMode;
use crewmaster::provider::scripted::{Script, ScriptedProvider};
use crewmaster::session::{SessionConfig, SessionHandle};
use crewmaster::tools::{
    CommandSandbox, Definition, Registry, Safety, Tool, ToolContext, ToolError,
};
use serde_json::{Value, json};

pub mod dashboard;
pub mod faults;
pub mod hooks;
pub mod webdriver;
// `#[macro_use]`: its macros reach every test module declared after `support`.
#[macro_use]
pub mod kernel;
pub mod permission;
pub mod provider;
#[macro_use]
pub mod sandbox;
pub mod team;
pub mod worker;
pub mod worktree;
use tokio::sync::mpsc::UnboundedReceiver;

/// The name libtest gives the test `test` of the module `module` (pass `module_path!()`):
/// the module path without the binary's crate name, as `--exact` wants it when a test
/// re-runs one test of its own binary in a child process.
pub fn own_test(module: &str, test: &str) -> String {
    match module.split_once("::") {
        Some((_, inner)) => format!("{inner}::{test}"),
        None => test.to_string(),
    }
}

/// What a fake tool does when it runs.
#[derive(Clone, Copy)]
pub enum Behaviour {
    /// Returns "ok from NAME".
    Succeed,
    /// Panics.
    Panic,
    /// Sleeps for an hour (to exceed its timeout).
    Hang,
}

/// A tool that counts its runs.
pub struct FakeTool {
    def: Definition,
    behaviour: Behaviour,
    pub runs: Arc<AtomicUsize>,
}

impl FakeTool {
    /// A fake of the built-in tool `name` (its permission spec is the real tool's).
    pub fn new(name: &str, safety: Safety, system: bool, behaviour: Behaviour) -> Self {
        Self {
            def: Definition {
                name: name.into(),
                description: format!("fake {name}"),
                input_schema: json!({
                    "type": "object",
                    "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}}
                }),
                safety,
                system,
                timeout: match behaviour {
                    Behaviour::Hang => Some(Duration::from_millis(200)),
                    _ => None,
                },
                aliases: Vec::new(),
                // A fake stands in for the built-in tool of its name: same permission spec.
                permission: crewmaster::tools::builtin_permission(name),
            },
            behaviour,
            runs: Arc::default(),
        }
    }

    pub fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Tool for FakeTool {
    fn definition(&self) -> &Definition {
        &self.def
    }

    async fn run(&self, _input: Value, _ctx: ToolContext) -> Result<String, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        match self.behaviour {
            Behaviour::Succeed => Ok(format!("ok from {}", self.def.name)),
            Behaviour::Panic => panic!("fake tool {} panics", self.def.name),
            Behaviour::Hang => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok(String::new())
            }
        }
    }
}

/// A session under test.
pub struct TestSession {
    pub session: SessionHandle,
    pub provider: ScriptedProvider,
    pub events: UnboundedReceiver<Event>,
    /// The session's bus (to add a recorder before a run).
    pub bus: EventBus,
    pub dir: tempfile::TempDir,
    /// A home directory outside the project: task state under `session/`, worktrees under
    /// `.crew/worktrees` (where `crew worktrees` looks with `HOME` set to it).
    pub home: tempfile::TempDir,
}

impl TestSession {
    /// The canonical project directory.
    pub fn cwd(&self) -> std::path::PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    /// The session's task-state directory.
    pub fn session_dir(&self) -> std::path::PathBuf {
        self.home.path().canonicalize().unwrap().join("session")
    }
}

/// Options for `start`.
pub struct Setup {
    pub script: String,
    /// Files written (and committed, with `git`) before the session starts.
    pub files: Vec<(&'static str, String)>,
    pub tools: Vec<Arc<dyn Tool>>,
    pub mode: PermissionMode,
    pub allowed_tools: Option<Vec<&'static str>>,
    pub approver: ApproverPolicy,
    /// Run background tasks and subagents (adds the orchestration tools).
    pub orchestration: bool,
    /// Make the temporary directory a git repository with one commit.
    pub git: bool,
    /// Load the project's skills (`.claude/skills`, `.crew/skills`) and add the `skill`
    /// tool.
    pub skills: bool,
    /// Context windows and compaction.
    pub context: crewmaster::agent::context::ContextSettings,
    /// Worker nodes the session has joined (`--workers`; with `orchestration`).
    pub workers: Option<Arc<crewmaster::worker::pool_actor::Pool>>,
    /// Record the session's transcript as the binary does, under the test's home
    /// (`faults::in_process_transcript`), for the fault tests' transcript property.
    pub transcript: bool,
}

impl Setup {
    pub fn new(script: impl Into<String>, tools: Vec<Arc<dyn Tool>>) -> Self {
        Self {
            script: script.into(),
            files: Vec::new(),
            tools,
            mode: PermissionMode::BypassPermissions,
            allowed_tools: None,
            approver: ApproverPolicy::Headless,
            orchestration: false,
            git: false,
            skills: false,
            context: Default::default(),
            workers: None,
            transcript: false,
        }
    }
}

/// Runs `git ARGS` in `dir` as a fixed identity (`t <t@t>`, default branch `main`), with
/// the user's global and system git config ignored; panics with git's stderr when it
/// fails. Returns its stdout without trailing whitespace.
pub fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = git_output(dir, args);
    assert!(
        out.status.success(),
        "git {args:?} failed in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim_end().to_string()
}

/// [`git`] without the success check: the whole output, for tests of failures.
pub fn git_output(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git runs")
}

/// Starts a session in a fresh temporary directory.
pub async fn start(setup: Setup) -> TestSession {
    let dir = tempfile::tempdir().unwrap();
    let cwd = std::fs::canonicalize(dir.path()).unwrap();
    for (path, content) in &setup.files {
        let p = cwd.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
    if setup.git {
        committed_repo(&cwd, &[("README.md", "# test repo\n")]);
    }
    // `@CWD@` in a script stands for the project directory (known only now).
    let script_text = setup.script.replace("@CWD@", &cwd.display().to_string());
    let script: Script = serde_json::from_str(&script_text).expect("test script parses");
    let home_dir = tempfile::tempdir().unwrap();
    let home = home_dir.path().canonicalize().unwrap();
    let catalog = Arc::new(crewmaster::agent::catalog::Catalog::load(&cwd, None));
    let mut tools = setup.tools;
    let workers = setup
        .workers
        .map(|pool| pool as Arc<dyn crewmaster::agent::host::Workers>);
    let orchestration = setup.orchestration.then(|| {
        tools.extend(crewmaster::tools::orchestration_tools(
            &catalog.agent_types(),
        ));
        crewmaster::session::Orchestration {
            session_dir: home.join("session"),
            catalog: catalog.clone(),
            worktrees: true,
            worktree_base: Some(home.join(".crew/worktrees")),
            max_concurrent_agents: 8,
            subagent_max_turns: 10,
            teams_dir: Some(home.join("teams")),
            restore_team: None,
            workers,
        }
    });
    let provider = ScriptedProvider::new(script);
    let events = EventBus::new();
    let rx = events.subscribe();
    if setup.transcript {
        let (lead, agents) = faults::in_process_transcript(&home);
        // The recorder writes inside `publish`; the task only waits for the bus to close.
        drop(crewmaster::transcript::record(&events, lead, agents));
    }
    let session = SessionHandle::start(
        SessionConfig::builder(
            cwd.clone(),
            Arc::new(provider.clone()),
            AgentSpec {
                id: "lead".into(),
                model: "script".into(),
                system_prompt: "test".into(),
                allowed_tools: setup
                    .allowed_tools
                    .map(|v| v.into_iter().map(String::from).collect()),
                max_turns: 20,
                max_tokens: 1000,
            },
            Arc::new({
                let registry = Registry::with_tools(tools).unwrap();
                if setup.skills {
                    let skills = crewmaster::skills::SkillCatalog::load(&cwd, None);
                    registry.with_skills(Arc::new(skills)).unwrap()
                } else {
                    registry
                }
            }),
        )
        .permission_mode(setup.mode)
        .approver(setup.approver)
        .sandbox(CommandSandbox::None)
        .tool_timeout(Duration::from_secs(30))
        .events(events.clone())
        .orchestration(orchestration)
        .context(setup.context)
        .build(),
    )
    .await
    .unwrap();
    TestSession {
        session,
        provider,
        events: rx,
        bus: events,
        dir,
        home: home_dir,
    }
}

/// The tool results in a conversation, in order.
pub fn tool_results(
    conv: &[crewmaster::protocol::Message],
) -> Vec<crewmaster::protocol::ToolResult> {
    conv.iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|b| match b {
            crewmaster::protocol::ContentBlock::ToolResult(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

/// Runs the `crew` binary in `cwd` with `HOME` set to `home` and no provider keys.
pub fn crew(cwd: &std::path::Path, home: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_crew"))
        .args(args)
        .current_dir(cwd)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("crew runs")
}

/// A fresh git repository `repo` (with a README) and a home directory `home` beside it,
/// both canonical, in a temporary directory that lives as long as the first value.
pub fn repo_and_home() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let (home, repo) = (base.join("home"), base.join("repo"));
    std::fs::create_dir_all(&home).unwrap();
    put(&repo, "README.md", "# p\n");
    git(&repo, &["init", "-q"]);
    (tmp, home, repo)
}

/// Writes `text` to `dir/rel`, creating its directory.
pub fn put(dir: &std::path::Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// Makes `dir` (created if missing) a git repository on `main` with `files` written and
/// everything in it committed as one commit; returns git's trimmed output of the commit.
pub fn committed_repo(dir: &std::path::Path, files: &[(&str, &str)]) -> String {
    std::fs::create_dir_all(dir).unwrap();
    for (rel, text) in files {
        put(dir, rel, text);
    }
    git(dir, &["init", "-q"]);
    git(dir, &["add", "."]);
    git(dir, &["commit", "-qm", "initial"])
}

/// Runs `crew -p TASK` in `dir` under `mode` on the scripted model in `home/script.json`,
/// recording its requests; returns the output and the recorded requests.
pub fn crew_p_recorded(
    dir: &std::path::Path,
    home: &std::path::Path,
    task: &str,
    mode: &str,
) -> (std::process::Output, Vec<serde_json::Value>) {
    crew_recording(
        dir,
        home,
        &home.join("script.json"),
        &home.join("requests.jsonl"),
        &["-p", task, "--permission-mode", mode],
    )
}

/// Runs `crew ARGS…` in `dir` (HOME = `home`) on the scripted model `script`, its requests
/// recorded, and asserts it succeeded (showing its stderr); returns the output and the
/// recorded requests. The script and the record live in a temporary directory of their
/// own, so neither the project nor HOME sees them.
pub fn crew_scripted(
    dir: &std::path::Path,
    home: &std::path::Path,
    script: &Value,
    args: &[&str],
) -> (std::process::Output, Vec<Value>) {
    let (out, requests) = crew_scripted_output(dir, home, script, args);
    assert!(
        out.status.success(),
        "crew {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out, requests)
}

/// [`crew_scripted`] without the success check, for runs that are meant to fail.
pub fn crew_scripted_output(
    dir: &std::path::Path,
    home: &std::path::Path,
    script: &Value,
    args: &[&str],
) -> (std::process::Output, Vec<Value>) {
    let files = tempfile::tempdir().unwrap();
    let path = files.path().join("script.json");
    std::fs::write(&path, script.to_string()).unwrap();
    crew_recording(dir, home, &path, &files.path().join("requests.jsonl"), args)
}

/// Runs `crew ARGS… --model script:SCRIPT --record-requests RECORD`; returns the output and
/// the requests recorded (none if the run recorded nothing).
fn crew_recording(
    dir: &std::path::Path,
    home: &std::path::Path,
    script: &std::path::Path,
    record: &std::path::Path,
    args: &[&str],
) -> (std::process::Output, Vec<Value>) {
    let model = format!("script:{}", script.display());
    let mut all = args.to_vec();
    all.extend([
        "--model",
        &model,
        "--record-requests",
        record.to_str().unwrap(),
    ]);
    let out = crew(dir, home, &all);
    let requests = std::fs::read_to_string(record)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (out, requests)
}

/// The rmcp test server (tests/peers/mcp_test_server.rs), a binary cargo builds with the
/// tests (the `test-peers` feature).
pub fn mcp_test_server() -> std::path::PathBuf {
    let bin = std::path::PathBuf::from(env!("CARGO_BIN_EXE_mcp_test_server"));
    assert!(bin.is_file(), "{} missing", bin.display());
    bin
}

/// How long [`wait_until`] waits before it gives up: generous, as tests run on loaded
/// machines; the condition is an event (a file, a process state), never a duration.
pub const WAIT_BOUND: Duration = Duration::from_secs(120);

/// Waits until `cond` holds, looking every 10 ms for at most [`WAIT_BOUND`]; panics
/// naming `what` when it never does. For async tests (it yields, never blocks a worker).
pub async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + WAIT_BOUND;
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "gave up after {WAIT_BOUND:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// [`wait_until`] for plain (non-async) tests.
pub fn wait_until_blocking(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + WAIT_BOUND;
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "gave up after {WAIT_BOUND:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}
