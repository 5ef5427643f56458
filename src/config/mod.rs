//! The typed settings and the files they come from: which settings files exist and in
//! what precedence (`layers`), whether git tracks a local one (`tracked`), the JSON of
//! each file read into typed values (`settings`, `sandbox_settings`, `settings_network`,
//! one network allow-list entry `host_pattern`),
//! the one list of what crew loads from a project as code or policy (`loaded`, which the
//! engine, the OS sandbox and the trust pin all protect), and `Policy::load_with`, which hands the parsed rules and values to the permission engine.
//! The engine (`crate::permission`) decides; this module only reads and validates files.

pub mod host_pattern;
pub mod layers;
pub mod loaded;
pub mod sandbox_settings;
pub mod settings;
pub mod settings_network;
pub(crate) mod tracked;

pub use settings::{SandboxSettings, SettingsError, Warning, find_project_root};
