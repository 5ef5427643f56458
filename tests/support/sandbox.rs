//! Shared helpers for the OS sandbox attack tests: a repository, a confined tool
//! context, opaque python3 writers, `crew -p` runs on the scripted model, and the
//! feature requirement of the confined tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crewmaster::tools::run_command::RunCommand;
use crewmaster::tools::{CommandSandbox, Tool, ToolContext};
use serde_json::json;

use super::git;

/// Returns from the calling test unless Landlock and python3 are here; a missing one
/// fails the test unless knowingly opted out (see `common::kernel`).
#[macro_export]
macro_rules! require_sandbox {
    () => {
        $crate::require_features!(Landlock, Python3);
    };
}

/// A git repository with a sample hook, a config and local settings.
pub fn repo() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let out = Command::new("git")
        .args(["init", "-q", "-b", "main"])
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(out.status.success());
    std::fs::create_dir_all(root.join(".crew")).unwrap();
    (dir, root)
}

pub fn confined(root: &Path) -> ToolContext {
    let mut c = ToolContext::new(root, "test");
    c.sandbox = CommandSandbox::landlock(vec![root.to_path_buf()]);
    c
}

/// A python3 command writing `rel` below the cwd (creating its directory); the path is assembled at run time, so
/// nothing in the command line names it.
pub fn python_write(rel: &str) -> String {
    let (a, b) = rel.split_at(2);
    format!(
        "python3 -c \"import os; p='{a}'+'{b}'; os.makedirs(os.path.dirname(p), exist_ok=True); open(p,'w').write('#!/bin/sh\\ntouch /tmp/pwned\\n'); print('wrote', p)\"; echo rc=$?"
    )
}

pub fn snapshot(root: &Path) -> Vec<(String, Option<Vec<u8>>)> {
    [
        ".git/config",
        ".git/hooks/pre-commit",
        ".crew/settings.local.json",
        ".crew/settings.json",
    ]
    .iter()
    .map(|r| (r.to_string(), std::fs::read(root.join(r)).ok()))
    .collect()
}

pub async fn run(ctx: ToolContext, command: &str) -> String {
    RunCommand::new()
        .run(json!({ "command": command }), ctx)
        .await
        .unwrap()
}

/// Runs `crew -p` on a scripted model in `dir`, recording the requests it makes.
pub fn crew(dir: &Path, home: &Path, script: &Path, mode: &str, env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_crew"))
        .args(["-p", "go", "--permission-mode", mode, "--model"])
        .arg(format!("script:{}", script.display()))
        .arg("--record-requests")
        .arg(dir.join("requests.jsonl"))
        .current_dir(dir)
        .env("HOME", home)
        .envs(env.iter().copied())
        .output()
        .expect("crew runs")
}

/// The tool results of the last request the model was sent, joined.
pub fn tool_results(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("requests.jsonl")).unwrap_or_default();
    let Some(last) = text.lines().last() else {
        return String::new();
    };
    let v: serde_json::Value = serde_json::from_str(last).unwrap();
    let mut out = String::new();
    for m in v["messages"].as_array().unwrap() {
        for block in m["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_result" {
                out.push_str(&block["content"].to_string());
                out.push('\n');
            }
        }
    }
    out
}

/// A repository with two commits on `main`, and a linked worktree on `crew/t1/work`
/// confined the way a subagent's commands are.
pub fn repo_with_worktree() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let (dir, root) = repo();
    let repo = root.join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "user.name", "t"]);
    git(&repo, &["config", "user.email", "t@t"]);
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "one"]);
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "two"]);
    git(
        &repo,
        &["worktree", "add", "-q", "../wt", "-b", "crew/t1/work"],
    );
    (dir, repo, root.join("wt"))
}
