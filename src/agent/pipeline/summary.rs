//! A call's result in one line, for the `tool_call_finished` event (and so for what the
//! user sees scroll by).

use crate::protocol::ToolResult;

/// A result for display, without the `error [code]: ` prefix: an error whole (a refusal says
/// what to do, and must never be cut), other results their first line, cut at 160 characters.
pub(super) fn summary(result: &ToolResult) -> String {
    let text = match &result.error_code {
        Some(code) => result
            .content
            .strip_prefix(&format!("error [{code}]: "))
            .unwrap_or(&result.content),
        None => &result.content,
    };
    // A refusal or an error is a message for the user, with what to do: never cut it.
    if result.is_error {
        return text.trim().to_string();
    }
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let mut out: String = line.chars().take(160).collect();
    // Only whether there is more, not how much: a result can be thousands of lines.
    if out.len() < line.len() || text.lines().nth(1).is_some() {
        out.push_str(" …");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_is_the_first_line_cut_at_160_characters_and_marked_when_there_is_more() {
        let ok = |text: &str| summary(&ToolResult::ok("c", text));
        assert_eq!(ok("one line"), "one line");
        assert_eq!(ok("\n  \nfirst\nsecond"), "first …");
        let long = "é".repeat(200);
        assert_eq!(ok(&long), format!("{} …", "é".repeat(160)));
        assert_eq!(ok(&"é".repeat(160)), "é".repeat(160));
        let failed = ToolResult::error("c", "failed", "line one\nline two");
        assert_eq!(summary(&failed), "line one\nline two");
    }
}
