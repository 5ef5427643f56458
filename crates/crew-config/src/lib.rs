//! crewmaster's settings values that the permission engine holds and the OS sandbox
//! applies, below both: the `autoMode` key ([`auto_settings`]), the `sandbox` key
//! ([`sandbox_settings`]) with its `network` allow-list ([`settings_network`],
//! [`host_pattern`]), one layer's `limits` as written, and what reading a settings file
//! ends in besides its values: warnings and errors that name the file and the field
//! ([`settings`]). Paths are read as settings write them ([`paths`]), and crew's own
//! places are found before any file is read ([`places`]). And the one list of what crew
//! loads from a project as code or policy ([`loaded`]), which the engine, the OS sandbox
//! and the trust pin all protect.
//!
//! Values and their parsing, and the few file reads `loaded` needs: no async runtime, no
//! actors. The root crate's `config` module finds and reads the files, and builds the
//! permission engine's `Policy` from them; this crate must never depend on `crewmaster`
//! or `crew-policy`, so an import that runs back up from here is a compile error.

pub mod auto_settings;
pub mod host_pattern;
pub mod loaded;
pub mod paths;
pub mod places;
pub mod sandbox_settings;
pub mod settings;
pub mod settings_network;
