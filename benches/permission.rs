//! Decisions per second of the permission engine on a realistic mix (path reads and
//! writes, compound commands, MCP and agent calls) under rule-heavy settings, and the
//! ratio against a baseline measured in the same run: the bare mode-fallback check of a
//! system tool (classification and fallback, no paths, no shell, no rules).
//!
//! Besides criterion's figure it prints the per-decision median (p50) and p90 over the mix,
//! each request timed on its own over many rounds: the median of five such measurements,
//! with their range.
//!
//! `cargo bench --bench permission -- --measurement-time 3 --warm-up-time 1` (criterion
//! flags as usual); `PERMISSION_BENCH_DETAIL=1` adds a rate per request and per shell parse.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark: it fails loudly and prints what it measures"
)]

use crewmaster::tools::rule_names::LoadPolicy;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use crewmaster::permission::{CheckRequest, PermissionMode, Policy, check, shell};
use crewmaster::protocol::ToolCall;
use criterion::{Criterion, Throughput};

fn req(tool: &str, args: serde_json::Value, cwd: &Path, mode: PermissionMode) -> CheckRequest {
    CheckRequest {
        call: ToolCall {
            id: "b".into(),
            name: tool.into(),
            arguments: args.to_string(),
        },
        spec: crewmaster::tools::builtin_permission(tool),
        cwd: cwd.to_path_buf(),
        mode,
    }
}

/// A project with nested sources and rule-heavy local and user settings (~300 rules).
fn setup() -> (tempfile::TempDir, std::path::PathBuf, Policy) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = std::fs::canonicalize(tmp.path())
        .expect("canonical")
        .join("home");
    let proj = home.join("proj");
    for d in ["src/permission", "src/tools", "tests", "docs"] {
        std::fs::create_dir_all(proj.join(d)).expect("mkdir");
    }
    std::fs::create_dir_all(proj.join(".git")).expect("mkdir");
    for f in [
        "src/lib.rs",
        "src/permission/mod.rs",
        "src/tools/mod.rs",
        "README.md",
    ] {
        std::fs::write(proj.join(f), "x").expect("write");
    }
    let mut allow = Vec::new();
    let mut deny = Vec::new();
    let mut ask = Vec::new();
    for i in 0..100 {
        allow.push(format!("Bash(tool{i} run:*)"));
        allow.push(format!("Edit(src/gen{i}/**)"));
        deny.push(format!("Read(secrets{i}/**)"));
    }
    allow.extend([
        "Bash(cargo test:*)".into(),
        "Bash(npm run test:*)".into(),
        "mcp__github".into(),
    ]);
    ask.extend(["Bash(git push:*)".to_string(), "Agent(Deploy)".into()]);
    deny.extend(["Bash(curl:*)".to_string(), "Read(*.pem)".into()]);
    let local = serde_json::json!({"permissions": {"allow": allow, "ask": ask}});
    let user = serde_json::json!({"permissions": {"deny": deny}});
    std::fs::create_dir_all(proj.join(".crew")).expect("mkdir");
    std::fs::create_dir_all(home.join(".crew")).expect("mkdir");
    std::fs::write(proj.join(".crew/settings.local.json"), local.to_string()).expect("write");
    std::fs::write(home.join(".crew/settings.json"), user.to_string()).expect("write");
    let (policy, _) = Policy::load(&proj, Some(&home)).expect("settings");
    (tmp, proj, policy)
}

fn mix(proj: &Path) -> Vec<CheckRequest> {
    use serde_json::json;
    let m = PermissionMode::Default;
    vec![
        req("read_file", json!({"path": "src/lib.rs"}), proj, m),
        req(
            "read_file",
            json!({"path": "src/permission/mod.rs"}),
            proj,
            m,
        ),
        req(
            "read_file",
            json!({"path": "../proj/src/tools/mod.rs"}),
            proj,
            m,
        ),
        req(
            "search_code",
            json!({"pattern": "fn check", "path": "src"}),
            proj,
            m,
        ),
        req("find_files", json!({"pattern": "**/*.rs"}), proj, m),
        req(
            "write_file",
            json!({"path": "src/gen7/new.rs", "content": "x"}),
            proj,
            m,
        ),
        req(
            "edit_file",
            json!({"path": "README.md", "old_string": "a", "new_string": "b"}),
            proj,
            m,
        ),
        req(
            "run_command",
            json!({"command": "cargo test --lib && git status | head -5"}),
            proj,
            m,
        ),
        req(
            "run_command",
            json!({"command": "ls -la src && rg -n 'fn main' src | wc -l"}),
            proj,
            m,
        ),
        req(
            "run_command",
            json!({"command": "npm run test:unit -- --watch; echo done"}),
            proj,
            m,
        ),
        req(
            "run_command",
            json!({"command": "timeout 60 bash -c 'tool42 run --fast && git diff HEAD~1'"}),
            proj,
            m,
        ),
        req(
            "run_command",
            json!({"command": "git push --force origin main"}),
            proj,
            m,
        ),
        req("mcp__github__create_issue", json!({}), proj, m),
        req(
            "agent",
            json!({"prompt": "look", "subagent_type": "Explore"}),
            proj,
            m,
        ),
    ]
}

fn per_second(reqs: &[CheckRequest], policy: &Policy, budget: Duration) -> f64 {
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < budget {
        for r in reqs {
            black_box(check(black_box(r), policy));
            n += 1;
        }
    }
    n as f64 / start.elapsed().as_secs_f64()
}

/// Per-decision latency: every request of the mix timed on its own, `rounds` times over;
/// returns (p50, p90) in microseconds. With `detail`, also prints each request's own
/// median in that interleaved run.
fn percentiles(reqs: &[CheckRequest], policy: &Policy, rounds: usize, detail: bool) -> (f64, f64) {
    let mut samples = Vec::with_capacity(reqs.len() * rounds);
    let mut each = vec![Vec::with_capacity(rounds); reqs.len()];
    for _ in 0..rounds {
        for (i, r) in reqs.iter().enumerate() {
            let start = Instant::now();
            black_box(check(black_box(r), policy));
            let took = start.elapsed();
            samples.push(took);
            each[i].push(took);
        }
    }
    if detail {
        for (r, mut own) in reqs.iter().zip(each) {
            own.sort_unstable();
            let p50 = own[own.len() / 2].as_secs_f64() * 1e6;
            println!(
                "  {p50:>8.2} µs  median in the mix: {} {}",
                r.call.name, r.call.arguments
            );
        }
    }
    samples.sort_unstable();
    let at = |q: f64| {
        let i = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples[i].as_secs_f64() * 1e6
    };
    (at(0.5), at(0.9))
}

fn main() {
    let (_tmp, proj, policy) = setup();
    let reqs = mix(&proj);
    let baseline = vec![req(
        "task_list",
        serde_json::json!({}),
        &proj,
        PermissionMode::Default,
    )];

    let mut c = Criterion::default()
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
        .sample_size(20)
        .configure_from_args();
    let mut g = c.benchmark_group("permission");
    g.throughput(Throughput::Elements(reqs.len() as u64));
    g.bench_function("realistic_mix", |b| {
        b.iter(|| {
            for r in &reqs {
                black_box(check(black_box(r), &policy));
            }
        })
    });
    g.throughput(Throughput::Elements(1));
    g.bench_function("baseline_mode_fallback", |b| {
        b.iter(|| black_box(check(black_box(&baseline[0]), &policy)))
    });
    g.finish();
    c.final_summary();

    // Same-run ratio, measured outside criterion so it can be printed as one line.
    let budget = Duration::from_secs(2);
    let mixed = per_second(&reqs, &policy, budget);
    let base = per_second(&baseline, &policy, budget);
    if std::env::var_os("PERMISSION_BENCH_DETAIL").is_some() {
        for r in &reqs {
            let one = per_second(std::slice::from_ref(r), &policy, Duration::from_millis(300));
            println!("  {one:>10.0}/s  {} {}", r.call.name, r.call.arguments);
        }
        // The shell parse and expansion alone, per command.
        let env = shell::Env {
            cwd: Some(proj.clone()),
            home: policy.home.clone(),
        };
        for r in reqs.iter().filter(|r| r.call.name == "run_command") {
            let args: serde_json::Value = serde_json::from_str(&r.call.arguments).expect("json");
            let command = args["command"].as_str().unwrap_or_default();
            let start = Instant::now();
            let mut n = 0u64;
            while start.elapsed() < Duration::from_millis(300) {
                black_box(shell::parse_in(black_box(command), &env).ok());
                n += 1;
            }
            let rate = n as f64 / start.elapsed().as_secs_f64();
            println!("  {rate:>10.0}/s  shell::parse_in {command}");
        }
    }
    // Five measurements of 4,000 rounds each rather than one of 20,000: a loaded machine
    // moves one measurement by half its value, so the line gives their median and range.
    let detail = std::env::var_os("PERMISSION_BENCH_DETAIL").is_some();
    let mut runs: Vec<(f64, f64)> = (0..5)
        .map(|i| percentiles(&reqs, &policy, 4_000, detail && i == 0))
        .collect();
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (p50, p90) = runs[runs.len() / 2];
    let (low, high) = (runs[0].0, runs[runs.len() - 1].0);
    println!(
        "permission: per decision over the mix: median {p50:.2} µs (5 runs: {low:.2} to {high:.2} µs), p90 {p90:.2} µs"
    );
    println!(
        "permission: realistic mix {mixed:.0} decisions/s; baseline (mode fallback) {base:.0} decisions/s; mix/baseline = {:.3} (baseline is {:.1}x faster)",
        mixed / base,
        base / mixed
    );
}
