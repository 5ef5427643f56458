//! Fan-out benchmark (issue 5): a lead starts N scripted subagents in the background on a
//! repository of ~2,000 files; each subagent gets its own git worktree and takes 5 model
//! turns of 100 ms simulated latency. Prints, all measured in this one run:
//!
//! - wall time over the ideal, where ideal = **one** worktree's creation (the median
//!   measured below) + 5 × 100 ms of model turns: worktrees are created in parallel, so
//!   the fan-out should cost little more than one subagent alone (target ≤ 1.5× at
//!   N = 32); the rest is overhead (worktree removal included);
//! - our worktree creation time over plain `git worktree add -b` (medians, interleaved;
//!   target ≤ 1.0×);
//! - peak memory per subagent (growth of the process's peak RSS over N; the subagents
//!   are idle, waiting on their model, nearly all of the time);
//! - memory per idle teammate: a second session starts N named teammates that answer
//!   once and go idle; growth of RSS once the team is quiet, over N (target ≤ 1 MiB).
//!
//! `cargo run --release --example fanout -- [N]` (default N = 32).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crewmaster::agent::catalog::Catalog;
use crewmaster::agent::mode::AgentMode;
use crewmaster::agent::runner::{AgentSpec, RunRequest};
use crewmaster::approver::actor::ApproverPolicy;
use crewmaster::events::EventBus;
use crewmaster::permission::{PermissionMode, Policy};
use crewmaster::provider::scripted::ScriptedProvider;
use crewmaster::session::{Orchestration, SessionConfig, SessionHandle};
use crewmaster::tasks::{TaskStatus, load_records};
use crewmaster::tools::{CommandSandbox, Registry, builtin_tools, orchestration_tools};
use crewmaster::worktree::manager::Manager;

const TURNS: u64 = 5;
const LATENCY_MS: u64 = 100;

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.com",
        ])
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?} failed");
}

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix(field)
                .map(|v| v.trim().trim_end_matches(" kB").trim().parse().unwrap_or(0))
        })
        .unwrap_or(0)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn make_repo(repo: &Path) -> anyhow::Result<()> {
    for d in 0..40 {
        let dir = repo.join(format!("src/mod{d:02}"));
        std::fs::create_dir_all(&dir)?;
        for f in 0..50 {
            std::fs::write(
                dir.join(format!("file{f:02}.rs")),
                format!("// {d}/{f}\npub fn f() -> u32 {{ {f} }}\n"),
            )?;
        }
    }
    std::fs::write(repo.join("README.md"), "# bench\n")?;
    std::fs::create_dir_all(repo.join(".crew/agents"))?;
    std::fs::write(
        repo.join(".crew/agents/bench.md"),
        "---\nname: bench\ndescription: benchmark worker\ntools: read_file, find_files\n---\nWork.\n",
    )?;
    git(repo, &["init", "-q", "-b", "main"]);
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "2000 files"]);
    Ok(())
}

/// Medians of our creation and of `git worktree add -b`, interleaved, `samples` each.
fn creation_times(
    repo: &Path,
    scratch: &Path,
    samples: usize,
) -> anyhow::Result<(Duration, Duration)> {
    let manager = Manager::open(repo, Some(&scratch.join("probe")))?;
    let (mut ours, mut plain) = (Vec::new(), Vec::new());
    for i in 0..samples {
        let t = Instant::now();
        manager.create(&format!("probe{i}"), "probe", None)?;
        ours.push(t.elapsed());
        let path = scratch.join(format!("plain{i}"));
        let t = Instant::now();
        git(
            repo,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                &format!("plain{i}"),
                path.to_str().unwrap_or_default(),
            ],
        );
        plain.push(t.elapsed());
        manager.discard(&format!("probe{i}"))?;
        git(
            repo,
            &[
                "worktree",
                "remove",
                "--force",
                path.to_str().unwrap_or_default(),
            ],
        );
        git(repo, &["branch", "-q", "-D", &format!("plain{i}")]);
    }
    Ok((median(ours), median(plain)))
}

fn script(n: usize) -> String {
    let calls: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"name":"agent","input":{{"description":"part {i}","prompt":"look at part {i}","subagent_type":"bench","run_in_background":true}}}}"#
            )
        })
        .collect();
    let mut lead = vec![format!(r#"{{"tool_calls":[{}]}}"#, calls.join(","))];
    lead.extend((0..=n).map(|_| r#"{"text":"noted"}"#.to_string()));
    let mut sub: Vec<String> = (1..TURNS)
        .map(|_| format!(r#"{{"delay_ms":{LATENCY_MS},"tool_calls":[{{"name":"read_file","input":{{"path":"README.md"}}}}]}}"#))
        .collect();
    sub.push(format!(r#"{{"delay_ms":{LATENCY_MS},"text":"done"}}"#));
    format!(
        r#"{{"turns":[{}],"agents":{{"bench":{{"turns":[{}]}}}}}}"#,
        lead.join(","),
        sub.join(",")
    )
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let n: usize = std::env::args().nth(1).map_or(Ok(32), |a| a.parse())?;
    let tmp = tempfile::tempdir()?;
    let root = tmp.path().canonicalize()?;
    let repo = root.join("repo");
    make_repo(&repo)?;
    let (ours, plain) = creation_times(&repo, &root, 5)?;

    // Reset the peak-RSS counter so the peak below is this run's.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let rss_before = status_kib("VmRSS:");
    let session = start_session(&repo, &root, "session", &script(n), n).await?;

    let start = Instant::now();
    let start_ms = crewmaster::tasks::now_ms();
    let chat = |task: &str| RunRequest {
        mode: AgentMode::Chat,
        task: task.into(),
        plan: None,
    };
    session.run(chat("fan out")).await?;
    while session.next_completion().await.is_some() {
        session.run(chat("continue")).await?;
    }
    let wall = start.elapsed();
    let peak = status_kib("VmHWM:");
    session.shutdown().await;

    let records = load_records(&root.join("session"))?;
    let completed = records
        .iter()
        .filter(|r| r.status == TaskStatus::Completed)
        .count();
    let left: Vec<PathBuf> = records
        .iter()
        .filter_map(|r| r.worktree.clone())
        .filter(|p| p.exists())
        .collect();
    // The last subagent starts running once the last worktree exists: that span is shown.
    let last_start = records
        .iter()
        .filter_map(|r| r.started_ms)
        .max()
        .unwrap_or(start_ms);
    let setup = Duration::from_millis(last_start.saturating_sub(start_ms));
    // One subagent alone: its worktree, then its turns.
    let ideal = ours + Duration::from_millis(TURNS * LATENCY_MS);
    let teammate_kib = idle_teammates(&repo, &root, n).await?;
    println!("fan-out: {n} subagents × {TURNS} turns × {LATENCY_MS} ms on a 2,000-file repository");
    println!(
        "  completed: {completed}/{n}; worktrees left behind: {} (read-only work is removed)",
        left.len()
    );
    println!(
        "  worktree creation: ours {:.1} ms, `git worktree add` {:.1} ms → ratio {:.2}",
        ms(ours),
        ms(plain),
        ms(ours) / ms(plain)
    );
    println!(
        "  wall {:.2} s, ideal {:.2} s (one worktree {:.1} ms + 0.5 s of turns) → ratio {:.2} (target ≤ 1.5); all {n} worktrees made within {:.2} s ({} at once)",
        wall.as_secs_f64(),
        ideal.as_secs_f64(),
        ms(ours),
        wall.as_secs_f64() / ideal.as_secs_f64(),
        setup.as_secs_f64(),
        crewmaster::worktree::actor::parallel_creations()
    );
    println!(
        "  peak memory: {} KiB over a {} KiB baseline → {:.0} KiB per subagent (target ≤ 1024)",
        peak,
        rss_before,
        peak.saturating_sub(rss_before) as f64 / n as f64
    );
    println!(
        "  memory per idle teammate ({n} of them, quiet team): {teammate_kib:.0} KiB (target ≤ 1024)"
    );
    Ok(())
}

/// A session on `repo` with a scripted model, orchestration on (worktrees, teams).
async fn start_session(
    repo: &Path,
    root: &Path,
    name: &str,
    script: &str,
    n: usize,
) -> anyhow::Result<SessionHandle> {
    let catalog = Arc::new(Catalog::load(repo, None));
    let registry = Registry::with_tools(
        builtin_tools()
            .into_iter()
            .chain(orchestration_tools(&catalog)),
    )?;
    let provider = ScriptedProvider::new(ScriptedProvider::parse(script, Path::new(name))?);
    Ok(SessionHandle::start(SessionConfig {
        auto: None,
        context: Default::default(),
        cwd: repo.to_path_buf(),
        permission_mode: PermissionMode::BypassPermissions,
        policy: Policy::default(),
        provider: Arc::new(provider),
        lead: AgentSpec {
            id: "lead".into(),
            model: "script".into(),
            system_prompt: "lead".into(),
            allowed_tools: None,
            max_turns: 10,
            max_tokens: 1000,
        },
        approver: ApproverPolicy::Headless,
        registry: Arc::new(registry),
        sandbox: CommandSandbox::None,
        default_tool_timeout: Duration::from_secs(60),
        conversation: Vec::new(),
        events: EventBus::new(),
        hooks: None,
        orchestration: Some(Orchestration {
            session_dir: root.join(name),
            catalog,
            worktrees: true,
            worktree_base: Some(root.join(format!("{name}-worktrees"))),
            max_concurrent_agents: n,
            subagent_max_turns: 10,
            teams_dir: Some(root.join("teams")),
            restore_team: None,
            workers: None,
        }),
    })
    .await?)
}

/// Starts `n` named teammates that answer once and go idle; returns the growth of the
/// process's RSS per teammate once the team is quiet (they are still alive then).
async fn idle_teammates(repo: &Path, root: &Path, n: usize) -> anyhow::Result<f64> {
    let calls: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"name":"agent","input":{{"description":"mate {i}","prompt":"stand by","subagent_type":"bench","name":"mate{i}"}}}}"#
            )
        })
        .collect();
    let mut lead = vec![format!(r#"{{"tool_calls":[{}]}}"#, calls.join(","))];
    lead.extend((0..4 * n + 4).map(|_| r#"{"text":"noted"}"#.to_string()));
    let mates: Vec<String> = (0..n)
        .map(|i| format!(r#""mate{i}":{{"turns":[{{"text":"ready"}}]}}"#))
        .collect();
    let script = format!(
        r#"{{"turns":[{}],"agents":{{{}}}}}"#,
        lead.join(","),
        mates.join(",")
    );
    let session = start_session(repo, root, "team-session", &script, n).await?;
    let before = status_kib("VmRSS:");
    let chat = RunRequest {
        mode: AgentMode::Chat,
        task: "team up".into(),
        plan: None,
    };
    session.run_until_quiet(chat, (4 * n + 4) as u32).await?;
    let after = status_kib("VmRSS:");
    session.shutdown().await;
    Ok(after.saturating_sub(before) as f64 / n as f64)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
