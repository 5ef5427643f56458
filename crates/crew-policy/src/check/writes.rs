//! A command's writes judged as writes (issue 25 item 5): each write redirect and each
//! file a command names as written (`commands::writes`) must pass the write policy.
//!
//! - **Hard check, every mode**: a located target outside the sandbox roots (and the
//!   sandbox temp dir) is denied, as `write_file` to it is; harmless devices are fine.
//! - **Write policy**: a target is decided like `write_file` on it (an `Edit`/`Write`
//!   rule, else the mode's fallback for writes). A rule allowing the *command* does not
//!   allow its writes (`Bash(touch:*)` does not grant `touch m`); only an exact grant of
//!   the whole command as written, which a human saw, covers its targets.
//! - **acceptEdits** lets through a command that only edits files inside the roots
//!   (`mkdir`, `touch`, `cp`, `mv`, a read-only command redirected into the project);
//!   `rm` and `sed -i` still ask: they are more than an edit the user can review.

use std::path::{Path, PathBuf};

use super::super::shell::Part;
use super::super::spec::RuleName;
use super::super::{Category, Decision, PermissionMode, Source, Verdict, sandbox};
use super::names::{Named, PartWrites};
use super::{Ctx, deny, from_rule};

/// Where a located target really is (its name where it cannot be resolved).
fn real(n: &Named) -> &Path {
    n.real.as_deref().unwrap_or(&n.lexical)
}

/// The hard check: a literal write outside the sandbox roots is denied in every mode.
pub(super) fn outside_roots(ctx: &Ctx<'_>, part: &Part, w: &PartWrites) -> Option<Decision> {
    let temp = std::cell::OnceCell::new();
    let t = w.targets.iter().find(|t| {
        let Some(n) = &t.at else { return false };
        let real = real(n);
        if sandbox::inside(real, &ctx.roots) {
            return false;
        }
        let temp: &PathBuf = temp.get_or_init(|| {
            let dir = crew_config::places::sandbox_temp_dir();
            std::fs::canonicalize(&dir).unwrap_or(dir)
        });
        !sandbox::inside(real, std::slice::from_ref(temp))
    })?;
    let n = t.at.as_ref()?;
    let mut d = deny(
        Source::Sandbox,
        format!(
            "`{}` writes `{}` ({}), outside the sandbox roots ({}); commands write only below the roots and the sandbox temp dir ($TMPDIR), as write_file does; add the directory to permissions.additionalDirectories in .crew/settings.local.json to allow it",
            part.full_text(),
            t.text,
            real(n).display(),
            ctx.roots_text()
        ),
        real(n).display().to_string(),
    );
    d.category = Some(Category::Exec);
    Some(d)
}

/// The part's decision `d` with its writes judged as writes (see the module comment).
/// `granted`: an exact rule granted the whole command as written. `exact`: an exact
/// allow rule matched the part's words, which name its targets (`Bash(touch kept.txt)`
/// grants writing `kept.txt`, not a redirect). `named_inside`: every file the part names
/// lies inside the roots.
pub(super) fn judge(
    ctx: &Ctx<'_>,
    part: &Part,
    w: &PartWrites,
    d: Decision,
    granted: bool,
    exact: bool,
    named_inside: bool,
) -> Decision {
    if d.verdict == Verdict::Deny || w.targets.is_empty() || granted {
        return d;
    }
    let full = part.full_text();
    let fallback = crate::mode::fallback(ctx.mode(), Category::Write);
    // The strongest target decision (an ask rule's ask is explicit, a fallback's is not).
    let strength = |d: &Decision| (d.verdict, d.explicit_ask);
    let mut worst: Option<Decision> = None;
    for t in w.targets.iter().filter(|t| t.redirect || !exact) {
        let rule =
            t.at.as_ref()
                .and_then(|n| ctx.path_rule(&[RuleName::Write, RuleName::Edit], real(n)));
        let td = match rule {
            Some(r) => from_rule(r, &t.text),
            None => write_fallback(ctx, &full, &t.text, fallback),
        };
        if worst.as_ref().is_none_or(|w| strength(&td) > strength(w)) {
            worst = Some(td);
        }
    }
    let Some(mut td) = worst else {
        return d;
    };
    let located = w.targets.iter().all(|t| t.at.is_some());
    if td.verdict == Verdict::Allow {
        // acceptEdits: a command that only edits files inside the roots needs no human.
        let promote = ctx.mode() == PermissionMode::AcceptEdits
            && d.verdict == Verdict::Ask
            && d.source == Source::Mode
            && !d.explicit_ask
            && w.edits_only
            && located
            && named_inside
            && part.opaque.is_none()
            && !part.privileged;
        if promote {
            let mut a = Decision::new(
                Verdict::Allow,
                Source::Mode,
                format!(
                    "acceptEdits mode allows `{full}`: its only effect is editing files inside the sandbox roots"
                ),
            );
            a.category = Some(Category::Write);
            return a;
        }
        return d;
    }
    if strength(&d) >= strength(&td) {
        return d;
    }
    td.category = Some(Category::Exec);
    if td.verdict != Verdict::Deny && d.source != Source::Mode {
        td.reason = format!(
            "{}; the rule allowing `{full}` does not cover the files it writes",
            td.reason
        );
    }
    td
}

fn write_fallback(ctx: &Ctx<'_>, full: &str, target: &str, verdict: Verdict) -> Decision {
    let mode = ctx.mode();
    let mut reason = format!(
        "`{full}` writes `{target}`; {}",
        super::super::mode::fallback_reason(mode, Category::Write, verdict)
    );
    if verdict == Verdict::Ask {
        reason.push_str(
            "; approve it, allow the target with an Edit(...) rule, or use acceptEdits mode",
        );
    }
    let mut d = Decision::new(verdict, Source::Mode, reason);
    d.category = Some(Category::Exec);
    d
}
