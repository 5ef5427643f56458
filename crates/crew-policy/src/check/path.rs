//! File-tool decisions: a read, write or search target is resolved through symlinks,
//! then judged by credentials, the sandbox roots, glob sanity, protected paths, path rules
//! and the mode; `path_deny` also lets commands honour path deny rules.

use std::path::Path;

use super::super::Category;
use super::super::classify::Classified;
use super::super::rules::{Rule, RuleKind};
use super::super::spec::RuleName;
use super::super::{Decision, Source, Verdict, sandbox};
use super::{Ctx, aimed, deny, explicit_ask, fallback, from_rule};

pub(super) fn path_decision(ctx: &Ctx<'_>, c: &Classified, raw: Option<&str>) -> Decision {
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
    if let Some(d) = offloaded_result(ctx, c, &real, raw, resolved.exists) {
        return d;
    }
    // A missing target is judged both where a write would land (through a dangling link)
    // and where its name says it is; both must be inside. Without a link on the way they
    // are the same place.
    let by_name_inside = resolved.exists
        || resolved.links == 0
        || sandbox::by_ancestor(&abs).is_some_and(|p| sandbox::inside(&p, &ctx.roots));
    // A user's skill directory is readable (its SKILL.md points at the files beside it).
    let read_root = !c.writes && resolved.exists && sandbox::inside(&real, &ctx.policy.read_roots);
    if !read_root && (!sandbox::inside(&real, &ctx.roots) || !by_name_inside) {
        return deny(
            Source::Sandbox,
            format!(
                "`{raw}` resolves to {target}, outside the sandbox roots ({}); add its directory to permissions.additionalDirectories in .crew/settings.local.json to allow it",
                ctx.roots_text()
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
    if c.writes
        && let Some(what) =
            sandbox::protected_from_edits(&real).or_else(|| sandbox::protected_from_edits(&lexical))
    {
        return deny(
            Source::Sandbox,
            format!(
                "`{raw}` is {what}, a protected path: git hooks, config and internals decide what git runs and what your branches hold, and settings decide permissions; agents never write them with file tools (git itself does when a command runs it; edit it yourself if needed)"
            ),
            target,
        );
    }
    let rule = ctx.path_rule(&c.rule_names, &real);
    // A deny of the target, or (for a directory) of what is below it.
    let deny = match rule {
        Some(r) if r.kind == RuleKind::Deny => Some(r),
        _ if resolved.dir => path_deny(ctx, &[&c.rule_names], &real.join("_")),
        _ => None,
    };
    // A write or edit of a file a Read deny rule covers is denied too (as Claude Code
    // does): `edit_file` would answer differently for a right and a wrong guess of its
    // content, and `write_file` would say whether it existed.
    let read_deny = || {
        c.writes
            .then(|| path_deny(ctx, &[&[RuleName::Read]], &real))
            .flatten()
    };
    if let Some(r) = deny
        .or_else(|| denied_by_identity(ctx, &[&c.rule_names], &real))
        .or_else(read_deny)
    {
        return aimed(from_rule(r, raw), target);
    }
    // Only an existing file can be one that a hook runs (`run_files` lists existing files
    // only), so a new file's write needs no look at the settings files.
    if c.writes
        && let Some(what) =
            super::super::protected::loaded_write(&real, &lexical, &mut || match resolved.exists {
                true => super::super::protected::run_files(&code_roots(ctx)),
                false => Vec::new(),
            })
    {
        let d = explicit_ask(
            Source::Sandbox,
            format!(
                "`{raw}` is {what}: {}",
                super::super::protected::LOADED_CONSEQUENCE
            ),
        );
        return aimed(d, target);
    }
    let d = match rule {
        Some(r) => from_rule(r, raw),
        None => fallback(ctx.mode(), c.category, ""),
    };
    aimed(d, target)
}

/// The roots whose configuration names files that hooks and MCP servers run: the
/// project root and the project the agent's cwd is in (a worktree's own copy).
/// Both are real locations: the project root through the policy cache (re-checked by
/// identity), the cwd's project found upwards from the real cwd.
pub(super) fn code_roots(ctx: &Ctx<'_>) -> Vec<std::path::PathBuf> {
    let mut roots: Vec<std::path::PathBuf> = ctx.project_real().into_iter().collect();
    if let Some(cwd) = &ctx.cwd_real {
        let own = crew_config::places::project_root(cwd);
        if !roots.contains(&own) {
            roots.push(own);
        }
    }
    roots
}

/// A read of an offloaded tool result (below the session's `results` directory) is
/// allowed in every mode, as the model was told it could read it; a deny rule still
/// wins. Writes and anything outside that one directory are judged as usual.
fn offloaded_result(
    ctx: &Ctx<'_>,
    c: &Classified,
    real: &Path,
    raw: &str,
    exists: bool,
) -> Option<Decision> {
    let dir = ctx.policy.results_dir.as_ref()?;
    if c.writes || c.category != Category::Read || !exists || !real.starts_with(dir) {
        return None;
    }
    let target = real.display().to_string();
    if let Some(r) = path_deny(ctx, &[&c.rule_names], real) {
        return Some(aimed(from_rule(r, raw), target));
    }
    let mut d = Decision::new(
        Verdict::Allow,
        Source::Sandbox,
        format!("`{raw}` is an offloaded tool result of this session, which is always readable"),
    );
    d.target = Some(target);
    d.category = Some(Category::Read);
    Some(d)
}

/// The strongest deny rule for `real` under the first of `groups` (each the rule names
/// of one tool) that has one. Callers also probe `real/_` for a directory: `tar cf -
/// secrets` reads what `Read(secrets/**)` denies. Best effort: a deny on a deeper glob is
/// seen only when the named path itself matches.
pub(super) fn path_deny<'r>(
    ctx: &Ctx<'r>,
    groups: &[&[RuleName]],
    real: &Path,
) -> Option<&'r Rule> {
    let by_name = match &ctx.index {
        Some(i) => i.deny(&ctx.policy.rules, groups, real, &ctx.bases),
        None => groups.iter().find_map(|names| {
            ctx.path_rule(names, real)
                .filter(|r| r.kind == RuleKind::Deny)
        }),
    };
    by_name.or_else(|| denied_by_identity(ctx, groups, real))
}

/// A Read deny rule whose file `real` is under another name (a hard link), when it
/// covers one of `groups`' tools (`deny_ids.rs`).
fn denied_by_identity<'r>(ctx: &Ctx<'r>, groups: &[&[RuleName]], real: &Path) -> Option<&'r Rule> {
    let ids = ctx.policy.cache.denied_ids(&ctx.policy.rules, &ctx.bases);
    let rule = ctx.policy.rules.get(ids.rule(real)?)?;
    groups
        .iter()
        .any(|names| rule.covers(names))
        .then_some(rule)
}
