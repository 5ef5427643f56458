//! Supervision that heals: the session's service actors live in `Slot`s that callers read
//! on each message, a crashed service is restarted from its last good state
//! (`services`), a restart storm ends the session (`budget`), and, for tests only, faults
//! can be injected on command (`faults`, `CREW_FAULTS`).

pub mod budget;
pub mod faults;
pub mod services;
mod slot;

pub use budget::{RestartBudget, RestartLimit, Storm};
pub use services::{Service, ServiceArgs, Services};
pub use slot::{CallError, REPLACEMENT_WAIT, Slot};
