//! Command decisions: the blacklist, parsing into parts, credentials and path deny rules
//! on the files each part names, protected writes, then per part the rules (through every
//! spelling and expansion), the dangerous-command guard and the mode; opaque parts ask, and
//! a part that only looks like a read (foreign git, a search over denied files) is demoted.

use std::path::PathBuf;

use super::super::rules::{Rule, RuleKind, Subject};
use super::super::shell::Part;
use super::super::spec::RuleName;
use super::super::{
    Category, Decision, PermissionMode, Source, Verdict, blacklist, commands, protected, shell,
};
use super::path::path_deny;
use super::{Ctx, aimed, deny, explicit_ask, fallback, from_rule, guarded};
use super::{names, writes};

pub(super) fn command_decision(ctx: &Ctx<'_>, command: &str) -> Decision {
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
            let d = explicit_ask(
                Source::Unknown,
                format!("{e}; a command that cannot be parsed is never run unasked"),
            );
            return aimed(d, command);
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
    if let Some(why) = super::super::controls::check(&script, ctx.cwd_real.as_deref()) {
        let mut d = deny(Source::Blacklist, why, target);
        d.rule = Some("crew's own controls".into());
        return d;
    }
    let names = names::walk(ctx, &script.parts);
    // Hard checks on what each part names, before any rule: credentials wherever they
    // appear, files that a Read/Edit/Write deny rule protects (a shell must not walk
    // around a path deny), writes to protected paths, literal writes outside the roots.
    for (part, names) in script.parts.iter().zip(&names) {
        if let Some(d) = named_denial(ctx, part, names) {
            return aimed(d, target);
        }
    }
    let grant = raw_grant(ctx, command);
    let mut worst: Option<Decision> = None;
    let mut all_read = true;
    for (part, names) in script.parts.iter().zip(&names) {
        let Some((mut d, exact)) = part_decision(ctx, part, names, grant) else {
            continue;
        };
        if !names.writes.is_empty() {
            let inside = names::inside(ctx, &names.named);
            d = writes::judge(ctx, part, &names.writes, d, grant.is_some(), exact, inside);
        }
        if let Some(why) = &names.not_read {
            if names.history {
                d = history_ask(part, d, why, grant.is_some());
            }
            d = demote(ctx, part, d, why);
        }
        all_read &= d.category == Some(Category::Read);
        if d.verdict == Verdict::Deny {
            d.target = Some(target);
            d.category = Some(Category::Exec);
            return d;
        }
        // The strongest part speaks for the command (verdicts are ordered): an explicit
        // ask (rule, dangerous) over a fallback ask over an allow.
        let strength = |d: &Decision| (d.verdict, d.explicit_ask);
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
    // A write to what crew loads as code or policy asks, whatever the rules say (a deny
    // rule or hard check denied above already).
    if d.verdict != Verdict::Deny
        && let Some(why) = loaded_write(ctx, &script.parts, &names)
    {
        d = explicit_ask(
            Source::Sandbox,
            format!("{why}: {}", protected::LOADED_CONSEQUENCE),
        );
    }
    d.category = Some(category);
    d.target = Some(target);
    d
}

/// Why a part writes something crew loads as code or policy (`config::loaded`), if
/// one does; the files hooks and MCP servers run are read from the settings only when a
/// part that may write names a file.
fn loaded_write(ctx: &Ctx<'_>, parts: &[Part], names: &[names::Names]) -> Option<String> {
    let mut run_files: Option<Vec<PathBuf>> = None;
    let mut run = || {
        run_files
            .get_or_insert_with(|| protected::run_files(&super::path::code_roots(ctx)))
            .clone()
    };
    let mut writers = parts
        .iter()
        .zip(names)
        .filter(|(p, n)| !protected::only_reads(n.judged(p)));
    writers.find_map(|(part, names)| {
        names.paths().find_map(|p| {
            let what = protected::loaded_write(p, p, &mut run)?;
            Some(format!(
                "`{}`: it writes {} ({what})",
                part.full_text(),
                p.display()
            ))
        })
    })
}

/// The hard checks on what one part names (its target left for the caller to set):
/// protected paths written, credentials named (by name, by identity, or by a glob that
/// may reach one), files a Read/Edit deny rule protects, writes outside the roots.
fn named_denial(ctx: &Ctx<'_>, part: &Part, names: &names::Names) -> Option<Decision> {
    // `git -C ~ config core.hooksPath x` is judged with `~` expanded.
    if let Some(why) = protected::command_write(names.judged(part), names.paths()) {
        let mut d = deny(
            Source::Sandbox,
            format!("`{}`: {why}; agents never change them", part.full_text()),
            "",
        );
        d.category = Some(Category::Exec);
        return Some(d);
    }
    for n in &names.named {
        if let Some(name) = ctx.creds().matches(&n.lexical, n.real.as_deref()) {
            return Some(names::credential_denial(
                part,
                "touches a credential location",
                name,
            ));
        }
        let Some(real) = &n.real else { continue };
        let groups: [&[RuleName]; 2] = [&[RuleName::Read], &[RuleName::Edit]];
        let deny = path_deny(ctx, &groups, real).or_else(|| {
            n.dir
                .then(|| path_deny(ctx, &groups, &real.join("_")))
                .flatten()
        });
        if let Some(r) = deny {
            let mut d = from_rule(r, &part.full_text());
            d.category = Some(Category::Exec);
            return Some(d);
        }
    }
    for (pattern, n) in &names.globs {
        let base = n.real.as_deref().unwrap_or(&n.lexical);
        let hit = ctx.creds().matches(&n.lexical, n.real.as_deref());
        if let Some(name) = hit.or_else(|| ctx.creds().below(base)) {
            let what = format!(
                "names files matching `{pattern}`, which may include a credential location"
            );
            return Some(names::credential_denial(part, &what, name));
        }
    }
    writes::outside_roots(ctx, part, &names.writes)
}

/// An exact allow rule naming the whole command as written (a grant of a command with
/// variables, globs or substitutions: it is matched against the raw text only).
fn raw_grant<'r>(ctx: &'r Ctx<'_>, command: &str) -> Option<&'r Rule> {
    let raw = command.trim();
    let subject = Subject::command(raw);
    let grant = |r: &&Rule| r.kind == RuleKind::Allow && r.is_exact() && r.matches(&subject);
    match &ctx.index {
        Some(i) => i.command_candidates(&ctx.policy.rules, &[raw]).find(grant),
        None => ctx.policy.rules.iter().find(grant),
    }
}

/// The rule deciding one part: rules matched against its text (deny and ask rules also
/// against its other spellings, `commands::match_forms`), and deny or ask rules also
/// against its expanded words and their spellings (`~/x` is `/home/u/x`). An
/// exact allow rule does not match a part with expansions (its placeholder text may
/// equal the rule by chance); a raw grant of the whole command stands in for it.
fn part_rule<'r>(
    ctx: &'r Ctx<'_>,
    part: &Part,
    expanded: Option<&Part>,
    text: &str,
    full: &str,
    grant: Option<&'r Rule>,
) -> Option<&'r Rule> {
    // The expanded words are judged with the part's own privileges and openness.
    let rule_of = |p: &Part, text: &str, full: &str| {
        let forms = commands::match_forms(p);
        let (privileged, open, forms) = (part.privileged, part.open, &forms);
        ctx.command_rule(&Subject::Command {
            text,
            full,
            privileged,
            forms,
            open,
        })
    };
    let rule = rule_of(part, text, full)
        .filter(|r| !(part.expanded() && r.kind == RuleKind::Allow && r.is_exact()));
    let by_expansion = expanded.and_then(|e| {
        let text = e.text();
        rule_of(e, &text, &text).filter(|r| r.kind != RuleKind::Allow)
    });
    match (rule, by_expansion) {
        (Some(r), _) if r.kind == RuleKind::Deny => Some(r),
        (_, Some(e)) => Some(e),
        (Some(r), _) if r.kind == RuleKind::Ask => Some(r),
        (r, None) => r.or(grant),
    }
}

/// One part's decision, and whether an exact allow rule on the part's words made it (it
/// names the part's targets: `Bash(touch kept.txt)` grants writing `kept.txt`); `None` for
/// a part that runs nothing (a `bash -c` shell whose script became parts of its own).
fn part_decision(
    ctx: &Ctx<'_>,
    part: &Part,
    names: &names::Names,
    grant: Option<&Rule>,
) -> Option<(Decision, bool)> {
    // An assignment alone runs nothing, unless evaluating it may (`x=$((n))`: opaque).
    if part.argv.is_empty() && part.opaque.is_none() && !part.redirects.iter().any(|r| r.write) {
        return None;
    }
    let text = part.text();
    let full = part.full_text();
    let expanded = names.expanded.as_ref();
    let rule = part_rule(ctx, part, expanded, &text, &full, grant);
    if let Some(why) = &part.opaque {
        return Some((opaque(ctx, rule, grant, why, &full), false));
    }
    // While a Bash deny or ask rule exists, a program that runs programs its words do not
    // show (`python3 -c`, `make`, `npx`, `xargs`) is opaque for it (`commands::runners`).
    if guarded_commands(ctx)
        && let Some(why) = commands::part_runs_hidden(part)
    {
        return Some((opaque(ctx, rule, None, &why, &full), false));
    }
    // A read-only command reading `/etc/shadow` or `../other-project` is not a plain read.
    let category = if commands::is_read_only(part) && names::inside(ctx, &names.named) {
        Category::Read
    } else {
        Category::Exec
    };
    let dangerous = commands::dangerous(part).or_else(|| expanded.and_then(commands::dangerous));
    let guard = dangerous.and_then(|why| guarded(ctx, rule, why, category, &full));
    let mut d = match (rule, guard) {
        (Some(r), _) if r.kind != RuleKind::Allow => from_rule(r, &full),
        (_, Some(g)) => g,
        (Some(r), None) => from_rule(r, &full),
        (None, None) => fallback(ctx.mode(), category, &full),
    };
    d.category = Some(category);
    let exact = d.verdict == Verdict::Allow
        && matches!(d.source, Source::Rule(_))
        && rule.is_some_and(|r| r.kind == RuleKind::Allow && r.is_exact());
    Some((d, exact))
}

/// Whether any Bash deny or ask rule exists: unseen code might be what it names.
fn guarded_commands(ctx: &Ctx<'_>) -> bool {
    ctx.policy.rules.iter().any(Rule::guards_commands)
}

/// An opaque part (`Part::opaque`, or a program that runs programs while a Bash deny or
/// ask rule exists) runs code nobody can see. A deny rule on what is visible denies it;
/// only an exact grant of the whole command as written allows it. Otherwise it asks, but
/// under dontAsk, auto and bypassPermissions it takes the mode's fallback for commands
/// (the OS confines it) while no Bash deny or ask rule exists: any might be what it runs.
fn opaque(
    ctx: &Ctx<'_>,
    rule: Option<&Rule>,
    grant: Option<&Rule>,
    why: &str,
    full: &str,
) -> Decision {
    match rule {
        Some(r) if r.kind == RuleKind::Deny => return from_rule(r, full),
        // An exact allow rule naming the whole command as written: a human approved
        // exactly this text.
        Some(r) if grant.is_some_and(|g| std::ptr::eq(g, r)) => return from_rule(r, full),
        _ => {}
    }
    let unattended = matches!(
        ctx.mode(),
        PermissionMode::BypassPermissions | PermissionMode::DontAsk | PermissionMode::Auto
    );
    if unattended && !guarded_commands(ctx) {
        let mut d = fallback(ctx.mode(), Category::Exec, full);
        d.reason = format!("{}; {why}", d.reason);
        return d;
    }
    let mut d = explicit_ask(
        Source::Mode,
        format!("`{full}`: {why}; confirm it, or write the command out literally"),
    );
    d.rule = Some(format!("opaque: {why}"));
    d.category = Some(Category::Exec);
    d
}

/// A git command that prints file contents from history where a denied file may lie
/// (issue 25 item 3): it asks explicitly in every mode (so dontAsk denies it), whatever
/// rule allows the command. The OS sandbox hides denied files on disk but not the blobs
/// in `.git/objects`. A deny rule's verdict stands; so does a grant of the whole command
/// as written, which a human saw.
fn history_ask(part: &Part, d: Decision, why: &str, granted: bool) -> Decision {
    if d.verdict == Verdict::Deny || granted {
        return d;
    }
    let full = part.full_text();
    let mut a = explicit_ask(
        Source::Mode,
        format!(
            "`{full}` prints file contents from git history, which the sandbox cannot hide, and {why}; limit it with `-- PATH…` to paths no Read deny rule covers, or confirm it"
        ),
    );
    a.rule = Some("git history read".into());
    a.category = Some(Category::Exec);
    a
}

/// A part decided as a read that is not one: the mode decides it as Exec instead (a rule
/// that matched keeps its verdict), and the reason says why.
fn demote(ctx: &Ctx<'_>, part: &Part, d: Decision, why: &str) -> Decision {
    if d.category != Some(Category::Read) {
        return d;
    }
    let mut d = if d.source == Source::Mode {
        fallback(ctx.mode(), Category::Exec, &part.full_text())
    } else {
        d
    };
    d.reason = format!("{}; it is not a plain read: {why}", d.reason);
    d.category = Some(Category::Exec);
    d
}
