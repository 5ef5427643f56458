//! The session's auto mode and starting permission mode, from settings and flags:
//! the classifier (`autoMode.model`, else the session's own model unless that is the
//! demo), and the mode the lead starts in — `--permission-mode`, else
//! `permissions.defaultMode` — which goes through `agent::transition` like every
//! other mode change, so a disabled bypass or an unavailable auto mode is refused here too.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::agent::transition::{ModeContext, ModeState, Target, transition};
use crate::auto_mode::AutoMode;
use crate::auto_mode::classifier::{ClassifierConfig, DEFAULT_TIMEOUT};
use crate::permission::auto::suspend;
use crate::permission::{PermissionMode, Policy};
use crate::session::model::{ChosenModel, choose};

/// The session's auto mode: its classifier, if one can be configured.
pub(super) fn auto_mode(
    policy: &Policy,
    session: &ChosenModel,
    record: Option<PathBuf>,
) -> anyhow::Result<Arc<AutoMode>> {
    let settings = policy.auto_mode.clone();
    let timeout = settings
        .timeout_ms
        .map(Duration::from_millis)
        .unwrap_or(DEFAULT_TIMEOUT);
    let classifier = match &settings.model {
        Some(spec) => {
            let chosen = choose(Some(spec), record)
                .map_err(|e| anyhow::anyhow!("autoMode.model `{spec}` in the settings: {e:#}"))?;
            (!chosen.is_demo).then(|| ClassifierConfig {
                provider: chosen.provider,
                model: chosen.model,
                timeout,
            })
        }
        // The demo script cannot judge anything: no classifier, no auto mode.
        None if session.is_demo => None,
        None => Some(ClassifierConfig {
            provider: session.provider.clone(),
            model: session.model.clone(),
            timeout,
        }),
    };
    Ok(AutoMode::new(settings, classifier))
}

/// What mode changes depend on at start.
pub(super) fn mode_context(policy: &Policy, auto: &AutoMode) -> ModeContext {
    ModeContext {
        bypass_disabled: policy.bypass_disabled,
        auto: auto.availability(),
        suspended: suspended(policy),
    }
}

/// The text of the allow rules auto mode sets aside.
pub(super) fn suspended(policy: &Policy) -> Vec<String> {
    suspend::suspended_rules(policy)
        .into_iter()
        .map(|(r, _)| r.text.clone())
        .collect()
}

/// The lead's starting mode: `flag` (an explicit choice: a refusal is an error), else
/// the settings' `defaultMode` (a refusal is a warning and `default`).
pub(super) fn starting_mode(
    policy: &Policy,
    auto: &AutoMode,
    flag: Option<&str>,
    warn: &mut dyn FnMut(String),
) -> anyhow::Result<PermissionMode> {
    let ctx = mode_context(policy, auto);
    let start = ModeState::Mode(PermissionMode::Default);
    let Some(name) = flag else {
        let wanted = policy.default_mode;
        return Ok(match transition(start, Target::Mode(wanted), &ctx) {
            Ok(fx) => fx.state.permission(),
            Err(refused) => {
                warn(format!(
                    "permissions.defaultMode `{wanted}` is not used: {refused}; starting in default mode"
                ));
                PermissionMode::Default
            }
        });
    };
    // A typo on the command line is an error (exit 2); only a settings file falls back.
    let wanted: PermissionMode = name
        .parse()
        .map_err(|e| anyhow::anyhow!("--permission-mode: {e}"))?;
    transition(start, Target::Mode(wanted), &ctx)
        .map(|fx| fx.state.permission())
        .map_err(|refused| anyhow::anyhow!("--permission-mode {wanted}: {refused}"))
}
