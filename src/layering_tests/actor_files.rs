//! One naming scheme for actor files (issue 27): the file that holds an actor is named
//! `actor.rs` when it is its module's one actor (`engine/actor.rs`, `gate/actor.rs`), and
//! `<role>_actor.rs` beside others (`agent/lead_actor.rs`, `worker/pool_actor.rs`). A
//! reader looking for an actor finds it by name; test actors inside `#[cfg(test)]` modules
//! are left out.

use super::imports::{code_lines, files, src};

/// Whether a line of non-test code implements ractor's `Actor` trait.
fn implements_actor(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("impl Actor for ") || t.starts_with("impl ractor::Actor for ")
}

/// The files whose non-test code implements an actor but whose name breaks the scheme.
fn misnamed(root: &std::path::Path) -> Vec<String> {
    files(root)
        .into_iter()
        .filter(|file| {
            let source = std::fs::read_to_string(file).unwrap();
            code_lines(&source)
                .iter()
                .any(|(_, line)| implements_actor(line))
        })
        .filter(|file| {
            let name = file.file_name().unwrap().to_string_lossy();
            name != "actor.rs" && !name.ends_with("_actor.rs")
        })
        .map(|file| {
            file.strip_prefix(root)
                .unwrap_or(&file)
                .display()
                .to_string()
        })
        .collect()
}

#[test]
fn every_actor_lives_in_a_file_named_for_it() {
    let bad = misnamed(&src());
    assert!(
        bad.is_empty(),
        "these files implement an actor but are not named `actor.rs` or `<role>_actor.rs`: {bad:?}"
    );
}

#[test]
fn a_misnamed_actor_file_is_found_and_a_test_actor_is_not() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("runner.rs"),
        "struct R;\nimpl Actor for R {\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("slot.rs"),
        "fn f() {}\n#[cfg(test)]\nmod tests {\n    impl Actor for Echo {\n    }\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("pool_actor.rs"),
        "impl ractor::Actor for Pool {\n}\n",
    )
    .unwrap();
    assert_eq!(misnamed(dir.path()), vec!["runner.rs".to_string()]);
}
