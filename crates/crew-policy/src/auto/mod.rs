//! The pure part of auto mode (seed 003) that the decision needs: the allow rules it sets
//! aside (`suspend`), and its settings (`autoMode`, `crew_config::auto_settings`). The
//! classifier — a model call through the provider, async — whether auto mode can be
//! entered, and the session's breaker and tally are the root crate's `auto_mode`, which
//! the pipeline asks where the engine would ask.

pub mod suspend;

pub use crew_config::auto_settings::AutoSettings;
