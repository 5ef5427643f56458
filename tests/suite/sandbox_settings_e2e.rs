//! Claude Code's `sandbox` settings and the sandbox's failure modes, through the `crew`
//! binary on a scripted model, with the disk checked afterwards: `excludedCommands` from
//! the user's settings runs a command unconfined, from the project's it is ignored with a
//! warning; a malformed value names the file and the field; `failIfUnavailable` with a
//! (simulated) missing layer refuses to start; without Landlock a command no human
//! approved is refused; bypassPermissions cannot change the user's `~/.bashrc`.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::json;
use support::sandbox::{crew, repo, tool_results};

/// A project, a home directory outside it, and a script running `commands` in turn.
fn setup(
    commands: &[&str],
) -> (
    (tempfile::TempDir, tempfile::TempDir),
    PathBuf,
    PathBuf,
    PathBuf,
) {
    let (dir, root) = repo();
    let home_dir = tempfile::tempdir().unwrap();
    let home = home_dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(home.join(".crew")).unwrap();
    let mut turns: Vec<serde_json::Value> = commands
        .iter()
        .map(|c| json!({"tool_calls": [{"name": "run_command", "input": {"command": c}}]}))
        .collect();
    turns.push(json!({"text": "done"}));
    let script = root.join("script.json");
    std::fs::write(&script, json!({ "turns": turns }).to_string()).unwrap();
    ((dir, home_dir), root, home, script)
}

/// A python3 script in the project that writes `target`.
fn writer(root: &Path, target: &Path) {
    std::fs::write(
        root.join("w.py"),
        format!(
            "open({:?}, 'w').write('unconfined')\n",
            target.display().to_string()
        ),
    )
    .unwrap();
}

#[test]
fn excluded_commands_run_unconfined_from_user_settings_only() {
    require_features!(Landlock, Python3);
    let (_d, root, home, script) = setup(&["python3 w.py"]);
    let target = home.join("outside.txt");
    writer(&root, &target);
    let excluded = r#"{"sandbox": {"excludedCommands": ["python3 w.py"]}}"#;
    // From the project's shared settings: ignored, with a warning; the command stays
    // confined below the project (dontAsk runs it in the write profile).
    std::fs::write(root.join(".crew/settings.json"), excluded).unwrap();
    let out = crew(&root, &home, &script, "dontAsk", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("sandbox.excludedCommands"), "{stderr}");
    assert!(stderr.contains("ignored in project settings"), "{stderr}");
    assert!(!target.exists(), "{}", tool_results(&root));
    assert!(tool_results(&root).contains("Permission denied"));
    // From the user's own settings: it runs outside the sandbox.
    std::fs::remove_file(root.join(".crew/settings.json")).unwrap();
    std::fs::write(home.join(".crew/settings.json"), excluded).unwrap();
    let out = crew(&root, &home, &script, "dontAsk", &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&target).unwrap_or_default(),
        "unconfined",
        "{}",
        tool_results(&root)
    );
    // A longer command line that merely starts with it stays confined.
    std::fs::remove_file(&target).unwrap();
    let (_d2, root2, _, script2) = setup(&["python3 w.py; python3 w.py"]);
    writer(&root2, &target);
    let out = crew(&root2, &home, &script2, "dontAsk", &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!target.exists(), "{}", tool_results(&root2));
}

#[test]
fn malformed_sandbox_settings_name_the_file_and_the_field() {
    for (file, text, field) in [
        (
            ".crew/settings.json",
            r#"{"sandbox": {"excludedCommands": "docker"}}"#,
            "sandbox.excludedCommands",
        ),
        (
            ".claude/settings.json",
            r#"{"sandbox": {"enabled": "no"}}"#,
            "sandbox.enabled",
        ),
        (
            ".crew/settings.local.json",
            r#"{"sandbox": {"filesystem": {"denyRead": [1]}}}"#,
            "sandbox.filesystem.denyRead[0]",
        ),
    ] {
        let (_d, root, home, script) = setup(&["true"]);
        std::fs::create_dir_all(root.join(".claude")).unwrap();
        std::fs::write(root.join(file), text).unwrap();
        let out = crew(&root, &home, &script, "default", &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{file}: {stderr}");
        assert!(stderr.contains(file), "{file}: {stderr}");
        assert!(stderr.contains(&format!("`{field}`")), "{field}: {stderr}");
    }
}

#[test]
fn fail_if_unavailable_refuses_to_start_without_a_layer() {
    let (_d, root, home, script) = setup(&["touch ran"]);
    std::fs::write(
        root.join(".crew/settings.json"),
        r#"{"sandbox": {"failIfUnavailable": true}}"#,
    )
    .unwrap();
    for simulate in [
        "CREW_TEST_SIMULATE_NO_NAMESPACES",
        "CREW_TEST_SIMULATE_NO_LANDLOCK",
    ] {
        let out = crew(&root, &home, &script, "dontAsk", &[(simulate, "1")]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{simulate}: {stderr}");
        assert!(stderr.contains("sandbox.failIfUnavailable"), "{stderr}");
        assert!(stderr.contains("missing"), "{stderr}");
        assert!(!root.join("ran").exists(), "{simulate}");
    }
    // Without the setting, the Landlock-only tier runs the command and says once which
    // layers hold.
    if support::kernel::Feature::Landlock.present() {
        std::fs::remove_file(root.join(".crew/settings.json")).unwrap();
        let out = crew(
            &root,
            &home,
            &script,
            "dontAsk",
            &[("CREW_TEST_SIMULATE_NO_NAMESPACES", "1")],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert_eq!(stderr.matches("OS sandbox: holding").count(), 1, "{stderr}");
        assert!(stderr.contains("Landlock-only tier"), "{stderr}");
        assert!(root.join("ran").exists(), "{}", tool_results(&root));
    }
}

#[test]
fn without_landlock_an_auto_allowed_read_is_refused() {
    let (_d, root, home, script) = setup(&["ls > listing.txt", "cat README.md"]);
    std::fs::write(root.join("README.md"), "readme-text").unwrap();
    let out = crew(
        &root,
        &home,
        &script,
        "default",
        &[("CREW_TEST_SIMULATE_NO_LANDLOCK", "1")],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = tool_results(&root);
    assert!(!root.join("listing.txt").exists(), "{results}");
    assert!(!results.contains("readme-text"), "{results}");
    assert!(results.contains("refused"), "{results}");
    assert!(results.contains("Landlock"), "{results}");
}

#[test]
fn bypass_permissions_cannot_change_the_users_start_up_files() {
    require_features!(Landlock, Python3);
    let (_d, root, home, _) = setup(&[]);
    for f in [".bashrc", ".profile", ".gitconfig"] {
        std::fs::write(home.join(f), "original").unwrap();
    }
    std::fs::create_dir_all(home.join(".cache")).unwrap();
    let py = "python3 -c \"import os; [open(os.path.expanduser('~/'+n), 'a').write('x') for n in ('.bash'+'rc', '.prof'+'ile')]\"";
    let (_d2, root2, _, script) = setup(&[
        "echo x > ~/.bashrc",
        "cp README.md ~/.profile",
        py,
        "echo x >> ~/.gitconfig; touch ~/.bash_profile",
        // A literal write outside the roots is a hard deny in every mode (the engine);
        // what the OS profile lets bypass write there is shown by a program the engine
        // cannot see into.
        "python3 -c \"import os; open(os.path.expanduser('~/.cache/ok'), 'w').write('cached')\"; echo built > built.txt",
    ]);
    std::fs::write(root2.join("README.md"), "readme").unwrap();
    let _ = root;
    let out = crew(&root2, &home, &script, "bypassPermissions", &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = tool_results(&root2);
    for f in [".bashrc", ".profile", ".gitconfig"] {
        assert_eq!(
            std::fs::read_to_string(home.join(f)).unwrap(),
            "original",
            "{f}: {results}"
        );
    }
    assert!(!home.join(".bash_profile").exists(), "{results}");
    // Bypass still writes the project and the home directory's caches.
    assert_eq!(
        std::fs::read_to_string(root2.join("built.txt")).unwrap(),
        "built\n"
    );
    assert_eq!(
        std::fs::read_to_string(home.join(".cache/ok")).unwrap(),
        "cached"
    );
}
