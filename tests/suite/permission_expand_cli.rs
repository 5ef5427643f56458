//! End to end: `crew -p` on the scripted model under bypassPermissions, where the model
//! aims expansion attacks (a variable holding `~`, a glob naming the home directory, a
//! `cd` followed by `*`) at a sacrificial home directory. The engine refuses them, the
//! files are still on disk afterwards, and an ordinary `rm -rf build` in the same run
//! does run.

use std::process::Command;

#[test]
fn expansion_attacks_on_the_home_directory_are_refused_and_the_files_survive() {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let home = base.join("home");
    let proj = home.join("proj");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    std::fs::create_dir_all(proj.join("build")).unwrap();
    std::fs::write(proj.join("build/out.o"), "o").unwrap();
    std::fs::create_dir_all(home.join("keep")).unwrap();
    std::fs::write(home.join("keep/important.txt"), "precious").unwrap();
    let glob = format!("{}/h?me", base.display());
    let attacks = [
        "H=~; rm -rf $H".to_string(),
        format!("rm -rf {glob}"),
        "cd .. && rm -rf *".into(),
        "export D=$HOME; rm -rf \"$D\"/".into(),
    ];
    let mut calls: Vec<serde_json::Value> = attacks
        .iter()
        .map(|c| serde_json::json!({"name": "run_command", "input": {"command": c}}))
        .collect();
    calls.push(serde_json::json!({"name": "run_command", "input": {"command": "rm -rf build"}}));
    let script = base.join("script.json");
    std::fs::write(
        &script,
        serde_json::json!({"turns": [{"tool_calls": calls}, {"text": "done"}]}).to_string(),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_crew"))
        .args([
            "-p",
            "clean up",
            "--permission-mode",
            "bypassPermissions",
            "--model",
            &format!("script:{}", script.display()),
        ])
        .current_dir(&proj)
        .env("HOME", &home)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stderr.matches("✗ run_command [permission_denied]").count(),
        attacks.len(),
        "{stderr}"
    );
    assert!(stderr.contains("blacklist"), "{stderr}");
    // The disk: the home directory and everything in it survived; the build dir did not.
    assert_eq!(
        std::fs::read_to_string(home.join("keep/important.txt")).unwrap(),
        "precious"
    );
    assert!(proj.join(".git").is_dir());
    assert!(!proj.join("build").exists(), "{stderr}");
}
