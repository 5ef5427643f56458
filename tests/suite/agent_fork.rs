//! Forks end to end (issue 10): `crew -p` with the scripted model, whose recorded
//! requests show that a fork's first request starts with exactly the messages its parent
//! sent (same system prompt, tools and model: the cached prefix is shared), that the
//! fork works in its own worktree, and that its answer comes back to the parent as the
//! `agent` call's result.

use crate::support;

use std::path::PathBuf;

use serde_json::Value;
use support::{committed_repo, crew, git, put};

struct Run {
    _tmp: tempfile::TempDir,
    repo: PathBuf,
    home: PathBuf,
    requests: Vec<Value>,
    stderr: String,
    success: bool,
}

/// Runs `crew -p` in a fresh repository with the lead's `turns` and the forks' `fork`
/// turns; returns the recorded requests.
fn run(lead_turns: &str, fork_turns: &str) -> Run {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let (home, repo) = (base.join("home"), base.join("repo"));
    std::fs::create_dir_all(&home).unwrap();
    put(&repo, "README.md", "# repo\n");
    committed_repo(&repo, &[]);
    let script = base.join("script.json");
    std::fs::write(
        &script,
        format!(r#"{{"turns":{lead_turns},"agents":{{"fork":{{"turns":{fork_turns}}}}}}}"#),
    )
    .unwrap();
    let record = base.join("requests.jsonl");
    let out = crew(
        &repo,
        &home,
        &[
            "-p",
            "look around, then fork",
            "--permission-mode",
            "default",
            "--model",
            &format!("script:{}", script.display()),
            "--record-requests",
            record.to_str().unwrap(),
        ],
    );
    let requests = std::fs::read_to_string(&record)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    Run {
        _tmp: tmp,
        repo,
        home,
        requests,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        success: out.status.success(),
    }
}

fn agent_of(r: &Value) -> &str {
    r["agent"].as_str().unwrap()
}

fn tool_results(r: &Value) -> Vec<Value> {
    r["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap().clone())
        .filter(|b| b["type"] == "tool_result")
        .collect()
}

#[test]
fn a_fork_starts_from_its_parents_messages_in_its_own_worktree_and_reports_back() {
    let r = run(
        r#"[{"text":"Reading first.","tool_calls":[{"name":"read_file","input":{"path":"README.md"}}]},
            {"text":"Forking.","tool_calls":[{"name":"agent","input":{"description":"forked writer","prompt":"write f.txt","fork":true}}]},
            {"text":"The fork reported."}]"#,
        r#"[{"tool_calls":[{"name":"write_file","input":{"path":"f.txt","content":"from the fork"}}]},
            {"text":"fork done: f.txt written"}]"#,
    );
    assert!(r.success, "{}", r.stderr);
    let lead: Vec<&Value> = r
        .requests
        .iter()
        .filter(|q| agent_of(q) == "lead")
        .collect();
    let forks: Vec<&Value> = r
        .requests
        .iter()
        .filter(|q| agent_of(q).starts_with("fork/"))
        .collect();
    assert_eq!(lead.len(), 3, "{:#?}", r.requests);
    assert_eq!(forks.len(), 2, "{:#?}", r.requests);

    // The parent's request that made the call, and the fork's first request.
    let (parent, child) = (lead[1], forks[0]);
    for key in ["system", "tools", "model", "max_tokens"] {
        assert_eq!(
            parent[key], child[key],
            "{key} differs: the prefix is not shared"
        );
    }
    // Measured: billed as Anthropic's prompt cache would (issue 14), the fork's first
    // request reads the whole of its parent's request from the cache.
    let request = |v: &Value| {
        serde_json::from_value::<crewmaster::provider::ModelRequest>(v.clone()).unwrap()
    };
    let mut cache = crewmaster::provider::cache_sim::CacheSim::default();
    cache.bill(&request(lead[0]));
    let parent_bill = cache.bill(&request(parent));
    let child_bill = cache.bill(&request(child));
    assert!(
        child_bill.read >= parent_bill.total() && parent_bill.total() > 1024,
        "fork {child_bill:?} vs parent {parent_bill:?}"
    );
    let pm = parent["messages"].as_array().unwrap();
    let cm = child["messages"].as_array().unwrap();
    assert!(pm.len() >= 3, "the parent had history: {pm:#?}");
    assert_eq!(
        &cm[..pm.len()],
        &pm[..],
        "the fork starts with the parent's messages"
    );
    // Then the parent's call, answered with the placeholder, and the fork's task.
    let call = &cm[pm.len()];
    assert_eq!(call["role"], "assistant");
    let args: Value =
        serde_json::from_str(call["content"][1]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args["fork"], true, "{call}");
    let task = cm[pm.len() + 1].to_string();
    assert!(
        task.contains("tool_result")
            && task.contains("Fork started")
            && task.contains("write f.txt"),
        "{task}"
    );
    assert_eq!(cm.len(), pm.len() + 2);

    // Its own worktree: the file is there, not in the main checkout.
    assert!(
        !r.repo.join("f.txt").exists(),
        "the fork wrote into the main checkout"
    );
    assert_eq!(git(&r.repo, &["status", "--porcelain"]), "");
    let kept: Vec<PathBuf> = git(&r.repo, &["worktree", "list", "--porcelain"])
        .lines()
        .filter_map(|l| l.strip_prefix("worktree "))
        .map(PathBuf::from)
        .filter(|p| *p != r.repo)
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    support::worktree::open_workspace(&r.repo, &r.home, &kept[0]);
    assert_eq!(
        std::fs::read_to_string(kept[0].join("f.txt")).unwrap(),
        "from the fork"
    );
    assert!(kept[0].starts_with(&r.home), "{}", kept[0].display());

    // The answer came back as the `agent` call's result.
    let results = tool_results(lead[2]);
    let answer = results.last().unwrap();
    assert_ne!(answer["is_error"], true, "{answer}");
    assert!(
        answer["content"]
            .as_str()
            .unwrap()
            .contains("fork done: f.txt written"),
        "{answer}"
    );
}

#[test]
fn a_fork_cannot_work_in_the_main_checkout_nor_fork_again() {
    let r = run(
        r#"[{"tool_calls":[
              {"name":"agent","input":{"description":"in place","prompt":"p","fork":true,"isolation":"none"}},
              {"name":"agent","input":{"description":"nested","prompt":"p","fork":true}}]},
            {"text":"done"}]"#,
        r#"[{"tool_calls":[
              {"name":"agent","input":{"description":"grandchild","prompt":"p","fork":true}},
              {"name":"write_file","input":{"path":"g.txt","content":"x"}}]},
            {"text":"child done"}]"#,
    );
    assert!(r.success, "{}", r.stderr);
    let lead: Vec<&Value> = r
        .requests
        .iter()
        .filter(|q| agent_of(q) == "lead")
        .collect();
    let results = tool_results(lead[1]);
    assert_eq!(results.len(), 2, "{results:#?}");
    let in_place = results[0].to_string();
    assert!(
        results[0]["is_error"] == true && in_place.contains("isolation"),
        "{in_place}"
    );
    assert_ne!(results[1]["is_error"], true, "{}", results[1]);
    // Exactly one fork ran, and its own fork call was refused.
    let forks: Vec<&Value> = r
        .requests
        .iter()
        .filter(|q| agent_of(q).starts_with("fork/"))
        .collect();
    assert_eq!(forks.len(), 2, "{forks:#?}");
    let refused = tool_results(forks[1])
        .iter()
        .map(|v| v.to_string())
        .find(|v| v.contains("cannot start forks"));
    assert!(refused.is_some(), "{:#?}", forks[1]);
    assert!(!r.repo.join("g.txt").exists());
    assert_eq!(git(&r.repo, &["status", "--porcelain"]), "");
}
