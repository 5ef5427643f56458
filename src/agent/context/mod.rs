//! An agent's context: how many tokens it holds (`accounting`), how many its model
//! takes (`window`, with the settings), and compaction when it fills up: `compact` (the
//! cut and the messages), `facts` (what code keeps for certain), `open_work` (tasks and
//! work-list items from the session), `summarize` (the summary turn) and `guard` (the
//! agent loop's side, and `/compact`).

pub(crate) mod accounting;
pub(crate) mod compact;
pub(crate) mod facts;
pub(crate) mod guard;
pub(crate) mod open_work;
pub(crate) mod summarize;
pub(crate) mod window;

pub use compact::Trigger;
pub use guard::{CompactNowError, Compacted, Guard, compact_now};
pub use window::ContextSettings;
