//! Directory walkers obey deny rules and credential paths (issue 9, class 7), end to end
//! through `crew -p` on a scripted model: what `search_code` and `find_files` return to the
//! model never names or quotes a denied file, a credential, or a symlink to one.

use crate::support;

use std::path::Path;

use support::{crew_scripted, put};

/// Runs `crew -p` in `cwd` (HOME = `home`) with a model that searches for `needle` and
/// lists every file, and returns the tool results the model was sent.
fn walk_results(cwd: &Path, home: &Path, needle: &str) -> String {
    let script = serde_json::json!({"turns": [
        {"tool_calls": [
            {"name": "search_code", "input": {"pattern": needle}},
            {"name": "search_code", "input": {"pattern": needle, "output_mode": "content"}},
            {"name": "find_files", "input": {"pattern": "**/*"}}
        ]},
        {"text": "done"}
    ]});
    let (_, requests) = crew_scripted(cwd, home, &script, &["-p", "look around"]);
    let v = requests.last().expect("a recorded request");
    let results: Vec<String> = v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| b["content"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(results.len(), 3, "{results:#?}");
    results.join("\n")
}

#[test]
fn a_read_deny_rule_hides_files_from_search_and_find() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let (home, proj) = (base.join("home"), base.join("proj"));
    std::fs::create_dir_all(&home).unwrap();
    put(&proj, "notes.txt", "the word TOPSECRET is public here\n");
    put(&proj, "secrets/key.txt", "TOPSECRET=hunter2\n");
    put(&proj, "src/deep/secrets/other.txt", "TOPSECRET nested\n");
    // A link inside the project to the denied file.
    std::os::unix::fs::symlink(proj.join("secrets/key.txt"), proj.join("alias.txt")).unwrap();
    put(
        &proj,
        ".crew/settings.local.json",
        r#"{"permissions":{"deny":["Read(./secrets/**)"]}}"#,
    );
    let results = walk_results(&proj, &home, "TOPSECRET");
    assert!(results.contains("notes.txt"), "the search works: {results}");
    assert!(
        results.contains("src/deep/secrets/other.txt"),
        "only ./secrets is denied: {results}"
    );
    assert!(!results.contains("secrets/key.txt"), "{results}");
    assert!(!results.contains("alias.txt"), "{results}");
    assert!(!results.contains("hunter2"), "{results}");
}

#[test]
fn a_walk_of_the_home_directory_never_shows_credentials() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().canonicalize().unwrap().join("home");
    put(&home, ".ssh/id_rsa", "KEYMATERIAL private key\n");
    put(&home, ".aws/credentials", "KEYMATERIAL aws\n");
    put(&home, "notes.txt", "KEYMATERIAL is a word\n");
    std::fs::create_dir_all(home.join("proj")).unwrap();
    std::os::unix::fs::symlink(home.join(".ssh/id_rsa"), home.join("proj/key")).unwrap();
    let results = walk_results(&home, &home, "KEYMATERIAL");
    assert!(results.contains("notes.txt"), "the search works: {results}");
    for hidden in [".ssh", "id_rsa", ".aws", "proj/key", "private key"] {
        assert!(!results.contains(hidden), "{hidden} shown: {results}");
    }
    // From inside the project, the link to the key is not searched either.
    let results = walk_results(&home.join("proj"), &home, "KEYMATERIAL");
    assert!(!results.contains("private key"), "{results}");
    assert!(!results.contains("key"), "{results}");
}
