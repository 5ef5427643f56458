//! The typed settings and the files they come from: which settings files exist and in
//! what precedence (`layers`), whether git tracks a local one (`tracked`), the JSON of
//! each file read into typed values (`settings`; the values below the engine,
//! `sandbox_settings`, `settings_network` and `host_pattern`, come from the `crew-config`
//! crate, as does `loaded`, the one list of what crew loads from a project as code or
//! policy, which the engine, the OS sandbox and the trust pin all protect), and `settings::load_policy_with`, which hands the parsed rules and values to the permission engine.
//! The engine (`crate::permission`) decides; this module only reads and validates files.

pub(crate) mod layers;
pub(crate) mod settings;
pub(crate) mod tracked;

pub(crate) use crew_config::{loaded, sandbox_settings};
pub(crate) use settings::{SettingsError, Warning};
