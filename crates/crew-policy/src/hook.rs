//! What PreToolUse hooks said about a call, and the one place it changes a decision. A
//! hook only moves the engine's verdict, which still issues every permit: `allow` turns
//! the mode fallback's Ask into Allow (never a Deny, never an explicit Ask), `ask` turns
//! an Allow into an explicit Ask (which dontAsk denies). A hook's `deny` refuses the call
//! before the engine; the gate and Plan Mode come after it.

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
    use super::super::Layer;
    use super::*;

    /// One row per case: the engine's decision (verdict, source, explicit ask), the hooks'
    /// opinion and the mode, then the verdict and source after `apply` and whether the
    /// result is an explicit ask.
    #[test]
    fn a_hook_moves_only_the_verdicts_it_may() {
        use PermissionMode::{BypassPermissions as Bypass, Default as Def, DontAsk};
        use Verdict::{Allow, Ask, Deny};
        let allow = HookOpinion::Allow("fmt ok".into());
        let ask = HookOpinion::Ask("check".into());
        #[rustfmt::skip]
        let table = [
            // An allow only downgrades the fallback's Ask…
            (Ask, Source::Mode, false, &allow, Def, Allow, Source::Hook, false),
            // …never a Deny, never an explicit Ask.
            (Deny, Source::Rule(Layer::User), false, &allow, Def, Deny, Source::Rule(Layer::User), false),
            (Deny, Source::Sandbox, false, &allow, Def, Deny, Source::Sandbox, false),
            (Deny, Source::Credentials, false, &allow, Def, Deny, Source::Credentials, false),
            (Ask, Source::Rule(Layer::Project), true, &allow, Def, Ask, Source::Rule(Layer::Project), true),
            (Ask, Source::Mode, true, &allow, Def, Ask, Source::Mode, true),
            (Ask, Source::Unknown, true, &allow, Def, Ask, Source::Unknown, true),
            // An ask upgrades an Allow (even in bypass); dontAsk denies it; a Deny stays.
            (Allow, Source::Mode, false, &ask, Bypass, Ask, Source::Hook, true),
            (Allow, Source::Mode, false, &ask, DontAsk, Deny, Source::Hook, true),
            (Deny, Source::Blacklist, false, &ask, Def, Deny, Source::Blacklist, false),
            // Silent hooks change nothing.
            (Ask, Source::Mode, false, &HookOpinion::Silent, Def, Ask, Source::Mode, false),
        ];
        for (v, s, explicit, opinion, mode, want_v, want_s, want_explicit) in table {
            let mut d = Decision::new(v, s, "engine");
            d.explicit_ask = explicit;
            let d = apply(d, opinion, mode);
            let case = format!("{v:?} from {s:?} (explicit {explicit}), hook {opinion:?}, {mode}");
            assert_eq!((d.verdict, d.source), (want_v, want_s), "{case}");
            assert_eq!(d.explicit_ask, want_explicit, "{case}");
        }
    }
}
