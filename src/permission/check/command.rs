//! Command decisions: the blacklist, parsing into parts, credentials and path deny rules
//! on the files each part names, protected writes, then per part the rules (through every
//! spelling and expansion), the dangerous-command guard and the mode; opaque parts ask, and
//! a part that only looks like a read (foreign git, a search over denied files) is demoted.

use std::path::{Path, PathBuf};

use super::super::rules::{Rule, RuleKind, Subject};
use super::super::shell::{Arg, Dir, Part};
use super::super::spec::RuleName;
use super::super::{
    Category, Decision, PermissionMode, Source, Verdict, blacklist, commands, protected, sandbox,
    shell,
};
use super::path::path_deny;
use super::writes;
use super::{Ctx, deny, fallback, from_rule, guarded};

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
    if let Some(why) = super::super::controls::check(&script, ctx.cwd_real.as_deref()) {
        let mut d = deny(Source::Blacklist, why, target);
        d.rule = Some("crew's own controls".into());
        return d;
    }
    let named = named_by_part(ctx, &script.parts);
    let written: Vec<writes::PartWrites> = script
        .parts
        .iter()
        .map(|p| writes::part_writes(ctx, p))
        .collect();
    // Credentials are denied wherever they appear, before any rule; so are files that a
    // Read/Edit/Write deny rule protects (a shell must not walk around a path deny), and
    // writes to protected paths.
    for (part, named) in script.parts.iter().zip(&named) {
        let paths = named
            .iter()
            .flat_map(|n| std::iter::once(n.lexical.as_path()).chain(n.real.as_deref()));
        // `git -C ~ config core.hooksPath x` is judged with `~` expanded.
        let why = protected::command_write(as_expanded(part).as_ref().unwrap_or(part), paths);
        if let Some(why) = why {
            let mut d = deny(
                Source::Sandbox,
                format!("`{}`: {why}; agents never change them", part.full_text()),
                target,
            );
            d.category = Some(Category::Exec);
            return d;
        }
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
            let groups: [&[RuleName]; 2] = [&[RuleName::Read], &[RuleName::Edit]];
            let deny = path_deny(ctx, &groups, real).or_else(|| {
                n.dir
                    .then(|| path_deny(ctx, &groups, &real.join("_")))
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
    if let Some(d) = glob_credentials(ctx, &script.parts, &target) {
        return d;
    }
    // Literal writes outside the roots: denied in every mode, as `write_file` is.
    for (part, written) in script.parts.iter().zip(&written) {
        if let Some(mut d) = writes::outside_roots(ctx, part, written) {
            d.target = Some(target);
            return d;
        }
    }
    let grant = raw_grant(ctx, command);
    let mut worst: Option<Decision> = None;
    let mut all_read = true;
    let (not_read, history) = not_a_read(ctx, &script.parts);
    let parts = script.parts.iter().zip(&named).zip(&not_read).zip(&written);
    for (i, (((part, named), why), written)) in parts.enumerate() {
        let Some(mut d) = part_decision(ctx, part, named, grant) else {
            continue;
        };
        if !written.is_empty() {
            let exact = exact_allow(ctx, part, &d);
            d = writes::judge(
                ctx,
                part,
                written,
                d,
                grant.is_some(),
                exact,
                inside(ctx, named),
            );
        }
        if let Some(why) = why
            && history[i]
        {
            d = history_ask(part, d, why, grant.is_some());
        }
        if let Some(why) = why {
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
        && let Some(why) = loaded_write(ctx, &script.parts, &named)
    {
        d = Decision::new(
            Verdict::Ask,
            Source::Sandbox,
            format!(
                "{why}: crew loads it as code or policy, so an agent never changes it without a human; approving it changes the project's trust pin, and the next session asks for `crew trust` again"
            ),
        );
        d.explicit_ask = true;
    }
    d.category = Some(category);
    d.target = Some(target);
    d
}

/// Why a part writes something crew loads as code or policy (`protected::loaded`), if
/// one does; the files hooks and MCP servers run are read from the settings only when a
/// part that is not read-only names a file.
fn loaded_write(ctx: &Ctx<'_>, parts: &[Part], named: &[Vec<Named>]) -> Option<String> {
    let mut run_files: Option<Vec<PathBuf>> = None;
    let mut run = || {
        run_files
            .get_or_insert_with(|| protected::run_files(&super::path::code_roots(ctx)))
            .clone()
    };
    parts.iter().zip(named).find_map(|(part, named)| {
        let paths = named
            .iter()
            .flat_map(|n| std::iter::once(n.lexical.as_path()).chain(n.real.as_deref()));
        protected::command_loaded_write(as_expanded(part).as_ref().unwrap_or(part), paths, &mut run)
            .map(|why| format!("`{}`: {why}", part.full_text()))
    })
}

/// A glob or brace (`~/.ss?/id_rsa`, `~/*/key`, never matched against the disk) names
/// files below its literal directory: where a credential location may be among them,
/// the command is denied like one naming it.
fn glob_credentials(ctx: &Ctx<'_>, parts: &[Part], target: &str) -> Option<Decision> {
    for part in parts {
        let args = part
            .args
            .iter()
            .chain(part.redirects.iter().map(|r| &r.arg));
        for pattern in args.filter_map(|a| a.pattern.as_deref()) {
            let literal = &pattern[..pattern.find(['*', '?', '[', '{']).unwrap_or(pattern.len())];
            let dir = literal.rsplit_once('/').map_or(".", |(d, _)| d);
            let dir = if dir.is_empty() { "/" } else { dir };
            let named = ctx.locate_arg(&Arg::literal(dir), &part.dir);
            let base = named.real.as_deref().unwrap_or(&named.lexical);
            let hit = ctx
                .creds()
                .matches(&named.lexical, named.real.as_deref())
                .or_else(|| ctx.creds().below(base));
            if let Some(name) = hit {
                let mut d = deny(
                    Source::Credentials,
                    format!(
                        "`{}` names files matching `{pattern}`, which may include a credential location (~/{name}); credentials are never readable or writable by agents",
                        part.full_text()
                    ),
                    target.to_string(),
                );
                d.rule = Some(format!("~/{name}"));
                return Some(d);
            }
        }
    }
    None
}

/// An exact allow rule naming the whole command as written (a grant of a command with
/// variables, globs or substitutions: it is matched against the raw text only).
fn raw_grant<'r>(ctx: &'r Ctx<'_>, command: &str) -> Option<&'r Rule> {
    let raw = command.trim();
    let subject = Subject::Command {
        text: raw,
        full: raw,
        privileged: false,
        forms: &[],
        open: false,
    };
    let grant = |r: &&Rule| r.kind == RuleKind::Allow && r.is_exact() && r.matches(&subject);
    match &ctx.index {
        Some(i) => i.command_candidates(&ctx.policy.rules, &[raw]).find(grant),
        None => ctx.policy.rules.iter().find(grant),
    }
}

/// Whether `d`, a part's decision, is an allow by an exact rule on the part's words.
fn exact_allow(ctx: &Ctx<'_>, part: &Part, d: &Decision) -> bool {
    if d.verdict != Verdict::Allow || !matches!(d.source, Source::Rule(_)) {
        return false;
    }
    let expanded = as_expanded(part);
    let (text, full) = (part.text(), part.full_text());
    part_rule(ctx, part, expanded.as_ref(), &text, &full, None)
        .is_some_and(|r| r.kind == RuleKind::Allow && r.is_exact())
}

/// The part as bash runs it, when expansion changed its words and all of them are known
/// (`r=rm; $r -rf x` runs `rm -rf x`): what deny and ask rules, the dangerous-command
/// guard and the git-config check also judge.
fn as_expanded(part: &Part) -> Option<Part> {
    let changed = part.expanded()
        && part.args.iter().all(|a| a.known)
        && (part.args.len() != part.argv.len()
            || part.args.iter().zip(&part.argv).any(|(a, t)| a.text != *t));
    changed.then(|| Part {
        argv: part.args.iter().map(|a| a.text.clone()).collect(),
        ..part.clone()
    })
}

/// The rule deciding one part: rules matched against its text (deny and ask rules also
/// against its other spellings, `commands::match_forms`), and deny or ask rules also
/// against its expanded words and their spellings (`r=rm; $r -rf x` is `rm -rf x`). An
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
    let forms = commands::match_forms(part);
    let subject = Subject::Command {
        text,
        full,
        privileged: part.privileged,
        forms: &forms,
        open: part.open,
    };
    let expanded_part = part.expanded();
    let rule = ctx
        .command_rule(&subject)
        .filter(|r| !(expanded_part && r.kind == RuleKind::Allow && r.is_exact()));
    let by_expansion = expanded.and_then(|e| {
        let text = e.text();
        let forms = commands::match_forms(e);
        let subject = Subject::Command {
            text: &text,
            full: &text,
            privileged: part.privileged,
            forms: &forms,
            open: part.open,
        };
        ctx.command_rule(&subject)
            .filter(|r| r.kind != RuleKind::Allow)
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
    // An assignment alone runs nothing, unless evaluating it may (`x=$((n))`: opaque).
    if part.argv.is_empty() && part.opaque.is_none() && !part.redirects.iter().any(|r| r.write) {
        return None;
    }
    let text = part.text();
    let full = part.full_text();
    let expanded = as_expanded(part);
    let rule = part_rule(ctx, part, expanded.as_ref(), &text, &full, grant);
    if let Some(why) = &part.opaque {
        return Some(opaque(ctx, rule, grant, why, &full));
    }
    // While a Bash deny or ask rule exists, a program that runs programs its words do not
    // show (`python3 -c`, `make`, `npx`, `xargs`) is opaque for it (`commands::runners`).
    if guarded_commands(ctx)
        && let Some(why) = commands::part_runs_hidden(part)
    {
        return Some(opaque(ctx, rule, None, &why, &full));
    }
    // A read-only command reading `/etc/shadow` or `../other-project` is not a plain read.
    let category = if commands::is_read_only(part) && inside(ctx, named) {
        Category::Read
    } else {
        Category::Exec
    };
    let mut d = match rule {
        Some(r) if r.kind != RuleKind::Allow => from_rule(r, &full),
        _ => match commands::dangerous(part)
            .or_else(|| expanded.as_ref().and_then(commands::dangerous))
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

/// Whether any Bash deny or ask rule exists: unseen code might be what it names.
fn guarded_commands(ctx: &Ctx<'_>) -> bool {
    ctx.policy.rules.iter().any(Rule::guards_commands)
}

/// An opaque part (`Part::opaque`: `cat f | bash`, a construct outside the literal
/// subset, an unknown wrapper option; or a program that runs programs while a Bash deny
/// or ask rule exists) runs code nobody can see. A deny rule matching what is visible
/// denies it. Only an exact allow rule naming the whole command as written (a human
/// approved that very text) allows it; no other rule or read-only class can: in default and
/// acceptEdits it asks. Under dontAsk, auto and bypassPermissions it goes to the mode's
/// fallback for commands (dontAsk runs it in the write profile, where the OS confines
/// it) only while no Bash deny or ask rule exists; otherwise it asks explicitly, so
/// dontAsk denies it: any of those rules might be what the unseen code runs.
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
    let mut d = Decision::new(
        Verdict::Ask,
        Source::Mode,
        format!("`{full}`: {why}; confirm it, or write the command out literally"),
    );
    d.rule = Some(format!("opaque: {why}"));
    d.explicit_ask = true;
    d.category = Some(Category::Exec);
    d
}

/// Words of a part that may name files, as bash expands them: the operands and file
/// option values of its command (`commands::path_operands`, which knows the allow-listed
/// programs' options and values glued to flags, `-oFILE`), the directory a wrapper runs
/// it in, and redirect targets. Where expansion changed the words, the operands are
/// taken from the expanded words, and every word that cannot be known is kept as
/// unknown (it cannot be located).
fn path_words(part: &Part) -> Vec<Arg> {
    let literal = part.args.len() == part.argv.len()
        && part
            .args
            .iter()
            .zip(&part.argv)
            .all(|(a, t)| a.known && a.text == *t);
    let mut words: Vec<Arg> = if literal {
        commands::path_operands(part)
            .into_iter()
            .map(Arg::literal)
            .collect()
    } else {
        let expanded = Part {
            argv: part.args.iter().map(|a| a.text.clone()).collect(),
            ..part.clone()
        };
        let mut words: Vec<Arg> = commands::path_operands(&expanded)
            .into_iter()
            .map(Arg::literal)
            .collect();
        words.extend(part.args.iter().skip(1).filter(|a| !a.known).cloned());
        words
    };
    words.extend(part.chdir.iter().map(|d| match &part.dir {
        // A relative `env -C DIR` was entered from where the part started.
        Dir::Known(at) => Arg::literal(at.to_string_lossy()),
        _ if Path::new(d).is_absolute() => Arg::literal(d.as_str()),
        _ => Arg::default(),
    }));
    words.extend(part.redirects.iter().map(|r| r.arg.clone()));
    words.retain(|w| {
        !w.known || !w.text.is_empty() && !w.text.starts_with('-') && !w.text.starts_with('&')
    });
    words
}

/// Whether every file a part names lies inside the roots (`/dev/null` counts).
fn inside(ctx: &Ctx<'_>, named: &[Named]) -> bool {
    named.iter().all(|n| {
        n.lexical == Path::new("/dev/null")
            || n.real
                .as_ref()
                .is_some_and(|r| sandbox::inside(r, &ctx.roots))
    })
}

/// A file a command names: where its name points and where it really is.
pub(super) struct Named {
    pub(super) lexical: PathBuf,
    pub(super) real: Option<PathBuf>,
    /// `real` is a directory.
    pub(super) dir: bool,
}

impl Ctx<'_> {
    /// Where an expanded command argument points, given the directory its part runs in.
    pub(super) fn locate_arg(&self, arg: &Arg, dir: &Dir) -> Named {
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
}

/// The files each part names, located in the directory the part runs in (tracked once,
/// by `shell/`): after a `cd` we cannot follow, relative words cannot be located, which
/// makes the part not a plain read.
fn named_by_part(ctx: &Ctx<'_>, parts: &[Part]) -> Vec<Vec<Named>> {
    parts
        .iter()
        .map(|part| {
            path_words(part)
                .iter()
                .map(|w| ctx.locate_arg(w, &part.dir))
                .collect()
        })
        .collect()
}

/// Why each part that may look like a read is not one (`None` when nothing says so): git
/// that may use a repository other than the project's (`commands::git_repo`), or a search
/// that reads everything below a directory where a Read deny rule may match or a
/// credential location lies (`commands::search_scopes`).
/// The second list marks git commands that print contents from git's objects (which
/// the OS cannot hide) over a scope where a denied file may lie (`history_ask`).
fn not_a_read(ctx: &Ctx<'_>, parts: &[Part]) -> (Vec<Option<String>>, Vec<bool>) {
    let cwd = ctx.cwd_real.as_deref().unwrap_or(&ctx.req.cwd);
    let project = ctx.policy.project_root.as_deref();
    // The project root's real location, through the cache (re-checked by identity).
    let project_real = std::cell::OnceCell::new();
    let project_real = || {
        project_real
            .get_or_init(|| match project {
                // The cwd was resolved (and re-checked) for this very call.
                Some(p) if p == ctx.req.cwd => ctx.cwd_real.clone(),
                Some(p) => ctx.policy.cache.cwd(p),
                None => None,
            })
            .as_deref()
    };
    let mut out = if parts.iter().any(|p| p.program() == "git") {
        let at = commands::git_repo::Places {
            cwd,
            cwd_is_real: ctx.cwd_real.is_some(),
            project_root: project_real(),
            project_gone: project.is_some() && project_real().is_none(),
            home: ctx.home,
        };
        commands::git_repo::foreign(parts, &at)
    } else {
        vec![None; parts.len()]
    };
    let mut history = vec![false; parts.len()];
    for (i, part) in parts.iter().enumerate() {
        let foreign = out[i].is_some();
        let Some(words) = out[i]
            .is_none()
            .then(|| commands::search_scopes(part))
            .flatten()
        else {
            continue;
        };
        out[i] = match commands::git_repo::run_dir(part, cwd) {
            None => Some("it searches a directory the engine cannot follow".to_string()),
            Some(d) => {
                // The parser's directories are real: the cwd's, or where a literal `cd` went.
                let (d, d_real) = match &part.chdir {
                    Some(c) => (sandbox::absolute(c, &d, ctx.home), false),
                    None => (d, part.dir != Dir::Initial || ctx.cwd_real.is_some()),
                };
                words.iter().find_map(|w| {
                    let w = sandbox::absolute(w, Path::new(""), ctx.home);
                    scope_why(ctx, &real_below(&d, d_real, &w)?)
                })
            }
        };
        // Git names paths from the repository root (`HEAD:path`, a whole-tree diff).
        if out[i].is_none()
            && part.program() == "git"
            && let Some(root) = project
        {
            let (root, real) = match project_real() {
                Some(r) => (r, true),
                None => (root, false),
            };
            out[i] = words
                .iter()
                .find_map(|w| scope_why(ctx, &real_below(root, real, Path::new(w))?));
        }
        history[i] = !foreign && out[i].is_some() && part.program() == "git";
    }
    (out, history)
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
    let mut a = Decision::new(
        Verdict::Ask,
        Source::Mode,
        format!(
            "`{full}` prints file contents from git history, which the sandbox cannot hide, and {why}; limit it with `-- PATH…` to paths no Read deny rule covers, or confirm it"
        ),
    );
    a.rule = Some("git history read".into());
    a.explicit_ask = true;
    a.category = Some(Category::Exec);
    a
}

/// Where `word` (relative to `base`, or absolute) really is; `None` when it does not
/// exist. A `base` known to be real needs only the word's own components looked up.
fn real_below(base: &Path, base_real: bool, word: &Path) -> Option<PathBuf> {
    if base_real && word.is_relative() {
        let r = sandbox::resolve_traced(base, word).ok()?;
        return r.exists.then_some(r.path);
    }
    std::fs::canonicalize(base.join(word)).ok()
}

/// Why reading everything below `dir` (a real directory or file) is not a plain read, if
/// it is not.
fn scope_why(ctx: &Ctx<'_>, dir: &Path) -> Option<String> {
    if let Some(c) = ctx.creds().below(dir) {
        return Some(format!(
            "it reads everything below {}, which holds the credential location ~/{c}",
            dir.display()
        ));
    }
    ctx.read_deny_below(dir).map(|r| {
        format!(
            "it reads everything below {}, where rule `{}` denies reading",
            dir.display(),
            r.text
        )
    })
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
