//! Delegation end to end (issue 9, class 12): `crew -p` in default mode, with no allow
//! rules and no bypass, starts worktree-isolated subagents without any approval, and each
//! one's work lands in its own worktree on its own branch; the model cannot move a writer
//! into the main checkout with `isolation: "none"`; an agent type that itself works in
//! place (as a user's definition without `isolation` does, in Claude Code's way) starts
//! without approval but works under the lead's permission mode, so its writes ask (and
//! headless refuses them).

use crate::support;
use crewmaster::tools::rule_names::ParseRule;

use std::path::{Path, PathBuf};

use support::{committed_repo, crew, git, put};

fn writer(name: &str, isolation: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: test writer {name}\ntools: write_file, read_file\n{isolation}---\nWrite your file.\n"
    )
}

/// The linked worktrees of `repo` with their branches.
fn worktrees(repo: &Path) -> Vec<(PathBuf, String)> {
    let porcelain = git(repo, &["worktree", "list", "--porcelain"]);
    let mut out = Vec::new();
    let mut path = None;
    for line in porcelain.lines() {
        if let Some(p) = line.strip_prefix("worktree ") {
            path = Some(PathBuf::from(p));
        } else if let Some(b) = line.strip_prefix("branch ") {
            let p = path.take().unwrap();
            if p != repo {
                out.push((p, b.trim_start_matches("refs/heads/").to_string()));
            }
        }
    }
    out
}

#[test]
fn default_mode_delegates_to_worktree_subagents_without_approval() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let (home, repo) = (base.join("home"), base.join("repo"));
    std::fs::create_dir_all(&home).unwrap();
    put(&repo, "README.md", "# repo\n");
    for w in ["w1", "w2", "w3"] {
        put(
            &repo,
            &format!(".crew/agents/{w}.md"),
            &writer(w, "isolation: worktree\n"),
        );
    }
    put(&repo, ".crew/agents/inplace.md", &writer("inplace", ""));
    committed_repo(&repo, &[]);
    let script = base.join("script.json");
    let call = |w: &str, extra: &str| {
        format!(
            r#"{{"name":"agent","input":{{"description":"{w}","prompt":"p","subagent_type":"{w}","run_in_background":true{extra}}}}}"#
        )
    };
    let writes = |file: &str| {
        format!(
            r#"{{"turns":[{{"delay_ms":200,"tool_calls":[{{"name":"write_file","input":{{"path":"{file}","content":"{file}"}}}}]}},{{"text":"wrote {file}"}}]}}"#
        )
    };
    std::fs::write(
        &script,
        format!(
            r#"{{"turns":[{{"tool_calls":[{},{},{},{},{}]}},
                {{"text":"started"}},{{"text":"noted"}},{{"text":"noted"}},{{"text":"noted"}},{{"text":"noted"}}],
              "agents":{{"w1":{},"w2":{},"w3":{},"inplace":{},"general-purpose":{}}}}}"#,
            call("w1", ""),
            call("w2", ""),
            call("w3", ""),
            // The attacks: a writer moved into the main checkout by the model, and a
            // definition that itself writes in place (no `isolation`: in place).
            call("general-purpose", r#","isolation":"none""#),
            call("inplace", ""),
            writes("one.txt"),
            writes("two.txt"),
            writes("three.txt"),
            writes("inplace.txt"),
            writes("gp.txt"),
        ),
    )
    .unwrap();
    let record = base.join("requests.jsonl");
    let out = crew(
        &repo,
        &home,
        &[
            "-p",
            "split the work",
            "--permission-mode",
            "default",
            "--model",
            &format!("script:{}", script.display()),
            "--record-requests",
            record.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");

    // The three worktree subagents and the in-place one started with no approval; only
    // the model's move of a writer in place failed.
    assert_eq!(
        stderr.matches("✓ agent Started background task").count(),
        4,
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("✗ agent [permission_denied]").count(),
        1,
        "{stderr}"
    );
    // The in-place writer works under the lead's default mode: its write asked, and
    // headless refused it.
    assert!(
        stderr.contains("[inplace/") && stderr.contains("✗ write_file [permission_denied]"),
        "{stderr}"
    );
    let first_results = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .find(|l| l.contains("\"agent\":\"lead\"") && l.contains("tool_result"))
        .map(str::to_string)
        .expect("the lead saw its tool results");
    let v: serde_json::Value = serde_json::from_str(&first_results).unwrap();
    let results: Vec<&serde_json::Value> = v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap())
        .filter(|b| b["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 5, "{results:#?}");
    for r in &results[..3] {
        assert_ne!(r["is_error"], true, "{r}");
    }
    let refused = results[3].to_string();
    assert!(
        refused.contains("permission_denied") && refused.contains("isolation `none` is refused"),
        "{refused}"
    );
    assert_ne!(results[4]["is_error"], true, "{}", results[4]);

    // Each file is in its own worktree, on its own branch, and nowhere else.
    let wts = worktrees(&repo);
    assert_eq!(wts.len(), 3, "{wts:?}");
    let mut branches: Vec<&str> = wts.iter().map(|(_, b)| b.as_str()).collect();
    branches.sort();
    branches.dedup();
    assert_eq!(branches.len(), 3, "three distinct branches: {wts:?}");
    for (wt, branch) in &wts {
        assert!(branch.starts_with("crew/"), "{branch}");
        support::worktree::open_workspace(&repo, &home, wt);
        let status = git(wt, &["status", "--porcelain"]);
        let files: Vec<&str> = status.lines().collect();
        assert_eq!(files.len(), 1, "{}: {status}", wt.display());
        let file = files[0].trim_start_matches("?? ");
        assert!(
            ["one.txt", "two.txt", "three.txt"].contains(&file),
            "{status}"
        );
        assert_eq!(
            git(wt, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
            branch
        );
    }
    // The main checkout is clean; nothing in-place ran.
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
    for f in ["one.txt", "two.txt", "three.txt", "gp.txt", "inplace.txt"] {
        assert!(!repo.join(f).exists(), "{f} in the main checkout");
    }

    // `crew permissions check` decides `agent` calls as the session did.
    for (input, code) in [
        (r#"{"prompt":"p","subagent_type":"w1"}"#, 0),
        (
            r#"{"prompt":"p","subagent_type":"w1","isolation":"none"}"#,
            3,
        ),
        (r#"{"prompt":"p","subagent_type":"inplace"}"#, 0),
        (
            r#"{"prompt":"p","subagent_type":"explore","isolation":"none"}"#,
            0,
        ),
    ] {
        let out = crew(
            &repo,
            &home,
            &["permissions", "check", "--tool", "agent", "--input", input],
        );
        assert_eq!(out.status.code(), Some(code), "{input}: {out:?}");
    }
}

/// The engine's decisions for `agent` calls, through `permission::check` with a policy
/// filled from the real catalog and registry, as `crew` fills it.
#[test]
fn engine_decides_delegation_by_isolation_and_read_only_ness() {
    use crewmaster::agent::catalog::Catalog;
    use crewmaster::permission::{
        CheckRequest, Layer, PermissionMode::*, Policy, Rule, RuleKind, Verdict, check,
    };
    use crewmaster::protocol::ToolCall;
    use crewmaster::tools::{Registry, builtin_tools, orchestration_tools};

    let dir = tempfile::tempdir().unwrap();
    let catalog = Catalog::load(dir.path(), None);
    let registry = Registry::with_tools(
        builtin_tools()
            .into_iter()
            .chain(orchestration_tools(&catalog.agent_types())),
    )
    .unwrap();
    let mut policy = Policy {
        delegation: crewmaster::agent::delegate::delegation(
            &catalog,
            &registry,
            crewmaster::agent::delegate::Worktrees::Available,
        ),
        ..Policy::default()
    };
    let decide = |policy: &Policy, mode, args: &str| {
        let req = CheckRequest {
            call: ToolCall {
                id: "c".into(),
                name: "agent".into(),
                arguments: args.into(),
            },
            spec: crewmaster::tools::builtin_permission("agent"),
            cwd: dir.path().to_path_buf(),
            mode,
        };
        check(&req, policy).verdict
    };
    let gp = r#"{"prompt":"p","subagent_type":"general-purpose"}"#;
    let gp_none = r#"{"prompt":"p","subagent_type":"general-purpose","isolation":"none"}"#;
    let explore = r#"{"prompt":"p","subagent_type":"explore"}"#;
    let unknown = r#"{"prompt":"p","subagent_type":"nobody"}"#;
    assert_eq!(decide(&policy, Default, gp), Verdict::Allow);
    assert_eq!(decide(&policy, AcceptEdits, gp), Verdict::Allow);
    assert_eq!(decide(&policy, Strict, gp), Verdict::Ask);
    assert_eq!(decide(&policy, Default, explore), Verdict::Allow);
    assert_eq!(decide(&policy, Default, unknown), Verdict::Ask);
    assert_eq!(decide(&policy, Default, gp_none), Verdict::Deny);
    // Neither an allow rule nor bypass lets the model move a writer in place.
    policy
        .rules
        .push(Rule::parse("Agent", RuleKind::Allow, Layer::Local, None).unwrap());
    assert_eq!(decide(&policy, BypassPermissions, gp_none), Verdict::Deny);
    assert_eq!(decide(&policy, Default, gp_none), Verdict::Deny);
    // Without worktrees a writer works in place, under the caller's mode: starting it
    // gains nothing, so it is allowed (its own calls ask where the caller's would).
    policy.rules.clear();
    policy.delegation.worktrees = crewmaster::agent::delegate::Worktrees::Unavailable;
    assert_eq!(decide(&policy, Default, gp), Verdict::Allow);
    assert_eq!(decide(&policy, DontAsk, gp), Verdict::Allow);
    assert_eq!(decide(&policy, Default, explore), Verdict::Allow);
    // A deny rule wins over everything.
    policy.delegation.worktrees = crewmaster::agent::delegate::Worktrees::Available;
    policy
        .rules
        .push(Rule::parse("Agent(general-purpose)", RuleKind::Deny, Layer::User, None).unwrap());
    assert_eq!(decide(&policy, BypassPermissions, gp), Verdict::Deny);
}
