//! crewmaster: an actor-based multi-agent coding orchestrator.
//!
//! A tool call's one path: agent → permission engine → (approver) → gate → executor.
//! See README.md for the actor diagram.

// Temporary on the `perm` branch: the lead's src/cli/mod.rs replaces this.
pub mod cli {
    pub mod permissions;
}
pub mod events;
pub mod executor;
pub mod gate;
pub mod permission;
pub mod protocol;
pub mod provider;
pub mod tools;
