//! `crew permissions check|list` in-process: argument parsing, decisions and exit codes,
//! settings discovery from `--cwd`, and `--json` output.

use crate::support;

use clap::Parser;
use crewmaster::cli::permissions::{
    EXIT_ALLOW, EXIT_ASK, EXIT_DENY, PermissionsCmd, run_with_home,
};
use support::permission::Fixture;

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    cmd: PermissionsCmd,
}

fn run(f: &Fixture, args: &[&str]) -> anyhow::Result<(i32, String)> {
    let cli = Cli::try_parse_from(std::iter::once("permissions").chain(args.iter().copied()))?;
    let mut out = Vec::new();
    let code = run_with_home(cli.cmd, &mut out, Some(&f.home))?;
    Ok((code, String::from_utf8(out).unwrap()))
}

fn json(out: &str) -> serde_json::Value {
    serde_json::from_str(out.trim()).unwrap()
}

#[test]
fn check_prints_the_decision_and_exits_by_verdict() {
    let f = Fixture::new();
    let cwd = f.proj.to_string_lossy().to_string();
    let (code, out) = run(
        &f,
        &[
            "check",
            "--tool",
            "read_file",
            "--input",
            r#"{"path":"src/main.rs"}"#,
            "--cwd",
            &cwd,
            "--json",
        ],
    )
    .unwrap();
    assert_eq!(code, EXIT_ALLOW);
    let v = json(&out);
    assert_eq!(
        (
            v["decision"].as_str(),
            v["source"].as_str(),
            v["category"].as_str()
        ),
        (Some("allow"), Some("mode"), Some("read"))
    );
    assert!(v["reason"].as_str().unwrap().contains("default mode"));

    let write = [
        "check",
        "--tool",
        "write_file",
        "--input",
        r#"{"path":"a.txt","content":"x"}"#,
        "--cwd",
        &cwd,
    ];
    let (code, out) = run(&f, &write).unwrap();
    assert_eq!(code, EXIT_ASK);
    assert!(out.contains("decision: ask"), "{out}");
    let mut accept = write.to_vec();
    accept.extend(["--permission-mode", "acceptEdits"]);
    assert_eq!(run(&f, &accept).unwrap().0, EXIT_ALLOW);
}

#[test]
fn invalid_json_input_is_a_deny_not_a_usage_error() {
    let f = Fixture::new();
    let cwd = f.proj.to_string_lossy().to_string();
    let (code, out) = run(
        &f,
        &[
            "check",
            "--tool",
            "run_command",
            "--input",
            "{command: ls",
            "--cwd",
            &cwd,
            "--json",
        ],
    )
    .unwrap();
    assert_eq!(code, EXIT_DENY);
    let v = json(&out);
    assert_eq!(
        (v["decision"].as_str(), v["source"].as_str()),
        (Some("deny"), Some("arguments"))
    );
    // A bad mode name is a usage error, and never bypass.
    assert!(
        run(
            &f,
            &[
                "check",
                "--tool",
                "read_file",
                "--input",
                "{}",
                "--permission-mode",
                "yolo"
            ]
        )
        .is_err()
    );
}

#[test]
fn settings_are_found_from_a_subdirectory_and_home() {
    let f = Fixture::new();
    f.settings("user", r#"{"permissions": {"deny": ["Bash(git push:*)"]}}"#);
    f.settings(
        "local",
        r#"{"permissions": {"allow": ["Bash(git:*)"], "defaultMode": "acceptEdits"}}"#,
    );
    let sub = f.proj.join("src");
    let sub = sub.to_string_lossy().to_string();
    let (code, out) = run(
        &f,
        &[
            "check",
            "--tool",
            "run_command",
            "--input",
            r#"{"command":"git push"}"#,
            "--cwd",
            &sub,
            "--json",
        ],
    )
    .unwrap();
    assert_eq!(code, EXIT_DENY);
    let v = json(&out);
    assert_eq!(
        (v["source"].as_str(), v["rule"].as_str()),
        (Some("rule:user"), Some("Bash(git push:*)"))
    );
    let (code, out) = run(
        &f,
        &[
            "check",
            "--tool",
            "run_command",
            "--input",
            r#"{"command":"git commit -m x"}"#,
            "--cwd",
            &sub,
            "--json",
        ],
    )
    .unwrap();
    assert_eq!(code, EXIT_ALLOW);
    assert_eq!(json(&out)["source"].as_str(), Some("rule:local"));
    // defaultMode from settings applies when --permission-mode is absent.
    assert_eq!(json(&out)["mode"].as_str(), Some("acceptEdits"));
}

#[test]
fn list_shows_rules_by_layer_with_their_files() {
    let f = Fixture::new();
    f.settings(
        "project",
        r#"{"permissions": {"allow": ["Read(src/**)"], "deny": ["Bash(rm:*)", "Nope(x)"]}}"#,
    );
    let cwd = f.proj.to_string_lossy().to_string();
    // Untrusted: the project's allow rule is ignored, and the warning names it.
    let (code, out) = run(&f, &["list", "--cwd", &cwd]).unwrap();
    assert_eq!(code, 0);
    assert!(out.contains("project  deny  Bash(rm:*)"), "{out}");
    assert!(!out.contains("project  allow"), "{out}");
    assert!(
        out.contains("not trusted") && out.contains("permissions.allow[0] `Read(src/**)`"),
        "{out}"
    );
    f.trust();
    let (code, out) = run(&f, &["list", "--cwd", &cwd]).unwrap();
    assert_eq!(code, 0);
    assert!(out.contains("project  deny  Bash(rm:*)"), "{out}");
    assert!(out.contains(".crew/settings.json [0]"), "{out}");
    assert!(out.contains("project  allow Read(src/**)"), "{out}");
    assert!(
        out.contains("warning:") && out.contains("permissions.deny[1]"),
        "{out}"
    );
    let (_, out) = run(&f, &["list", "--cwd", &cwd, "--json"]).unwrap();
    assert_eq!(json(&out)["rules"].as_array().unwrap().len(), 2);
}

#[test]
fn malformed_settings_fail_with_file_line_and_column() {
    let f = Fixture::new();
    f.settings("local", "{\"permissions\": [}");
    let cwd = f.proj.to_string_lossy().to_string();
    let err = run(
        &f,
        &[
            "check",
            "--tool",
            "read_file",
            "--input",
            "{}",
            "--cwd",
            &cwd,
        ],
    )
    .unwrap_err();
    let msg = format!("{err:#}");
    assert!(
        msg.contains("settings.local.json") && msg.contains("line 1") && msg.contains("column"),
        "{msg}"
    );
}
