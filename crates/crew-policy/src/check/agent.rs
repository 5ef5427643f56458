//! Starting a subagent: deny rules, the delegation policy's refusals (a model-chosen
//! `isolation: none` for an agent that is not read-only, whatever the rules or mode),
//! ask/allow rules, then the delegation fallback (`delegation.rs`) by mode.

use super::super::rules::{RuleKind, Subject};
use super::super::{Category, Decision, Source, Verdict, delegation, rules};
use super::{Ctx, aimed, fallback, from_rule};

/// Starting a subagent of type `kind`, in the order the module comment gives.
pub(super) fn agent_decision(ctx: &Ctx<'_>, category: Category, kind: &str) -> Decision {
    let rule = rules::decide(&ctx.policy.rules, &Subject::Agent(kind));
    let by_mode = delegation::fallback(
        &ctx.policy.delegation,
        ctx.mode(),
        kind,
        &ctx.req.call.arguments,
    );
    let d = match (rule, by_mode) {
        (Some(r), _) if r.kind == RuleKind::Deny => from_rule(r, kind),
        (_, Err(why)) => Decision::new(Verdict::Deny, Source::Arguments, why.to_string()),
        (Some(r), _) => from_rule(r, kind),
        (None, Ok(Some(d))) => d,
        (None, Ok(None)) => fallback(ctx.mode(), category, ""),
    };
    aimed(d, kind)
}
