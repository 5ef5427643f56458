//! The pure part of auto mode (seed 003) that the decision needs: its settings
//! (`autoMode`), whether it can be entered (`Availability`, used by `transition`), and the
//! allow rules it sets aside (`suspend`). The classifier — a model call through the
//! provider, async — and the session's breaker and tally are `crate::auto_mode`, which the
//! pipeline asks where the engine would ask.

pub mod suspend;

/// The `autoMode` settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AutoSettings {
    /// `autoMode.enabled: false` in any layer: auto mode is off.
    pub disabled: bool,
    /// `autoMode.model`: the classifier's model (default: the session's model).
    pub model: Option<String>,
    /// `autoMode.timeoutMs`: how long one classification may take.
    pub timeout_ms: Option<u64>,
}

/// Whether auto mode can be entered, and if not, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Availability {
    /// A classifier is configured and the breaker is closed.
    Available,
    /// `autoMode.enabled` is false.
    Disabled,
    /// No classifier model: no `autoMode.model` and the session has no real model.
    NoClassifier,
    /// The breaker tripped (why); `/auto reset` closes it.
    Tripped(String),
}

impl Availability {
    /// Why auto mode cannot be entered (`None` when it can).
    pub fn refusal(&self) -> Option<String> {
        match self {
            Availability::Available => None,
            Availability::Disabled => Some("auto mode is disabled by `autoMode.enabled: false` in the settings".into()),
            Availability::NoClassifier => Some("auto mode needs a classifier model: set `autoMode.model` in .crew/settings.local.json or run with a real --model".into()),
            Availability::Tripped(why) => Some(format!("auto mode was switched off because {why}; type /auto reset to allow it again")),
        }
    }
}
