//! The safety-test ledger for the unit tests inside `src/` (compiled only for tests): the
//! same file the integration tests use (`tests/support/ledger.rs`), so a unit test that
//! needs Landlock or namespaces fails where they are missing unless the opt-out variable
//! says so, and `.ci/run` lists it as ran or skipped like the tests in `tests/`.

use crate as krate;

#[path = "../tests/support/ledger.rs"]
mod ledger;

pub(crate) use ledger::{Feature, require, require_named};
