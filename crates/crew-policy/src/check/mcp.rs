//! Calling an MCP server's tool. No OS sandbox confines a server: whatever it does, it
//! does as the user. So a rule decides first (deny anywhere wins, as everywhere); with no
//! rule, a tool that is not read-only (by its configured or trusted server's
//! `readOnlyHint`) is denied under dontAsk and auto, where no human would see the call,
//! and asks in default mode as before. A read-only tool falls back by mode.

use super::super::mode::unattended;
use super::super::rules::{self, Subject};
use super::super::{Category, Decision, PermissionMode, Source, Verdict};
use super::{Ctx, aimed, fallback, from_rule};

/// The decision for the MCP tool `name` (`mcp__server__tool`).
pub(super) fn mcp_decision(ctx: &Ctx<'_>, category: Category, name: &str) -> Decision {
    let read_only = ctx.req.spec.as_ref().is_some_and(|s| s.mcp_is_read_only());
    let d = match rules::decide(&ctx.policy.rules, &Subject::Mcp(name)) {
        Some(r) => from_rule(r, name),
        None if !read_only && unattended(ctx.mode()) => unconfined(ctx.mode(), name),
        None => fallback(ctx.mode(), category, ""),
    };
    aimed(d, name)
}

/// The denial of a tool that may change things, with what would permit it.
fn unconfined(mode: PermissionMode, name: &str) -> Decision {
    let server = server_rule(name);
    let mut d = Decision::new(
        Verdict::Deny,
        Source::Mode,
        format!(
            "`{name}` is an MCP tool its server does not mark read-only, and no OS sandbox \
             confines an MCP server, so {mode} mode denies it; an allow rule `{name}` or \
             `{server}` in the settings would permit it"
        ),
    );
    d.category = Some(Category::Mcp);
    d
}

/// `mcp__server` for `mcp__server__tool` (the rule naming every tool of the server).
fn server_rule(name: &str) -> &str {
    let rest = name.strip_prefix("mcp__").unwrap_or(name);
    match rest.find("__") {
        Some(i) => &name[..5 + i],
        None => name,
    }
}

#[cfg(test)]
mod tests {
    use crate::{
        CheckRequest, Layer, PermissionMode, PermissionSpec, Policy, Rule, Verdict, check,
    };
    use crew_protocol::ToolCall;

    fn decide(name: &str, spec: PermissionSpec, mode: PermissionMode, policy: &Policy) -> Verdict {
        let req = CheckRequest {
            call: ToolCall {
                id: "1".into(),
                name: name.into(),
                arguments: "{}".into(),
            },
            spec: Some(spec),
            cwd: std::env::temp_dir(),
            mode,
        };
        check(&req, policy).verdict
    }

    fn policy(kind: Verdict, rule: &str) -> Policy {
        Policy {
            rules: vec![Rule::parse(rule, kind, Layer::User, None).unwrap()],
            ..Policy::default()
        }
    }

    #[test]
    fn a_write_tool_is_denied_unattended_unless_a_rule_names_it() {
        use PermissionMode::*;
        let none = Policy::default();
        let w = PermissionSpec::mcp;
        for (mode, want) in [
            (DontAsk, Verdict::Deny),
            (Auto, Verdict::Deny),
            (Default, Verdict::Ask),
            (BypassPermissions, Verdict::Allow),
        ] {
            assert_eq!(decide("mcp__fs__write", w(), mode, &none), want, "{mode}");
        }
        for rule in ["mcp__fs__write", "mcp__fs", "mcp__fs__*"] {
            let p = policy(Verdict::Allow, rule);
            for mode in [DontAsk, Auto] {
                assert_eq!(
                    decide("mcp__fs__write", w(), mode, &p),
                    Verdict::Allow,
                    "{rule} {mode}"
                );
            }
        }
        let other = policy(Verdict::Allow, "mcp__other");
        assert_eq!(
            decide("mcp__fs__write", w(), DontAsk, &other),
            Verdict::Deny
        );
    }

    #[test]
    fn a_read_only_tool_falls_back_by_mode() {
        use PermissionMode::*;
        let none = Policy::default();
        let deny = policy(Verdict::Deny, "mcp__fs__read");
        let r = PermissionSpec::mcp_read_only;
        for (mode, policy, want) in [
            (DontAsk, &none, Verdict::Allow),
            (Default, &none, Verdict::Ask),
            (DontAsk, &deny, Verdict::Deny),
        ] {
            assert_eq!(decide("mcp__fs__read", r(), mode, policy), want, "{mode}");
        }
    }

    #[test]
    fn the_server_rule_is_the_name_up_to_the_tool() {
        assert_eq!(super::server_rule("mcp__fs__write"), "mcp__fs");
        assert_eq!(super::server_rule("mcp__my_srv__a__b"), "mcp__my_srv");
        assert_eq!(super::server_rule("mcp__fs"), "mcp__fs");
    }
}
