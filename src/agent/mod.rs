//! Agents: Agent Mode and prompts (`mode`), the one state machine for a lead's mode
//! changes (`transition`: Plan Mode over a permission mode, auto, bypass), the tool-call
//! path (`pipeline`), the ReAct loop (`runner`), the lead actor (`lead`), and agent
//! definitions (`definition`).

pub mod budget;
pub mod catalog;
pub mod context;
pub(crate) mod definition;
pub mod delegate;
pub(crate) mod follow_up;
pub(crate) mod fork;
pub mod host;
pub mod lead_actor;
pub(crate) mod ledger;
pub(crate) mod lifecycle;
pub(crate) mod member_life;
pub mod mode;
pub(crate) mod monitor;
pub mod pipeline;
pub(crate) mod placement;
pub mod prompt;
pub(crate) mod resume;
pub(crate) mod run_error;
pub mod runner;
pub(crate) mod subagent_actor;
pub(crate) mod subagent_spec;
pub(crate) mod team_launch;
pub(crate) mod team_link;
pub(crate) mod teammate_actor;
mod teammate_tasks;
pub(crate) mod transition;
pub(crate) mod workspaces;
