//! `find_files` and `search_code` end to end on temporary trees (not git repositories,
//! so `.gitignore` must be honoured without git).

use std::path::Path;
use std::time::{Duration, SystemTime};

use crewmaster::tools::find_files::FindFiles;
use crewmaster::tools::search_code::SearchCode;
use crewmaster::tools::{Tool, ToolContext, ToolError};
use serde_json::{Value, json};

fn ctx(dir: &Path) -> ToolContext {
    ToolContext::new(dir, "test")
}

async fn find(dir: &Path, args: Value) -> Result<String, ToolError> {
    FindFiles::new().run(args, ctx(dir)).await
}

async fn search(dir: &Path, args: Value) -> Result<String, ToolError> {
    SearchCode::new().run(args, ctx(dir)).await
}

fn put(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// Sets a file's mtime `secs_ago` seconds in the past.
fn age(root: &Path, rel: &str, secs_ago: u64) {
    let f = std::fs::File::options()
        .write(true)
        .open(root.join(rel))
        .unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(secs_ago))
        .unwrap();
}

/// A small tree: sources, an ignored build dir, a binary file.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    put(r, ".gitignore", "target/\n*.log\n");
    put(r, "src/main.rs", "fn main() {\n    helper();\n}\n");
    put(r, "src/lib/util.rs", "pub fn helper() {}\n// TODO tidy\n");
    put(r, "README.md", "TODO: write docs\nhelper mention\n");
    put(r, "target/debug/gen.rs", "fn helper() {}\n");
    put(r, "run.log", "helper in a log\n");
    std::fs::write(r.join("blob.bin"), b"helper\0\x01\x02binary").unwrap();
    age(r, "src/main.rs", 300);
    age(r, "src/lib/util.rs", 200);
    age(r, "README.md", 100);
    dir
}

#[tokio::test]
async fn find_lists_matches_newest_first_and_respects_gitignore() {
    let dir = tree();
    let out = find(dir.path(), json!({"pattern": "**/*.rs"}))
        .await
        .unwrap();
    assert_eq!(out, "src/lib/util.rs\nsrc/main.rs\n");
}

#[tokio::test]
async fn find_star_stays_in_one_directory_and_path_sets_the_root() {
    let dir = tree();
    let out = find(dir.path(), json!({"pattern": "*.md"})).await.unwrap();
    assert_eq!(out, "README.md\n");
    let out = find(dir.path(), json!({"pattern": "*.rs", "path": "src/lib"}))
        .await
        .unwrap();
    assert_eq!(out, "util.rs\n", "relative to the search root");
}

#[tokio::test]
async fn find_caps_at_100_with_a_count_of_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..130 {
        put(dir.path(), &format!("f{i:03}.txt"), "x");
    }
    let out = find(dir.path(), json!({"pattern": "*.txt"})).await.unwrap();
    assert_eq!(out.lines().filter(|l| l.ends_with(".txt")).count(), 100);
    assert!(out.contains("30 more files not shown"), "{out}");
}

#[tokio::test]
async fn find_errors_name_the_argument() {
    let dir = tree();
    let err = find(dir.path(), json!({"pattern": "a[" }))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ToolError::InvalidInput(ref m) if m.contains("`pattern`")),
        "{err}"
    );
    let err = find(dir.path(), json!({"pattern": "*", "path": "nowhere"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not found: `nowhere`"), "{err}");
    let out = find(dir.path(), json!({"pattern": "*.zig"})).await.unwrap();
    assert!(out.starts_with("no files match"), "{out}");
}

#[tokio::test]
async fn search_files_mode_skips_ignored_and_binary_files() {
    let dir = tree();
    let out = search(dir.path(), json!({"pattern": "helper"}))
        .await
        .unwrap();
    // Newest first; target/, *.log and the binary are skipped.
    assert_eq!(out, "README.md\nsrc/lib/util.rs\nsrc/main.rs\n");
}

#[tokio::test]
async fn search_content_mode_prints_path_line_text_with_context() {
    let dir = tree();
    let out = search(
        dir.path(),
        json!({"pattern": "helper\\(\\)", "output_mode": "content", "path": "src"}),
    )
    .await
    .unwrap();
    assert_eq!(
        out,
        "src/lib/util.rs:1:pub fn helper() {}\nsrc/main.rs:2:    helper();\n"
    );
    let out = search(
        dir.path(),
        json!({"pattern": "helper", "output_mode": "content", "context": 1, "glob": "main.rs"}),
    )
    .await
    .unwrap();
    assert_eq!(
        out,
        "src/main.rs-1-fn main() {\nsrc/main.rs:2:    helper();\nsrc/main.rs-3-}\n"
    );
}

#[tokio::test]
async fn search_count_mode_and_case_insensitivity() {
    let dir = tree();
    let out = search(
        dir.path(),
        json!({"pattern": "todo", "output_mode": "count", "case_insensitive": true}),
    )
    .await
    .unwrap();
    assert_eq!(out, "README.md:1\nsrc/lib/util.rs:1\n");
    let out = search(dir.path(), json!({"pattern": "todo"}))
        .await
        .unwrap();
    assert!(
        out.starts_with("no matches"),
        "case-sensitive by default: {out}"
    );
}

#[tokio::test]
async fn search_glob_with_a_slash_matches_the_relative_path() {
    let dir = tree();
    let out = search(
        dir.path(),
        json!({"pattern": "helper", "glob": "src/lib/*.rs"}),
    )
    .await
    .unwrap();
    assert_eq!(out, "src/lib/util.rs\n");
}

#[tokio::test]
async fn search_head_limit_caps_and_counts_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), "many.txt", &"hit\n".repeat(50));
    let out = search(
        dir.path(),
        json!({"pattern": "hit", "output_mode": "content", "head_limit": 5}),
    )
    .await
    .unwrap();
    assert_eq!(
        out.lines().filter(|l| l.starts_with("many.txt:")).count(),
        5
    );
    assert!(
        out.contains("45 more lines not shown (head_limit=5)"),
        "{out}"
    );
}

#[tokio::test]
async fn search_invalid_regex_names_pattern() {
    let dir = tree();
    let err = search(dir.path(), json!({"pattern": "fn (("}))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::InvalidInput(_)), "{err}");
    assert!(err.to_string().contains("`pattern`"), "{err}");
    let err = search(dir.path(), json!({"pattern": "x", "path": "gone"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("`gone`"), "{err}");
}

#[tokio::test]
async fn search_a_single_file_path() {
    let dir = tree();
    let out = search(
        dir.path(),
        json!({"pattern": "TODO", "path": "README.md", "output_mode": "content"}),
    )
    .await
    .unwrap();
    assert_eq!(out, "README.md:1:TODO: write docs\n");
}

#[tokio::test]
async fn search_output_is_in_path_order_although_the_walk_is_parallel() {
    let dir = tempfile::tempdir().unwrap();
    let mut expected = Vec::new();
    for d in ["a", "a-b", "b/c", "z"] {
        for i in 0..40 {
            put(dir.path(), &format!("{d}/f{i:02}.txt"), "one hit\n");
            expected.push(format!("{d}/f{i:02}.txt:1"));
        }
    }
    // Path order compares components: `a/…` before `a-b/…`.
    let out = search(
        dir.path(),
        json!({"pattern": "hit", "output_mode": "count", "head_limit": 1000}),
    )
    .await
    .unwrap();
    assert_eq!(out, expected.join("\n") + "\n");
    let out = search(
        dir.path(),
        json!({"pattern": "hit", "output_mode": "content", "head_limit": 1000}),
    )
    .await
    .unwrap();
    assert_eq!(out.lines().count(), 160, "{out}");
    assert!(
        out.starts_with("a/f00.txt:1:one hit\na/f01.txt:1:one hit\n"),
        "{out}"
    );
}

#[tokio::test]
async fn search_stops_walking_at_head_limit_and_says_the_count_is_a_floor() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..400 {
        put(dir.path(), &format!("d{}/f{i:03}.txt", i % 20), "hit\n");
    }
    let out = search(
        dir.path(),
        json!({"pattern": "hit", "output_mode": "count", "head_limit": 3}),
    )
    .await
    .unwrap();
    let shown: Vec<&str> = out.lines().filter(|l| l.ends_with(".txt:1")).collect();
    assert_eq!(shown.len(), 3, "{out}");
    assert!(
        out.contains("(head_limit=3; the search stopped there)"),
        "{out}"
    );
    // Files-with-matches needs every match (newest first) and never stops early.
    let out = search(dir.path(), json!({"pattern": "hit", "head_limit": 3}))
        .await
        .unwrap();
    assert!(
        out.contains("… 397 more entries not shown (head_limit=3)"),
        "{out}"
    );
}

/// The walk decides once whether a credential can lie below its root; a walk from a
/// credential location's parent (`~/.cargo`) still hides it, by name and through a link.
#[tokio::test]
async fn a_walk_from_a_credentials_parent_hides_them_although_the_check_is_decided_per_walk() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().canonicalize().unwrap();
    put(
        &home,
        ".cargo/credentials.toml",
        "token = \"SECRETTOKEN\"\n",
    );
    put(
        &home,
        ".cargo/registry/src/a.rs",
        "// SECRETTOKEN is a word here\n",
    );
    std::os::unix::fs::symlink(
        home.join(".cargo/credentials.toml"),
        home.join(".cargo/registry/src/link.toml"),
    )
    .unwrap();
    let policy = crewmaster::permission::Policy {
        home: Some(home.clone()),
        ..Default::default()
    };
    let mut c = ctx(&home.join(".cargo"));
    c.walk = std::sync::Arc::new(crewmaster::permission::walk::WalkFilter::new(&policy));
    let found = SearchCode::new()
        .run(
            json!({"pattern": "SECRETTOKEN", "output_mode": "content"}),
            c.clone(),
        )
        .await
        .unwrap();
    assert_eq!(found, "registry/src/a.rs:1:// SECRETTOKEN is a word here\n");
    let files = FindFiles::new()
        .run(json!({"pattern": "**/*"}), c.clone())
        .await
        .unwrap();
    assert_eq!(files, "registry/src/a.rs\n");
    // From below the registry no credential can lie under the root; the link is still hidden.
    c.cwd = home.join(".cargo/registry/src");
    let found = SearchCode::new()
        .run(
            json!({"pattern": "SECRETTOKEN", "output_mode": "content"}),
            c,
        )
        .await
        .unwrap();
    assert_eq!(found, "a.rs:1:// SECRETTOKEN is a word here\n");
}
