//! The docs cannot rot silently: every relative link in `README.md` and `docs/*.md` must
//! name a file that exists, and a link with an anchor into a Markdown file must name one of
//! its headings (as GitHub makes anchors of them). Links out of the repository
//! (`https:`, `mailto:`) are not fetched. A repository path written as code
//! (`` `crates/crew-sandbox/src/landlock.rs` ``, `` `tests/support/kernel.rs` ``) must exist too, so a
//! moved file cannot leave its old path behind in the prose. And every cargo target a
//! command in them runs (`--test NAME`, `--example NAME`, `--bench NAME`) must exist, and
//! every test or item they name as code (`` `fault_matrix::actors::a_restart_storm_…` ``)
//! must still be a function or module in `src/` or `tests/`. The `crew` command lines
//! they show must use subcommands and flags the binary has (`cli.rs`).

#[path = "docs_links/cli.rs"]
mod cli;
#[path = "docs_links/markdown.rs"]
mod markdown;

use markdown::{Link, anchors, code_paths, links, rust_items};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// What is wrong with one link of `file`, if anything.
fn problem(root: &Path, file: &Path, link: &Link) -> Option<String> {
    let target = link.target.as_str();
    if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (target, None),
    };
    let shown = file
        .strip_prefix(root)
        .unwrap_or(file)
        .display()
        .to_string();
    let resolved = if path.is_empty() {
        file.to_path_buf()
    } else {
        file.parent().unwrap_or(root).join(path)
    };
    if !resolved.exists() {
        return Some(format!(
            "{shown}:{}: link `{target}` names `{}`, which does not exist: fix the path or remove the link",
            link.line,
            resolved.display()
        ));
    }
    let anchor = anchor?;
    if resolved.extension().is_some_and(|e| e == "md") {
        let text = std::fs::read_to_string(&resolved).ok()?;
        if !anchors(&text).contains(anchor) {
            return Some(format!(
                "{shown}:{}: link `{target}` names the anchor `#{anchor}`, but `{}` has no such heading: fix the anchor or the heading",
                link.line,
                resolved.display()
            ));
        }
    }
    None
}

/// `README.md` and every `docs/*.md`.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .map(|e| e.expect("a readable docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// Every problem of every link in `files`, and how many links were checked.
fn check(root: &Path, files: &[PathBuf]) -> (Vec<String>, usize) {
    let mut problems = Vec::new();
    let mut checked = 0;
    for file in files {
        let text = std::fs::read_to_string(file).expect("a readable Markdown file");
        for link in links(&text) {
            checked += 1;
            problems.extend(problem(root, file, &link));
        }
    }
    (problems, checked)
}

#[test]
fn every_relative_link_in_the_readme_and_docs_names_an_existing_file_and_heading() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = documents(root);
    assert!(
        files.len() >= 8,
        "expected README.md and the docs/ files, found {files:?}"
    );
    let (problems, checked) = check(root, &files);
    assert!(
        checked >= 40,
        "only {checked} links found: is the link parser broken?"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The cargo targets of one kind (`test`, `example`, `bench`) the package has: a file
/// `DIR/NAME.rs` or `DIR/NAME/main.rs`, or a `[[KIND]]` table in `Cargo.toml` naming it.
fn targets(root: &Path, kind: &str) -> BTreeSet<String> {
    let dir = match kind {
        "test" => "tests",
        "example" => "examples",
        _ => "benches",
    };
    let mut names = BTreeSet::new();
    if let Ok(entries) = std::fs::read_dir(root.join(dir)) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "rs") {
                names.extend(path.file_stem().map(|s| s.to_string_lossy().into_owned()));
            } else if path.join("main.rs").is_file() {
                names.extend(path.file_name().map(|s| s.to_string_lossy().into_owned()));
            }
        }
    }
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap_or_default();
    let mut in_table = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_table = line == format!("[[{kind}]]");
        } else if in_table {
            if let Some(value) = line.strip_prefix("name").map(str::trim_start) {
                if let Some(value) = value.strip_prefix('=') {
                    names.insert(value.trim().trim_matches('"').to_string());
                }
            }
        }
    }
    names
}

/// Every `--test NAME`, `--example NAME` and `--bench NAME` of `files` (code blocks
/// included: they are the commands a reader copies) that names no such target.
fn missing_targets(root: &Path, files: &[PathBuf]) -> (Vec<String>, usize) {
    let mut problems = Vec::new();
    let mut checked = 0;
    for file in files {
        let text = std::fs::read_to_string(file).expect("a readable Markdown file");
        let shown = file
            .strip_prefix(root)
            .unwrap_or(file)
            .display()
            .to_string();
        for (i, line) in text.lines().enumerate() {
            let words: Vec<&str> = line.split_whitespace().collect();
            for pair in words.windows(2) {
                let Some(kind) = pair[0].strip_prefix("--") else {
                    continue;
                };
                if !matches!(kind, "test" | "example" | "bench") {
                    continue;
                }
                let name = pair[1].trim_matches(|c: char| !(c.is_alphanumeric() || c == '_'));
                checked += 1;
                if !targets(root, kind).contains(name) {
                    problems.push(format!(
                        "{shown}:{}: `--{kind} {name}` names no {kind} target of this package: fix the command",
                        i + 1
                    ));
                }
            }
        }
    }
    (problems, checked)
}

#[test]
fn every_cargo_target_the_readme_and_docs_run_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (problems, checked) = missing_targets(root, &documents(root));
    assert!(
        checked >= 15,
        "only {checked} cargo commands found: is the parser broken?"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_renamed_test_binary_is_reported() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = dir.path();
    for d in ["docs", "tests/grouped", "examples"] {
        std::fs::create_dir_all(root.join(d)).expect("a directory");
    }
    std::fs::write(root.join("tests/plain.rs"), "").expect("plain.rs");
    std::fs::write(root.join("tests/grouped/main.rs"), "").expect("main.rs");
    std::fs::write(root.join("examples/ex.rs"), "").expect("ex.rs");
    std::fs::write(
        root.join("Cargo.toml"),
        "[[bench]]\nname = \"fast\"\nharness = false\n\n[[test]]\nname = \"declared\"\npath = \"tests/x/y.rs\"\n",
    )
    .expect("Cargo.toml");
    std::fs::write(
        root.join("README.md"),
        concat!(
            "`cargo test --test plain` and `cargo test --test grouped -- --nocapture`\n",
            "```sh\ncargo test --test declared\ncargo run --release --example ex -- 3\n",
            "cargo bench --bench fast\ncargo test --test gone\n```\n",
        ),
    )
    .expect("README.md");
    let (problems, checked) = missing_targets(root, &documents(root));
    assert_eq!(checked, 6, "{problems:?}");
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains("README.md:6: `--test gone`"),
        "{problems:?}"
    );
}

/// The text of every `.rs` file below `dir`.
fn rust_sources(dir: &Path, out: &mut String) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
            out.push('\n');
        }
    }
}

/// Every test or item named as code in `files` that `src/`, the member crates in
/// `crates/` and `tests/` no longer have.
fn missing_items(root: &Path, files: &[PathBuf]) -> (Vec<String>, usize) {
    let mut sources = String::new();
    rust_sources(&root.join("src"), &mut sources);
    rust_sources(&root.join("crates"), &mut sources);
    rust_sources(&root.join("tests"), &mut sources);
    let defined = |name: &str| {
        ["fn ", "mod "].iter().any(|kw| {
            sources
                .match_indices(&format!("{kw}{name}"))
                .any(|(at, m)| {
                    let next = sources[at + m.len()..].chars().next();
                    !next.is_some_and(|c| c.is_alphanumeric() || c == '_')
                })
        })
    };
    let mut problems = Vec::new();
    let mut checked = 0;
    for file in files {
        let text = std::fs::read_to_string(file).expect("a readable Markdown file");
        let shown = file
            .strip_prefix(root)
            .unwrap_or(file)
            .display()
            .to_string();
        for item in rust_items(&text) {
            checked += 1;
            if !defined(&item.target) {
                problems.push(format!(
                    "{shown}:{}: `{}` is no function or module in src/, crates/ or tests/ any more: name the test or item as it is now",
                    item.line, item.target
                ));
            }
        }
    }
    (problems, checked)
}

#[test]
fn every_test_and_item_the_docs_name_still_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (problems, checked) = missing_items(root, &documents(root));
    assert!(
        checked >= 30,
        "only {checked} items found: is the parser broken?"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_renamed_test_named_in_the_docs_is_reported() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = dir.path();
    for d in ["docs", "tests", "src/tools"] {
        std::fs::create_dir_all(root.join(d)).expect("a directory");
    }
    std::fs::write(
        root.join("tests/t.rs"),
        "#[test]\nfn it_holds() {}\nfn it_holds_too() {}\n",
    )
    .expect("t.rs");
    std::fs::write(root.join("src/tools/mod.rs"), "pub mod sandbox;\n").expect("mod.rs");
    std::fs::write(
        root.join("README.md"),
        concat!(
            "`t::it_holds`, `…::it_holds_too`, `tools::sandbox`, `t::…`, `Permit::approved`\n",
            "`t::it_held` and `t::it_hold`\n",
        ),
    )
    .expect("README.md");
    let (problems, checked) = missing_items(root, &documents(root));
    assert_eq!(checked, 5, "{problems:?}");
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].contains("README.md:2: `it_held`"),
        "{problems:?}"
    );
    assert!(problems[1].contains("`it_hold`"), "{problems:?}");
}

/// Every repository path written as code in `files` that does not exist.
fn missing_code_paths(root: &Path, files: &[PathBuf]) -> (Vec<String>, usize) {
    let mut problems = Vec::new();
    let mut checked = 0;
    for file in files {
        let text = std::fs::read_to_string(file).expect("a readable Markdown file");
        let shown = file
            .strip_prefix(root)
            .unwrap_or(file)
            .display()
            .to_string();
        for path in code_paths(&text) {
            checked += 1;
            if !root.join(&path.target).exists() {
                problems.push(format!(
                    "{shown}:{}: `{}` is not a path in the repository: fix it to where the file is now, or remove it",
                    path.line, path.target
                ));
            }
        }
    }
    (problems, checked)
}

#[test]
fn every_repository_path_the_readme_and_docs_write_as_code_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (problems, checked) = missing_code_paths(root, &documents(root));
    assert!(
        checked >= 40,
        "only {checked} paths found: is the parser broken?"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_moved_file_named_as_code_is_reported_and_placeholders_are_cut() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = dir.path();
    std::fs::create_dir_all(root.join("docs")).expect("docs/");
    std::fs::create_dir_all(root.join("src/tools")).expect("src/tools");
    std::fs::write(root.join("src/tools/mod.rs"), "").expect("mod.rs");
    std::fs::write(
        root.join("README.md"),
        concat!(
            "`src/tools/mod.rs` `src/tools/*.rs` `src/tools/mod.rs::tests` `src/tools/`\n",
            "`src/gone.rs` `node scripts/x.js` `.crew/settings.json`\n",
            "```\n`src/in_a_block.rs`\n```\n",
        ),
    )
    .expect("README.md");
    let (problems, checked) = missing_code_paths(root, &documents(root));
    assert_eq!(checked, 5, "{problems:?}");
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains("README.md:2: `src/gone.rs`"),
        "{problems:?}"
    );
}

#[test]
fn a_missing_file_a_missing_heading_and_links_in_code_are_told_apart() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = dir.path();
    std::fs::create_dir(root.join("docs")).expect("docs/");
    std::fs::write(
        root.join("docs/a.md"),
        "# A title\n\n## Sandbox profiles\n\n```sh\n# not a heading\n```\n",
    )
    .expect("a.md");
    std::fs::write(
        root.join("README.md"),
        concat!(
            "# Readme\n",
            "[ok](docs/a.md) [ok](docs/a.md#sandbox-profiles) [ok](#readme) [out](https://example.com/x)\n",
            "[gone](docs/gone.md) [no heading](docs/a.md#not-a-heading)\n",
            "`[in code](docs/nothing.md)`\n",
            "```\n[in a block](docs/nothing.md)\n```\n",
        ),
    )
    .expect("README.md");
    let (problems, checked) = check(root, &documents(root));
    assert_eq!(checked, 6, "{problems:?}");
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].contains("README.md:3: link `docs/gone.md`"),
        "{problems:?}"
    );
    assert!(problems[1].contains("`#not-a-heading`"), "{problems:?}");
}

#[test]
fn the_readme_is_short_opens_with_the_two_commands_and_ci_runs_its_test_command() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines; keep it at most 250 and move the rest into docs/"
    );
    // The first code block, right under the title: the run and the test command.
    let block: Vec<&str> = readme
        .lines()
        .skip_while(|l| !l.starts_with("```"))
        .skip(1)
        .take_while(|l| !l.starts_with("```"))
        .collect();
    let command = |l: &&str| l.split('#').next().unwrap_or("").trim().to_string();
    let commands: Vec<String> = block.iter().map(command).collect();
    assert!(
        commands
            .iter()
            .any(|c| c.starts_with("cargo run") && c.contains("-p")),
        "README.md's first code block must show the run of the main job: {block:?}"
    );
    let test = commands
        .iter()
        .find(|c| c.starts_with("cargo test"))
        .unwrap_or_else(|| {
            panic!("README.md's first code block must show the test command: {block:?}")
        });
    let ci = std::fs::read_to_string(root.join(".ci/run")).expect(".ci/run");
    assert!(
        // As written, also when its output is piped on (`if cargo test 2>&1 | tee log`).
        ci.lines()
            .any(|l| l.split(['#', ';', '|']).next().is_some_and(|code| {
                let code = code.trim().trim_start_matches("if ");
                code.trim_end_matches("2>&1").trim_end() == test
            })),
        ".ci/run must run the README's test command `{test}` as written"
    );
}

#[test]
fn every_crew_subcommand_and_flag_the_docs_show_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let surface = cli::surface(Path::new(env!("CARGO_BIN_EXE_crew")));
    assert!(surface.subcommands.len() >= 10, "{surface:?}");
    let mut problems = Vec::new();
    let mut checked = 0;
    for file in documents(root) {
        let text = std::fs::read_to_string(&file).expect("a readable Markdown file");
        let shown = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .display()
            .to_string();
        for (line, command) in cli::command_lines(&text) {
            checked += 1;
            for p in cli::problems(&surface, &command) {
                problems.push(format!(
                    "{shown}:{line}: {p}: fix the docs (or the flag's name)"
                ));
            }
        }
    }
    assert!(
        checked >= 40,
        "only {checked} crew command lines found: is the parser broken?"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
