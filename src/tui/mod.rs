//! The interactive terminal UI (`crew` with no `-p`): a streaming transcript, an input
//! box, a status line, approval dialogs, a tasks panel and the Plan → approve → Do flow.
//! Each component is its own module and renders itself; `app` holds the state and turns
//! input into effects (`commands` and `session_commands` the slash commands); `runtime`
//! runs the non-blocking event loop and `startup` a session's first screen; `jobs`,
//! `team_io`, `worktree_io` and `session_switch` do the work it starts without waiting,
//! `session_switch` also the `/clear` and `/resume` switch to another session.

pub(crate) mod app;
pub mod approval;
mod approval_view;
mod attention;
pub(crate) mod commands;
pub(crate) mod completion;
pub(crate) mod input;
mod jobs;
pub(crate) mod mcp_view;
pub(crate) mod modes;
pub(crate) mod plan;
pub(crate) mod runtime;
mod screen;
mod session_commands;
mod session_switch;
mod speculate;
mod startup;
pub(crate) mod status;
pub(crate) mod tasks_panel;
mod team_io;
pub(crate) mod team_panel;
pub(crate) mod transcript;
pub(crate) mod trust_prompt;
pub(crate) mod view;
mod worktree_io;
pub(crate) mod worktrees_panel;

pub use runtime::run;
