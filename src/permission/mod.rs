//! The permission engine as the rest of crewmaster sees it: the pure decision of the
//! `crew-policy` crate, re-exported whole (`permission::check`, `permission::Policy`,
//! `permission::rules` …), and the one thing that crate cannot hold — the permits the
//! engine hands out (`permit`). A `Permit` is minted only here, from an Allow, or from a
//! `Pending` together with the approver's `Approval` or auto mode's `ClassifierAllow`;
//! both tokens are built only by their own modules of this crate, so the decision crate
//! below can decide but never authorize.
//!
//! The `PermissionEngine` actor that holds the policy and answers agents is
//! `crate::engine`.

pub use crew_policy::*;

#[cfg(test)]
mod builtin_spec_tests;
mod permit;

pub use permit::{ApprovalMismatch, Checked, Pending, Permit};
