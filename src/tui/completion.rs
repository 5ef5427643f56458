//! Completing `/` commands in the input box: the built-in commands and the custom ones
//! (`.claude/commands`, `.crew/commands`, the user's), offered while the first word is
//! being typed, and Tab to complete it.

/// The built-in commands and what they do (what `commands::parse` knows).
pub(crate) const BUILT_IN: [(&str, &str); 19] = [
    ("plan", "Plan Mode: investigate read-only and plan"),
    (
        "auto",
        "auto mode: a classifier decides what would ask (/auto reset)",
    ),
    ("do", "carry out the plan under review"),
    ("tasks", "background tasks and subagents"),
    ("team", "teammates"),
    ("worktrees", "subagent worktrees"),
    ("permissions", "the permission mode and rules"),
    ("agents", "the agent definitions"),
    ("memory", "the memory files loaded and where from"),
    ("status", "session, model, tokens and cost"),
    ("mcp", "MCP servers: status and tools"),
    ("compact", "summarise the conversation now to free context"),
    ("clear", "a fresh conversation in a new session"),
    ("resume", "recent sessions; /resume ID continues one"),
    ("model", "the lead's model; /model NAME switches it"),
    ("cost", "tokens and cost so far"),
    ("hooks", "the hooks that run here and where from"),
    ("help", "keys and commands"),
    ("exit", "quit"),
];

/// The commands whose name starts with what is typed after `/` (while no space is typed
/// yet), built-ins first, as `(name, description)`.
pub(crate) fn candidates(text: &str, custom: &[(String, String)]) -> Vec<(String, String)> {
    let Some(prefix) = text.strip_prefix('/') else {
        return Vec::new();
    };
    if prefix.contains(char::is_whitespace) {
        return Vec::new();
    }
    let built_in = BUILT_IN.iter().map(|(n, d)| (n.to_string(), d.to_string()));
    let mut out: Vec<(String, String)> = Vec::new();
    for (name, description) in built_in.chain(custom.iter().cloned()) {
        if name.starts_with(prefix) && !out.iter().any(|(n, _)| *n == name) {
            out.push((name, description));
        }
    }
    out
}

/// What Tab makes of the typed text: the one candidate's name followed by a space, or the
/// longest prefix all candidates share; `None` when that adds nothing.
pub(crate) fn complete(text: &str, custom: &[(String, String)]) -> Option<String> {
    let found = candidates(text, custom);
    let first = &found.first()?.0;
    if found.len() == 1 {
        return Some(format!("/{first} "));
    }
    let mut common = first.clone();
    for (name, _) in &found[1..] {
        let shared = common
            .chars()
            .zip(name.chars())
            .take_while(|(a, b)| a == b)
            .count();
        common = common.chars().take(shared).collect();
    }
    let completed = format!("/{common}");
    (completed.len() > text.len()).then_some(completed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::commands::{SlashCommand, parse};

    #[test]
    fn every_built_in_offered_is_one_the_input_box_knows() {
        for (name, _) in BUILT_IN {
            let parsed = parse(&format!("/{name}"));
            assert!(
                !matches!(parsed, Some(SlashCommand::Unknown(_)) | None),
                "{name}"
            );
        }
    }

    #[test]
    fn completes_built_in_and_custom_names() {
        let custom = vec![
            ("review".to_string(), "Review a file".to_string()),
            ("release-notes".to_string(), "Draft notes".to_string()),
        ];
        assert_eq!(complete("/rev", &custom).as_deref(), Some("/review "));
        // Two candidates share only what is typed: nothing to add.
        assert_eq!(complete("/re", &custom), None);
        assert_eq!(complete("/t", &custom), None);
        assert_eq!(complete("/ta", &custom).as_deref(), Some("/tasks "));
        assert_eq!(
            complete("/rel", &custom).as_deref(),
            Some("/release-notes ")
        );
        let more = vec![("perf-check".to_string(), String::new())];
        assert_eq!(complete("/pe", &more).as_deref(), Some("/per"));
        assert!(candidates("/review x", &custom).is_empty());
        assert!(candidates("review", &custom).is_empty());
        let all = candidates("/", &custom);
        assert_eq!(all.len(), BUILT_IN.len() + 2);
    }
}
