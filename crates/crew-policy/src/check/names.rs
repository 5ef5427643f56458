//! What a command names, walked once (issue 25 item 7): for each part, the files it names
//! (located where the part runs), the files it writes, and why a part that looks like a
//! read is not one (a foreign repository, a recursive read or git history over a scope
//! where a Read deny rule or a credential may lie). Every check of `command_decision`
//! reads this one structure instead of walking the parts itself.

use std::path::{Path, PathBuf};

use super::super::shell::{Arg, Dir, Part};
use super::super::{Decision, Source, commands, sandbox};
use super::{Ctx, deny};

/// What one part of a command names.
pub(super) struct Names {
    /// The files it names, located.
    pub(super) named: Vec<Named>,
    /// The files it writes.
    pub(super) writes: PartWrites,
    /// Why it is not a plain read, when something says so.
    pub(super) not_read: Option<String>,
    /// It is git printing contents from history over such a scope (`history_ask`).
    pub(super) history: bool,
    /// Each glob or brace pattern in its words, with its literal directory located.
    pub(super) globs: Vec<(String, Named)>,
    /// The part as bash runs it, when expansion changed its words (`as_expanded`).
    pub(super) expanded: Option<Part>,
}

impl Names {
    /// The paths it names, each as written (lexical) and where it really is.
    pub(super) fn paths(&self) -> impl Iterator<Item = &Path> {
        self.named
            .iter()
            .flat_map(|n| std::iter::once(n.lexical.as_path()).chain(n.real.as_deref()))
    }

    /// The part to judge `part`'s effects on: as bash runs it, `~` expanded (`git -C ~
    /// config core.hooksPath x` writes the home's git config).
    pub(super) fn judged<'a>(&'a self, part: &'a Part) -> &'a Part {
        self.expanded.as_ref().unwrap_or(part)
    }
}

/// Walks the parts of a command once: what each one names. Files are located in the
/// directory the part runs in (tracked once, by `shell/`): after a `cd` we cannot follow,
/// relative words cannot be located, which makes the part not a plain read.
pub(super) fn walk(ctx: &Ctx<'_>, parts: &[Part]) -> Vec<Names> {
    let (not_read, history) = not_a_read(ctx, parts);
    parts
        .iter()
        .zip(not_read.into_iter().zip(history))
        .map(|(part, (not_read, history))| Names {
            named: path_words(part)
                .iter()
                .map(|w| ctx.locate_arg(w, &part.dir))
                .collect(),
            writes: part_writes(ctx, part),
            globs: glob_dirs(ctx, part),
            expanded: as_expanded(part),
            not_read,
            history,
        })
        .collect()
}

/// Words of a part that may name files, as bash expands them: its command's operands and
/// file option values (`commands::path_operands`), the directory a wrapper runs it in, and
/// redirect targets. A word that cannot be known is kept as unknown (it cannot be located).
fn path_words(part: &Part) -> Vec<Arg> {
    let literal = part.args.len() == part.argv.len()
        && part
            .args
            .iter()
            .zip(&part.argv)
            .all(|(a, t)| a.known && a.text == *t);
    let expanded = (!literal).then(|| Part {
        argv: part.args.iter().map(|a| a.text.clone()).collect(),
        ..part.clone()
    });
    let mut words: Vec<Arg> = commands::path_operands(expanded.as_ref().unwrap_or(part))
        .into_iter()
        .map(Arg::literal)
        .collect();
    // A literal part has no unknown words.
    words.extend(part.args.iter().skip(1).filter(|a| !a.known).cloned());
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
pub(super) fn inside(ctx: &Ctx<'_>, named: &[Named]) -> bool {
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
    /// `real` exists.
    pub(super) exists: bool,
}

impl Ctx<'_> {
    /// Where an expanded command argument points, given the directory its part runs in.
    pub(super) fn locate_arg(&self, arg: &Arg, dir: &Dir) -> Named {
        let unlocatable = Named {
            lexical: PathBuf::from("/"),
            real: None,
            dir: false,
            exists: false,
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
            exists: real.as_ref().is_some_and(|r| r.exists),
            real: real.map(|r| r.path),
        }
    }
}

/// Why each part that may look like a read is not one (`None` when nothing says so): git
/// on a repository other than the project's (`commands::git_repo`), or a search reading
/// everything below where a Read deny rule may match or a credential lies
/// (`commands::search_scopes`). The second list marks git printing such contents from its
/// objects, which the OS cannot hide (`history_ask`).
fn not_a_read(ctx: &Ctx<'_>, parts: &[Part]) -> (Vec<Option<String>>, Vec<bool>) {
    let cwd = ctx.cwd_real.as_deref().unwrap_or(&ctx.req.cwd);
    let project = ctx.policy.project_root.as_deref();
    // The project root's real location, through the cache (re-checked by identity).
    let project_real = std::cell::OnceCell::new();
    let project_real = || project_real.get_or_init(|| ctx.project_real()).as_deref();
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
        out[i] = match part.dir {
            Dir::Unknown => Some("it searches a directory the engine cannot follow".to_string()),
            // Located as the part's other words are: where it runs (a leading literal
            // `cd`, a wrapper's `env -C DIR` included).
            _ => words.iter().find_map(|w| {
                let w = sandbox::absolute(w, Path::new(""), ctx.home);
                let n = ctx.locate_arg(&Arg::literal(w.to_string_lossy()), &part.dir);
                scope_why(ctx, n.real.as_deref().filter(|_| n.exists)?)
            }),
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

/// The literal directory of each glob or brace the part's words hold (`~/.ss?/id_rsa`,
/// `~/*/key`; never matched against the disk), located: the files the pattern names lie
/// below it.
fn glob_dirs(ctx: &Ctx<'_>, part: &Part) -> Vec<(String, Named)> {
    let args = part
        .args
        .iter()
        .chain(part.redirects.iter().map(|r| &r.arg));
    args.filter_map(|a| a.pattern.clone())
        .map(|pattern| {
            let literal = &pattern[..pattern.find(['*', '?', '[', '{']).unwrap_or(pattern.len())];
            let dir = literal.rsplit_once('/').map_or(".", |(d, _)| d);
            let dir = if dir.is_empty() { "/" } else { dir };
            let named = ctx.locate_arg(&Arg::literal(dir), &part.dir);
            (pattern, named)
        })
        .collect()
}

/// The denial of a part that names a credential location (`~/name`): `what` says how.
pub(super) fn credential_denial(part: &Part, what: &str, name: &str) -> Decision {
    let mut d = deny(
        Source::Credentials,
        format!(
            "`{}` {what} (~/{name}); credentials are never readable or writable by agents",
            part.full_text()
        ),
        "",
    );
    d.rule = Some(format!("~/{name}"));
    d
}

/// One file a command writes.
pub(super) struct Target {
    /// As written, for messages.
    pub(super) text: String,
    /// Where it is, when it can be known before the command runs.
    pub(super) at: Option<Named>,
    /// A redirect's target (no command rule's text names it).
    pub(super) redirect: bool,
}

/// What a part writes: its targets, and whether creating, copying or moving files is
/// its only effect.
#[derive(Default)]
pub(super) struct PartWrites {
    pub(super) targets: Vec<Target>,
    pub(super) edits_only: bool,
}

/// Devices a command may always write: they hold no file.
fn harmless(text: &str) -> bool {
    matches!(
        text,
        "/dev/null" | "/dev/zero" | "/dev/full" | "/dev/stdout" | "/dev/stderr" | "/dev/tty"
    ) || ["/dev/fd/", "/proc/self/fd/"].iter().any(|p| {
        text.strip_prefix(p)
            .is_some_and(|n| n.parse::<u32>().is_ok())
    })
}

/// The part's words as bash expands them (the program first); literal words where the
/// shell gave no expansion.
fn words(part: &Part) -> Vec<Arg> {
    if part.args.is_empty() {
        part.argv.iter().map(|a| Arg::literal(a.as_str())).collect()
    } else {
        part.args.clone()
    }
}

/// What `part` writes: its write redirects and the files its command names as written.
pub(super) fn part_writes(ctx: &Ctx<'_>, part: &Part) -> PartWrites {
    let mut out = PartWrites::default();
    let mut push = |ctx: &Ctx<'_>, arg: &Arg, text: &str, redirect: bool| {
        if harmless(text) || (arg.known && harmless(&arg.text)) {
            return;
        }
        let at = (arg.known
            && (Path::new(&arg.text).is_absolute() || !matches!(part.dir, Dir::Unknown)))
        .then(|| ctx.locate_arg(arg, &part.dir));
        out.targets.push(Target {
            text: text.to_string(),
            at,
            redirect,
        });
    };
    for r in part.redirects.iter().filter(|r| r.write) {
        // `>&2`, `2>&1`, `>&-`: a descriptor, not a file.
        if r.target.starts_with('&') || r.target.is_empty() {
            continue;
        }
        push(ctx, &r.arg, &r.target, true);
    }
    // A read-only command whose output goes into files only edits those files; so does
    // a redirect alone (`> f` truncates f).
    out.edits_only = !part.redirects.is_empty() && {
        let mut quiet = part.clone();
        quiet.redirects.clear();
        part.argv.is_empty() || commands::is_read_only(&quiet)
    };
    let words = words(part);
    if words.first().is_none_or(|w| !w.known) {
        return out;
    }
    let texts: Vec<String> = words.iter().map(|w| w.text.clone()).collect();
    let w = commands::writes(&texts);
    for (i, from) in w.targets {
        let Some(word) = words.get(i) else { continue };
        let arg = Arg {
            text: word.text.get(from..).unwrap_or_default().to_string(),
            ..word.clone()
        };
        let shown = match part.argv.get(i) {
            Some(w) if from == 0 => w.clone(),
            _ => arg.text.clone(),
        };
        push(ctx, &arg, &shown, false);
    }
    if w.cwd {
        let at = part.dir.path(ctx.cwd_real.as_deref());
        out.targets.push(Target {
            text: ".".into(),
            at: at.map(|real| Named {
                lexical: real.clone(),
                real: Some(real),
                dir: true,
                exists: true,
            }),
            redirect: false,
        });
    }
    out.edits_only |= w.edits_only;
    out
}

impl PartWrites {
    /// Whether the part writes no file.
    pub(super) fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }
}

/// The part as bash runs it, when expansion changed its words and all of them are known
/// (a leading `~` or `$HOME`: `rm -rf ~/x` removes `/home/u/x`): what deny and ask rules,
/// the dangerous-command guard and the protected-path checks also judge.
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
