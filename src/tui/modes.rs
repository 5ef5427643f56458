//! How the TUI changes modes: Shift+Tab, `/plan`, the plan review and `/auto` all go
//! through `agent::transition`, and the app carries out the effects it returns
//! (the lead's permission mode, the Plan stage, notices naming the rules auto mode sets
//! aside). Also what the app does when the breaker switches auto mode off.

use super::app::{App, Effect};
use super::plan::PlanStage;
use crate::agent::transition::{
    self, Effect as ModeEffect, ModeContext, ModeState, PlanExit, Target,
};
use crate::auto_mode::Availability;
use crate::permission::PermissionMode;

impl App {
    /// What mode changes depend on now.
    pub(crate) fn mode_ctx(&self) -> ModeContext {
        ModeContext {
            bypass_disabled: self.info.bypass_disabled,
            auto: match &self.info.auto {
                Some(auto) => auto.availability(),
                None => Availability::NoClassifier,
            },
            suspended: self.info.suspended_in_auto.clone(),
        }
    }

    /// Where the lead is: Plan Mode (over the permission mode) or a permission mode.
    pub(crate) fn mode_state(&self) -> ModeState {
        match self.plan {
            PlanStage::Off => ModeState::Mode(self.permission),
            _ => ModeState::Plan {
                before: self.permission,
            },
        }
    }

    /// Shift+Tab: the next mode of the cycle.
    pub(super) fn cycle_mode(&mut self) {
        let ctx = self.mode_ctx();
        let to = transition::cycle_target(self.mode_state(), &ctx);
        self.change_mode(to);
    }

    /// Asks the state machine for `to` and carries out its effects; a refusal becomes a
    /// notice. Returns whether the change was made.
    pub(super) fn change_mode(&mut self, to: Target) -> bool {
        let ctx = self.mode_ctx();
        match transition::transition(self.mode_state(), to, &ctx) {
            Ok(fx) => {
                self.apply_mode(fx);
                true
            }
            Err(refused) => {
                self.notice(format!("Mode not changed: {refused}."));
                false
            }
        }
    }

    /// Carries out a transition's effects.
    pub(super) fn apply_mode(&mut self, fx: transition::Effects) {
        for effect in fx.effects {
            match effect {
                ModeEffect::SetPermission(mode) => {
                    self.permission = mode;
                    self.effect(Effect::SetPermissionMode(mode));
                }
                ModeEffect::EnterPlan { .. } => {
                    if self.plan == PlanStage::Off {
                        self.plan = PlanStage::Ready;
                    }
                }
                ModeEffect::LeavePlan { .. } => self.plan = PlanStage::Off,
                ModeEffect::SuspendRules(rules) if !rules.is_empty() => self.notice(format!(
                    "Auto mode: a classifier model decides what would ask. Suspended until you leave auto: {}.",
                    rules.join(", ")
                )),
                ModeEffect::SuspendRules(_) => {
                    self.notice("Auto mode: a classifier model decides what would ask.")
                }
                ModeEffect::RestoreRules(rules) if !rules.is_empty() => {
                    self.notice(format!("Left auto mode; restored: {}.", rules.join(", ")))
                }
                ModeEffect::RestoreRules(_) => {}
                ModeEffect::Notice(text) => self.notice(text),
            }
        }
        self.permission = fx.state.permission();
    }

    /// The breaker switched auto mode off (the session already moved the lead's mode).
    pub(super) fn on_auto_off(&mut self, reason: String) {
        if self.permission == PermissionMode::Auto {
            if self.plan == PlanStage::Off {
                self.change_mode(Target::Mode(transition::AFTER_BREAKER));
            } else {
                // Planning over auto: Plan stays on, over the mode the breaker chose.
                self.permission = transition::AFTER_BREAKER;
                self.effect(Effect::SetPermissionMode(self.permission));
            }
        }
        self.notice(format!(
            "Auto mode is off: {reason}. Calls ask again; type /auto reset to allow auto mode again."
        ));
        self.auto_off = Some(reason);
    }

    /// `/auto` (enter auto mode) and `/auto reset` (close the breaker).
    pub(super) fn auto_command(&mut self, args: &str) {
        match args.trim() {
            "reset" => {
                match &self.info.auto {
                    Some(auto) => {
                        auto.reset();
                        self.auto_off = None;
                        self.notice("Auto mode's breaker is reset; Shift+Tab or /auto enters auto mode again.");
                    }
                    None => self.notice("Auto mode is not available in this session."),
                }
            }
            "" => {
                self.change_mode(Target::Mode(PermissionMode::Auto));
            }
            other => self.notice(format!(
                "Unknown /auto argument `{other}`: use /auto or /auto reset."
            )),
        }
    }

    /// Leaves Plan Mode without a Do run (reject, `/do` with no plan): the mode from
    /// before Plan comes back.
    pub(super) fn leave_plan(&mut self, exit: PlanExit) {
        self.change_mode(Target::LeavePlan(exit));
    }
}
