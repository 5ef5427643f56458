//! Slash commands typed in the input box: parsing, what each does to the app, and the
//! help text. The commands about the session itself (`/clear`, `/resume`, `/model`,
//! `/cost`, `/hooks`) are in `session_commands.rs`.

use super::app::{App, verdict_str};
use super::plan::PlanStage;
use super::session_commands::Switch;
use crate::agent::transition::{PlanExit, Target};
use crate::permission::rules::RuleKind;
use crate::permission::{Category, Policy};
use crate::pricing::{cost_usd, total_tokens};
use crate::tools::rule_names::LoadPolicy;

/// A slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SlashCommand {
    /// Switch to Plan Mode.
    Plan,
    /// Enter auto mode (`/auto`), or close its breaker (`/auto reset`).
    Auto(String),
    /// Carry out the plan under review, or go back to chat.
    Do,
    /// Show or hide the tasks panel.
    Tasks,
    /// Show or hide the team panel.
    Team,
    /// Subagent worktrees.
    Worktrees,
    /// The permission mode and what it allows.
    Permissions,
    /// The agent definitions.
    Agents,
    /// The memory files loaded and where from.
    Memory,
    /// Session, model, usage.
    Status,
    /// The MCP servers, their status and tools.
    Mcp,
    /// Compact the conversation now, with what to keep in the summary (may be empty).
    Compact(String),
    /// A fresh conversation in a new session; the old one stays resumable.
    Clear,
    /// List the project's sessions (empty), or continue the one with this id (or prefix).
    Resume(String),
    /// Show the lead's model (empty), or switch it for the next turns.
    Model(String),
    /// Tokens and cost so far.
    Cost,
    /// The effective hooks and where each comes from.
    Hooks,
    /// Keys and commands.
    Help,
    /// Quit.
    Exit,
    /// Not a known command.
    Unknown(String),
}

/// Parses `/name …`; `None` when the text is not a command.
pub(crate) fn parse(text: &str) -> Option<SlashCommand> {
    let text = text.trim();
    let name = text.strip_prefix('/')?.split_whitespace().next()?;
    // What follows the name.
    let rest = || text[1 + name.len()..].trim().to_string();
    Some(match name {
        "plan" => SlashCommand::Plan,
        "auto" => SlashCommand::Auto(rest()),
        "do" => SlashCommand::Do,
        "tasks" => SlashCommand::Tasks,
        "team" => SlashCommand::Team,
        "worktrees" => SlashCommand::Worktrees,
        "permissions" => SlashCommand::Permissions,
        "agents" => SlashCommand::Agents,
        "memory" => SlashCommand::Memory,
        "status" => SlashCommand::Status,
        "mcp" => SlashCommand::Mcp,
        "compact" => SlashCommand::Compact(rest()),
        "clear" => SlashCommand::Clear,
        "resume" => SlashCommand::Resume(rest()),
        "model" => SlashCommand::Model(rest()),
        "cost" => SlashCommand::Cost,
        "hooks" => SlashCommand::Hooks,
        "help" => SlashCommand::Help,
        "exit" | "quit" => SlashCommand::Exit,
        other => SlashCommand::Unknown(other.to_string()),
    })
}

/// The `/help` text.
pub(crate) const HELP: &str = "\
Commands:
  /plan         Plan Mode: the next input is investigated read-only and planned
  /do           carry out the plan under review (without one: back to chat)
  /auto         auto mode: a classifier model decides what would ask (/auto reset after
                its breaker switched it off)
  /tasks        background tasks and subagents (Enter: live log, x: stop)
  /team         teammates (Enter: live transcript and a line to write to it, x: stop)
  /worktrees    review worktrees: diff, merge, squash, keep, discard
  /permissions  the permission mode and what it allows
  /agents       the agent definitions
  /memory       the memory files (CLAUDE.md, AGENTS.md, CREW.md) loaded and where from
  /status       session, model, tokens and cost
  /mcp          MCP servers: status and tools
  /compact [what to keep]  summarise the conversation now to free context
  /clear        a fresh conversation in a new session (/resume returns to this one)
  /resume [ID]  the project's recent sessions; with an id (or its start), continue one
  /model [NAME] the lead's model; with a name (sonnet, opus, haiku, claude-…, gpt-…,
                anthropic:NAME, openai:NAME) the lead's model for the next turns
  /cost         tokens and cost of the session so far, by agent
  /hooks        the hooks that run here and where each comes from
  /help         this help
  /exit         quit (asks before stopping running background tasks)
  /NAME ARGS    a custom command (.claude/commands, .crew/commands); Tab completes
Keys:
  Enter send · Alt+Enter new line · Up/Down history · Shift+Tab permission mode
  Esc interrupt the current turn · Ctrl+U clear the input
  Ctrl+O expand tool calls (arguments and output) · PgUp/PgDn scroll
  Ctrl+T the team's work list
  Ctrl+C twice quit";

impl App {
    /// Carries out a slash command.
    pub(super) fn command(&mut self, cmd: SlashCommand) {
        match cmd {
            SlashCommand::Plan => {
                if self.change_mode(Target::Plan) {
                    self.notice("Plan Mode: describe the task; the lead investigates read-only and proposes a plan.");
                }
            }
            SlashCommand::Auto(args) => self.auto_command(&args),
            SlashCommand::Do => match self.plan {
                PlanStage::Review { .. } => self.approve_plan(),
                PlanStage::Off => self.notice("No plan to carry out; back to chat."),
                _ => {
                    self.leave_plan(PlanExit::Cancelled);
                    self.notice("No plan to carry out; back to chat.");
                }
            },
            SlashCommand::Tasks => {
                self.tasks.open = !self.tasks.open;
                if self.tasks.records.is_empty() {
                    self.notice("No background tasks or subagents yet.");
                }
            }
            SlashCommand::Team => {
                self.team.open = !self.team.open;
                self.team.tab = super::team_panel::TeamTab::Members;
            }
            SlashCommand::Worktrees => {
                self.worktrees.open = true;
                self.effect(super::app::Effect::LoadWorktrees);
            }
            SlashCommand::Permissions => {
                let text = self.permissions_text();
                self.notice(text);
            }
            SlashCommand::Agents => {
                let lines: Vec<String> = self
                    .info
                    .agents
                    .iter()
                    .map(|(n, d)| format!("  {n}: {d}"))
                    .collect();
                self.notice(format!("Agents:\n{}", lines.join("\n")));
            }
            SlashCommand::Memory => {
                let text = self.memory_text();
                self.notice(text);
            }
            SlashCommand::Status => {
                let cost = cost_usd(&self.info.model, &self.usage)
                    .map_or("unknown price".into(), |c| format!("${c:.4}"));
                self.notice(format!(
                    "Session {} in {}\nModel {} · {} tokens ({cost}) · permission mode {} · agent mode {} · {} running task(s)",
                    self.info.session_id,
                    self.info.cwd.display(),
                    self.info.model,
                    total_tokens(&self.usage),
                    self.permission,
                    self.agent_mode().as_str(),
                    self.tasks.running()
                ));
            }
            // The servers' actors answer asynchronously: the runtime asks and shows it.
            SlashCommand::Mcp => self.effect(super::app::Effect::McpStatus),
            SlashCommand::Compact(_) if self.running.is_some() => {
                self.notice("Compact when the current turn ends.")
            }
            SlashCommand::Compact(what) => {
                self.notice("Compacting the conversation…");
                let what = (!what.is_empty()).then_some(what);
                self.effect(super::app::Effect::Compact(what));
            }
            SlashCommand::Clear => self.switch_command(Switch::Clear, "/clear"),
            SlashCommand::Resume(id) if id.is_empty() => {
                self.effect(super::app::Effect::ListSessions)
            }
            SlashCommand::Resume(id) => {
                let typed = format!("/resume {id}");
                self.switch_command(Switch::Resume(id), &typed)
            }
            SlashCommand::Model(name) => self.model_command(&name),
            SlashCommand::Cost => {
                let text = self.cost_text();
                self.notice(text);
            }
            SlashCommand::Hooks => {
                let text = self.hooks_text();
                self.notice(text);
            }
            SlashCommand::Help => self.notice(HELP),
            SlashCommand::Exit => self.request_quit(),
            SlashCommand::Unknown(name) => self.notice(format!(
                "Unknown command /{name}; /help lists the commands."
            )),
        }
    }
}

impl App {
    /// The memory files the lead was given: those of its system prompt (read afresh, as
    /// the next run will), then those added as it worked in subdirectories.
    fn memory_text(&self) -> String {
        let cwd = &self.info.cwd;
        let mut text = match crate::memory::report::load(cwd, self.info.home.as_deref()) {
            Ok(m) => crate::memory::report::text(cwd, &m),
            Err(e) => format!("The memory files could not be listed: {e}\n"),
        };
        if !self.memory_injected.is_empty() {
            text.push_str("Added to the lead's conversation so far:\n");
            for p in &self.memory_injected {
                text.push_str(&format!("  {p} (subdirectory)\n"));
            }
        }
        text.trim_end().to_string()
    }

    /// The permission mode, its fallback table and the rules of the settings files.
    fn permissions_text(&self) -> String {
        let m = self.permission;
        let table = [Category::Read, Category::Write, Category::Exec]
            .map(|c| {
                format!(
                    "{c:?}: {}",
                    verdict_str(crate::permission::mode::fallback(m, c))
                )
                .to_lowercase()
            })
            .join(", ");
        let mut text = format!(
            "Permission mode: {m} ({table} when no rule matches). Shift+Tab cycles the mode."
        );
        // Read afresh: "always allow" answers append to settings.local.json meanwhile.
        let loaded = Policy::load(&self.info.project_root, self.info.home.as_deref());
        match &loaded {
            Ok((policy, _)) if policy.rules.is_empty() => {
                text.push_str("\nNo rules in .crew/ or .claude/ settings.json, settings.local.json, or ~/.crew/settings.json or ~/.claude/settings.json.");
            }
            Ok((policy, _)) => {
                text.push_str("\nRules (deny, then ask, then allow):");
                for r in &policy.rules {
                    let from = r
                        .file
                        .as_ref()
                        .map_or_else(|| format!("{:?}", r.layer), |f| f.display().to_string());
                    let kind = match r.kind {
                        RuleKind::Allow => "allow",
                        RuleKind::Ask => "ask",
                        RuleKind::Deny => "deny",
                    };
                    text.push_str(&format!("\n  {kind} {}  ({from})", r.text));
                }
            }
            Err(e) => text.push_str(&format!("\nThe settings could not be read: {e}")),
        }
        // Say what was ignored (an untrusted folder's shared settings, bad rules).
        for w in loaded.iter().flat_map(|(_, warnings)| warnings) {
            text.push_str(&format!("\nWarning: {w}"));
        }
        text.push_str("\nRules granted with \"allow for this session\" last until crew exits.");
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_lists_every_built_in_command_and_the_editing_keys() {
        // Those Tab offers are the commands parse knows (completion's own test).
        let names: Vec<&str> = crate::tui::completion::BUILT_IN
            .iter()
            .map(|(n, _)| *n)
            .collect();
        for wanted in ["clear", "resume", "model", "cost", "hooks"] {
            assert!(names.contains(&wanted), "{wanted} is not offered");
        }
        for name in names {
            assert!(
                HELP.contains(&format!("  /{name} ")),
                "/{name} is not in /help"
            );
        }
        assert!(HELP.contains("Ctrl+U clear the input"), "{HELP}");
        assert!(HELP.contains("Ctrl+O expand tool calls (arguments and output)"));
    }

    #[test]
    fn parses_commands_and_leaves_text_alone() {
        assert_eq!(parse("/plan"), Some(SlashCommand::Plan));
        assert_eq!(parse("  /exit  "), Some(SlashCommand::Exit));
        assert_eq!(parse("/tasks now"), Some(SlashCommand::Tasks));
        assert_eq!(parse("/memory"), Some(SlashCommand::Memory));
        assert_eq!(parse("/mcp"), Some(SlashCommand::Mcp));
        assert_eq!(
            parse("/compact"),
            Some(SlashCommand::Compact(String::new()))
        );
        assert_eq!(
            parse("/compact  keep the API notes "),
            Some(SlashCommand::Compact("keep the API notes".into()))
        );
        assert_eq!(parse("/clear"), Some(SlashCommand::Clear));
        assert_eq!(parse("/resume"), Some(SlashCommand::Resume(String::new())));
        assert_eq!(
            parse("/resume  3f2a "),
            Some(SlashCommand::Resume("3f2a".into()))
        );
        assert_eq!(parse("/model"), Some(SlashCommand::Model(String::new())));
        assert_eq!(
            parse("/model openai:gpt-4.1"),
            Some(SlashCommand::Model("openai:gpt-4.1".into()))
        );
        assert_eq!(parse("/cost"), Some(SlashCommand::Cost));
        assert_eq!(parse("/hooks"), Some(SlashCommand::Hooks));
        assert_eq!(
            parse("/auto reset"),
            Some(SlashCommand::Auto("reset".into()))
        );
        assert_eq!(parse("/nope"), Some(SlashCommand::Unknown("nope".into())));
        assert_eq!(parse("fix /plan parsing"), None);
        assert_eq!(parse("/"), None);
    }
}
