//! What PreToolUse hooks said about a call, as the permission engine receives it, and the
//! one place it changes a decision. The engine stays the only issuer of permits: a hook
//! cannot hand the gate anything, it can only move the engine's verdict — an `allow`
//! turns the mode fallback's Ask into Allow (never a Deny — a deny rule, a hard check,
//! protected paths, credentials, the sandbox — and never an explicit Ask: an `ask` rule,
//! a dangerous command, an unknown tool); an `ask` turns an Allow into an explicit Ask
//! (which dontAsk denies, nobody being there). A hook's `deny` never reaches the engine:
//! the call is refused before it. The gate and Plan Mode come after the engine, so no
//! verdict here can pass them.

use super::{Decision, PermissionMode, Source, Verdict};

/// The PreToolUse hooks' combined permission decision for one call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum HookOpinion {
    /// No hook decided (the engine decides alone).
    #[default]
    Silent,
    /// A hook answered `allow`, with its reason.
    Allow(String),
    /// A hook answered `ask`, with its reason.
    Ask(String),
}

/// The engine's decision `d` for a call in `mode`, after the hooks' `opinion`.
pub fn apply(mut d: Decision, opinion: &HookOpinion, mode: PermissionMode) -> Decision {
    match opinion {
        HookOpinion::Silent => d,
        HookOpinion::Allow(why) => {
            if d.verdict == Verdict::Ask && !d.explicit_ask {
                d.verdict = Verdict::Allow;
                d.source = Source::Hook;
                d.reason = format!(
                    "allowed by a PreToolUse hook ({why}) where the permission mode would have asked"
                );
            }
            d
        }
        HookOpinion::Ask(why) => {
            if d.verdict == Verdict::Allow {
                d.verdict = if mode == PermissionMode::DontAsk {
                    Verdict::Deny
                } else {
                    Verdict::Ask
                };
                d.source = Source::Hook;
                d.explicit_ask = true;
                d.reason = format!("a PreToolUse hook asks for confirmation: {why}");
                if mode == PermissionMode::DontAsk {
                    d.reason
                        .push_str("; dontAsk has no one to ask, so it is denied");
                }
            }
            d
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision(verdict: Verdict, source: Source, explicit: bool) -> Decision {
        let mut d = Decision::new(verdict, source, "engine");
        d.explicit_ask = explicit;
        d
    }

    #[test]
    fn allow_only_downgrades_the_fallback_ask() {
        let allow = HookOpinion::Allow("fmt ok".into());
        let m = PermissionMode::Default;
        let d = apply(decision(Verdict::Ask, Source::Mode, false), &allow, m);
        assert_eq!((d.verdict, d.source), (Verdict::Allow, Source::Hook));
        for (v, s, e) in [
            (
                Verdict::Deny,
                Source::Rule(super::super::Layer::User),
                false,
            ),
            (Verdict::Deny, Source::Sandbox, false),
            (Verdict::Deny, Source::Credentials, false),
            (
                Verdict::Ask,
                Source::Rule(super::super::Layer::Project),
                true,
            ),
            (Verdict::Ask, Source::Mode, true),
            (Verdict::Ask, Source::Unknown, true),
        ] {
            let d = apply(decision(v, s, e), &allow, m);
            assert_eq!(d.verdict, v, "{s:?}");
            assert_ne!(d.source, Source::Hook);
        }
    }

    #[test]
    fn ask_upgrades_an_allow_and_dont_ask_denies_it() {
        let ask = HookOpinion::Ask("check".into());
        let d = apply(
            decision(Verdict::Allow, Source::Mode, false),
            &ask,
            PermissionMode::BypassPermissions,
        );
        assert_eq!(d.verdict, Verdict::Ask);
        assert!(d.explicit_ask);
        let d = apply(
            decision(Verdict::Allow, Source::Mode, false),
            &ask,
            PermissionMode::DontAsk,
        );
        assert_eq!(d.verdict, Verdict::Deny);
        let d = apply(
            decision(Verdict::Deny, Source::Blacklist, false),
            &ask,
            PermissionMode::Default,
        );
        assert_eq!(d.source, Source::Blacklist);
    }
}
