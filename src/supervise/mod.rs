//! Supervision that heals: the session's service actors live in `Slot`s that callers read
//! on each message, a crashed service is restarted from its last good state (the
//! session's `services`, `crate::session::services`), a restart storm ends the session
//! (`budget`), and, for tests only, faults can be injected on command (`faults`,
//! `CREW_FAULTS`). The plumbing every actor uses, so it imports none of them.

pub(crate) mod budget;
// Without the `faults` feature only the no-op `point` is used.
#[cfg_attr(not(feature = "faults"), allow(dead_code))]
pub(crate) mod faults;
mod slot;

pub use budget::{RestartBudget, RestartLimit, Storm};
pub use slot::{CallError, REPLACEMENT_WAIT, Slot, answer};
