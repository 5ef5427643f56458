//! An agent's context: how many tokens it holds (`accounting`), how many its model
//! takes (`window`, with the settings), and compaction when it fills up (`compact` for
//! the pure parts, `summarize` for the summary turn, `guard` for the loop's side,
//! `open_work` for the tasks and work-list items the summary must name).

pub mod accounting;
pub mod compact;
pub mod guard;
pub mod open_work;
pub mod summarize;
pub mod window;

pub use compact::Trigger;
pub use guard::{Compacted, Guard, compact_now};
pub use window::ContextSettings;
