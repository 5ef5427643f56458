//! Kernel features the safety tests need, as an explicit state: the shared ledger
//! (`ledger.rs`, also used by the unit tests inside `src/`) for the integration tests, and
//! [`require_features!`], which returns from the calling test when a feature is knowingly
//! absent. See `ledger.rs` for the rules (fail unless the opt-out says so, record either way).

use crewmaster as krate;

#[path = "ledger.rs"]
mod ledger;

// Each test binary uses only some of these.
#[allow(unused_imports)]
pub use ledger::{
    Feature, ledger_path, record_ran, record_skip, require, require_named, test_name,
};

/// Returns from the calling test when [`require`] says so.
#[macro_export]
macro_rules! require_features {
    ($($f:ident),+ $(,)?) => {
        if !$crate::support::kernel::require(&[$($crate::support::kernel::Feature::$f),+]) {
            return;
        }
    };
}
