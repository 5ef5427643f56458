//! The `autoMode` settings as the layers resolve them: whether auto mode is off, and the
//! classifier's model and time limit.

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
