//! Helpers of the hooks end-to-end tests: a temporary home with a git project holding
//! fixture files (hook scripts made executable), and `crew -p` runs over a scripted model
//! whose recorded requests the tests read.
#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use super::{committed_repo, crew, put};
use serde_json::{Value, json};

/// A temporary home and a git project below it holding `files`; trusted when asked.
pub struct Project {
    _tmp: tempfile::TempDir,
    /// The home directory (`HOME` of every run).
    pub home: PathBuf,
    /// The project (a git repository).
    pub proj: PathBuf,
    /// A directory beside the project (outside every sandbox root).
    pub outside: PathBuf,
}

pub fn project(files: &[(&str, &str)], trusted: bool) -> Project {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let home = base.join("home");
    let proj = home.join("proj");
    let outside = base.join("outside");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    put(&proj, "README.md", "# proj\n");
    for (rel, text) in files {
        put(&proj, rel, text);
        if rel.starts_with(".claude/hooks/") {
            std::fs::set_permissions(proj.join(rel), std::fs::Permissions::from_mode(0o755))
                .unwrap();
        }
    }
    committed_repo(&proj, &[]);
    if trusted {
        let out = crew(&proj, &home, &["trust", proj.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Project {
        _tmp: tmp,
        home,
        proj,
        outside,
    }
}

/// What one `crew -p` run left: its output and the requests the model was sent.
pub struct Run {
    /// crew's stderr (tool activity, warnings, `hook:` lines).
    pub stderr: String,
    /// Every request the scripted model was sent.
    pub requests: Vec<Value>,
}

impl Run {
    /// Every tool result text the model was shown, in order.
    pub fn tool_results(&self) -> Vec<String> {
        let last = self.requests.last().expect("a request was recorded");
        last["messages"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .filter(|b| b["type"] == "tool_result")
            .map(|b| b["content"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// All the text of the last request.
    pub fn last_request(&self) -> String {
        self.requests
            .last()
            .expect("a request was recorded")
            .to_string()
    }
}

/// `crew -p "do the task"` with `turns` as the model's script.
pub fn run(p: &Project, turns: Value, args: &[&str]) -> Run {
    run_script(p, json!({ "turns": turns }), "do the task", args)
}

/// `crew -p "do the task"` with `turns` as the model's script, for a run that leaves
/// work-list items undone on purpose: it must say so and exit 1.
pub fn run_leaving_work(p: &Project, turns: Value, args: &[&str]) -> Run {
    let (run, code) = run_any(p, json!({ "turns": turns }), "do the task", args);
    assert_eq!(code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("left undone"), "{}", run.stderr);
    run
}

/// `crew -p TASK` with a whole script (`turns` and per-agent `agents`); the run must succeed.
pub fn run_script(p: &Project, script: Value, task: &str, args: &[&str]) -> Run {
    let (run, code) = run_any(p, script, task, args);
    assert_eq!(code, Some(0), "crew failed: {}", run.stderr);
    run
}

/// `crew -p TASK` with a whole script; the run and its exit code.
fn run_any(p: &Project, script: Value, task: &str, args: &[&str]) -> (Run, Option<i32>) {
    let path = p.home.join("script.json");
    std::fs::write(&path, script.to_string()).unwrap();
    let record = p.home.join("requests.jsonl");
    let _ = std::fs::remove_file(&record);
    let model = format!("script:{}", path.display());
    let mut all = vec![
        "-p",
        task,
        "--model",
        &model,
        "--record-requests",
        record.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let out = crew(&p.proj, &p.home, &all);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let requests = std::fs::read_to_string(&record)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (Run { stderr, requests }, out.status.code())
}

/// A scripted tool call.
pub fn call(name: &str, input: Value) -> Value {
    json!({ "name": name, "input": input })
}

/// A settings file holding `hooks`.
pub fn settings(hooks: Value) -> String {
    json!({ "hooks": hooks }).to_string()
}
