//! `tool_search` (alias Claude Code's `ToolSearch`): finds deferred tools — MCP tools
//! kept out of the requests when there are many of them (`deferred.rs`) — by name and
//! description, and loads the ones it finds: from the next request on they are sent to
//! the model with their schemas and can be called.
//!
//! Queries: `select:a,b` loads exactly those tools; any other text ranks every deferred
//! tool (exact name, then name prefix, then words shared with the name and the
//! description) and loads the best `max_results` (default 5).

use std::collections::HashSet;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::deferred::Threshold;
use super::{Definition, Safety, Tool, ToolContext, ToolError};
use crate::permission::{Category, PermissionSpec, TargetSpec};

/// The tool's name.
pub const NAME: &str = "tool_search";
/// Claude Code's name for it.
pub const ALIAS: &str = "ToolSearch";
/// The first line of a result that loaded tools: the loop reads the names after it.
pub const LOADED_PREFIX: &str = "Loaded tools: ";

const DEFAULT_RESULTS: usize = 5;
const MAX_RESULTS: usize = 20;

/// The `tool_search` tool; it also carries the session's deferral threshold.
pub struct ToolSearch {
    def: Definition,
    threshold: Threshold,
}

impl ToolSearch {
    /// The tool, deferring above `threshold`.
    pub fn new(threshold: Threshold) -> Self {
        Self {
            def: Definition {
                name: NAME.into(),
                aliases: vec![ALIAS.into()],
                description: DESCRIPTION.into(),
                input_schema: json!({
                    "type": "object",
                    "properties": {
                        "query": {
                            "type": "string",
                            "description": "Words to look for in tool names and descriptions, \
                                or `select:name1,name2` to load exactly those tools."
                        },
                        "max_results": {
                            "type": "integer",
                            "minimum": 1,
                            "maximum": MAX_RESULTS,
                            "description": "How many tools to load at most (default 5)."
                        }
                    },
                    "required": ["query"],
                    "additionalProperties": false
                }),
                safety: Safety::ReadOnly,
                system: true,
                timeout: None,
                permission: Some(PermissionSpec::new(Category::Read, [], TargetSpec::None)),
            },
            threshold,
        }
    }

    /// When the session defers tools.
    pub fn threshold(&self) -> &Threshold {
        &self.threshold
    }
}

const DESCRIPTION: &str = "Finds and loads deferred tools. Some tools (MCP servers' tools) \
are not listed among your tools until loaded; their names are listed below. Call this with \
words describing what you need, or `select:name1,name2` for tools whose names you know. The \
tools found are available from your next turn on; calling a deferred tool before loading it \
fails.";

#[async_trait]
impl Tool for ToolSearch {
    fn definition(&self) -> &Definition {
        &self.def
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    async fn run(&self, input: Value, ctx: ToolContext) -> Result<String, ToolError> {
        let query: String = super::required(&input, "query")?;
        let max = super::field::<usize>(&input, "max_results")?
            .unwrap_or(DEFAULT_RESULTS)
            .clamp(1, MAX_RESULTS);
        let Some(deferred) = ctx.deferred_tools.as_deref().filter(|d| !d.is_empty()) else {
            return Err(ToolError::Failed(
                "no tools are deferred in this session: every tool you may call is already \
                 in your tool list"
                    .into(),
            ));
        };
        let query = query.trim();
        let (found, unknown) = match query.strip_prefix("select:") {
            Some(names) => select(deferred, names),
            None => (rank(deferred, query, max), Vec::new()),
        };
        Ok(render(query, &found, &unknown))
    }
}

/// The deferred tools named in `names` (comma-separated), and the names that are not.
fn select<'a>(deferred: &'a [Definition], names: &str) -> (Vec<&'a Definition>, Vec<String>) {
    let mut found = Vec::new();
    let mut unknown = Vec::new();
    let mut seen = HashSet::new();
    for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        match deferred.iter().find(|d| d.name.eq_ignore_ascii_case(name)) {
            Some(d) if seen.insert(&d.name) => found.push(d),
            Some(_) => {}
            None => unknown.push(name.to_string()),
        }
    }
    (found, unknown)
}

/// The best `max` deferred tools for `query`, best first (ties in registry order).
pub fn rank<'a>(deferred: &'a [Definition], query: &str, max: usize) -> Vec<&'a Definition> {
    let q = query.to_lowercase();
    let words: HashSet<String> = words(&q).collect();
    let mut scored: Vec<(u32, usize, &Definition)> = deferred
        .iter()
        .enumerate()
        .filter_map(|(i, d)| {
            let s = score(d, &q, &words);
            (s > 0).then_some((s, i, d))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().take(max).map(|(_, _, d)| d).collect()
}

fn score(d: &Definition, q: &str, query_words: &HashSet<String>) -> u32 {
    if q.is_empty() {
        return 0;
    }
    let name = d.name.to_lowercase();
    // `mcp__server__tool`: the tool's own name counts like the full one.
    let short = name.rsplit("__").next().unwrap_or(&name);
    let mut s = 0;
    if name == q || short == q {
        s += 1000;
    } else if name.starts_with(q) || short.starts_with(q) {
        s += 200;
    }
    let name_words: HashSet<String> = words(&name).collect();
    let desc = d.description.to_lowercase();
    let desc_words: HashSet<String> = words(&desc).collect();
    for w in query_words {
        if name_words.contains(w) {
            s += 20;
        } else if name.contains(w.as_str()) {
            s += 8;
        }
        if desc_words.contains(w) {
            s += 4;
        }
    }
    s
}

/// Lower-case words of `text` (split on anything not a letter or digit).
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

fn render(query: &str, found: &[&Definition], unknown: &[String]) -> String {
    let mut out = String::new();
    if found.is_empty() {
        out.push_str(&format!(
            "No deferred tool matches `{query}`. Try other words, or `select:` with exact names \
             from the list in this tool's description.\n"
        ));
    } else {
        let names: Vec<&str> = found.iter().map(|d| d.name.as_str()).collect();
        out.push_str(LOADED_PREFIX);
        out.push_str(&names.join(", "));
        out.push_str("\nThey are in your tool list from your next turn on:\n");
        for d in found {
            let summary = d.description.lines().next().unwrap_or("").trim();
            out.push_str(&format!("- {}: {summary}\n", d.name));
        }
    }
    if !unknown.is_empty() {
        out.push_str(&format!(
            "Not deferred tools (check the names): {}\n",
            unknown.join(", ")
        ));
    }
    out
}

/// The names a `tool_search` result loaded (empty for any other text).
pub fn loaded_names(result: &str) -> impl Iterator<Item = &str> {
    result
        .lines()
        .next()
        .and_then(|l| l.strip_prefix(LOADED_PREFIX))
        .into_iter()
        .flat_map(|names| names.split(", "))
        .map(str::trim)
        .filter(|n| !n.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(name: &str, description: &str) -> Definition {
        let mut d = ToolSearch::new(Threshold::default()).def;
        d.name = name.into();
        d.description = description.into();
        d
    }

    fn names(v: Vec<&Definition>) -> Vec<&str> {
        v.into_iter().map(|d| d.name.as_str()).collect()
    }

    #[test]
    fn exact_name_beats_prefix_beats_word_overlap() {
        let defs = [
            def("mcp__gh__create_issue_comment", "Comment on an issue"),
            def("mcp__gh__create_issue", "Open an issue"),
            def("mcp__db__query", "Run SQL; create tables"),
        ];
        assert_eq!(
            names(rank(&defs, "create_issue", 5)),
            [
                "mcp__gh__create_issue",
                "mcp__gh__create_issue_comment",
                "mcp__db__query" // `create` in its description only
            ]
        );
        assert_eq!(names(rank(&defs, "sql", 5)), ["mcp__db__query"]);
        assert!(rank(&defs, "weather", 5).is_empty());
        assert_eq!(rank(&defs, "issue", 1).len(), 1);
    }

    #[test]
    fn select_loads_exact_names_and_reports_unknown_ones() {
        let defs = [def("mcp__a__x", "x"), def("mcp__a__y", "y")];
        let (found, unknown) = select(&defs, "mcp__a__y, nope,mcp__a__y");
        assert_eq!(names(found), ["mcp__a__y"]);
        assert_eq!(unknown, ["nope"]);
    }

    #[test]
    fn rendered_results_round_trip_through_loaded_names() {
        let defs = [def("mcp__a__x", "x\nmore"), def("mcp__a__y", "y")];
        let text = render("q", &[&defs[0], &defs[1]], &[]);
        assert_eq!(
            loaded_names(&text).collect::<Vec<_>>(),
            ["mcp__a__x", "mcp__a__y"]
        );
        assert_eq!(loaded_names("No deferred tool matches").count(), 0);
    }
}
