//! Shared helpers for the permission tests: a temporary home and project, settings
//! files, requests, and decision tables ([`Fixture::assert_commands`]).
#![allow(dead_code)]

use crewmaster::tools::rule_names::LoadPolicy;
use std::fmt::Debug;
use std::path::{Path, PathBuf};

use crewmaster::permission::{CheckRequest, Decision, PermissionMode, Policy, check};
use crewmaster::protocol::ToolCall;

/// A temporary home directory holding a project (`home/proj`) and a sibling
/// (`home/proj2`), all canonical.
pub struct Fixture {
    _tmp: tempfile::TempDir,
    /// The home directory.
    pub home: PathBuf,
    /// The project root (also the agent's cwd).
    pub proj: PathBuf,
}

impl Fixture {
    pub fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let home = base.join("home");
        let proj = home.join("proj");
        std::fs::create_dir_all(proj.join("src")).unwrap();
        std::fs::create_dir_all(proj.join(".git")).unwrap();
        std::fs::create_dir_all(home.join("proj2")).unwrap();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".ssh/id_rsa"), "secret").unwrap();
        std::fs::write(proj.join("src/main.rs"), "fn main() {}").unwrap();
        std::fs::write(home.join("proj2/x.txt"), "x").unwrap();
        Fixture {
            _tmp: tmp,
            home,
            proj,
        }
    }

    /// Writes a settings file: `which` is "user", "project" or "local" (`.crew`), or
    /// "claude-user", "claude-project" or "claude-local" (Claude Code's `.claude`).
    pub fn settings(&self, which: &str, json: &str) {
        let path = match which {
            "user" => self.home.join(".crew/settings.json"),
            "project" => self.proj.join(".crew/settings.json"),
            "local" => self.proj.join(".crew/settings.local.json"),
            "claude-user" => self.home.join(".claude/settings.json"),
            "claude-project" => self.proj.join(".claude/settings.json"),
            "claude-local" => self.proj.join(".claude/settings.local.json"),
            other => panic!("unknown layer {other}"),
        };
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, json).unwrap();
    }

    /// Trusts the project folder (its shared settings take effect).
    pub fn trust(&self) {
        crewmaster::trust::TrustStore::for_home(&self.home)
            .trust(&self.proj)
            .unwrap();
    }

    pub fn policy(&self) -> Policy {
        Policy::load(&self.proj, Some(&self.home)).unwrap().0
    }

    pub fn req(&self, tool: &str, args: &str, mode: PermissionMode) -> CheckRequest {
        request(tool, args, &self.proj, mode)
    }

    pub fn check(&self, tool: &str, args: &str, mode: PermissionMode) -> Decision {
        check(&self.req(tool, args, mode), &self.policy())
    }

    /// A decision table: checks `tool` with each of `args` in each mode of `modes`, maps
    /// each decision through `seen`, and fails once, listing every case that differs from
    /// its mode's expected value (not only the first).
    pub fn assert_table<T: PartialEq + Debug>(
        &self,
        tool: &str,
        args: &[String],
        modes: &[(PermissionMode, T)],
        seen: impl Fn(&Decision) -> T,
    ) {
        let policy = self.policy();
        let mut wrong = Vec::new();
        for a in args {
            for (mode, want) in modes {
                let d = check(&self.req(tool, a, *mode), &policy);
                let got = seen(&d);
                if &got != want {
                    wrong.push(format!(
                        "{tool} {a} in {mode}: want {want:?}, got {got:?} ({d:?})"
                    ));
                }
            }
        }
        assert!(
            wrong.is_empty(),
            "{} of {} cases decided otherwise:\n{}",
            wrong.len(),
            args.len() * modes.len(),
            wrong.join("\n")
        );
    }

    /// [`Fixture::assert_table`] for `run_command` with each of `commands`.
    pub fn assert_commands<T: PartialEq + Debug>(
        &self,
        commands: &[&str],
        modes: &[(PermissionMode, T)],
        seen: impl Fn(&Decision) -> T,
    ) {
        let args: Vec<String> = commands.iter().map(|c| cmd(c)).collect();
        self.assert_table("run_command", &args, modes, seen);
    }
}

pub fn request(tool: &str, args: &str, cwd: &Path, mode: PermissionMode) -> CheckRequest {
    CheckRequest {
        call: ToolCall {
            id: "call-1".into(),
            name: tool.into(),
            arguments: args.into(),
        },
        // The spec the built-in tool's definition declares, as a session's registry has it.
        spec: crewmaster::tools::builtin_permission(tool),
        cwd: cwd.to_path_buf(),
        mode,
    }
}

/// `{"command": cmd}` as JSON.
pub fn cmd(c: &str) -> String {
    serde_json::json!({ "command": c }).to_string()
}

/// `{"path": p}` as JSON (plus content for writes).
pub fn path(p: &str) -> String {
    serde_json::json!({ "path": p, "content": "x", "old_string": "a", "new_string": "b" })
        .to_string()
}
