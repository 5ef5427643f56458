//! The interactive terminal UI (`crew` with no `-p`): a streaming transcript, an input
//! box, a status line, approval dialogs, a tasks panel and the Plan → approve → Do flow.
//! Each component is its own module and renders itself; `app` holds the state and turns
//! input into effects; `runtime` runs the non-blocking event loop, `jobs`, `team_io` and
//! `worktree_io` the work it starts without waiting.

pub mod app;
pub mod approval;
mod approval_view;
pub mod commands;
pub mod completion;
pub mod input;
mod jobs;
pub mod mcp_view;
pub mod modes;
pub mod plan;
pub mod runtime;
mod screen;
mod speculate;
pub mod status;
pub mod tasks_panel;
mod team_io;
pub mod team_panel;
pub mod transcript;
pub mod trust_prompt;
pub mod view;
mod worktree_io;
pub mod worktrees_panel;

pub use runtime::run;
