//! The TUI's state and what input does to it. Pure: keys, session events and run endings
//! change the state and queue `Effect`s; the runtime (`runtime.rs`) carries the effects
//! out without ever blocking the loop, so every behaviour here is testable without a
//! terminal or a session.

use std::collections::VecDeque;
use std::path::PathBuf;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::approval::ApprovalQueue;
use super::commands;
use super::completion;
use super::input::{InputBox, InputOutcome};
use super::plan::PlanStage;
use super::tasks_panel::{PanelAction, TasksPanel};
use super::team_panel::{TeamAction, TeamPanel, TeamTab};
use super::transcript::{Entry, Transcript};
use crate::agent::mode::AgentMode;
use crate::agent::runner::RunRequest;
use crate::permission::{PermissionMode, Verdict};
use crate::protocol::Usage;

/// Something the runtime must do for the app.
#[derive(Debug)]
pub(crate) enum Effect {
    /// Run a request on the lead (in a spawned task).
    Run(RunRequest),
    /// Cancel the lead's current run.
    Cancel,
    /// Change the lead's permission mode.
    SetPermissionMode(PermissionMode),
    /// Stop a background task.
    StopTask(String),
    /// Load a task's log file.
    LoadLog(String),
    /// Append a message from the user to a teammate's inbox.
    SendToTeammate {
        /// The teammate.
        to: String,
        /// The message.
        message: String,
    },
    /// Ask a teammate to shut down.
    StopTeammate(String),
    /// Load a teammate's transcript.
    LoadTeammateTranscript(String),
    /// Show the MCP servers' status and tools (`/mcp`).
    McpStatus,
    /// Load the worktrees for the worktrees panel.
    LoadWorktrees,
    /// Diff, merge, squash or discard a task's worktree.
    Worktree(super::worktrees_panel::Review, String),
    /// Compact the lead's conversation (`/compact [what to keep]`).
    Compact(Option<String>),
    /// Switch the lead to another model for its next runs (`/model NAME`).
    SetModel(String),
    /// List the project's recent sessions (`/resume`).
    ListSessions,
    /// End this session and continue in another (`/clear`, `/resume ID`).
    Switch(super::session_commands::Switch),
    /// Expand a custom slash command and run it on the lead (in a spawned task).
    RunCommand {
        /// The command's name.
        name: String,
        /// What followed it.
        args: String,
        /// The agent mode it runs in: Plan after `/plan`, as typed text would.
        mode: AgentMode,
    },
}

/// Facts about the session, for commands and the status line.
#[derive(Debug, Clone, Default)]
pub(crate) struct SessionInfo {
    /// The session id (for `--resume`).
    pub session_id: String,
    /// The working directory.
    pub cwd: PathBuf,
    /// The project root (where `.crew/settings*.json` live).
    pub project_root: PathBuf,
    /// The home directory (for `~/.crew/settings.json`).
    pub home: Option<PathBuf>,
    /// The model's name.
    pub model: String,
    /// Agent types and their descriptions.
    pub agents: Vec<(String, String)>,
    /// Custom slash commands and their descriptions, for completion.
    pub commands: Vec<(String, String)>,
    /// The session's auto mode (`None`: no classifier could be set up).
    pub auto: Option<std::sync::Arc<crate::auto_mode::AutoMode>>,
    /// `permissions.disableBypassPermissionsMode: "disable"` is set.
    pub bypass_disabled: bool,
    /// The allow rules auto mode sets aside.
    pub suspended_in_auto: Vec<String>,
}

/// The prompt a follow-up run gets when background work has ended.
pub(crate) const FOLLOW_UP: &str = crate::agent::follow_up::TASK_NEWS;

/// The whole TUI state.
pub(crate) struct App {
    /// Facts about the session.
    pub info: SessionInfo,
    /// The conversation view.
    pub transcript: Transcript,
    /// The input box.
    pub input: InputBox,
    /// Asks waiting for the user.
    pub approvals: ApprovalQueue,
    /// Background tasks.
    pub tasks: TasksPanel,
    /// The agent team.
    pub team: TeamPanel,
    /// The worktrees left for review.
    pub worktrees: super::worktrees_panel::WorktreesPanel,
    /// The Plan → approve → Do flow.
    pub plan: PlanStage,
    /// The lead's permission mode.
    pub permission: PermissionMode,
    /// Usage so far (lead and subagents).
    pub usage: Usage,
    /// The lead's latest request: how the prompt cache served its input.
    pub last_request: Usage,
    /// The agent mode of the lead's current run, if one is running.
    pub running: Option<AgentMode>,
    /// Whether the user asked to quit and must confirm stopping running tasks.
    pub confirm_quit: bool,
    /// Whether the app is done.
    pub quit: bool,
    quit_armed: bool,
    /// Memory files of subdirectories added to the lead's conversation (for `/memory`).
    pub memory_injected: Vec<String>,
    /// Why the breaker switched auto mode off (until `/auto reset`).
    pub auto_off: Option<String>,
    /// What each agent spent (for `/cost`): the transcript's record, then this run's.
    pub spent: crate::agent::ledger::Ledger,
    /// A `/clear` or `/resume` to go ahead with when typed again (background work runs).
    pub armed_switch: Option<super::session_commands::Switch>,
    queued: VecDeque<String>,
    effects: Vec<Effect>,
}

/// The verdict's name.
pub(super) fn verdict_str(v: Verdict) -> &'static str {
    match v {
        Verdict::Allow => "allow",
        Verdict::Ask => "ask",
        Verdict::Deny => "deny",
    }
}

impl App {
    /// A fresh app for a session.
    pub(crate) fn new(info: SessionInfo, permission: PermissionMode) -> Self {
        Self {
            info,
            transcript: Transcript::default(),
            input: InputBox::default(),
            approvals: ApprovalQueue::default(),
            tasks: TasksPanel::default(),
            team: TeamPanel::default(),
            worktrees: Default::default(),
            plan: PlanStage::Off,
            permission,
            usage: Usage::default(),
            last_request: Usage::default(),
            running: None,
            confirm_quit: false,
            quit: false,
            quit_armed: false,
            memory_injected: Vec::new(),
            auto_off: None,
            spent: Default::default(),
            armed_switch: None,
            queued: VecDeque::new(),
            effects: Vec::new(),
        }
    }

    /// Takes the effects queued so far.
    pub(crate) fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    /// The agent mode shown: the running request's, else the plan flow's.
    pub(crate) fn agent_mode(&self) -> AgentMode {
        self.running.unwrap_or_else(|| self.plan.agent_mode())
    }

    /// Adds a notice to the transcript.
    pub(super) fn notice(&mut self, text: impl Into<String>) {
        self.transcript.push(Entry::Notice(text.into()));
    }

    /// Queues an effect for the runtime.
    pub(super) fn effect(&mut self, effect: Effect) {
        self.effects.push(effect);
    }

    fn start_run(&mut self, req: RunRequest) {
        self.input.set_suggestion(None);
        self.running = Some(req.mode);
        self.effects.push(Effect::Run(req));
    }

    /// Handles a key press.
    pub(crate) fn on_key(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            return self.ctrl_c();
        }
        self.quit_armed = false;
        if self.confirm_quit {
            match key.code {
                KeyCode::Char('y') | KeyCode::Char('Y') => self.quit = true,
                _ => {
                    self.confirm_quit = false;
                    self.notice("Not quitting.");
                }
            }
            return;
        }
        if self.approvals.is_open() {
            self.approvals.on_key(key);
            return;
        }
        if matches!(self.plan, PlanStage::Review { .. }) && self.review_key(key) {
            return;
        }
        if self.tasks.open {
            match self.tasks.on_key(key) {
                PanelAction::OpenLog(id) => self.effects.push(Effect::LoadLog(id)),
                PanelAction::Stop(id) => self.effects.push(Effect::StopTask(id)),
                PanelAction::None | PanelAction::Close => {}
            }
            return;
        }
        if self.worktrees.open {
            use super::worktrees_panel::WorktreeAction;
            match self.worktrees.on_key(key) {
                WorktreeAction::Act(review, id) => self.effects.push(Effect::Worktree(review, id)),
                WorktreeAction::Keep(id) => self.notice(format!(
                    "Worktree {id} is kept for later: `crew worktrees` or /worktrees."
                )),
                WorktreeAction::None => {}
            }
            return;
        }
        if self.team.open {
            match self.team.on_key(key) {
                TeamAction::OpenTranscript(name) => {
                    self.effects.push(Effect::LoadTeammateTranscript(name))
                }
                TeamAction::Send { to, message } => {
                    self.effects.push(Effect::SendToTeammate { to, message })
                }
                TeamAction::Stop(name) => self.effects.push(Effect::StopTeammate(name)),
                TeamAction::None | TeamAction::Close => {}
            }
            return;
        }
        match key.code {
            KeyCode::BackTab => self.cycle_mode(),
            KeyCode::Esc if self.running.is_some() => {
                self.effects.push(Effect::Cancel);
                self.notice("Interrupting…");
            }
            KeyCode::Char('o') if ctrl => self.transcript.expanded = !self.transcript.expanded,
            KeyCode::Char('t') if ctrl => {
                self.team.open = true;
                self.team.tab = TeamTab::Items;
            }
            KeyCode::Tab if self.input.suggestion().is_some() => {
                let suggestion = self.input.suggestion().unwrap_or_default().to_string();
                self.input.set_text(&suggestion);
            }
            KeyCode::Tab if self.input.text().starts_with('/') => {
                let typed = self.input.text();
                if let Some(done) = completion::complete(&typed, &self.info.commands) {
                    self.input.set_text(&done);
                }
            }
            KeyCode::PageUp => self.transcript.scroll_up += 10,
            KeyCode::PageDown => {
                self.transcript.scroll_up = self.transcript.scroll_up.saturating_sub(10)
            }
            _ => {
                if let InputOutcome::Submit(text) = self.input.on_key(key) {
                    self.transcript.scroll_up = 0;
                    self.submit(text);
                }
            }
        }
    }

    fn review_key(&mut self, key: KeyEvent) -> bool {
        match key.code {
            KeyCode::Char('1') => self.approve_plan(),
            KeyCode::Char('2') => {
                if let Some(plan) = self.plan.edit() {
                    self.input.set_text(&plan);
                    self.notice("Edit the plan, then press Enter to review it again.");
                }
            }
            KeyCode::Char('3') | KeyCode::Esc => {
                self.leave_plan(crate::agent::transition::PlanExit::Rejected);
                self.notice(format!(
                    "Plan rejected; back to chat in {} mode (/plan plans again).",
                    self.permission
                ));
            }
            KeyCode::BackTab => {
                let ctx = self.mode_ctx();
                self.plan.cycle_mode(&ctx);
            }
            _ => return false,
        }
        true
    }

    /// Approves the plan under review and starts the Do run.
    pub(super) fn approve_plan(&mut self) {
        use crate::agent::transition::{PlanExit, Target, transition};
        let PlanStage::Review { mode: picked, .. } = self.plan else {
            return;
        };
        let to = Target::LeavePlan(PlanExit::Approved(Some(picked)));
        let fx = match transition(self.mode_state(), to, &self.mode_ctx()) {
            Ok(fx) => fx,
            Err(refused) => {
                return self.notice(format!(
                    "Cannot carry out the plan in {picked} mode: {refused}. Shift+Tab picks another."
                ));
            }
        };
        if let Some((req, mode)) = self.plan.approve() {
            self.apply_mode(fx);
            self.notice(format!("Plan approved; carrying it out in {mode} mode."));
            self.start_run(req);
        }
    }

    fn ctrl_c(&mut self) {
        if self.confirm_quit || self.quit_armed {
            return self.request_quit();
        }
        self.quit_armed = true;
        if self.running.is_some() {
            self.approvals.deny_all("the user interrupted the turn");
            self.effects.push(Effect::Cancel);
        }
        self.notice("Press Ctrl+C again to quit.");
    }

    /// Quits, first asking when background tasks are still running.
    pub(crate) fn request_quit(&mut self) {
        let running = self.tasks.running();
        if running > 0 && !self.confirm_quit {
            self.confirm_quit = true;
            self.notice(format!(
                "{running} background task(s) still running. Stop them and quit? (y/n)"
            ));
        } else {
            self.quit = true;
        }
    }

    /// Handles submitted input: a command, an edited plan, or a request.
    pub(crate) fn submit(&mut self, text: String) {
        if text.trim().is_empty() {
            return;
        }
        self.input.set_suggestion(None);
        if let Some(cmd) = commands::parse(&text) {
            match cmd {
                commands::SlashCommand::Unknown(name)
                    if self.info.commands.iter().any(|(n, _)| *n == name) =>
                {
                    return self.custom_command(text, name);
                }
                cmd => return self.command(cmd),
            }
        }
        if matches!(self.plan, PlanStage::Editing { .. }) {
            self.plan.edited(text);
            return;
        }
        if self.running.is_some() {
            self.notice(format!("Queued until the current turn ends: {text}"));
            self.queued.push_back(text);
            return;
        }
        self.transcript.push(Entry::User(text.clone()));
        let req = if self.plan == PlanStage::Ready {
            self.plan.start(text)
        } else {
            RunRequest {
                mode: AgentMode::Chat,
                task: text,
                plan: None,
            }
        };
        self.start_run(req);
    }

    /// The commands offered for what is typed (while the first word starts with `/`).
    pub(crate) fn completions(&self) -> Vec<(String, String)> {
        completion::candidates(&self.input.text(), &self.info.commands)
    }

    /// Runs a custom slash command as the lead's next turn (queued behind a running one).
    fn custom_command(&mut self, text: String, name: String) {
        if self.running.is_some() {
            self.notice(format!("Queued until the current turn ends: {text}"));
            self.queued.push_back(text);
            return;
        }
        let args = crate::commands::expand::invocation(&text)
            .map(|(_, args)| args.to_string())
            .unwrap_or_default();
        // The current mode, as for typed text: Plan Mode plans the command's task.
        let mode = if self.plan == PlanStage::Ready {
            self.plan.start(text.clone()).mode
        } else {
            AgentMode::Chat
        };
        self.transcript.push(Entry::User(text));
        self.running = Some(mode);
        self.effects.push(Effect::RunCommand { name, args, mode });
    }

    /// A custom command's text was expanded: a plan made for it is carried out with the
    /// expanded task, not the `/name args` line.
    pub(crate) fn on_command_expanded(&mut self, text: String) {
        if let PlanStage::Planning { task } = &mut self.plan {
            *task = text;
        }
    }
}

/// What the session's events and the ends of runs do to the app.
#[path = "app_events.rs"]
mod events;

#[cfg(test)]
#[path = "app_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "app_session_tests.rs"]
mod session_tests;
