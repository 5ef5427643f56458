//! The safety-test ledger for this crate's unit tests: the same file the root crate's
//! tests use (`tests/support/ledger.rs`), so a unit test that needs Landlock or
//! namespaces fails where they are missing unless the opt-out variable says so, and
//! `.ci/run` lists it as ran or skipped like every other safety test.

/// What the ledger calls `krate::sandbox`: this crate.
mod krate {
    pub use crate as sandbox;
}

#[path = "../../../tests/support/ledger.rs"]
mod ledger;

pub(crate) use ledger::{Feature, require, require_named};
