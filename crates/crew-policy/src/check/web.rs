//! Fetching a URL (`web_fetch`). The URL must be http(s) without credentials
//! (`web::FetchUrl`, else the call is denied as malformed). Its host is then decided from
//! one list made of two sources, as Claude Code merges them:
//!
//! 1. `WebFetch(domain:HOST)` rules, by layer as every rule (a deny anywhere wins; an
//!    `ask` rule asks even for a listed host);
//! 2. `sandbox.network.allowedDomains` of the user's own settings: a host listed there
//!    for sandboxed commands may be fetched too, without asking;
//! 3. otherwise the fetch asks (bypassPermissions allows it; auto mode's classifier
//!    answers; dontAsk denies it, since nobody is there and no OS sandbox confines the
//!    request crew itself sends).
//!
//! The rules do not widen the other way: a `WebFetch` allow rule lets `web_fetch` (a GET
//! whose answer comes back as text) through, not a sandboxed command's arbitrary traffic.

use crew_config::host_pattern::HostPattern;

use super::super::rules::{self, Subject};
use super::super::web::FetchUrl;
use super::super::{Category, Decision, PermissionMode, Source, Verdict, mode};
use super::{Ctx, aimed, from_rule};

/// The decision for fetching `raw`.
pub(super) fn web_decision(ctx: &Ctx<'_>, category: Category, raw: &str) -> Decision {
    let url = match FetchUrl::parse(raw) {
        Ok(u) => u,
        Err(e) => {
            let mut d = Decision::new(Verdict::Deny, Source::Arguments, e.to_string());
            d.category = Some(category);
            return d;
        }
    };
    let subject = Subject::Host {
        host: url.host(),
        port: url.port(),
    };
    let shown = url.to_string();
    let d = match rules::decide(&ctx.policy.rules, &subject) {
        Some(rule) => from_rule(rule, &shown),
        None => match listed(ctx, &url) {
            Some(entry) => {
                let mut d = Decision::new(
                    Verdict::Allow,
                    Source::Sandbox,
                    format!(
                        "`{shown}` is allowed: its host is listed in \
                         sandbox.network.allowedDomains (`{entry}`)"
                    ),
                );
                d.rule = Some(format!("sandbox.network.allowedDomains: {entry}"));
                d
            }
            None => unlisted(ctx.mode(), category, &url),
        },
    };
    aimed(d, shown)
}

/// The `allowedDomains` entry that lists `url`'s host and port, if one does.
fn listed(ctx: &Ctx<'_>, url: &FetchUrl) -> Option<String> {
    ctx.policy
        .network
        .allowed_domains
        .iter()
        .filter_map(|e| HostPattern::parse(e).ok())
        .find(|p| p.matches(url.host(), url.port()))
        .map(|p| p.to_string())
}

/// The decision for a host nothing lists: the mode's, with the rule that would allow it.
fn unlisted(mode: PermissionMode, category: Category, url: &FetchUrl) -> Decision {
    let host = url.rule_host();
    let rule = url.domain_rule();
    let how = format!(
        "to fetch from it without asking, add `{rule}` to permissions.allow \
         in .crew/settings.local.json (or \"{host}\" to sandbox.network.allowedDomains in \
         your own settings)"
    );
    let listed_nowhere = format!(
        "no `WebFetch(domain:…)` rule and no sandbox.network.allowedDomains entry lists the \
         host `{host}` (fetching `{url}`)"
    );
    let mut d = if mode == PermissionMode::DontAsk {
        Decision::new(
            Verdict::Deny,
            Source::Mode,
            format!(
                "{listed_nowhere}, and dontAsk has nobody to ask (no OS sandbox confines a \
                 request crew sends itself), so it is denied; {how}"
            ),
        )
    } else {
        let verdict = mode::fallback(mode, category);
        let said = mode::fallback_reason(mode, category, verdict);
        Decision::new(
            verdict,
            Source::Mode,
            format!("{said}: {listed_nowhere}; {how}"),
        )
    };
    d.category = Some(category);
    d
}

#[cfg(test)]
mod tests {
    use crate::{
        CheckRequest, Decision, Layer, PermissionMode, PermissionSpec, Policy, Rule, RuleName,
        Source, TargetSpec, Verdict, check,
    };
    use crew_protocol::ToolCall;
    use crew_protocol::decision::Category;

    fn fetch(url: &str, mode: PermissionMode, policy: &Policy) -> Decision {
        let spec = PermissionSpec::new(
            Category::Network,
            [RuleName::WebFetch],
            TargetSpec::url("url"),
        );
        let req = CheckRequest {
            call: ToolCall {
                id: "1".into(),
                name: "web_fetch".into(),
                arguments: serde_json::json!({ "url": url }).to_string(),
            },
            spec: Some(spec),
            cwd: std::env::temp_dir(),
            mode,
        };
        check(&req, policy)
    }

    /// Rules (kind, layer, text), allowedDomains entries, then the verdict and its source.
    type Case<'a> = (
        &'a [(Verdict, Layer, &'a str)],
        &'a [&'a str],
        Verdict,
        Source,
    );

    fn policy(rules: &[(Verdict, Layer, &str)], allowed: &[&str]) -> Policy {
        let mut p = Policy {
            rules: rules
                .iter()
                .map(|(k, l, r)| Rule::parse(r, *k, *l, None).unwrap())
                .collect(),
            ..Policy::default()
        };
        p.network.allowed_domains = allowed.iter().map(|s| s.to_string()).collect();
        p
    }

    #[test]
    fn an_unlisted_host_asks_naming_the_rule_that_would_allow_it() {
        use PermissionMode::*;
        let none = Policy::default();
        for (mode, want) in [
            (Default, Verdict::Ask),
            (Strict, Verdict::Ask),
            (AcceptEdits, Verdict::Ask),
            (Auto, Verdict::Ask),
            (BypassPermissions, Verdict::Allow),
            (DontAsk, Verdict::Deny),
        ] {
            let d = fetch("https://Docs.example.com/a", mode, &none);
            assert_eq!(d.verdict, want, "{mode}: {d:?}");
            assert_eq!(d.category, Some(Category::Network));
            assert_eq!(d.target.as_deref(), Some("https://docs.example.com/a"));
            if want != Verdict::Allow {
                assert!(
                    d.reason.contains("`WebFetch(domain:docs.example.com)`")
                        && d.reason.contains("sandbox.network.allowedDomains"),
                    "{mode}: {}",
                    d.reason
                );
            }
        }
        // The fallback's ask, not one meant for a human: auto mode's classifier answers it.
        assert!(!fetch("https://a.example/", Auto, &none).explicit_ask);
        let d = fetch("http://[::1]:8080/", Default, &none);
        assert!(
            d.reason.contains("`WebFetch(domain:[::1])`"),
            "{}",
            d.reason
        );
    }

    #[test]
    fn rules_and_allowed_domains_form_one_list_and_a_deny_wins() {
        use Layer::{Local, Project, User};
        use PermissionMode::{Default, DontAsk};
        use Verdict::{Allow, Ask, Deny};
        let url = "http://127.0.0.1:8080/x";
        let cases: [Case; 8] = [
            (
                &[(Allow, User, "WebFetch(domain:127.0.0.1)")],
                &[],
                Allow,
                Source::Rule(User),
            ),
            (&[], &["127.0.0.1"], Allow, Source::Sandbox),
            (&[], &["127.0.0.1:8080"], Allow, Source::Sandbox),
            // An entry for another port does not list this one.
            (&[], &["127.0.0.1:9090"], Ask, Source::Mode),
            // A deny in any layer beats an allow rule and an allowedDomains entry.
            (
                &[
                    (Allow, Local, "WebFetch(domain:127.0.0.1)"),
                    (Deny, Project, "WebFetch(domain:127.0.0.1)"),
                ],
                &["127.0.0.1"],
                Deny,
                Source::Rule(Project),
            ),
            (
                &[(Deny, User, "WebFetch")],
                &["127.0.0.1"],
                Deny,
                Source::Rule(User),
            ),
            // An ask rule asks even for a listed host.
            (
                &[(Ask, Local, "WebFetch(domain:127.0.0.1)")],
                &["127.0.0.1"],
                Ask,
                Source::Rule(Local),
            ),
            // A rule for another host decides nothing here.
            (
                &[(Allow, Local, "WebFetch(domain:*.127.0.0.1)")],
                &[],
                Ask,
                Source::Mode,
            ),
        ];
        for (rules, allowed, want, source) in cases {
            let p = policy(rules, allowed);
            let d = fetch(url, Default, &p);
            assert_eq!(
                (d.verdict, d.source),
                (want, source),
                "{rules:?} {allowed:?}: {d:?}"
            );
        }
        // Unattended, a listed host is fetched and an ask rule becomes a denial.
        let listed = policy(&[], &["127.0.0.1"]);
        assert_eq!(fetch(url, DontAsk, &listed).verdict, Allow);
        let asks = policy(&[(Ask, Local, "WebFetch(domain:127.0.0.1)")], &[]);
        assert_eq!(fetch(url, DontAsk, &asks).verdict, Deny);
    }

    #[test]
    fn a_url_that_cannot_be_fetched_is_denied_before_any_rule() {
        let all = policy(
            &[(Verdict::Allow, Layer::User, "WebFetch")],
            &["example.com"],
        );
        for url in [
            "file:///etc/passwd",
            "https://user:secret@example.com/",
            "ftp://example.com/",
            "not a url",
        ] {
            for mode in [PermissionMode::Default, PermissionMode::BypassPermissions] {
                let d = fetch(url, mode, &all);
                assert_eq!(
                    (d.verdict, d.source),
                    (Verdict::Deny, Source::Arguments),
                    "{url}"
                );
                assert!(d.reason.contains("argument `url`"), "{}", d.reason);
            }
        }
    }
}
