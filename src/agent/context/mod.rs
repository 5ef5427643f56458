//! An agent's context: how many tokens it holds (`accounting`), how many its model
//! takes (`window`, with the settings), and compaction when it fills up: `compact` (the
//! cut and the messages), `facts` (what code keeps for certain), `open_work` (tasks and
//! work-list items from the session), `summarize` (the summary turn) and `guard` (the
//! agent loop's side, and `/compact`).

pub mod accounting;
pub mod compact;
pub mod facts;
pub mod guard;
pub mod open_work;
pub mod summarize;
pub mod window;

pub use compact::Trigger;
pub use guard::{CompactNowError, Compacted, Guard, compact_now};
pub use window::ContextSettings;
