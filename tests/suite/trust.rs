//! Folder trust end to end (issue 9, class 11): a cloned repository's shared
//! `.crew/settings.json` cannot unlock commands or run its `worktree.setup` until the user
//! runs `crew trust`; its deny rules apply regardless; `crew trust --list/--revoke`.

use crate::support;

use std::path::{Path, PathBuf};

use support::{committed_repo, crew, put};

/// A temporary home and a project below it (a git repository with one commit holding
/// `files`), both canonical.
struct Clone {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    proj: PathBuf,
}

fn cloned(files: &[(&str, &str)]) -> Clone {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let home = base.join("home");
    let proj = home.join("cloned");
    std::fs::create_dir_all(&proj).unwrap();
    put(&proj, "README.md", "# cloned\n");
    for (rel, text) in files {
        put(&proj, rel, text);
    }
    committed_repo(&proj, &[]);
    Clone {
        _tmp: tmp,
        home,
        proj,
    }
}

fn script(dir: &Path, json: &str) -> String {
    let path = dir.join("script.json");
    std::fs::write(&path, json).unwrap();
    format!("script:{}", path.display())
}

fn text(o: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

const UNLOCK_ALL: &str = r#"{"permissions":{"allow":["Bash","Edit"],"deny":["Bash(rm:*)"]}}"#;

#[test]
fn an_untrusted_clone_cannot_allow_itself_commands_until_trusted() {
    let c = cloned(&[(".crew/settings.json", UNLOCK_ALL)]);
    let outside = tempfile::tempdir().unwrap();
    // Inside the project: a literal write outside the roots is denied in every mode
    // whatever the rules say, so only an inside target shows what the rules decide.
    let marker = c.proj.canonicalize().unwrap().join("pwned");
    let command = format!(
        "curl -s -m 1 http://127.0.0.1:9/ ; touch {}",
        marker.display()
    );
    let input = serde_json::json!({ "command": command }).to_string();
    let check = |c: &Clone| {
        crew(
            &c.proj,
            &c.home,
            &[
                "permissions",
                "check",
                "--tool",
                "run_command",
                "--input",
                &input,
                "--json",
            ],
        )
    };

    // Untrusted: the project's `allow: [Bash, Edit]` is ignored, so default mode asks.
    let out = check(&c);
    let (stdout, stderr) = text(&out);
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(v["decision"], "ask", "{stdout} {stderr}");
    assert_eq!(v["source"], "mode", "{stdout}");
    let warning = format!("{stdout}{stderr}");
    assert!(
        warning.contains("not trusted")
            && warning.contains("permissions.allow[0] `Bash`")
            && warning.contains("permissions.allow[1] `Edit`")
            && warning.contains(".crew/settings.json"),
        "the warning names the file and each ignored rule: {warning}"
    );

    // End to end in default mode: headless refuses the command and nothing ran.
    let model = script(
        outside.path(),
        &serde_json::json!({"turns": [
            {"tool_calls": [{"name": "run_command", "input": {"command": command}}]},
            {"text": "done"}
        ]})
        .to_string(),
    );
    let out = crew(&c.proj, &c.home, &["-p", "go", "--model", &model]);
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("✗ run_command [permission_denied]"),
        "{stderr}"
    );
    assert!(stderr.contains("not trusted"), "{stderr}");
    assert!(!marker.exists(), "the untrusted allow rule ran the command");

    // The project's deny rule applies even untrusted.
    let rm = serde_json::json!({"command": "rm README.md"}).to_string();
    let out = crew(
        &c.proj,
        &c.home,
        &[
            "permissions",
            "check",
            "--tool",
            "run_command",
            "--input",
            &rm,
            "--permission-mode",
            "bypassPermissions",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "deny: {}", text(&out).0);

    // `crew trust` (from a subdirectory: the project root is trusted) applies the rules.
    std::fs::create_dir_all(c.proj.join("src")).unwrap();
    let out = crew(&c.proj.join("src"), &c.home, &["trust"]);
    assert!(out.status.success(), "{}", text(&out).1);
    assert!(text(&out).0.contains(&c.proj.display().to_string()));
    let listed = crew(&c.proj, &c.home, &["trust", "--list"]);
    // Each entry with its state (issue 26: trust pins content).
    assert_eq!(
        text(&listed).0.trim(),
        format!("{}\ttrusted", c.proj.display())
    );
    let v: serde_json::Value = serde_json::from_str(text(&check(&c)).0.trim()).unwrap();
    assert_eq!(
        (&v["decision"], &v["source"]),
        (&"allow".into(), &"rule:project".into())
    );
    let out = crew(&c.proj, &c.home, &["-p", "go", "--model", &model]);
    assert!(out.status.success(), "{}", text(&out).1);
    assert!(marker.exists(), "trusted: the project's allow rule applies");

    // Revoked: ignored again.
    std::fs::remove_file(&marker).unwrap();
    let out = crew(&c.proj, &c.home, &["trust", "--revoke", "."]);
    assert!(out.status.success(), "{}", text(&out).1);
    let v: serde_json::Value = serde_json::from_str(text(&check(&c)).0.trim()).unwrap();
    assert_eq!(v["decision"], "ask");
    assert!(
        text(&crew(&c.proj, &c.home, &["trust", "--list"]))
            .0
            .contains("no trusted folders")
    );
    let out = crew(&c.proj, &c.home, &["-p", "go", "--model", &model]);
    assert!(out.status.success());
    assert!(!marker.exists());
}

#[test]
fn worktree_setup_of_an_untrusted_clone_is_not_run() {
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().canonicalize().unwrap().join("setup-ran");
    let settings =
        serde_json::json!({"worktree": {"setup": format!("touch {}", marker.display())}})
            .to_string();
    let c = cloned(&[(".crew/settings.json", &settings)]);
    // The lead delegates to one worktree subagent, which answers at once.
    let model = script(
        outside.path(),
        r#"{"turns":[
            {"tool_calls":[{"name":"agent","input":{"description":"look","prompt":"p","subagent_type":"general-purpose"}}]},
            {"text":"done"}],
          "agents":{"general-purpose":{"turns":[{"text":"nothing to do"}]}}}"#,
    );
    let run = |c: &Clone| {
        let out = crew(&c.proj, &c.home, &["-p", "go", "--model", &model]);
        let (_, stderr) = text(&out);
        assert!(out.status.success(), "{stderr}");
        assert!(stderr.contains("✓ agent"), "the subagent started: {stderr}");
        stderr
    };
    let stderr = run(&c);
    assert!(stderr.contains("worktree.setup"), "{stderr}");
    assert!(!marker.exists(), "an untrusted worktree.setup ran");
    // A folder inside the project trusts the project's root.
    let out = crew(&c.home, &c.home, &["trust", "cloned/.crew"]);
    assert!(out.status.success(), "{}", text(&out).1);
    run(&c);
    assert!(marker.exists(), "a trusted worktree.setup runs");
}

#[test]
fn trust_refuses_home_and_root_and_names_what_to_do() {
    let c = cloned(&[]);
    for dir in ["/", c.home.to_str().unwrap()] {
        let out = crew(&c.proj, &c.home, &["trust", dir]);
        assert_eq!(out.status.code(), Some(2));
        assert!(
            text(&out).1.contains("trust the project folder"),
            "{}",
            text(&out).1
        );
    }
    assert!(!c.home.join(".crew/trusted.json").exists());
}

/// Claude Code's `.claude/settings.json` is a settings layer like ours: its deny rule is
/// honoured end to end, and its allow rule needs the folder's trust.
#[test]
fn claude_code_settings_deny_always_and_allow_only_when_trusted() {
    let c = cloned(&[(
        ".claude/settings.json",
        r#"{"permissions":{"allow":["Bash(touch:*)","Edit(made)"],"deny":["Write(secret.txt)"]}}"#,
    )]);
    let outside = tempfile::tempdir().unwrap();
    // The deny rule holds even under bypassPermissions: nothing is written.
    let write = script(
        outside.path(),
        r#"{"turns":[
            {"tool_calls":[{"name":"write_file","input":{"path":"secret.txt","content":"x"}}]},
            {"text":"done"}]}"#,
    );
    let out = crew(
        &c.proj,
        &c.home,
        &[
            "-p",
            "go",
            "--model",
            &write,
            "--permission-mode",
            "bypassPermissions",
        ],
    );
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("✗ write_file"), "{stderr}");
    assert!(
        !c.proj.join("secret.txt").exists(),
        "the .claude deny rule was not honoured"
    );

    // The allow rule of an untrusted clone is ignored, with a warning naming it.
    let touch = script(
        outside.path(),
        r#"{"turns":[
            {"tool_calls":[{"name":"run_command","input":{"command":"touch made"}}]},
            {"text":"done"}]}"#,
    );
    let out = crew(&c.proj, &c.home, &["-p", "go", "--model", &touch]);
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(".claude/settings.json")
            && stderr.contains("not trusted")
            && stderr.contains("permissions.allow[0] `Bash(touch:*)`"),
        "the warning names the file and the rule: {stderr}"
    );
    assert!(
        stderr.contains("✗ run_command [permission_denied]"),
        "{stderr}"
    );
    assert!(!c.proj.join("made").exists());

    // `crew permissions` shows where each rule came from.
    let listed = text(&crew(&c.proj, &c.home, &["permissions", "list"])).0;
    assert!(
        listed.lines().any(|l| l.contains("deny")
            && l.contains("Write(secret.txt)")
            && l.contains(".claude/settings.json [0]")),
        "{listed}"
    );

    // Trusted: the same allow rule runs the command; the deny still holds.
    assert!(crew(&c.proj, &c.home, &["trust"]).status.success());
    let out = crew(&c.proj, &c.home, &["-p", "go", "--model", &touch]);
    assert!(out.status.success(), "{}", text(&out).1);
    assert!(
        c.proj.join("made").exists(),
        "trusted: the .claude allow rule applies"
    );
    let out = crew(
        &c.proj,
        &c.home,
        &[
            "-p",
            "go",
            "--model",
            &write,
            "--permission-mode",
            "bypassPermissions",
        ],
    );
    assert!(out.status.success(), "{}", text(&out).1);
    assert!(!c.proj.join("secret.txt").exists());
}

/// A `.claude/settings.local.json` that git tracks came with the clone: its allow rules
/// need trust like the project's.
#[test]
fn a_committed_claude_local_file_is_shared_content() {
    let c = cloned(&[(
        ".claude/settings.local.json",
        r#"{"permissions":{"allow":["Bash(touch:*)","Edit(made)"]}}"#,
    )]);
    let input = serde_json::json!({ "command": "touch made" }).to_string();
    let check = |c: &Clone| {
        let out = crew(
            &c.proj,
            &c.home,
            &[
                "permissions",
                "check",
                "--tool",
                "run_command",
                "--input",
                &input,
                "--json",
            ],
        );
        let v: serde_json::Value = serde_json::from_str(text(&out).0.trim()).unwrap();
        v
    };
    let v = check(&c);
    assert_eq!(v["decision"], "ask", "{v}");
    let warnings = v["warnings"].to_string();
    assert!(
        warnings.contains(".claude/settings.local.json")
            && warnings.contains("git tracks this file")
            && warnings.contains("permissions.allow[0] `Bash(touch:*)`"),
        "{warnings}"
    );
    assert!(crew(&c.proj, &c.home, &["trust"]).status.success());
    let v = check(&c);
    assert_eq!(
        (&v["decision"], &v["source"]),
        (&"allow".into(), &"rule:local".into()),
        "{v}"
    );
}
