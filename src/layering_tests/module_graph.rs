//! No import circle spans more than one top-level module (issue 27): the graph whose nodes
//! are the root crate's top-level modules (`src/agent/`, `src/events.rs`, …) and whose
//! arrows are the `crate::…` paths their non-test code names has no cycle. A circle of
//! files inside one module is that module's own business; one through two modules would
//! make their layers meaningless.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::imports::{code_lines, files, src};

/// The top-level module a file under `src/` belongs to (`agent` for `src/agent/x.rs`,
/// `events` for `src/events.rs`), `None` for the crate root files.
fn module_of(root: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(root).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(name, "lib" | "main")).then(|| name.to_string())
}

/// The top-level modules that `code` names through `crate::`: plain paths
/// (`crate::tools::Tool`) and the first names inside `crate::{…}` groups, which rustfmt
/// may spread over several lines.
fn named_modules(code: &[&str]) -> BTreeSet<String> {
    let text = code.join("\n");
    let mut out = BTreeSet::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("crate::") {
        let after = &rest[at + "crate::".len()..];
        if let Some(group) = after.strip_prefix('{') {
            let mut depth = 1usize;
            let mut item = String::new();
            let mut at_start = true;
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 1 => at_start = true,
                    _ => {}
                }
                if depth == 0 {
                    break;
                }
                if depth == 1 && at_start {
                    if c.is_ascii_alphanumeric() || c == '_' {
                        item.push(c);
                    } else if !item.is_empty() {
                        out.insert(std::mem::take(&mut item));
                        at_start = false;
                    }
                }
            }
            if !item.is_empty() {
                out.insert(item);
            }
        } else {
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
        rest = after;
    }
    out
}

/// The arrows between top-level modules of the tree at `root`.
fn graph(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut arrows: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files(root) {
        let Some(from) = module_of(root, &file) else {
            continue;
        };
        let source = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = code_lines(&source).into_iter().map(|(_, l)| l).collect();
        let entry = arrows.entry(from.clone()).or_default();
        entry.extend(named_modules(&lines).into_iter().filter(|to| *to != from));
    }
    arrows
}

/// A cycle of the graph, as the modules along it, if there is one.
fn find_cycle(arrows: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        arrows: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in arrows.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, arrows, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    arrows
        .keys()
        .find_map(|start| visit(start, arrows, &mut Vec::new(), &mut done))
}

#[test]
fn no_import_circle_runs_through_two_top_level_modules() {
    let arrows = graph(&src());
    assert!(arrows.len() > 20, "the scan found the modules: {arrows:?}");
    if let Some(cycle) = find_cycle(&arrows) {
        panic!(
            "these top-level modules import each other in a circle: {}",
            cycle.join(" -> ")
        );
    }
}

#[test]
fn the_scan_sees_grouped_imports_and_finds_a_planted_circle() {
    let code = [
        "use crate::{",
        "    agent::x,",
        "    tools::{a, b},",
        "};",
        "fn f() { crate::events::Event::x(); }",
    ];
    let names: Vec<String> = named_modules(&code).into_iter().collect();
    assert_eq!(names, ["agent", "events", "tools"]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("a")).unwrap();
    std::fs::write(dir.path().join("a/mod.rs"), "use crate::b::X;\n").unwrap();
    std::fs::write(dir.path().join("b.rs"), "use crate::c::Y;\n").unwrap();
    std::fs::write(
        dir.path().join("c.rs"),
        "#[cfg(test)]\nmod tests {\n    use crate::a::Z;\n}\n",
    )
    .unwrap();
    assert_eq!(
        find_cycle(&graph(dir.path())),
        None,
        "test code may reach up"
    );
    std::fs::write(dir.path().join("c.rs"), "pub use crate::a::Z;\n").unwrap();
    assert_eq!(
        find_cycle(&graph(dir.path())),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
}
