//! The decision itself (`check`): classify and parse → hard checks (blacklist,
//! credentials, sandbox) → rules by layer → dangerous/protected asks → mode fallback;
//! then, under dontAsk, any Ask becomes Deny (nobody is there to answer).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::cache::Fixed;
use super::classify::{self, Classified, ClassifyError, Target, ToolKind};
use super::path_index::PathIndex;
use super::rules::{self, Rule, RuleKind, Subject};
use super::shell::{Arg, Dir, Part};
use super::{
    Category, CheckRequest, Decision, PermissionMode, Policy, Source, Verdict, blacklist, commands,
    mode, sandbox, shell,
};

/// Decides one call. Pure apart from reading the file system to resolve symlinks.
pub fn check(req: &CheckRequest, policy: &Policy) -> Decision {
    let d = decide(req, policy);
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
        let mut roots: Vec<PathBuf> = cwd_real.iter().cloned().collect();
        roots.extend(fixed.roots.iter().cloned());
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
    fn path_rule(&self, kind: ToolKind, real: &Path) -> Option<&'a Rule> {
        match &self.index {
            Some(i) => i.decide(&self.policy.rules, kind, real, &self.bases),
            None => rules::decide(
                &self.policy.rules,
                &Subject::Path {
                    kind,
                    real,
                    bases: &self.bases,
                },
            ),
        }
    }

    fn creds(&self) -> &sandbox::Credentials {
        &self.fixed.creds
    }

    /// Where an expanded command argument points, given the directory its part runs in.
    fn locate_arg(&self, arg: &Arg, dir: &Dir) -> Named {
        let unlocatable = Named {
            lexical: PathBuf::from("/"),
            real: None,
            dir: false,
        };
        if !arg.known {
            return unlocatable;
        }
        let text = arg.text.as_str();
        let (abs, real) = match dir {
            _ if Path::new(text).is_absolute() => self.locate(text),
            Dir::Initial => self.locate(text),
            Dir::Known(d) => (d.join(text), sandbox::resolve_traced(d, Path::new(text))),
            Dir::Unknown => return unlocatable,
        };
        let real = real.ok();
        Named {
            lexical: sandbox::lexical(&abs),
            dir: real.as_ref().is_some_and(|r| r.dir),
            real: real.map(|r| r.path),
        }
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
    let c = match classify::classify(&req.call.name, &req.call.arguments) {
        Ok(c) => c,
        Err(e @ ClassifyError::Unknown(_)) => {
            let mut d = Decision::new(Verdict::Ask, Source::Unknown, e.to_string());
            d.explicit_ask = true;
            return d;
        }
        Err(ClassifyError::Arguments(m)) => {
            let mut d = Decision::new(Verdict::Deny, Source::Arguments, m);
            d.category = ToolKind::of(&req.call.name).map(ToolKind::category);
            return d;
        }
    };
    let ctx = Ctx::new(req, policy);
    let category = c.kind.category();
    let mut d = match &c.target {
        Target::Path(p) => path_decision(&ctx, &c, p.as_deref()),
        Target::Command(cmd) => command_decision(&ctx, cmd),
        Target::Agent(t) => named_decision(&ctx, category, &Subject::Agent(t), t),
        Target::Mcp(n) => named_decision(&ctx, category, &Subject::Mcp(n), n),
        Target::None => fallback(ctx.mode(), category, ""),
    };
    if d.category.is_none() {
        d.category = Some(category);
    }
    d
}

fn deny(source: Source, reason: impl Into<String>, target: impl Into<String>) -> Decision {
    let mut d = Decision::new(Verdict::Deny, source, reason);
    d.target = Some(target.into());
    d
}

fn fallback(mode: PermissionMode, category: Category, what: &str) -> Decision {
    let verdict = mode.fallback(category);
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
    let (verdict, verb) = match rule.kind {
        RuleKind::Allow => (Verdict::Allow, "allowed"),
        RuleKind::Ask => (Verdict::Ask, "asks before"),
        RuleKind::Deny => (Verdict::Deny, "denies"),
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

/// A dangerous command or protected file: ask in every mode but bypassPermissions, unless
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
    let mut d = Decision::new(
        Verdict::Ask,
        Source::Mode,
        format!("`{what}`: {why}; confirm it, or grant this exact call"),
    );
    d.rule = Some(format!("dangerous: {why}"));
    d.explicit_ask = true;
    d.category = Some(category);
    Some(d)
}

fn named_decision(
    ctx: &Ctx<'_>,
    category: Category,
    subject: &Subject<'_>,
    what: &str,
) -> Decision {
    let mut d = match rules::decide(&ctx.policy.rules, subject) {
        Some(r) => from_rule(r, what),
        None => fallback(ctx.mode(), category, ""),
    };
    d.target = Some(what.to_string());
    d
}

fn path_decision(ctx: &Ctx<'_>, c: &Classified, raw: Option<&str>) -> Decision {
    let raw = raw.unwrap_or(".");
    let (abs, resolved) = ctx.locate(raw);
    let resolved = match resolved {
        Ok(r) => r,
        Err(e) => {
            return deny(
                Source::Sandbox,
                format!("cannot resolve `{raw}` ({e}); use a path inside the working directory"),
                abs.display().to_string(),
            );
        }
    };
    let real = resolved.path;
    let target = real.display().to_string();
    let lexical = sandbox::lexical(&abs);
    if let Some(name) = ctx.creds().matches(&lexical, Some(&real)) {
        let mut d = deny(
            Source::Credentials,
            format!(
                "`{raw}` is a credential location (~/{name}); credentials are never readable or writable by agents"
            ),
            target,
        );
        d.rule = Some(format!("~/{name}"));
        return d;
    }
    // A missing target is judged both where a write would land (through a dangling link)
    // and where its name says it is; both must be inside. Without a link on the way they
    // are the same place.
    let by_name_inside = resolved.exists
        || resolved.links == 0
        || sandbox::by_ancestor(&abs).is_some_and(|p| sandbox::inside(&p, &ctx.roots));
    if !sandbox::inside(&real, &ctx.roots) || !by_name_inside {
        return deny(
            Source::Sandbox,
            format!(
                "`{raw}` resolves to {target}, outside the sandbox roots ({}); add its directory to permissions.additionalDirectories in .crew/settings.local.json to allow it",
                ctx.roots
                    .iter()
                    .map(|r| r.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            target,
        );
    }
    for p in &c.patterns {
        if p.starts_with('/') || p.starts_with('~') || p.split('/').any(|s| s == "..") {
            return deny(
                Source::Sandbox,
                format!(
                    "glob `{p}` must be relative to the search path and must not contain `..`; pass the directory as `path`"
                ),
                target,
            );
        }
    }
    let rule = ctx.path_rule(c.kind, &real);
    // A deny of the target, or (for a directory) of what is below it.
    let deny = match rule {
        Some(r) if r.kind == RuleKind::Deny => Some(r),
        _ if resolved.dir => path_deny(ctx, &[c.kind], &real.join("_")),
        _ => None,
    };
    if let Some(r) = deny {
        let mut d = from_rule(r, raw);
        d.target = Some(target);
        return d;
    }
    let category = c.kind.category();
    let protected = c.kind.writes().then(|| sandbox::protected(&real)).flatten();
    let mut d = match rule {
        Some(r) if r.kind != RuleKind::Allow => from_rule(r, raw),
        _ => match protected.and_then(|why| {
            guarded(
                ctx,
                rule,
                &format!("{why} changes permissions or runs code later"),
                category,
                raw,
            )
        }) {
            Some(d) => d,
            None => match rule {
                Some(r) => from_rule(r, raw),
                None => fallback(ctx.mode(), category, ""),
            },
        },
    };
    d.target = Some(target);
    d
}

fn command_decision(ctx: &Ctx<'_>, command: &str) -> Decision {
    if let Some(hit) = blacklist::check_raw(command) {
        let mut d = deny(Source::Blacklist, hit.reason, command);
        d.rule = Some(hit.pattern.into());
        return d;
    }
    let env = shell::Env {
        cwd: ctx.cwd_real.clone(),
        home: ctx.shell_home.clone(),
    };
    let script = match ctx.policy.cache.script(command, &env) {
        Ok(s) => s,
        Err(e) => {
            let mut d = Decision::new(
                Verdict::Ask,
                Source::Unknown,
                format!("{e}; a command that cannot be parsed is never run unasked"),
            );
            d.explicit_ask = true;
            d.target = Some(command.to_string());
            return d;
        }
    };
    let target = script
        .parts
        .iter()
        .filter(|p| !p.argv.is_empty())
        .map(Part::full_text)
        .collect::<Vec<_>>()
        .join(" ; ");
    let at = blacklist::Where {
        cwd: ctx.cwd_real.as_deref(),
        homes: ctx.creds().homes(),
    };
    if let Some(hit) = blacklist::check(&script, &at) {
        let mut d = deny(Source::Blacklist, hit.reason, target);
        d.rule = Some(hit.pattern.into());
        return d;
    }
    let named = named_by_part(ctx, &script.parts);
    // Credentials are denied wherever they appear, before any rule; so are files that a
    // Read/Edit/Write deny rule protects (a shell must not walk around a path deny).
    for (part, named) in script.parts.iter().zip(&named) {
        for n in named {
            if let Some(name) = ctx.creds().matches(&n.lexical, n.real.as_deref()) {
                let mut d = deny(
                    Source::Credentials,
                    format!(
                        "`{}` touches a credential location (~/{name}); credentials are never readable or writable by agents",
                        part.full_text()
                    ),
                    target,
                );
                d.rule = Some(format!("~/{name}"));
                return d;
            }
            let Some(real) = &n.real else { continue };
            let kinds = [ToolKind::ReadFile, ToolKind::EditFile];
            let deny = path_deny(ctx, &kinds, real).or_else(|| {
                n.dir
                    .then(|| path_deny(ctx, &kinds, &real.join("_")))
                    .flatten()
            });
            if let Some(r) = deny {
                let mut d = from_rule(r, &part.full_text());
                d.target = Some(target);
                d.category = Some(Category::Exec);
                return d;
            }
        }
    }
    let grant = raw_grant(ctx, command);
    let mut worst: Option<Decision> = None;
    let mut all_read = true;
    for (part, named) in script.parts.iter().zip(&named) {
        let Some(mut d) = part_decision(ctx, part, named, grant) else {
            continue;
        };
        all_read &= d.category == Some(Category::Read);
        if d.verdict == Verdict::Deny {
            d.target = Some(target);
            d.category = Some(Category::Exec);
            return d;
        }
        // The strongest part speaks for the command: an explicit ask (rule, dangerous)
        // over a fallback ask over an allow.
        let strength = |d: &Decision| match (d.verdict, d.explicit_ask) {
            (Verdict::Allow, _) => 0,
            (_, false) => 1,
            (_, true) => 2,
        };
        let replace = worst.as_ref().is_none_or(|w| strength(&d) > strength(w));
        if replace {
            worst = Some(d);
        }
    }
    let category = if all_read {
        Category::Read
    } else {
        Category::Exec
    };
    let mut d = worst.unwrap_or_else(|| fallback(ctx.mode(), category, ""));
    d.category = Some(category);
    d.target = Some(target);
    d
}

/// An exact allow rule naming the whole command as written (a grant of a command with
/// variables, globs or substitutions: it is matched against the raw text only).
fn raw_grant<'r>(ctx: &'r Ctx<'_>, command: &str) -> Option<&'r Rule> {
    let raw = command.trim();
    let subject = Subject::Command {
        text: raw,
        full: raw,
        privileged: false,
    };
    ctx.policy
        .rules
        .iter()
        .find(|r| r.kind == RuleKind::Allow && r.is_exact() && r.matches(&subject))
}

/// The rule deciding one part: rules matched against its text, and deny or ask rules also
/// against its expanded words (`r=rm; $r -rf x` is `rm -rf x`). An exact allow rule does
/// not match a part with expansions (its placeholder text may equal the rule by chance);
/// a raw grant of the whole command stands in for it.
fn part_rule<'r>(
    ctx: &'r Ctx<'_>,
    part: &Part,
    text: &str,
    full: &str,
    grant: Option<&'r Rule>,
) -> Option<&'r Rule> {
    let rules = &ctx.policy.rules;
    let subject = Subject::Command {
        text,
        full,
        privileged: part.privileged,
    };
    let expanded_part = part.expanded();
    let rule = rules::decide(rules, &subject)
        .filter(|r| !(expanded_part && r.kind == RuleKind::Allow && r.is_exact()));
    let expanded: Option<String> = (expanded_part && part.args.iter().all(|a| a.known))
        .then(|| {
            part.args
                .iter()
                .map(|a| a.text.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|e| e != text);
    let by_expansion = expanded.and_then(|e| {
        let subject = Subject::Command {
            text: &e,
            full: &e,
            privileged: part.privileged,
        };
        rules::decide(rules, &subject).filter(|r| r.kind != RuleKind::Allow)
    });
    match (rule, by_expansion) {
        (Some(r), _) if r.kind == RuleKind::Deny => Some(r),
        (_, Some(e)) => Some(e),
        (Some(r), _) if r.kind == RuleKind::Ask => Some(r),
        (r, None) => r.or(grant),
    }
}

/// One part's decision, or `None` for a part that runs nothing (a `bash -c` shell whose
/// script became parts of its own).
fn part_decision(
    ctx: &Ctx<'_>,
    part: &Part,
    named: &[Named],
    grant: Option<&Rule>,
) -> Option<Decision> {
    if part.argv.is_empty() && !part.redirects.iter().any(|r| r.write) {
        return None;
    }
    let text = part.text();
    let full = part.full_text();
    let rule = part_rule(ctx, part, &text, &full, grant);
    // A read-only command reading `/etc/shadow` or `../other-project` is not a plain read.
    let inside = named.iter().all(|n| {
        n.lexical == Path::new("/dev/null")
            || n.real
                .as_ref()
                .is_some_and(|r| sandbox::inside(r, &ctx.roots))
    });
    let category = if commands::is_read_only(part) && inside {
        Category::Read
    } else {
        Category::Exec
    };
    let mut d = match rule {
        Some(r) if r.kind != RuleKind::Allow => from_rule(r, &full),
        _ => match commands::dangerous(part)
            .and_then(|why| guarded(ctx, rule, why, category, &full))
        {
            Some(d) => d,
            None => match rule {
                Some(r) => from_rule(r, &full),
                None => fallback(ctx.mode(), category, &full),
            },
        },
    };
    d.category = Some(category);
    Some(d)
}

/// Words of a part that may name files, expanded: operands and `--opt=value` values,
/// redirect targets. Unknown words are kept (they cannot be located).
fn path_words(part: &Part) -> impl Iterator<Item = Arg> + '_ {
    part.args
        .iter()
        .skip(1)
        .map(|a| match a.text.split_once('=') {
            Some((k, v)) if a.known && (k.starts_with('-') || !k.contains('/')) => Arg {
                text: v.to_string(),
                ..a.clone()
            },
            _ => a.clone(),
        })
        .chain(part.redirects.iter().map(|r| r.arg.clone()))
        .filter(|w| {
            !w.known || !w.text.is_empty() && !w.text.starts_with('-') && !w.text.starts_with('&')
        })
}

/// The strongest deny rule for `real` under the first of `kinds` that has one. Callers
/// also probe `real/_` for a directory: `tar cf - secrets` reads what `Read(secrets/**)`
/// denies. Best effort: a deny on a deeper glob is seen only when the named path itself
/// matches.
fn path_deny<'r>(ctx: &Ctx<'r>, kinds: &[ToolKind], real: &Path) -> Option<&'r Rule> {
    match &ctx.index {
        Some(i) => i.deny(&ctx.policy.rules, kinds, real, &ctx.bases),
        None => kinds
            .iter()
            .find_map(|k| ctx.path_rule(*k, real).filter(|r| r.kind == RuleKind::Deny)),
    }
}

/// A file a command names: where its name points and where it really is.
struct Named {
    lexical: PathBuf,
    real: Option<PathBuf>,
    /// `real` is a directory.
    dir: bool,
}

/// The files each part names, located in the directory the part runs in (tracked once,
/// by `shell/`): after a `cd` we cannot follow, relative words cannot be located, which
/// makes the part not a plain read.
fn named_by_part(ctx: &Ctx<'_>, parts: &[Part]) -> Vec<Vec<Named>> {
    parts
        .iter()
        .map(|part| {
            path_words(part)
                .map(|w| ctx.locate_arg(&w, &part.dir))
                .collect()
        })
        .collect()
}
