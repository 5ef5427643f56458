//! Whether auto mode can be entered, and if not, why: the classifier's configuration and
//! the breaker decide it; the one state machine of mode changes (`agent::transition`)
//! reads it.

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
