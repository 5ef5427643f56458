//! The permission engine as the rest of crewmaster sees it: the `crew-policy` crate
//! re-exported whole, and what that crate cannot hold, the permits (`permit`). A `Permit`
//! is minted only here, from an Allow, or from a `Pending` with the approver's `Approval`
//! or auto mode's `ClassifierAllow`, tokens only their own modules build: the decision
//! crate can decide but never authorize.
//!
//! The `PermissionEngine` actor that holds the policy and answers agents is
//! `crate::engine`.

pub use crew_policy::*;

#[cfg(test)]
mod builtin_spec_tests;
mod permit;

pub use permit::{ApprovalMismatch, Checked, Pending, Permit};
