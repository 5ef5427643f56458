//! `read_file`, `write_file` and `edit_file` end to end on real temporary files.

use std::path::Path;

use crewmaster::tools::edit_file::EditFile;
use crewmaster::tools::read_file::ReadFile;
use crewmaster::tools::write_file::WriteFile;
use crewmaster::tools::{Tool, ToolContext, ToolError};
use serde_json::{Value, json};

fn ctx(dir: &Path) -> ToolContext {
    ToolContext::new(dir, "test")
}

async fn read(dir: &Path, args: Value) -> Result<String, ToolError> {
    ReadFile::new().run(args, ctx(dir)).await
}

async fn write(dir: &Path, args: Value) -> Result<String, ToolError> {
    WriteFile::new().run(args, ctx(dir)).await
}

async fn edit(dir: &Path, args: Value) -> Result<String, ToolError> {
    EditFile::new().run(args, ctx(dir)).await
}

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[tokio::test]
async fn read_numbers_lines_like_cat_n() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\r\nbeta\ngamma").unwrap();
    let out = read(dir.path(), json!({"path": "a.txt"})).await.unwrap();
    assert_eq!(out, "     1\talpha\n     2\tbeta\n     3\tgamma\n");
}

#[tokio::test]
async fn read_window_with_offset_and_limit_says_what_remains() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), numbered(10)).unwrap();
    let out = read(
        dir.path(),
        json!({"path": "a.txt", "offset": 3, "limit": 2}),
    )
    .await
    .unwrap();
    assert!(out.starts_with("     3\tline 3\n     4\tline 4\n"), "{out}");
    assert!(!out.contains("line 5"), "{out}");
    assert!(out.contains("6 more lines; use offset=5"), "{out}");
}

#[tokio::test]
async fn read_defaults_to_2000_lines() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("big.txt"), "x\n".repeat(2500)).unwrap();
    let out = read(dir.path(), json!({"path": "big.txt"})).await.unwrap();
    assert!(out.contains("  2000\tx\n"), "last default line shown");
    assert!(!out.contains("  2001\t"));
    assert!(out.contains("500 more lines; use offset=2001"));
}

#[tokio::test]
async fn read_cuts_very_long_lines() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("min.js"), "y".repeat(5000)).unwrap();
    let out = read(dir.path(), json!({"path": "min.js"})).await.unwrap();
    assert!(
        out.contains("[line cut: 3000 more characters]"),
        "{}",
        out.len()
    );
    assert!(out.len() < 2100);
}

#[tokio::test]
async fn read_stops_before_the_output_cap_and_says_where_to_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let line = "z".repeat(1000);
    std::fs::write(dir.path().join("wide.txt"), format!("{line}\n").repeat(100)).unwrap();
    let out = read(dir.path(), json!({"path": "wide.txt"})).await.unwrap();
    assert!(out.len() < 30_000, "{}", out.len());
    assert!(
        out.contains("more lines; use offset="),
        "{}",
        &out[out.len() - 200..]
    );
}

#[tokio::test]
async fn read_refuses_binary_and_invalid_utf8() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bin"), b"ELF\0\x01\x02").unwrap();
    let err = read(dir.path(), json!({"path": "bin"})).await.unwrap_err();
    assert!(err.to_string().contains("binary"), "{err}");
    std::fs::write(dir.path().join("latin1"), b"caf\xe9\n").unwrap();
    let err = read(dir.path(), json!({"path": "latin1"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not valid UTF-8"), "{err}");
}

#[tokio::test]
async fn read_missing_file_and_directory_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let err = read(dir.path(), json!({"path": "nope.txt"}))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("file not found: `nope.txt`"),
        "{err}"
    );
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let err = read(dir.path(), json!({"path": "sub"})).await.unwrap_err();
    assert!(err.to_string().contains("is a directory"), "{err}");
}

#[tokio::test]
async fn read_offset_past_the_end_names_the_argument() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), numbered(3)).unwrap();
    let err = read(dir.path(), json!({"path": "a.txt", "offset": 9}))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::InvalidInput(_)));
    assert!(err.to_string().contains("`offset`"), "{err}");
    assert!(err.to_string().contains("3 lines"), "{err}");
    std::fs::write(dir.path().join("empty"), "").unwrap();
    let out = read(dir.path(), json!({"path": "empty"})).await.unwrap();
    assert!(out.contains("is empty"), "{out}");
}

#[tokio::test]
async fn write_creates_parents_then_reports_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let out = write(
        dir.path(),
        json!({"path": "a/b/c.txt", "content": "one\ntwo\n"}),
    )
    .await
    .unwrap();
    assert!(out.starts_with("created `a/b/c.txt`"), "{out}");
    assert!(out.contains("8 bytes, 2 lines"), "{out}");
    let out = write(dir.path(), json!({"path": "a/b/c.txt", "content": "three"}))
        .await
        .unwrap();
    assert!(out.starts_with("overwrote"), "{out}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(),
        "three"
    );
    let leftovers = std::fs::read_dir(dir.path().join("a/b")).unwrap().count();
    assert_eq!(leftovers, 1, "no temp file left behind");
}

#[tokio::test]
async fn write_to_a_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("d")).unwrap();
    let err = write(dir.path(), json!({"path": "d", "content": "x"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("is a directory"), "{err}");
}

#[tokio::test]
async fn edit_replaces_a_unique_match() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.rs");
    std::fs::write(&p, "fn a() {}\nfn b() {}\n").unwrap();
    let out = edit(
        dir.path(),
        json!({"path": "m.rs", "old_string": "fn b() {}", "new_string": "fn c() {}"}),
    )
    .await
    .unwrap();
    assert!(out.contains("replaced 1 occurrence at line 2"), "{out}");
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        "fn a() {}\nfn c() {}\n"
    );
}

#[tokio::test]
async fn edit_refuses_ambiguous_matches_and_leaves_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.txt");
    std::fs::write(&p, "x = 1\ny = 2\nx = 1\n").unwrap();
    let err = edit(
        dir.path(),
        json!({"path": "m.txt", "old_string": "x = 1", "new_string": "x = 9"}),
    )
    .await
    .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("2 times"), "{msg}");
    assert!(msg.contains("lines 1, 3"), "{msg}");
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        "x = 1\ny = 2\nx = 1\n"
    );

    let out = edit(
        dir.path(),
        json!({"path": "m.txt", "old_string": "x = 1", "new_string": "x = 9", "replace_all": true}),
    )
    .await
    .unwrap();
    assert!(out.contains("2 occurrences"), "{out}");
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        "x = 9\ny = 2\nx = 9\n"
    );
}

#[tokio::test]
async fn edit_error_cases_name_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "    indented\n").unwrap();
    // A tab where the file has spaces: the classic whitespace miss.
    let err = edit(
        dir.path(),
        json!({"path": "f.txt", "old_string": "\tindented", "new_string": "x"}),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("not found"), "{err}");
    assert!(err.to_string().contains("whitespace"), "{err}");

    let err = edit(
        dir.path(),
        json!({"path": "f.txt", "old_string": "same", "new_string": "same"}),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ToolError::InvalidInput(_)));
    assert!(err.to_string().contains("identical"), "{err}");

    let err = edit(
        dir.path(),
        json!({"path": "f.txt", "old_string": "", "new_string": "x"}),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("`old_string` is empty"), "{err}");

    let err = edit(
        dir.path(),
        json!({"path": "missing.txt", "old_string": "a", "new_string": "b"}),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("file not found"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.txt")).unwrap(),
        "    indented\n"
    );
}
