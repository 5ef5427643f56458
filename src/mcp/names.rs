//! MCP tool names as the model and the permission rules see them: `mcp__<server>__<tool>`,
//! each part normalised the way Claude Code does (every character outside
//! `[A-Za-z0-9_-]` becomes `_`), so rules written for Claude Code match here too.

/// The prefix of every MCP tool name.
pub(crate) const PREFIX: &str = "mcp__";

/// `name` with every character outside `[A-Za-z0-9_-]` replaced by `_`.
pub(crate) fn normalize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The registry name of `tool` on `server`: `mcp__<server>__<tool>`, both normalised.
pub(crate) fn tool_name(server: &str, tool: &str) -> String {
    format!("{PREFIX}{}__{}", normalize(server), normalize(tool))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_normalised_like_claude_code() {
        assert_eq!(tool_name("test", "read_note"), "mcp__test__read_note");
        assert_eq!(
            tool_name("my server", "get.time"),
            "mcp__my_server__get_time"
        );
        assert_eq!(tool_name("gh-2", "créer"), "mcp__gh-2__cr_er");
        assert_eq!(normalize("a/b:c"), "a_b_c");
    }
}
