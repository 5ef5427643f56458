//! A Read-denied file is not an oracle (issue 31, item 7): `edit_file`, `write_file`,
//! `search_code` and `find_files` on it are refused before its content is looked at, with
//! the same answer whatever the content is. A scripted model runs a guessing loop through
//! the real `crew` binary (engine, gate, executor, tools); right and wrong guesses must
//! get identical answers, and the file must be unchanged.

use crate::support;

use std::path::Path;

use serde_json::{Value, json};

const SECRET: &str = "TOPSECRET-42";

/// A project whose `secrets/key.txt` a local Read deny rule covers, with a hard link to
/// it outside `secrets/`; returns (project dir, home dir).
fn project() -> (tempfile::TempDir, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let root = dir.path();
    support::put(root, "secrets/key.txt", &format!("{SECRET}\n"));
    support::put(root, "src/main.rs", "fn main() {}\n");
    std::fs::hard_link(root.join("secrets/key.txt"), root.join("src/copy.txt")).unwrap();
    support::put(
        root,
        ".crew/settings.local.json",
        r#"{"permissions":{"deny":["Read(./secrets/**)"],"allow":["Edit","Write"]}}"#,
    );
    (dir, home)
}

/// The text of every tool result in the last request the model was sent, in order.
fn results(requests: &[Value]) -> Vec<String> {
    let last = requests.last().expect("the model was asked at least once");
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| match &b["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// Runs one turn per call, then "done"; returns each call's answer.
fn run(root: &Path, home: &Path, mode: &str, calls: &[Value]) -> Vec<String> {
    let turns: Vec<Value> = calls
        .iter()
        .map(|c| json!({"tool_calls": [c]}))
        .chain([json!({"text": "done"})])
        .collect();
    let (_, requests) = support::crew_scripted(
        root,
        home,
        &json!({ "turns": turns }),
        &["-p", "go", "--permission-mode", mode],
    );
    let answers = results(&requests);
    assert_eq!(answers.len(), calls.len(), "{answers:#?}");
    answers
}

/// Asserts that every answer is the same; with `named`, each answer's own entry of it
/// (a pattern or path the answer repeats) is replaced by `GUESS` first.
fn identical(what: &str, answers: &[String], named: Option<&[&str]>) {
    let normal: Vec<String> = match named {
        Some(names) => answers
            .iter()
            .zip(names)
            .map(|(a, g)| a.replace(g, "GUESS"))
            .collect(),
        None => answers.to_vec(),
    };
    assert!(
        normal.windows(2).all(|w| w[0] == w[1]),
        "{what}: answers differ between guesses: {normal:#?}"
    );
    assert!(
        !normal[0].contains(SECRET),
        "{what} shows the secret: {}",
        normal[0]
    );
}

#[test]
fn a_guessing_loop_on_a_read_denied_file_learns_nothing_and_changes_nothing() {
    let (dir, home) = project();
    let root = dir.path().canonicalize().unwrap();
    let guesses = [SECRET, "TOPSECRET-4", "T", "nope", "TOPSECRET-43", "42\n"];
    for mode in ["acceptEdits", "bypassPermissions", "default"] {
        for path in [
            "secrets/key.txt",
            "src/copy.txt",
            "./secrets/../secrets/key.txt",
        ] {
            let edits: Vec<Value> = guesses
                .iter()
                .map(|g| json!({"name": "edit_file", "input": {"path": path, "old_string": g, "new_string": "X"}}))
                .collect();
            let answers = run(&root, home.path(), mode, &edits);
            identical(&format!("edit_file {path} ({mode})"), &answers, None);
        }
        // Overwriting the file and creating a missing one get one answer.
        let targets = ["secrets/key.txt", "secrets/missing.txt"];
        let writes: Vec<Value> = targets
            .iter()
            .map(|p| json!({"name": "write_file", "input": {"path": p, "content": "X"}}))
            .collect();
        let answers = run(&root, home.path(), mode, &writes);
        identical(&format!("write_file ({mode})"), &answers, Some(&targets));
        // Searches: in the denied directory, and for the content from the top.
        let patterns = &guesses[..5];
        let searches: Vec<Value> = patterns
            .iter()
            .flat_map(|g| {
                [
                    json!({"name": "search_code", "input": {"pattern": g, "path": "secrets"}}),
                    json!({"name": "search_code", "input": {"pattern": g, "path": "secrets/key.txt", "output_mode": "count"}}),
                    json!({"name": "search_code", "input": {"pattern": g, "output_mode": "content"}}),
                ]
            })
            .collect();
        let answers = run(&root, home.path(), mode, &searches);
        for k in 0..3 {
            let one: Vec<String> = answers.iter().skip(k).step_by(3).cloned().collect();
            identical(&format!("search_code #{k} ({mode})"), &one, None);
        }
        let names = ["key.txt", "nokey.txt", "copy.txt", "nocopy.txt"];
        let finds: Vec<Value> = names
            .iter()
            .flat_map(|n| {
                [
                    json!({"name": "find_files", "input": {"pattern": format!("**/{n}")}}),
                    json!({"name": "find_files", "input": {"pattern": n, "path": "secrets"}}),
                ]
            })
            .collect();
        let answers = run(&root, home.path(), mode, &finds);
        for k in 0..2 {
            let one: Vec<String> = answers.iter().skip(k).step_by(2).cloned().collect();
            // The hard link is a file of its own name, but the same file: hidden too.
            identical(&format!("find_files #{k} ({mode})"), &one, Some(&names));
        }
    }
    assert_eq!(
        std::fs::read_to_string(root.join("secrets/key.txt")).unwrap(),
        format!("{SECRET}\n"),
        "the denied file changed"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("src/copy.txt")).unwrap(),
        format!("{SECRET}\n"),
        "the hard link changed"
    );
    assert!(!root.join("secrets/missing.txt").exists());
}

#[test]
fn the_engine_denies_writes_and_edits_of_what_a_read_deny_rule_covers_in_every_mode() {
    use crewmaster::permission::{PermissionMode, Verdict};
    use support::permission::{Fixture, path};
    let f = Fixture::new();
    support::put(&f.proj, "secrets/key.txt", SECRET);
    std::fs::hard_link(f.proj.join("secrets/key.txt"), f.proj.join("src/copy.txt")).unwrap();
    f.settings(
        "local",
        r#"{"permissions":{"deny":["Read(./secrets/**)"],"allow":["Edit","Write"]}}"#,
    );
    for mode in [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::BypassPermissions,
        PermissionMode::DontAsk,
    ] {
        for tool in ["write_file", "edit_file"] {
            for p in ["secrets/key.txt", "secrets/new.txt", "src/copy.txt"] {
                let d = f.check(tool, &path(p), mode);
                assert_eq!(d.verdict, Verdict::Deny, "{tool} {p} in {mode:?}: {d:?}");
            }
            // A file no Read deny covers is still writable.
            let d = f.check(tool, &path("src/main.rs"), mode);
            assert_eq!(
                d.verdict,
                Verdict::Allow,
                "{tool} src/main.rs in {mode:?}: {d:?}"
            );
        }
    }
}
