//! Which allow rules are set aside while in auto mode: the ones that would let code run
//! unchecked, past the classifier (seed 003). `Bash` and `Bash(*)`, a wildcard command
//! rule whose first word runs code (`python:*`, `sudo:*`, `npm exec:*` …:
//! `commands::code_running_programs`, `commands::runners`), a regex or negation command
//! rule (what it admits cannot be read off), and a whole `Agent` rule.
//!
//! Suspension is keyed on the calling agent's mode, not stored: `effective` hands `check`
//! the policy without those rules when the mode is auto, so leaving auto restores them by
//! construction and a subagent in auto and a lead outside it each see their own set.

use std::borrow::Cow;

use crate::cache::PolicyCache;
use crate::commands;
use crate::rules::{Rule, RuleKind};
use crate::spec::RuleName;
use crate::{PermissionMode, Policy};

/// Why `rule` is set aside in auto mode, or `None` when it stays in force.
pub fn suspended_in_auto(rule: &Rule) -> Option<&'static str> {
    if rule.kind != RuleKind::Allow {
        return None;
    }
    match rule.rule_name()? {
        RuleName::Agent if rule.covers_whole_tool() => {
            Some("it allows starting any subagent unchecked")
        }
        RuleName::Bash if rule.covers_whole_tool() => Some("it allows every command"),
        RuleName::Bash => {
            let spec = rule.specifier().unwrap_or("");
            if spec.starts_with('~') || spec.starts_with('!') {
                return Some("a regex or negation command rule may admit any program");
            }
            let spec = spec.strip_prefix('=').unwrap_or(spec);
            let head = spec
                .split(|c: char| c.is_whitespace() || c == ':')
                .next()
                .unwrap_or("");
            let program = head.rsplit('/').next().unwrap_or(head);
            let wild = spec.contains('*');
            let literal = spec.split('*').next().unwrap_or("");
            let words: Vec<&str> = literal
                .split(|c: char| c.is_whitespace() || c == ':')
                .filter(|w| !w.is_empty())
                .collect();
            if head.contains('*')
                || (wild && commands::runs_code(program))
                || commands::rule_may_run_hidden(&words, wild)
            {
                Some("it lets an interpreter or wrapper run any code")
            } else {
                None
            }
        }
        _ => None,
    }
}

/// The rules `policy` sets aside in auto mode, with why.
pub fn suspended_rules(policy: &Policy) -> Vec<(&Rule, &'static str)> {
    policy
        .rules
        .iter()
        .filter_map(|r| suspended_in_auto(r).map(|why| (r, why)))
        .collect()
}

/// The policy `check` decides a call of an agent in `mode` by: in auto mode, without the
/// suspended rules (with its own cache, since the rule index is built per rule list);
/// otherwise `policy` itself.
pub fn effective(policy: &Policy, mode: PermissionMode) -> Cow<'_, Policy> {
    if mode != PermissionMode::Auto || !policy.rules.iter().any(|r| suspended_in_auto(r).is_some())
    {
        return Cow::Borrowed(policy);
    }
    let mut p = policy.clone();
    p.rules.retain(|r| suspended_in_auto(r).is_none());
    p.cache = PolicyCache::default();
    Cow::Owned(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Layer;

    fn allow(text: &str) -> Rule {
        Rule::parse(text, RuleKind::Allow, Layer::Local, None).unwrap()
    }

    #[test]
    #[rustfmt::skip]
    fn blanket_interpreter_and_agent_rules_are_suspended() {
        for text in [
            "Bash", "Bash(*)", "Bash(python:*)", "Bash(python3 *)", "Bash(node:*)", "Bash(bash:*)",
            "Bash(sh:*)", "Bash(sudo:*)", "Bash(/usr/bin/python3:*)", "Bash(npm:*)", "Bash(npm *)",
            "Bash(npm exec:*)", "Bash(npm x *)", "Bash(pnpm:*)", "Bash(pnpm dlx:*)",
            "Bash(yarn exec:*)", "Bash(bun x:*)", "Bash(uv run:*)", "Bash(pipx run:*)",
            "Bash(uvx:*)", "Bash(make:*)", "Bash(~^git .*)", "Bash(*test*)", "Agent", "Agent(*)",
        ] {
            assert!(suspended_in_auto(&allow(text)).is_some(), "{text}");
        }
    }

    #[test]
    #[rustfmt::skip]
    fn specific_rules_and_non_allow_rules_stay() {
        for text in [
            "Bash(npm test:*)", "Bash(git status)", "Bash(python script.py)", "Bash(cargo build:*)",
            "Agent(explore)", "Edit(src/**)", "Read",
        ] {
            assert!(suspended_in_auto(&allow(text)).is_none(), "{text}");
        }
        let deny = Rule::parse("Bash(python:*)", RuleKind::Deny, Layer::Local, None).unwrap();
        assert!(suspended_in_auto(&deny).is_none(), "a deny only tightens");
    }

    #[test]
    fn a_wildcard_rule_on_every_program_the_engine_knows_to_run_code_is_suspended() {
        let programs: Vec<&str> = commands::code_running_programs().collect();
        // The engine's wrapper table, its interpreters and its other code runners.
        for known in [
            "sudo", "xargs", ".", "strace", "bash", "python3", "deno", "awk",
        ] {
            assert!(programs.contains(&known), "{known} is not in the table");
        }
        for p in commands::wrappers()
            .chain(commands::INTERPRETERS.iter().copied())
            .chain(commands::runner_programs())
        {
            for text in [
                format!("Bash({p}:*)"),
                format!("Bash({p} *)"),
                format!("Bash(/usr/bin/{p}:*)"),
            ] {
                assert!(suspended_in_auto(&allow(&text)).is_some(), "{text}");
            }
            let exact = format!("Bash({p} --version)");
            assert!(suspended_in_auto(&allow(&exact)).is_none(), "{exact}");
        }
    }

    #[test]
    fn effective_policy_drops_suspended_rules_only_in_auto() {
        let policy = Policy {
            rules: vec![allow("Bash(python:*)"), allow("Bash(npm test:*)")],
            ..Policy::default()
        };
        assert!(matches!(
            effective(&policy, PermissionMode::Default),
            Cow::Borrowed(_)
        ));
        let auto = effective(&policy, PermissionMode::Auto);
        let texts: Vec<&str> = auto.rules.iter().map(|r| r.text.as_str()).collect();
        assert_eq!(texts, ["Bash(npm test:*)"]);
        assert_eq!(policy.rules.len(), 2, "the policy itself is untouched");
    }
}
