//! The interactive terminal UI (`crew` with no `-p`): a streaming transcript, an input
//! box, a status line, approval dialogs, a tasks panel and the Plan → approve → Do flow.
//! Each component is its own module and renders itself; `app` holds the state and turns
//! input into effects; `runtime` runs the non-blocking event loop.

pub mod app;
pub mod approval;
pub mod commands;
pub mod completion;
pub mod input;
pub mod mcp_view;
pub mod modes;
pub mod plan;
pub mod runtime;
mod speculate;
pub mod status;
pub mod tasks_panel;
pub mod team_panel;
pub mod transcript;
pub mod trust_prompt;
pub mod view;

pub use runtime::run;
