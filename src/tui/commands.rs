//! Slash commands typed in the input box, and the help text.

/// A slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlashCommand {
    /// Switch to Plan Mode.
    Plan,
    /// Carry out the plan under review, or go back to chat.
    Do,
    /// Show or hide the tasks panel.
    Tasks,
    /// Subagent worktrees.
    Worktrees,
    /// The permission mode and what it allows.
    Permissions,
    /// The agent definitions.
    Agents,
    /// Session, model, usage.
    Status,
    /// Keys and commands.
    Help,
    /// Quit.
    Exit,
    /// Not a known command.
    Unknown(String),
}

/// Parses `/name …`; `None` when the text is not a command.
pub fn parse(text: &str) -> Option<SlashCommand> {
    let text = text.trim();
    let name = text.strip_prefix('/')?.split_whitespace().next()?;
    Some(match name {
        "plan" => SlashCommand::Plan,
        "do" => SlashCommand::Do,
        "tasks" => SlashCommand::Tasks,
        "worktrees" => SlashCommand::Worktrees,
        "permissions" => SlashCommand::Permissions,
        "agents" => SlashCommand::Agents,
        "status" => SlashCommand::Status,
        "help" => SlashCommand::Help,
        "exit" | "quit" => SlashCommand::Exit,
        other => SlashCommand::Unknown(other.to_string()),
    })
}

/// The `/help` text.
pub const HELP: &str = "\
Commands:
  /plan         Plan Mode: the next input is investigated read-only and planned
  /do           carry out the plan under review (without one: back to chat)
  /tasks        background tasks and subagents (Enter: live log, x: stop)
  /worktrees    subagent worktrees
  /permissions  the permission mode and what it allows
  /agents       the agent definitions
  /status       session, model, tokens and cost
  /help         this help
  /exit         quit (asks before stopping running background tasks)
Keys:
  Enter send · Alt+Enter new line · Up/Down history · Shift+Tab permission mode
  Esc interrupt the current turn · Ctrl+O expand tool calls · PgUp/PgDn scroll
  Ctrl+C twice quit";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands_and_leaves_text_alone() {
        assert_eq!(parse("/plan"), Some(SlashCommand::Plan));
        assert_eq!(parse("  /exit  "), Some(SlashCommand::Exit));
        assert_eq!(parse("/tasks now"), Some(SlashCommand::Tasks));
        assert_eq!(parse("/nope"), Some(SlashCommand::Unknown("nope".into())));
        assert_eq!(parse("fix /plan parsing"), None);
        assert_eq!(parse("/"), None);
    }
}
