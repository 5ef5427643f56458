//! Custom slash commands end to end through `crew -p "/name args"`: a command file shaped
//! like the ones Claude Code users commit is expanded into the first user message (the
//! argument substituted, `` !`cmd` `` output and `@file` contents inlined), its `!`
//! commands and `@file` reads pass the permission engine and the gate as the lead's own
//! calls (a denied one does not run, a credential is not read), its `allowed-tools` hold
//! for the turn it starts and its `model` is that turn's model.

use crate::support;

use serde_json::Value;
use support::{committed_repo, crew, crew_p_recorded, put};

const REVIEW_COMMAND: &str = "---
description: Review a file for bugs, unclear names and missing tests
argument-hint: [file]
allowed-tools: Read, Grep, Bash(git diff:*)
---
## Context

- Uncommitted changes: !`git diff --stat`

## Your task

Review @$1 for bugs, unclear names and missing tests.
Report each finding as `file:line — problem — suggested fix`.
";

/// A git repository with one commit and an uncommitted change, a home outside it, and
/// `script` as the model.
fn repo(script: &str) -> (tempfile::TempDir, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    put(
        dir.path(),
        "src/main.rs",
        "fn main() {\n    println!(\"hi\");\n}\n",
    );
    put(dir.path(), ".claude/commands/review.md", REVIEW_COMMAND);
    committed_repo(dir.path(), &[]);
    put(
        dir.path(),
        "src/main.rs",
        "fn main() {\n    let unused = 1;\n    println!(\"hi\");\n}\n",
    );
    put(home.path(), "script.json", script);
    (dir, home)
}

/// The text of the first user message of a recorded request.
fn first_message(request: &Value) -> String {
    request["messages"][0]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn review_command_expands_its_body_with_the_argument_into_the_first_user_message() {
    let (dir, home) = repo(
        r#"{"turns":[
            {"tool_calls":[{"name":"write_file","input":{"path":"REVIEW.md","content":"x"}}]},
            {"text":"One finding: `unused` is never read."}
        ]}"#,
    );
    let (out, requests) =
        crew_p_recorded(dir.path(), home.path(), "/review src/main.rs", "default");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let first = first_message(&requests[0]);
    assert!(
        first.contains("Review @src/main.rs for bugs, unclear names and missing tests."),
        "{first}"
    );
    // `git diff --stat` ran (a read in default mode) and its output is inlined.
    assert!(
        first.contains("- Uncommitted changes: ") && first.contains("src/main.rs | 1 +"),
        "{first}"
    );
    // @src/main.rs was read with read_file: the working-tree content, numbered.
    assert!(first.contains("<file path=\"src/main.rs\">"), "{first}");
    assert!(first.contains("let unused = 1;"), "{first}");
    assert!(
        !first.contains("$1") && !first.contains("!`") && !first.contains("argument-hint"),
        "{first}"
    );
    // The command's allowed-tools hold for its turn: the write was refused at the gate.
    let refused = requests[1]["messages"].to_string();
    assert!(
        refused.contains("tool_not_allowed") && refused.contains("command `/review`"),
        "{refused}"
    );
    assert!(!dir.path().join("REVIEW.md").exists());
}

#[test]
fn a_denied_command_does_not_run_and_a_credential_is_not_included() {
    let (dir, home) = repo(r#"{"turns":[{"text":"ok"}]}"#);
    put(
        home.path(),
        ".ssh/id_rsa",
        "-----BEGIN OPENSSH PRIVATE KEY----- SECRET\n",
    );
    put(
        dir.path(),
        ".crew/commands/ship.md",
        "---\ndescription: Ship it\n---\nBuild: !`touch pwned.txt`\nKey: @~/.ssh/id_rsa\nNotes: $ARGUMENTS",
    );
    let (out, requests) = crew_p_recorded(dir.path(), home.path(), "/ship fast please", "default");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !dir.path().join("pwned.txt").exists(),
        "the denied command ran"
    );
    let first = first_message(&requests[0]);
    assert!(
        first.starts_with("Build: error [permission_denied]"),
        "{first}"
    );
    assert!(
        first.contains("(@~/.ssh/id_rsa was not included: error [permission_denied]"),
        "{first}"
    );
    assert!(first.contains("credential"), "{first}");
    assert!(!first.contains("SECRET"), "{first}");
    assert!(first.contains("Notes: fast please"), "{first}");
    // The refusals are shown to the user too.
    assert!(
        stderr.contains("permission_denied") || stderr.contains("denied"),
        "{stderr}"
    );
}

#[test]
fn a_commands_model_is_used_for_its_turn() {
    let (dir, home) = repo(r#"{"turns":[{"text":"ok"}]}"#);
    put(
        dir.path(),
        ".claude/commands/quick.md",
        "---\ndescription: A quick answer\nmodel: claude-haiku-4-5\n---\nAnswer briefly: $ARGUMENTS",
    );
    let (out, requests) = crew_p_recorded(dir.path(), home.path(), "/quick what is 2+2", "default");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(requests[0]["model"], "claude-haiku-4-5");
    assert_eq!(first_message(&requests[0]), "Answer briefly: what is 2+2");
}

#[test]
fn an_unknown_command_is_an_error_listing_the_commands_and_paths_stay_text() {
    let (dir, home) = repo(r#"{"turns":[{"text":"ok"}]}"#);
    put(
        dir.path(),
        ".claude/commands/frontend/test.md",
        "Run the frontend tests",
    );
    let (out, requests) =
        crew_p_recorded(dir.path(), home.path(), "/reveiw src/main.rs", "default");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("unknown command /reveiw")
            && stderr.contains("/review")
            && stderr.contains("/frontend:test"),
        "{stderr}"
    );
    assert!(requests.is_empty(), "no model call for a typo");
    let (out, requests) =
        crew_p_recorded(dir.path(), home.path(), "/etc/hosts looks wrong", "default");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(first_message(&requests[0]), "/etc/hosts looks wrong");
}

#[test]
fn namespaced_and_user_commands_run_and_are_listed() {
    let (dir, home) = repo(r#"{"turns":[{"text":"ok"}]}"#);
    put(
        dir.path(),
        ".claude/commands/frontend/test.md",
        "Run the frontend tests for $1",
    );
    put(
        home.path(),
        ".claude/commands/standup.md",
        "# Draft my standup\nFrom `git log`.",
    );
    let (out, requests) = crew_p_recorded(dir.path(), home.path(), "/test button", "default");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        first_message(&requests[0]),
        "Run the frontend tests for button"
    );
    let out = crew(dir.path(), home.path(), &["commands", "list"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("/review [file]") && stdout.contains("(project)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("tools: read_file, run_command, search_code"),
        "{stdout}"
    );
    assert!(
        stdout.contains("/test") && stdout.contains("(project:frontend)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("/standup") && stdout.contains("Draft my standup (user)"),
        "{stdout}"
    );
}
