//! The layout of `tests/` itself: with `autotests = false`, a test file that no binary
//! includes would silently never build or run. Every `.rs` file directly under `tests/`
//! must be the path of a `[[test]]` target in `Cargo.toml`, and every `.rs` file directly
//! under `tests/suite/` must be declared as a module in `tests/suite/main.rs`.

use std::collections::BTreeSet;
use std::path::Path;

/// The `.rs` files directly in `dir`, by file name.
fn rust_files(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .flatten()
        .filter(|e| e.path().is_file())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with(".rs"))
        .collect()
}

#[test]
fn every_test_file_is_part_of_a_test_binary() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let targets: BTreeSet<String> = manifest
        .lines()
        .filter_map(|l| l.trim().strip_prefix("path = \"tests/"))
        .filter_map(|l| l.strip_suffix('"'))
        .map(str::to_string)
        .collect();
    for path in &targets {
        assert!(
            root.join("tests").join(path).is_file(),
            "Cargo.toml names the test target tests/{path}, which does not exist"
        );
    }
    let stray: Vec<String> = rust_files(&root.join("tests"))
        .into_iter()
        .filter(|f| !targets.contains(f))
        .collect();
    assert!(
        stray.is_empty(),
        "tests/{stray:?} belong to no test binary (Cargo.toml has autotests = false): move \
         each into tests/suite/ and declare it in tests/suite/main.rs, or give it a [[test]] \
         target of its own when it changes process-wide state (see tests/README.md)"
    );

    let main = std::fs::read_to_string(root.join("tests/suite/main.rs")).unwrap();
    let declared: BTreeSet<String> = main
        .lines()
        .filter_map(|l| l.trim().strip_prefix("mod "))
        .filter_map(|l| l.strip_suffix(';'))
        .map(|m| format!("{m}.rs"))
        .collect();
    let undeclared: Vec<String> = rust_files(&root.join("tests/suite"))
        .into_iter()
        .filter(|f| f != "main.rs" && !declared.contains(f))
        .collect();
    assert!(
        undeclared.is_empty(),
        "tests/suite/{undeclared:?} are not declared in tests/suite/main.rs, so they never \
         build: add `mod NAME;` for each"
    );
}
