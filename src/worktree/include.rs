//! Preparing a new worktree beyond what git checks out: the git-ignored files listed in
//! `.worktreeinclude` (say `.env`) are copied from the main checkout, then the optional
//! `worktree.setup` command from `.crew/settings.json` runs in the worktree.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ignore::gitignore::GitignoreBuilder;

use super::{SetupReport, WorktreeError, io_err};

/// The file in the main checkout listing ignored files to copy (gitignore syntax).
pub(crate) const INCLUDE_FILE: &str = ".worktreeinclude";
/// How long the setup command may run before it is killed.
pub(crate) const SETUP_TIMEOUT: Duration = Duration::from_secs(600);
/// How much of the setup command's output is kept in the report.
const TAIL_BYTES: usize = 4000;

/// The `worktree` key of `.crew/settings.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct WorktreeSettings {
    /// `worktree.setup`: a shell command run in each new worktree.
    pub setup: Option<String>,
    /// `worktree.base`: the ref new branches start from (default: the current HEAD).
    pub base: Option<String>,
}

impl WorktreeSettings {
    /// Reads `<repo_root>/.crew/settings.json`; a missing file or key gives the defaults.
    /// Only the `worktree` key is looked at: the rest belongs to the permission engine.
    pub(crate) fn load(repo_root: &Path) -> Result<Self, WorktreeError> {
        let path = repo_root.join(".crew").join("settings.json");
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(io_err("read", &path)(e)),
        };
        let bad = |field, message: String| WorktreeError::Settings {
            path: path.clone(),
            field,
            message,
        };
        let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            bad(
                "worktree",
                format!("cannot be read: the file is not JSON ({e})"),
            )
        })?;
        let Some(wt) = value.get("worktree") else {
            return Ok(Self::default());
        };
        let string = |field, key: &str| match wt.get(key) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
            Some(_) => Err(bad(field, "must be a non-empty string".into())),
        };
        if !wt.is_object() {
            return Err(bad(
                "worktree",
                "must be an object like {\"setup\": \"npm ci\"}".into(),
            ));
        }
        Ok(Self {
            setup: string("worktree.setup", "setup")?,
            base: string("worktree.base", "base")?,
        })
    }
}

/// Copies into `dest` every file of the main checkout that git ignores AND that matches a
/// pattern of its `.worktreeinclude`; returns the copied paths, relative. Tracked and
/// untracked-but-not-ignored files are never copied: git already handles the former, and
/// the latter are work in progress of the main checkout. Symlinks are skipped.
///
/// Cost: the main checkout is walked (minus `.git`) once per worktree, only when a
/// `.worktreeinclude` exists.
pub(crate) fn copy_included(
    main: &git2::Repository,
    main_root: &Path,
    dest: &Path,
) -> Result<Vec<PathBuf>, WorktreeError> {
    let list = main_root.join(INCLUDE_FILE);
    if !list.is_file() {
        return Ok(Vec::new());
    }
    let mut builder = GitignoreBuilder::new(main_root);
    if let Some(e) = builder.add(&list) {
        return Err(WorktreeError::Settings {
            path: list,
            field: "pattern",
            message: format!("is not a valid gitignore-style pattern ({e}); fix the line"),
        });
    }
    let matcher = builder.build().map_err(|e| WorktreeError::Settings {
        path: list.clone(),
        field: "pattern",
        message: format!("is not a valid gitignore-style pattern ({e}); fix the line"),
    })?;
    let walk = ignore::WalkBuilder::new(main_root)
        .standard_filters(false)
        .hidden(false)
        .follow_links(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
    let mut copied = Vec::new();
    for entry in walk {
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(main_root) else {
            continue;
        };
        if !matcher.matched_path_or_any_parents(rel, false).is_ignore() {
            continue;
        }
        // Only ignored files: a tracked or merely untracked file is not ours to copy.
        if !main.status_file(rel).is_ok_and(|s| s.is_ignored()) {
            continue;
        }
        let target = dest.join(rel);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(io_err("create", parent))?;
        }
        std::fs::copy(entry.path(), &target).map_err(io_err("copy to", &target))?;
        copied.push(rel.to_path_buf());
    }
    copied.sort();
    Ok(copied)
}

/// Runs `command` with `sh -c` in `cwd`, in its own process group, killed (with its
/// children) after [`SETUP_TIMEOUT`]. A failure is reported, never returned as an error:
/// the worktree is usable without it.
pub(crate) async fn run_setup(command: &str, cwd: &Path) -> SetupReport {
    let report = |success, exit_code, output_tail: String| SetupReport {
        command: command.to_string(),
        success,
        exit_code,
        output_tail,
    };
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    // The set-up command dies with crew, even if crew is killed with SIGKILL.
    crate::sandbox::process::guard_command(&mut cmd);
    let child = cmd.spawn();
    let child = match child {
        Ok(c) => c,
        Err(e) => return report(false, None, format!("could not start `sh`: {e}")),
    };
    let pgid = child.id();
    match tokio::time::timeout(SETUP_TIMEOUT, child.wait_with_output()).await {
        Ok(Ok(out)) => {
            let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&out.stderr));
            report(out.status.success(), out.status.code(), tail(&text))
        }
        Ok(Err(e)) => report(false, None, format!("waiting for the command failed: {e}")),
        Err(_) => {
            if let Some(pid) = pgid.and_then(|p| i32::try_from(p).ok()) {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            report(
                false,
                None,
                format!("killed after {} s", SETUP_TIMEOUT.as_secs()),
            )
        }
    }
}

/// The last [`TAIL_BYTES`] of `text`, cut at a character boundary.
fn tail(text: &str) -> String {
    let mut start = text.len().saturating_sub(TAIL_BYTES);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_read_only_the_worktree_key() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            WorktreeSettings::load(dir.path()).unwrap(),
            WorktreeSettings::default()
        );
        std::fs::create_dir(dir.path().join(".crew")).unwrap();
        let file = dir.path().join(".crew/settings.json");
        std::fs::write(
            &file,
            r#"{"permissions": {"allow": ["Read"]}, "worktree": {"setup": "npm ci", "base": "main"}}"#,
        )
        .unwrap();
        let s = WorktreeSettings::load(dir.path()).unwrap();
        assert_eq!(s.setup.as_deref(), Some("npm ci"));
        assert_eq!(s.base.as_deref(), Some("main"));
        std::fs::write(&file, r#"{"worktree": {"setup": 3}}"#).unwrap();
        let err = WorktreeSettings::load(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("worktree.setup") && err.contains("settings.json"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_failing_setup_is_reported_with_its_output() {
        let dir = tempfile::tempdir().unwrap();
        let ok = run_setup("echo ready > marker", dir.path()).await;
        assert!(ok.success && dir.path().join("marker").exists(), "{ok:?}");
        let bad = run_setup("echo boom >&2; exit 3", dir.path()).await;
        assert!(!bad.success);
        assert_eq!(bad.exit_code, Some(3));
        assert!(bad.output_tail.contains("boom"));
    }
}
