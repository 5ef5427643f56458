//! Reading Markdown as the docs check needs it: the prose lines outside fenced blocks,
//! inline links, GitHub's heading anchors, and what a code span names (a repository path
//! or a Rust item).

use std::collections::BTreeSet;

/// One link found in a Markdown file: its target as written and the line it is on.
#[derive(Debug)]
pub struct Link {
    pub target: String,
    pub line: usize,
}

/// The lines of a Markdown file outside fenced code blocks, with their numbers (from 1).
pub fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push((i + 1, line));
        }
    }
    out
}

/// A line with its inline code spans blanked, so `[x](y)` inside backticks is no link.
pub fn without_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
            out.push(' ');
        } else {
            out.push(if in_code { ' ' } else { c });
        }
    }
    out
}

/// The inline links `[text](target)` and images `![alt](target)` of a Markdown file.
pub fn links(text: &str) -> Vec<Link> {
    let mut out = Vec::new();
    for (number, line) in prose_lines(text) {
        let line = without_code_spans(line);
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            let target = after[..end].trim();
            // `[text](target "title")`: the title is not part of the target.
            let target = target.split_whitespace().next().unwrap_or("");
            out.push(Link {
                target: target.trim_matches(['<', '>']).to_string(),
                line: number,
            });
            rest = &after[end..];
        }
    }
    out
}

/// The top directories of the repository a path written as code may start with.
pub const REPO_DIRS: &[&str] = &[
    "src/",
    "tests/",
    "scripts/",
    "examples/",
    "benches/",
    "docs/",
    "agents/",
    "crates/",
    ".ci/",
];

/// The repository paths a Markdown file writes as inline code, outside fenced blocks: a
/// whole code span that starts with a top directory, cut before any wildcard or
/// placeholder (`*`, `{`, `<`, `…`) and any `::item` naming a test or function in the file.
pub fn code_paths(text: &str) -> Vec<Link> {
    let mut out = Vec::new();
    for (number, line) in prose_lines(text) {
        for (i, span) in line.split('`').enumerate() {
            if i % 2 == 0 || span.contains(char::is_whitespace) {
                continue;
            }
            if !REPO_DIRS.iter().any(|d| span.starts_with(d)) {
                continue;
            }
            let cut = span.find(['*', '{', '<', '[', '…']).unwrap_or(span.len());
            let path = &span[..cut];
            let path = path.split("::").next().unwrap_or(path);
            let path = path.trim_end_matches('/');
            out.push(Link {
                target: path.to_string(),
                line: number,
            });
        }
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation dropped (but `-` and `_`),
/// spaces turned into `-`.
pub fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown file's headings, with GitHub's `-1`, `-2` for repeats.
pub fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if hashes == 0 || hashes > 6 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes..]);
        let mut name = base.clone();
        let mut n = 0;
        while out.contains(&name) {
            n += 1;
            name = format!("{base}-{n}");
        }
        out.insert(name);
    }
    out
}

/// The Rust paths a Markdown file writes as inline code (`a::b::c`, lower case), outside
/// fenced blocks; the last part of each must still be a function or module. A part
/// written as `…` stands for a prefix given before it and is skipped.
pub fn rust_items(text: &str) -> Vec<Link> {
    let mut out = Vec::new();
    for (number, line) in prose_lines(text) {
        for (i, span) in line.split('`').enumerate() {
            let parts: Vec<&str> = span.split("::").collect();
            let is_item = i % 2 == 1
                && parts.len() > 1
                && parts.iter().all(|p| {
                    p == &"…"
                        || (!p.is_empty()
                            && p.chars().all(|c| {
                                c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '…'
                            }))
                });
            if is_item {
                let last = parts.last().copied().unwrap_or_default();
                if !last.contains('…') {
                    out.push(Link {
                        target: last.to_string(),
                        line: number,
                    });
                }
            }
        }
    }
    out
}

#[test]
fn anchors_follow_github() {
    let text =
        "# Cluster: running on several machines\n## `crew workers list` asks\n## Keys\n## Keys\n";
    let found = anchors(text);
    for want in [
        "cluster-running-on-several-machines",
        "crew-workers-list-asks",
        "keys",
        "keys-1",
    ] {
        assert!(found.contains(want), "{want} not in {found:?}");
    }
}
