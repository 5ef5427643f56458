//! The decision itself (`check`): classify and parse → hard checks (blacklist,
//! credentials, sandbox, protected paths) → rules by layer → dangerous asks → mode fallback;
//! then, under dontAsk, any Ask becomes Deny (nobody is there to answer).
//!
//! This file holds the entry point, the per-call context (`Ctx`) and the helpers that turn
//! a rule or the mode into a `Decision`; each kind of target is decided in its own file:
//! `path` (file tools), `command` (shell commands), `agent` (starting subagents), `web`
//! (fetching URLs), `mcp` (MCP tools).

mod agent;
mod command;
mod mcp;
mod names;
mod path;
mod web;
mod writes;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::cache::Fixed;
use super::classify::{self, ClassifyError, Target};
use super::path_index::PathIndex;
use super::rules::{self, Rule, RuleKind, Subject};
use super::spec::RuleName;
use super::{
    Category, CheckRequest, Decision, PermissionMode, Policy, Source, Verdict, mode, sandbox,
};
use agent::agent_decision;
use command::command_decision;
use mcp::mcp_decision;
use path::path_decision;
use web::web_decision;

/// Decides one call. Pure apart from reading the file system to resolve symlinks. In auto
/// mode the allow rules that would let code run unchecked are set aside first
/// (`auto::suspend`), so those calls reach the classifier.
pub fn check(req: &CheckRequest, policy: &Policy) -> Decision {
    let policy = super::auto::suspend::effective(policy, req.mode);
    let d = decide(req, &policy);
    unattended(req.mode, d)
}

/// Under dontAsk the mode fallback never asks; whatever still asks (an `ask` rule, a
/// dangerous command, a protected file, an unknown tool, an unparseable command) was
/// meant for a human, and there is none: deny it.
fn unattended(mode: PermissionMode, mut d: Decision) -> Decision {
    if mode == PermissionMode::DontAsk && d.verdict == Verdict::Ask {
        d.verdict = Verdict::Deny;
        d.reason = format!(
            "{}; dontAsk has no one to ask, so it is denied (an explicit allow rule would permit it)",
            d.reason
        );
    }
    d
}

/// What every stage needs besides the call.
struct Ctx<'a> {
    req: &'a CheckRequest,
    /// The real cwd, when it exists: relative paths are resolved from it.
    cwd_real: Option<PathBuf>,
    policy: &'a Policy,
    home: Option<&'a Path>,
    /// The home that `~` means in a command, and whose credentials are protected (the
    /// process's own when the policy has none).
    shell_home: Option<PathBuf>,
    /// Canonical extra roots and credentials, computed once per policy.
    fixed: Arc<Fixed>,
    /// The path rules' glob index, when it could be built.
    index: Option<Arc<PathIndex>>,
    roots: Vec<PathBuf>,
    /// Bases of relative rule patterns: project root, then the agent's cwd.
    bases: Vec<PathBuf>,
}

impl<'a> Ctx<'a> {
    fn new(req: &'a CheckRequest, policy: &'a Policy) -> Self {
        // Credentials are protected even when the policy was built without a home.
        let shell_home = policy.home.clone().or_else(dirs::home_dir);
        let fixed = policy
            .cache
            .fixed(shell_home.as_deref(), &policy.additional_roots);
        let cwd_real = policy.cache.cwd(&req.cwd);
        let roots: Vec<PathBuf> = cwd_real.iter().chain(&fixed.roots).cloned().collect();
        let mut bases: Vec<PathBuf> = policy.project_root.iter().cloned().collect();
        if let Some(cwd) = roots.first()
            && !bases.contains(cwd)
        {
            bases.push(cwd.clone());
        }
        Ctx {
            req,
            cwd_real,
            policy,
            home: policy.home.as_deref(),
            shell_home,
            fixed,
            index: policy.cache.path_index(&policy.rules),
            roots,
            bases,
        }
    }

    /// The rule deciding a file tool's `real` target (`rules::decide`, through the index).
    fn path_rule(&self, names: &[RuleName], real: &Path) -> Option<&'a Rule> {
        match &self.index {
            Some(i) => i.decide(&self.policy.rules, names, real, &self.bases),
            None => rules::decide(
                &self.policy.rules,
                &Subject::Path {
                    names,
                    real,
                    bases: &self.bases,
                },
            ),
        }
    }

    /// The rule deciding a command subject (`rules::decide`, among the index's candidates
    /// for the texts the subject is matched as written: `text` and `full`).
    fn command_rule(&self, subject: &Subject<'_>) -> Option<&'a Rule> {
        let rules = &self.policy.rules;
        match (&self.index, subject) {
            (Some(i), Subject::Command { text, full, .. }) => {
                rules::decide_in(i.command_candidates(rules, &[text, full]), subject)
            }
            _ => rules::decide(rules, subject),
        }
    }

    /// The first Read deny rule that may match `dir` (real) or something below it.
    fn read_deny_below(&self, dir: &Path) -> Option<&'a Rule> {
        let rules = &self.policy.rules;
        match &self.index {
            Some(i) => i.read_deny_below(rules, dir, &self.bases),
            None => rules.iter().find(|r| {
                r.kind == RuleKind::Deny && r.could_match_below(&[RuleName::Read], dir, &self.bases)
            }),
        }
    }

    /// The project root's real location, through the cache (re-checked by identity).
    fn project_real(&self) -> Option<PathBuf> {
        match self.policy.project_root.as_deref() {
            // The cwd was resolved (and re-checked) for this very call.
            Some(p) if p == self.req.cwd => self.cwd_real.clone(),
            Some(p) => self.policy.cache.cwd(p),
            None => None,
        }
    }

    /// The sandbox roots as a message lists them.
    fn roots_text(&self) -> String {
        let roots: Vec<String> = self.roots.iter().map(|r| r.display().to_string()).collect();
        roots.join(", ")
    }

    fn creds(&self) -> &sandbox::Credentials {
        &self.fixed.creds
    }

    fn mode(&self) -> PermissionMode {
        self.req.mode
    }

    /// A path argument made absolute (`~` expanded, joined onto the cwd) and its real
    /// location.
    fn locate(&self, raw: &str) -> (PathBuf, std::io::Result<sandbox::Resolved>) {
        let abs = sandbox::absolute(raw, &self.req.cwd, self.home);
        let real = match &self.cwd_real {
            Some(cwd) if !raw.starts_with('~') && Path::new(raw).is_relative() => {
                sandbox::resolve_traced(cwd, Path::new(raw))
            }
            _ => sandbox::resolve_traced(Path::new("/"), &abs),
        };
        (abs, real)
    }
}

fn decide(req: &CheckRequest, policy: &Policy) -> Decision {
    let c = match classify::classify(&req.call.name, req.spec.as_ref(), &req.call.arguments) {
        Ok(c) => c,
        Err(e @ ClassifyError::Unknown(_)) => return explicit_ask(Source::Unknown, e.to_string()),
        Err(ClassifyError::Arguments(m)) => {
            let mut d = Decision::new(Verdict::Deny, Source::Arguments, m);
            d.category = req.spec.as_ref().map(|s| s.category);
            return d;
        }
    };
    let ctx = Ctx::new(req, policy);
    let category = c.category;
    let mut d = match &c.target {
        Target::Path(p) => path_decision(&ctx, &c, p.as_deref()),
        Target::Command(cmd) => command_decision(&ctx, cmd),
        Target::Agent(t) => agent_decision(&ctx, category, t),
        Target::Url(u) => web_decision(&ctx, category, u),
        Target::Mcp(n) => mcp_decision(&ctx, category, n),
        Target::None => fallback(ctx.mode(), category, ""),
    };
    d.category.get_or_insert(category);
    d
}

fn deny(source: Source, reason: impl Into<String>, target: impl Into<String>) -> Decision {
    aimed(Decision::new(Verdict::Deny, source, reason), target)
}

/// `d`, naming the target it decided.
fn aimed(mut d: Decision, target: impl Into<String>) -> Decision {
    d.target = Some(target.into());
    d
}

/// An ask meant for a human, whatever the mode (so dontAsk denies it).
fn explicit_ask(source: Source, reason: impl Into<String>) -> Decision {
    let mut d = Decision::new(Verdict::Ask, source, reason);
    d.explicit_ask = true;
    d
}

fn fallback(mode: PermissionMode, category: Category, what: &str) -> Decision {
    let verdict = super::mode::fallback(mode, category);
    let mut reason = mode::fallback_reason(mode, category, verdict);
    if !what.is_empty() {
        reason = format!("{reason} (`{what}`)");
    }
    if verdict == Verdict::Ask {
        reason.push_str(
            "; approve it, add an allow rule to .crew/settings.local.json, or use a more permissive permission mode",
        );
    }
    let mut d = Decision::new(verdict, Source::Mode, reason);
    d.category = Some(category);
    d
}

fn from_rule(rule: &Rule, what: &str) -> Decision {
    let verdict = rule.kind;
    let verb = match verdict {
        Verdict::Allow => "allowed",
        Verdict::Ask => "asks before",
        Verdict::Deny => "denies",
    };
    let origin = match &rule.file {
        Some(f) => format!(" in {} (index {})", f.display(), rule.index),
        None => " (granted this session)".into(),
    };
    let reason = match rule.kind {
        RuleKind::Allow => format!("`{what}` is {verb} by rule `{}`{origin}", rule.text),
        _ => format!("rule `{}`{origin} {verb} `{what}`", rule.text),
    };
    let mut d = Decision::new(verdict, Source::Rule(rule.layer), reason);
    d.rule = Some(rule.text.clone());
    d.explicit_ask = rule.kind == RuleKind::Ask;
    d
}

/// A dangerous command: ask in every mode but bypassPermissions, unless
/// an exact allow rule (a grant for this very target) matched.
fn guarded(
    ctx: &Ctx<'_>,
    rule: Option<&Rule>,
    why: &str,
    category: Category,
    what: &str,
) -> Option<Decision> {
    if ctx.mode() == PermissionMode::BypassPermissions || rule.is_some_and(Rule::is_exact) {
        return None;
    }
    let mut d = explicit_ask(
        Source::Mode,
        format!("`{what}`: {why}; confirm it, or grant this exact call"),
    );
    d.rule = Some(format!("dangerous: {why}"));
    d.category = Some(category);
    Some(d)
}
