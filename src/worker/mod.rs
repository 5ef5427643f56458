//! Worker machines over ractor_cluster (issue 16): `crew worker` nodes offer subagent
//! slots; a lead started with `--workers` joins them and runs `placement: remote`
//! subagents and teammates (and overflow when its local slots are full) there. The
//! repository travels as git bundles over the cluster connection; each remote run has its
//! own permission engine, gate and executor on the worker, with the lead's rules and the
//! worker's Landlock sandbox: a subagent under dontAsk (in auto when the lead is, its
//! Asks judged by the lead's classifier), a teammate in the mode it shares with the lead,
//! its Asks answered by the lead's approver for one call at a time.
//!
//! - [`protocol`]: the wire messages and their encoding.
//! - [`node`]: the worker node (`crew worker`).
//! - [`remote_run`]: one subagent run on a worker.
//! - [`session`]: the session a remote run gets on its worker, subagent or teammate.
//! - [`ship`]: what the lead ships with a remote run (the commit bundle, the spawn).
//! - [`pool`]: the lead's link to its workers, and slot placement.
//! - [`join`]: joining the configured workers for a session (`--workers`, settings).
//! - [`remote_task`]: a remote subagent seen from the lead.
//! - [`remote_teammate`]: a teammate placed on a worker, seen from the lead (its proxy).
//! - [`teammate_launch`]: starting one.
//! - [`teammate_node`]: the worker node's links to its teammates.
//! - [`teammate_run`]: that teammate on the worker (mail in, mail out, idle checkpoints).
//! - [`remote_ask`]: its Asks, answered by the lead's approver, one call at a time.
//! - [`remote_judge`]: a remote subagent's Asks under a lead in auto, judged by the
//!   lead's classifier.
//! - [`team_wire`]: their wire types.
//! - [`bundle`]: git bundles both ways.
//! - [`placement`]: the definition field.
//! - [`config`]: cookie, addresses, shipped rules.
//! - [`tls`]: encrypted transport between lead and workers.
//! - [`snapshot`]: the lead's view of its workers, for `crew workers list`.

pub mod bundle;
pub(crate) mod config;
pub(crate) mod join;
pub(crate) mod node_actor;
pub(crate) mod placement;
pub mod pool_actor;
pub mod protocol;
pub(crate) mod remote_ask;
pub(crate) mod remote_judge;
pub(crate) mod remote_run;
pub(crate) mod remote_task;
pub(crate) mod remote_teammate_actor;
mod session;
mod ship;
pub(crate) mod snapshot;
pub(crate) mod team_wire;
pub(crate) mod teammate_launch;
pub(crate) mod teammate_node;
pub(crate) mod teammate_run;
pub(crate) mod tls;
