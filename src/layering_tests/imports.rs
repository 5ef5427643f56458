//! Imports that must not run back up inside the root crate (issue 27): the arrows cut so
//! far stay cut. Each check reads the non-test code of a set of files (test modules at the
//! end of a file and `*tests.rs` files are left out: tests may reach up) and refuses any
//! path into the modules above it, naming the file and line.

use std::path::{Path, PathBuf};

/// One cut: the files (a file or a directory, relative to `src/`) and the module paths
/// their non-test code must not name.
struct Cut {
    under: &'static str,
    must_not_name: &'static [&'static str],
}

const CUTS: &[Cut] = &[
    // The decision is the `crew-policy` crate, which cannot import the root crate at all;
    // the permits minted around it here must not import the tool catalog, auto mode's
    // session part, or the settings loader that builds the policy either.
    Cut {
        under: "permission",
        must_not_name: &["crate::tools", "crate::auto_mode", "crate::config"],
    },
    // Tools are below the agents that call them: what they ask of an agent is
    // `tools::delegate`, and a fork's snapshot is protocol data.
    Cut {
        under: "tools",
        must_not_name: &["crate::agent"],
    },
    // Background tasks are below the tools that start them (a background command is
    // `tools::background`); they stop process groups through the OS sandbox's processes.
    Cut {
        under: "tasks",
        must_not_name: &["crate::tools", "crate::agent"],
    },
    // Skills are below the gate and the tool that loads them.
    Cut {
        under: "skills",
        must_not_name: &["crate::gate", "crate::tools", "crate::agent"],
    },
    // Agents must not know about workers: the session hands them an `agent::host::Workers`.
    Cut {
        under: "agent",
        must_not_name: &["crate::worker"],
    },
    // Restart and fault plumbing must not import the session or the actors it serves.
    Cut {
        under: "supervise",
        must_not_name: &[
            "crate::session",
            "crate::engine",
            "crate::gate",
            "crate::executor",
            "crate::approver",
            "crate::tasks",
            "crate::worktree",
            "crate::tools",
            "crate::permission",
        ],
    },
    // The session runs on workers' nodes too: it reaches workers only through the
    // `agent::host::Workers` it is handed, so `worker::session` may build sessions.
    Cut {
        under: "session",
        must_not_name: &["crate::worker"],
    },
    // One `session::build` assembles a session for the command line, the terminal UI and
    // `mcp serve`: the session is below all three, and they below the command line.
    Cut {
        under: "session",
        must_not_name: &["crate::cli", "crate::tui", "crate::mcp_serve"],
    },
    // The MCP client is below the session that starts it; `crew mcp serve`, which builds
    // sessions, is a front end of its own (`mcp_serve`).
    Cut {
        under: "mcp",
        must_not_name: &[
            "crate::cli",
            "crate::tui",
            "crate::session",
            "crate::mcp_serve",
        ],
    },
    Cut {
        under: "tui",
        must_not_name: &["crate::cli"],
    },
    // The dashboard is a front end beside the TUI: it reaches sessions only through
    // their control sockets, and nothing below the front ends serves it.
    Cut {
        under: "dashboard",
        must_not_name: &["crate::cli", "crate::tui", "crate::agent", "crate::engine"],
    },
    Cut {
        under: "session",
        must_not_name: &["crate::dashboard"],
    },
    // Result offloading sits below the executor that applies it.
    Cut {
        under: "offload",
        must_not_name: &["crate::executor"],
    },
    // The gate reads the agent mode from the protocol, not from the agents, and defines
    // what it sends the executor and what the engine answers through it.
    Cut {
        under: "gate",
        must_not_name: &["crate::agent", "crate::executor", "crate::engine"],
    },
    // Hooks are configured below the agents that fire them.
    Cut {
        under: "hooks",
        must_not_name: &["crate::agent"],
    },
    // Front matter is parsed below the agents, skills and commands that use it.
    Cut {
        under: "front_matter.rs",
        must_not_name: &[
            "crate::agent",
            "crate::tools",
            "crate::skills",
            "crate::commands",
        ],
    },
    // The settings are read below the sandbox that enforces them.
    Cut {
        under: "config",
        must_not_name: &["crate::tools", "crate::trust"],
    },
    // Where state lives is below everything that keeps state.
    Cut {
        under: "store.rs",
        must_not_name: &[
            "crate::config",
            "crate::permission",
            "crate::tools",
            "crate::session",
        ],
    },
    // The classifier is below the engine that takes its token.
    Cut {
        under: "classifier.rs",
        must_not_name: &[
            "crate::permission",
            "crate::auto_mode",
            "crate::agent",
            "crate::tools",
        ],
    },
];

pub(super) fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The `.rs` files at or below `path`, test files left out.
pub(super) fn files(path: &Path) -> Vec<PathBuf> {
    if path.is_file() {
        return vec![path.to_path_buf()];
    }
    let mut out = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if p.is_dir() {
                if name != "tests" {
                    stack.push(p);
                }
            } else if name.ends_with(".rs") && !name.ends_with("tests.rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The non-test lines of a file with their numbers: everything but `//` comments and
/// the body of each `#[cfg(test)]` item (a module, a function, a `use`).
pub(super) fn code_lines(source: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut skip_next_item = false;
    let mut depth = 0usize;
    let mut in_test = false;
    for (i, line) in source.lines().enumerate() {
        let t = line.trim();
        if in_test {
            depth += t.matches('{').count();
            depth = depth.saturating_sub(t.matches('}').count());
            if depth == 0 {
                in_test = false;
            }
            continue;
        }
        if t == "#[cfg(test)]" {
            skip_next_item = true;
            continue;
        }
        if skip_next_item {
            if t.starts_with("#[") {
                continue;
            }
            skip_next_item = false;
            let open = t.matches('{').count();
            let close = t.matches('}').count();
            if open > close {
                in_test = true;
                depth = open - close;
            }
            continue;
        }
        if t.starts_with("//") {
            continue;
        }
        out.push((i + 1, line));
    }
    out
}

/// Every place a cut's files name a module above them, as `file:line: text`.
fn violations(root: &Path, cut: &Cut) -> (usize, Vec<String>) {
    let files = files(&root.join(cut.under));
    let mut out = Vec::new();
    for f in &files {
        let source = std::fs::read_to_string(f).unwrap();
        for (n, line) in code_lines(&source) {
            for name in cut.must_not_name {
                if line.contains(name) {
                    out.push(format!(
                        "{}:{n}: `{}` names `{name}`, a module above it",
                        f.strip_prefix(root).unwrap_or(f).display(),
                        line.trim()
                    ));
                }
            }
        }
    }
    (files.len(), out)
}

#[test]
fn the_scanner_skips_tests_and_comments_but_sees_code() {
    let source = "//! Doc naming crate::tools.\n\
        use crate::tools::Registry;\n\
        fn f() { crate::tools::x(); }\n\
        #[cfg(test)]\n\
        use crate::tools::Test;\n\
        #[cfg(test)]\n\
        mod tests {\n\
            fn g() {\n\
                crate::tools::y();\n\
            }\n\
        }\n\
        fn h() -> u8 { crate::tools::z() }\n";
    let lines: Vec<usize> = code_lines(source)
        .into_iter()
        .filter(|(_, l)| l.contains("crate::tools"))
        .map(|(n, _)| n)
        .collect();
    assert_eq!(lines, [2, 3, 12]);
}

/// Where `crate::cli` is named outside the command line itself (`src/cli/`, the binary's
/// `main.rs`, and these tests, whose tables name it), as `file:line: text`.
fn names_of_the_command_line(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for f in files(root) {
        let rel = f.strip_prefix(root).unwrap_or(&f).to_path_buf();
        if rel.starts_with("cli")
            || rel.starts_with("layering_tests")
            || rel == Path::new("main.rs")
        {
            continue;
        }
        let source = std::fs::read_to_string(&f).unwrap();
        for (n, line) in code_lines(&source) {
            if line.contains("crate::cli") {
                out.push(format!("{}:{n}: `{}`", rel.display(), line.trim()));
            }
        }
    }
    out
}

#[test]
fn only_the_binary_imports_the_command_line() {
    let root = src();
    let found = names_of_the_command_line(&root);
    assert!(
        found.is_empty(),
        "`cli` is the top of the crate: nothing below it may import it (move the piece down \
         to the module it belongs to, or hand the value in):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_cut_imports_stay_cut() {
    let root = src();
    let mut all = Vec::new();
    for cut in CUTS {
        let (seen, found) = violations(&root, cut);
        assert!(seen > 0, "src/{} has no Rust files to check", cut.under);
        all.extend(found);
    }
    assert!(
        all.is_empty(),
        "imports that run back up (move the type down, or hand the value in):\n{}",
        all.join("\n")
    );
}
