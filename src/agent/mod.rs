//! Agents: Agent Mode and prompts (`mode`), the one state machine for a lead's mode
//! changes (`transition`: Plan Mode over a permission mode, auto, bypass), the tool-call
//! path (`pipeline`), the ReAct loop (`runner`), the lead actor (`lead`), and agent
//! definitions (`definition`).

pub mod budget;
pub mod catalog;
pub mod context;
pub mod definition;
pub mod delegate;
pub mod follow_up;
pub mod fork;
pub mod host;
pub mod lead_actor;
pub mod ledger;
pub mod lifecycle;
pub mod member_life;
pub mod mode;
pub mod monitor;
pub mod pipeline;
pub mod placement;
pub mod prompt;
pub mod resume;
pub mod runner;
pub mod subagent_actor;
pub(crate) mod subagent_spec;
pub mod team_launch;
pub mod team_link;
pub mod teammate_actor;
mod teammate_tasks;
pub mod transition;
pub mod workspaces;
