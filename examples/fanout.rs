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
//! - memory per idle teammate: a second session, in a fresh child process (so memory freed
//!   by the fan-out cannot be reused and hide the growth), starts N named teammates that
//!   answer once and go idle; growth of RSS once the team is quiet, over N (target ≤ 1 MiB);
//! - where the time goes: the worktree operations' tracing spans (added up), and for each
//!   subagent its wait for a worktree and its run (turns, tools and the worktree's finish),
//!   with wall and CPU time (user + system, this process and its children) for each side.
//!
//! Worktrees are overlay workspaces where the kernel allows (the bench enters crew's
//! namespace as the binary does, and says which). `workspace_fanout` measures them on
//! repositories of 2,000 to 50,000 files.
//!
//! `cargo run --release --example fanout -- [N]` (default N = 32).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a example: it fails loudly and prints what it measures"
)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crewmaster::agent::catalog::Catalog;
use crewmaster::agent::mode::AgentMode;
use crewmaster::agent::runner::{AgentSpec, RunRequest};
use crewmaster::permission::PermissionMode;
use crewmaster::provider::scripted::ScriptedProvider;
use crewmaster::session::{Orchestration, SessionConfig, SessionHandle};
use crewmaster::tasks::{TaskStatus, load_records};
use crewmaster::tools::{CommandSandbox, Registry, builtin_tools, orchestration_tools};
use crewmaster::worktree::manager::Manager;

const TURNS: u64 = 5;
/// The child process mode that measures idle teammates.
const TEAMMATES_FLAG: &str = "--idle-teammates";
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

/// CPU time (user + system) of this process and of its waited-for children, from
/// `/proc/self/stat` (clock ticks of 10 ms).
fn cpu() -> (Duration, Duration) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<u64> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .unwrap_or_default()
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    let tick = |i: usize| fields.get(i).copied().unwrap_or(0);
    // After the command name: state is field 3, utime 14, stime 15, cutime 16, cstime 17.
    let to = |t: u64| Duration::from_millis(t * 10);
    (to(tick(11) + tick(12)), to(tick(13) + tick(14)))
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

/// One side of the single-worktree comparison: medians of wall time, total CPU time.
#[derive(Default)]
struct Side {
    create: Vec<Duration>,
    create_cpu: Duration,
    remove: Vec<Duration>,
    remove_cpu: Duration,
}

/// Our creation and removal of one clean worktree against `git worktree add -b` and
/// `git worktree remove` + `git branch -D`, interleaved, `samples` each.
fn creation_times(repo: &Path, scratch: &Path, samples: usize) -> anyhow::Result<(Side, Side)> {
    let manager = Manager::open(repo, Some(&scratch.join("probe")))?;
    let (mut ours, mut plain) = (Side::default(), Side::default());
    let path_of = |i: usize| scratch.join(format!("plain{i}"));
    for i in 0..samples {
        let (t, c) = (Instant::now(), cpu().0);
        manager.create(&format!("probe{i}"), "probe", None)?;
        ours.create.push(t.elapsed());
        ours.create_cpu += cpu().0 - c;
        let path = path_of(i);
        let (t, c) = (Instant::now(), cpu().1);
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
        plain.create.push(t.elapsed());
        plain.create_cpu += cpu().1 - c;
        let (t, c) = (Instant::now(), cpu().0);
        manager.finish(&format!("probe{i}"))?;
        ours.remove.push(t.elapsed());
        ours.remove_cpu += cpu().0 - c;
        let (t, c) = (Instant::now(), cpu().1);
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
        plain.remove.push(t.elapsed());
        plain.remove_cpu += cpu().1 - c;
    }
    Ok((ours, plain))
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

fn main() -> anyhow::Result<()> {
    // As the crew binary does, before any thread starts: crew's own mount namespace, so
    // the subagents' worktrees are overlay workspaces where the kernel allows.
    match crewmaster::sandbox::workspace_ns::enter() {
        crewmaster::sandbox::workspace_ns::Support::Available => {
            println!("workspaces: overlays");
        }
        crewmaster::sandbox::workspace_ns::Support::Unavailable(why) => {
            println!("workspaces: full checkouts ({why})");
        }
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run())
}

async fn run() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(TEAMMATES_FLAG) {
        let n: usize = args.get(1).map_or(Ok(32), |a| a.parse())?;
        let tmp = tempfile::tempdir()?;
        let root = tmp.path().canonicalize()?;
        let repo = root.join("repo");
        make_repo(&repo)?;
        println!("{:.0}", idle_teammates(&repo, &root, n).await?);
        return Ok(());
    }
    let n: usize = args.first().map_or(Ok(32), |a| a.parse())?;
    let teammate_kib = teammates_in_child(n)?;
    spans::install();
    let tmp = tempfile::tempdir()?;
    let root = tmp.path().canonicalize()?;
    let repo = root.join("repo");
    make_repo(&repo)?;
    let (ours, plain) = creation_times(&repo, &root, 5)?;
    let probe_spans = spans::take();

    // Reset the peak-RSS counter so the peak below is this run's.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let rss_before = status_kib("VmRSS:");
    let session = start_session(&repo, &root, "session", &script(n), n).await?;

    let start = Instant::now();
    let cpu_start = cpu();
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
    let end_ms = crewmaster::tasks::now_ms();
    let cpu_end = cpu();
    let peak = status_kib("VmHWM:");
    session.shutdown().await;
    let run_spans = spans::take();

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
    let one = median(ours.create.clone());
    let ideal = one + Duration::from_millis(TURNS * LATENCY_MS);
    let ms_of = |v: Vec<u64>| median(v.into_iter().map(Duration::from_millis).collect());
    let waits: Vec<u64> = records
        .iter()
        .filter_map(|r| Some(r.started_ms?.saturating_sub(r.created_ms)))
        .collect();
    let runs: Vec<u64> = records
        .iter()
        .filter_map(|r| Some(r.ended_ms?.saturating_sub(r.started_ms?)))
        .collect();
    let last_end = records
        .iter()
        .filter_map(|r| r.ended_ms)
        .max()
        .unwrap_or(end_ms);
    println!("fan-out: {n} subagents × {TURNS} turns × {LATENCY_MS} ms on a 2,000-file repository");
    println!(
        "  completed: {completed}/{n}; worktrees left behind: {} (read-only work is removed)",
        left.len()
    );
    let (ours_c, plain_c) = (one, median(plain.create.clone()));
    println!(
        "  worktree creation (one, median of 5): ours {:.1} ms wall / {:.1} ms CPU, `git worktree add` {:.1} ms wall / {:.1} ms CPU → wall ratio {:.2}, CPU ratio {:.2} (target ≤ 1.0)",
        ms(ours_c),
        ms(ours.create_cpu) / 5.0,
        ms(plain_c),
        ms(plain.create_cpu) / 5.0,
        ms(ours_c) / ms(plain_c),
        ms(ours.create_cpu) / ms(plain.create_cpu).max(0.001),
    );
    println!(
        "  worktree removal (one clean, median of 5): ours {:.1} ms wall / {:.1} ms CPU, `git worktree remove` + `git branch -D` {:.1} ms wall / {:.1} ms CPU",
        ms(median(ours.remove.clone())),
        ms(ours.remove_cpu) / 5.0,
        ms(median(plain.remove.clone())),
        ms(plain.remove_cpu) / 5.0,
    );
    println!(
        "  wall {:.2} s, ideal {:.2} s (one worktree {:.1} ms + 0.5 s of turns) → ratio {:.2} (target ≤ 1.5); all {n} worktrees made within {:.2} s ({} at once)",
        wall.as_secs_f64(),
        ideal.as_secs_f64(),
        ms(one),
        wall.as_secs_f64() / ideal.as_secs_f64(),
        setup.as_secs_f64(),
        crewmaster::worktree::actor::parallel_creations()
    );
    println!(
        "  CPU during the fan-out: {:.2} s in crew (user+sys), {:.2} s in child processes; {:.2} cores busy on average",
        (cpu_end.0 - cpu_start.0).as_secs_f64(),
        (cpu_end.1 - cpu_start.1).as_secs_f64(),
        (cpu_end.0 - cpu_start.0 + cpu_end.1 - cpu_start.1).as_secs_f64() / wall.as_secs_f64(),
    );
    println!(
        "  per subagent: waited for its worktree {:.2} s (median), ran {:.2} s (median; turns, tools, finishing its worktree), max {:.2} s; lead done {:.2} s after the last subagent",
        ms_of(waits).as_secs_f64(),
        ms_of(runs.clone()).as_secs_f64(),
        runs.iter().max().copied().unwrap_or(0) as f64 / 1000.0,
        end_ms.saturating_sub(last_end) as f64 / 1000.0,
    );
    spans::print("single-worktree probes", &probe_spans);
    spans::print("fan-out", &run_spans);
    println!(
        "  peak memory: {} KiB over a {} KiB baseline → {:.0} KiB per subagent (target ≤ 1024)",
        peak,
        rss_before,
        peak.saturating_sub(rss_before) as f64 / n as f64
    );
    println!(
        "  memory per idle teammate ({n} of them, quiet team, fresh process): {teammate_kib:.0} KiB (target ≤ 1024)"
    );
    Ok(())
}

/// Runs the idle-teammate measurement in a fresh child process and returns its figure.
fn teammates_in_child(n: usize) -> anyhow::Result<f64> {
    let out = Command::new(std::env::current_exe()?)
        .args([TEAMMATES_FLAG, &n.to_string()])
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "the idle-teammate child failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The figure is the last line; the child also says what workspaces it has.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let figure = stdout.lines().last().unwrap_or_default().trim();
    figure
        .parse()
        .map_err(|e| anyhow::anyhow!("the idle-teammate child printed `{figure}`: {e}"))
}

/// Adds up the time spent in each tracing span of the worktree operations.
mod spans {
    use std::collections::BTreeMap;
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    use tracing::span::{Attributes, Id};
    use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
    use tracing_subscriber::registry::LookupSpan;
    use tracing_subscriber::util::SubscriberInitExt;

    /// Per span name: how many closed, total time, longest.
    pub type Totals = BTreeMap<&'static str, (u32, Duration, Duration)>;
    static TOTALS: Mutex<Totals> = Mutex::new(BTreeMap::new());

    struct Timing;

    impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Timing {
        fn on_new_span(&self, _: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
            if let Some(span) = ctx.span(id) {
                span.extensions_mut().insert(Instant::now());
            }
        }

        fn on_close(&self, id: Id, ctx: Context<'_, S>) {
            let Some(span) = ctx.span(&id) else { return };
            let Some(took) = span.extensions().get::<Instant>().map(Instant::elapsed) else {
                return;
            };
            let mut totals = TOTALS.lock().unwrap_or_else(|p| p.into_inner());
            let e = totals.entry(span.name()).or_default();
            e.0 += 1;
            e.1 += took;
            e.2 = e.2.max(took);
        }
    }

    pub fn install() {
        let only_worktrees = tracing_subscriber::filter::Targets::new()
            .with_target("crewmaster::worktree", tracing::Level::DEBUG);
        let _ = tracing_subscriber::registry()
            .with(Timing.with_filter(only_worktrees))
            .try_init();
    }

    pub fn take() -> Totals {
        std::mem::take(&mut *TOTALS.lock().unwrap_or_else(|p| p.into_inner()))
    }

    pub fn print(what: &str, totals: &Totals) {
        println!("  spans ({what}): name × count: mean / max / sum of wall time");
        for (name, (count, sum, max)) in totals {
            println!(
                "    {name:<26} × {count:>3}: {:>7.1} / {:>7.1} / {:>8.1} ms",
                super::ms(*sum) / f64::from((*count).max(1)),
                super::ms(*max),
                super::ms(*sum)
            );
        }
    }
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
            .chain(orchestration_tools(&catalog.agent_types())),
    )?;
    // The scripted model keeps no copy of each request: a real provider does not either.
    let provider =
        ScriptedProvider::new(ScriptedProvider::parse(script, Path::new(name))?).without_memory();
    Ok(SessionHandle::start(
        SessionConfig::builder(
            repo.to_path_buf(),
            Arc::new(provider),
            AgentSpec {
                id: "lead".into(),
                model: "script".into(),
                system_prompt: "lead".into(),
                allowed_tools: None,
                max_turns: 10,
                max_tokens: 1000,
            },
            Arc::new(registry),
        )
        .permission_mode(PermissionMode::BypassPermissions)
        .sandbox(CommandSandbox::None)
        .tool_timeout(Duration::from_secs(60))
        .orchestration(Orchestration {
            session_dir: root.join(name),
            catalog,
            worktrees: true,
            worktree_base: Some(root.join(format!("{name}-worktrees"))),
            max_concurrent_agents: n,
            subagent_max_turns: 10,
            teams_dir: Some(root.join("teams")),
            restore_team: None,
            workers: None,
        })
        .build(),
    )
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
