//! The one state machine for mode changes (Claude Code's `transitionPermissionMode`):
//! every path that changes the lead's mode — Shift+Tab, `/plan`, the plan review,
//! `--permission-mode`, `crew mcp serve`, the breaker — asks `transition(from, to, ctx)`
//! and carries out the `Effects` it returns, so each runs the same side effects.
//!
//! Pure. It saves the mode in use before Plan and restores it when Plan is left (also when
//! the plan is rejected); it names the allow rules auto mode sets aside on entry and
//! brings back on exit (`permission::auto::suspend` enforces them by mode); it refuses auto while
//! auto is unavailable (disabled, no classifier, breaker tripped) and bypassPermissions
//! while `permissions.disableBypassPermissionsMode` is `"disable"`.

pub(crate) use crate::auto_mode::AFTER_BREAKER;
use crate::auto_mode::Availability;
use crate::permission::PermissionMode;

/// Where the lead is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ModeState {
    /// A permission mode.
    Mode(PermissionMode),
    /// Plan Mode (read-only investigation), on top of the permission mode in use before
    /// it; that mode stays in force for the reads and comes back when Plan is left.
    Plan {
        /// The mode before Plan.
        before: PermissionMode,
    },
}

impl ModeState {
    /// The permission mode calls are checked in.
    pub(crate) fn permission(self) -> PermissionMode {
        match self {
            ModeState::Mode(m) | ModeState::Plan { before: m } => m,
        }
    }
}

/// How Plan Mode is left other than by picking another mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PlanExit {
    /// The plan was approved; the Do run uses the picked mode (`None`: the one before).
    Approved(Option<PermissionMode>),
    /// The plan was rejected.
    Rejected,
    /// Plan Mode was switched off without a plan (`/do` with nothing to do).
    Cancelled,
}

/// What is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// A permission mode (leaving Plan, if in it).
    Mode(PermissionMode),
    /// Plan Mode.
    Plan,
    /// Leave Plan Mode.
    LeavePlan(PlanExit),
}

/// What the transition depends on besides the two modes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ModeContext {
    /// `permissions.disableBypassPermissionsMode: "disable"` is set.
    pub bypass_disabled: bool,
    /// Whether auto mode can be entered.
    pub auto: Availability,
    /// The allow rules auto mode sets aside (their text).
    pub suspended: Vec<String>,
}

impl Default for ModeContext {
    fn default() -> Self {
        ModeContext {
            bypass_disabled: false,
            auto: Availability::NoClassifier,
            suspended: Vec::new(),
        }
    }
}

/// One side effect of a transition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Switch the permission mode of the lead (and of what shares it) to this.
    SetPermission(PermissionMode),
    /// Plan Mode starts; the mode before it is saved.
    EnterPlan {
        /// The saved mode.
        before: PermissionMode,
    },
    /// Plan Mode ends; this mode is in force again.
    LeavePlan {
        /// The mode after Plan.
        restored: PermissionMode,
    },
    /// Auto mode starts: these allow rules are set aside.
    SuspendRules(Vec<String>),
    /// Auto mode ends: these allow rules apply again.
    RestoreRules(Vec<String>),
    /// Something the user should be told (why the restored mode is not the saved one).
    Notice(String),
}

/// The outcome of an allowed transition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Effects {
    /// Where the lead is afterwards.
    pub state: ModeState,
    /// What to do, in order.
    pub effects: Vec<Effect>,
}

/// Why a transition was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refused {
    /// bypassPermissions is disabled by settings.
    #[error(
        "bypassPermissions is disabled by `permissions.disableBypassPermissionsMode: \"disable\"` in the settings"
    )]
    BypassDisabled,
    /// Auto mode cannot be entered (why).
    #[error("{0}")]
    AutoUnavailable(String),
    /// Plan Mode is not on.
    #[error("Plan Mode is not on")]
    NotPlanning,
}

/// Decides one mode change.
pub(crate) fn transition(
    from: ModeState,
    to: Target,
    ctx: &ModeContext,
) -> Result<Effects, Refused> {
    let before = from.permission();
    match (from, to) {
        (ModeState::Plan { .. }, Target::Plan) => Ok(Effects {
            state: from,
            effects: Vec::new(),
        }),
        (ModeState::Mode(m), Target::Plan) => Ok(Effects {
            state: ModeState::Plan { before: m },
            effects: vec![Effect::EnterPlan { before: m }],
        }),
        (ModeState::Mode(_), Target::LeavePlan(_)) => Err(Refused::NotPlanning),
        (ModeState::Mode(m), Target::Mode(n)) => {
            allowed(m, n, ctx)?;
            Ok(Effects {
                state: ModeState::Mode(n),
                effects: switch(m, n, ctx),
            })
        }
        (ModeState::Plan { .. }, Target::Mode(n))
        | (ModeState::Plan { .. }, Target::LeavePlan(PlanExit::Approved(Some(n)))) => {
            allowed(before, n, ctx)?;
            let mut effects = vec![Effect::LeavePlan { restored: n }];
            effects.extend(switch(before, n, ctx));
            Ok(Effects {
                state: ModeState::Mode(n),
                effects,
            })
        }
        (ModeState::Plan { .. }, Target::LeavePlan(_)) => {
            // The saved mode comes back, unless it may no longer be entered.
            let (restored, notice) = match allowed(PermissionMode::Default, before, ctx) {
                Ok(()) => (before, None),
                Err(why) => (
                    PermissionMode::Default,
                    Some(format!("{why}; back in default mode instead of {before}")),
                ),
            };
            let mut effects = vec![Effect::LeavePlan { restored }];
            effects.extend(switch(before, restored, ctx));
            effects.extend(notice.map(Effect::Notice));
            Ok(Effects {
                state: ModeState::Mode(restored),
                effects,
            })
        }
    }
}

/// The next stop of the Shift+Tab cycle: default → acceptEdits → plan →
/// bypassPermissions (only if allowed) → auto (only if available) → default. Modes
/// outside the cycle (strict, dontAsk) go to default.
pub(crate) fn cycle_target(from: ModeState, ctx: &ModeContext) -> Target {
    use PermissionMode::*;
    let after_bypass = if ctx.auto == Availability::Available {
        Target::Mode(Auto)
    } else {
        Target::Mode(Default)
    };
    let after_plan = if ctx.bypass_disabled {
        after_bypass
    } else {
        Target::Mode(BypassPermissions)
    };
    match from {
        ModeState::Mode(Default) => Target::Mode(AcceptEdits),
        ModeState::Mode(AcceptEdits) => Target::Plan,
        ModeState::Plan { .. } => after_plan,
        ModeState::Mode(BypassPermissions) => after_bypass,
        ModeState::Mode(Auto | Strict | DontAsk) => Target::Mode(Default),
    }
}

/// The next permission mode for a Do run picked in the plan review: the cycle without
/// Plan.
pub(crate) fn cycle_permission(from: PermissionMode, ctx: &ModeContext) -> PermissionMode {
    let state = match cycle_target(ModeState::Mode(from), ctx) {
        Target::Plan => cycle_target(ModeState::Plan { before: from }, ctx),
        t => t,
    };
    match state {
        Target::Mode(m) => m,
        Target::Plan | Target::LeavePlan(_) => PermissionMode::Default,
    }
}

fn allowed(from: PermissionMode, to: PermissionMode, ctx: &ModeContext) -> Result<(), Refused> {
    if from == to {
        return Ok(());
    }
    match to {
        PermissionMode::BypassPermissions if ctx.bypass_disabled => Err(Refused::BypassDisabled),
        PermissionMode::Auto => match ctx.auto.refusal() {
            Some(why) => Err(Refused::AutoUnavailable(why)),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

fn switch(from: PermissionMode, to: PermissionMode, ctx: &ModeContext) -> Vec<Effect> {
    let mut effects = Vec::new();
    if from == to {
        return effects;
    }
    if from == PermissionMode::Auto {
        effects.push(Effect::RestoreRules(ctx.suspended.clone()));
    }
    effects.push(Effect::SetPermission(to));
    if to == PermissionMode::Auto {
        effects.push(Effect::SuspendRules(ctx.suspended.clone()));
    }
    effects
}

#[cfg(test)]
#[path = "transition_tests.rs"]
mod tests;
