//! The transition matrix: every state × every target × the contexts that matter, each
//! checked against what the issue asks for, plus the named cases spelled out.

use super::*;

fn states() -> Vec<ModeState> {
    PermissionMode::ALL
        .into_iter()
        .map(ModeState::Mode)
        .chain(
            PermissionMode::ALL
                .into_iter()
                .map(|m| ModeState::Plan { before: m }),
        )
        .collect()
}

fn targets() -> Vec<Target> {
    let mut t: Vec<Target> = PermissionMode::ALL.into_iter().map(Target::Mode).collect();
    t.push(Target::Plan);
    t.push(Target::LeavePlan(PlanExit::Rejected));
    t.push(Target::LeavePlan(PlanExit::Cancelled));
    t.push(Target::LeavePlan(PlanExit::Approved(None)));
    t.extend(
        PermissionMode::ALL
            .into_iter()
            .map(|m| Target::LeavePlan(PlanExit::Approved(Some(m)))),
    );
    t
}

fn contexts() -> Vec<ModeContext> {
    let mut out = Vec::new();
    for bypass_disabled in [false, true] {
        for auto in [
            Availability::Available,
            Availability::Disabled,
            Availability::NoClassifier,
            Availability::Tripped("the classifier denied 3 calls in a row".into()),
        ] {
            out.push(ModeContext {
                bypass_disabled,
                auto,
                suspended: vec!["Bash(python:*)".into()],
            });
        }
    }
    out
}

/// Whether `ctx` lets a lead in `from` enter `to`.
fn may_enter(from: PermissionMode, to: PermissionMode, ctx: &ModeContext) -> bool {
    from == to
        || match to {
            PermissionMode::BypassPermissions => !ctx.bypass_disabled,
            PermissionMode::Auto => ctx.auto == Availability::Available,
            _ => true,
        }
}

#[test]
fn every_pair_of_modes_in_every_context() {
    let mut checked = 0;
    for ctx in contexts() {
        for from in states() {
            for to in targets() {
                checked += 1;
                let got = transition(from, to, &ctx);
                let old = from.permission();
                let in_plan = matches!(from, ModeState::Plan { .. });
                // What the new permission mode must be, or None when it must be refused.
                let want: Option<PermissionMode> = match to {
                    Target::Plan => Some(old),
                    Target::LeavePlan(_) if !in_plan => None,
                    Target::Mode(n) | Target::LeavePlan(PlanExit::Approved(Some(n))) => {
                        may_enter(old, n, &ctx).then_some(n)
                    }
                    // Rejected, cancelled, approved as it was: the saved mode, if allowed.
                    Target::LeavePlan(_) => {
                        Some(if may_enter(PermissionMode::Default, old, &ctx) {
                            old
                        } else {
                            PermissionMode::Default
                        })
                    }
                };
                let case = format!("{from:?} → {to:?} with {ctx:?}");
                let Some(new) = want else {
                    assert!(got.is_err(), "{case}: must be refused, got {got:?}");
                    continue;
                };
                let fx = got.unwrap_or_else(|e| panic!("{case}: refused: {e}"));
                assert_eq!(fx.state.permission(), new, "{case}");
                assert_eq!(
                    matches!(fx.state, ModeState::Plan { .. }),
                    to == Target::Plan,
                    "{case}: in Plan afterwards only when Plan was asked for"
                );
                let has = |f: &dyn Fn(&Effect) -> bool| fx.effects.iter().any(f);
                assert_eq!(
                    has(&|e| matches!(e, Effect::SetPermission(m) if *m == new)),
                    new != old,
                    "{case}: SetPermission"
                );
                assert_eq!(
                    has(&|e| matches!(e, Effect::SuspendRules(r) if r == &ctx.suspended)),
                    new == PermissionMode::Auto && old != PermissionMode::Auto,
                    "{case}: rules suspended on entering auto"
                );
                assert_eq!(
                    has(&|e| matches!(e, Effect::RestoreRules(r) if r == &ctx.suspended)),
                    old == PermissionMode::Auto && new != PermissionMode::Auto,
                    "{case}: rules restored on leaving auto"
                );
                assert_eq!(
                    has(&|e| matches!(e, Effect::EnterPlan { before } if *before == old)),
                    !in_plan && to == Target::Plan,
                    "{case}: EnterPlan saves the mode"
                );
                assert_eq!(
                    has(&|e| matches!(e, Effect::LeavePlan { restored } if *restored == new)),
                    in_plan && to != Target::Plan,
                    "{case}: LeavePlan"
                );
            }
        }
    }
    assert_eq!(checked, 8 * 12 * 16);
}

#[test]
fn plan_then_reject_restores_the_mode_from_before_plan() {
    let ctx = ModeContext::default();
    let entered = transition(
        ModeState::Mode(PermissionMode::AcceptEdits),
        Target::Plan,
        &ctx,
    )
    .unwrap();
    assert_eq!(
        entered.state,
        ModeState::Plan {
            before: PermissionMode::AcceptEdits
        }
    );
    let left = transition(entered.state, Target::LeavePlan(PlanExit::Rejected), &ctx).unwrap();
    assert_eq!(left.state, ModeState::Mode(PermissionMode::AcceptEdits));
    assert_eq!(
        left.effects,
        [Effect::LeavePlan {
            restored: PermissionMode::AcceptEdits
        }]
    );
}

#[test]
fn plan_entered_from_auto_returns_to_default_when_the_breaker_tripped_meanwhile() {
    let tripped = ModeContext {
        auto: Availability::Tripped("the classifier denied 3 calls in a row".into()),
        suspended: vec!["Bash".into()],
        ..ModeContext::default()
    };
    let from = ModeState::Plan {
        before: PermissionMode::Auto,
    };
    let left = transition(from, Target::LeavePlan(PlanExit::Rejected), &tripped).unwrap();
    assert_eq!(left.state, ModeState::Mode(PermissionMode::Default));
    assert!(
        left.effects
            .contains(&Effect::RestoreRules(vec!["Bash".into()]))
    );
    assert!(
        left.effects
            .iter()
            .any(|e| matches!(e, Effect::Notice(n) if n.contains("/auto reset")))
    );
}

#[test]
fn bypass_is_refused_when_settings_disable_it() {
    let ctx = ModeContext {
        bypass_disabled: true,
        ..ModeContext::default()
    };
    for from in [
        ModeState::Mode(PermissionMode::Default),
        ModeState::Plan {
            before: PermissionMode::Default,
        },
    ] {
        let got = transition(from, Target::Mode(PermissionMode::BypassPermissions), &ctx);
        assert_eq!(got, Err(Refused::BypassDisabled));
        assert!(
            Refused::BypassDisabled
                .to_string()
                .contains("disableBypassPermissionsMode")
        );
    }
}

#[test]
fn shift_tab_cycles_default_accept_plan_bypass_auto() {
    let walk = |ctx: &ModeContext| {
        let mut state = ModeState::Mode(PermissionMode::Default);
        let mut seen = Vec::new();
        for _ in 0..5 {
            state = transition(state, cycle_target(state, ctx), ctx)
                .unwrap()
                .state;
            seen.push(match state {
                ModeState::Plan { .. } => "plan".to_string(),
                ModeState::Mode(m) => m.to_string(),
            });
        }
        seen
    };
    let all = ModeContext {
        auto: Availability::Available,
        ..ModeContext::default()
    };
    assert_eq!(
        walk(&all),
        [
            "acceptEdits",
            "plan",
            "bypassPermissions",
            "auto",
            "default"
        ]
    );
    let no_classifier = ModeContext::default();
    assert_eq!(
        walk(&no_classifier),
        [
            "acceptEdits",
            "plan",
            "bypassPermissions",
            "default",
            "acceptEdits"
        ]
    );
    let locked = ModeContext {
        bypass_disabled: true,
        auto: Availability::Tripped("x".into()),
        ..ModeContext::default()
    };
    assert_eq!(
        walk(&locked),
        ["acceptEdits", "plan", "default", "acceptEdits", "plan"]
    );
    assert_eq!(
        cycle_permission(PermissionMode::AcceptEdits, &all),
        PermissionMode::BypassPermissions
    );
}
