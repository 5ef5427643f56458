//! Which Read deny rule may match something at or below a directory: a recursive search
//! of the directory (`grep -r`, `rg`, a whole-tree `git diff`) reads all of it. Each
//! rule's anchor (`Rule::anchor`: the path it names, or the directories before its first
//! glob character) is normalised once per policy, so a question costs byte comparisons —
//! no path join and no file-system access per rule. The answer is the rule
//! `Rule::could_match_below` would find first.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use super::rules::{Anchor, Rule, RuleKind};
use super::spec::RuleName;

/// The Read deny rules of one rule list, by anchor, in list order.
#[derive(Debug, Default)]
pub struct Scopes {
    entries: Vec<(usize, Anchored)>,
}

#[derive(Debug)]
enum Anchored {
    Anywhere,
    /// A normalised absolute path (`/` then components joined by `/`).
    Absolute(Vec<u8>),
    /// Normalised relative components joined by `/` (empty: the base itself).
    Relative(Vec<u8>),
}

impl Scopes {
    /// The Read deny rules of `rules`, with their anchors normalised.
    pub fn build(rules: &[Rule]) -> Scopes {
        let entries = rules
            .iter()
            .enumerate()
            .filter(|(_, r)| r.kind == RuleKind::Deny && r.covers(&[RuleName::Read]))
            .map(|(i, r)| {
                let anchored = match r.anchor() {
                    Anchor::Anywhere => Anchored::Anywhere,
                    Anchor::Absolute(p) => match normalised(Path::new(p)).into_owned() {
                        // `//*`: no directory before the first glob character.
                        n if n.first() != Some(&b'/') => Anchored::Anywhere,
                        n => Anchored::Absolute(n),
                    },
                    Anchor::Relative(p) => {
                        Anchored::Relative(normalised(Path::new(p)).into_owned())
                    }
                };
                (i, anchored)
            })
            .collect();
        Scopes { entries }
    }

    /// The first Read deny rule (its index in the list the scopes were built from) that
    /// may match `dir` or something below it; `dir` is real (canonical), `bases` are the
    /// bases of relative patterns.
    pub fn first_below(&self, dir: &Path, bases: &[PathBuf]) -> Option<usize> {
        let dir = normalised(dir);
        // Where `dir` lies relative to each base: below it (the rest), or above it (then
        // every relative anchor lies below `dir`).
        let mut below: Vec<&[u8]> = Vec::with_capacity(bases.len());
        let mut above = false;
        let bases: Vec<Cow<'_, [u8]>> = bases.iter().map(|b| normalised(b)).collect();
        for b in &bases {
            if let Some(rest) = rest_below(&dir, b) {
                below.push(rest);
            } else if rest_below(b, &dir).is_some() {
                above = true;
            }
        }
        self.entries.iter().find_map(|(i, a)| {
            let hit = match a {
                Anchored::Anywhere => true,
                Anchored::Absolute(p) => overlaps(p, &dir),
                Anchored::Relative(p) => above || below.iter().any(|r| overlaps(p, r)),
            };
            hit.then_some(*i)
        })
    }
}

/// `a` and `b` (both normalised the same way) are equal or one lies below the other.
fn overlaps(a: &[u8], b: &[u8]) -> bool {
    rest_below(a, b).is_some() || rest_below(b, a).is_some()
}

/// If `path` is `dir` or lies below it (component-wise), the components after `dir`.
pub(crate) fn rest_below<'a>(path: &'a [u8], dir: &[u8]) -> Option<&'a [u8]> {
    let rest = path.strip_prefix(dir)?;
    if rest.is_empty() || dir.is_empty() || dir.ends_with(b"/") {
        return Some(rest);
    }
    rest.strip_prefix(b"/")
}

/// `path.strip_prefix(dir)` (component-wise), by comparing bytes when both are written
/// in normal form (a real path is); otherwise as `Path::strip_prefix` does it.
pub(crate) fn strip_prefix<'a>(path: &'a Path, dir: &Path) -> Option<&'a Path> {
    match (normalised(path), normalised(dir)) {
        (Cow::Borrowed(p), Cow::Borrowed(d)) => {
            rest_below(p, d).map(|rest| Path::new(OsStr::from_bytes(rest)))
        }
        _ => path.strip_prefix(dir).ok(),
    }
}

/// `path.starts_with(dir)` (component-wise), as `strip_prefix` compares.
pub(crate) fn starts_with(path: &Path, dir: &Path) -> bool {
    strip_prefix(path, dir).is_some()
}

/// Whether a path is absolute and written plainly: no `.` or `..` components, no empty
/// ones, no trailing `/` (what `sandbox::lexical` returns unchanged).
pub(crate) fn plain(path: &Path) -> bool {
    let bytes = path.as_os_str().as_encoded_bytes();
    match bytes.strip_prefix(b"/") {
        Some(b"") => true,
        Some(body) => components_are(body, |c| c != b"." && c != b".."),
        None => false,
    }
}

/// Whether every `/`-separated component of `body` is non-empty and passes `ok`.
fn components_are(body: &[u8], ok: impl Fn(&[u8]) -> bool) -> bool {
    let mut start = 0;
    for i in 0..=body.len() {
        if i == body.len() || body[i] == b'/' {
            let c = &body[start..i];
            if c.is_empty() || !ok(c) {
                return false;
            }
            start = i + 1;
        }
    }
    true
}

/// The path's components joined by `/` (`.` dropped, `..` kept, as `Path::starts_with`
/// compares them), with a leading `/` when it is absolute. Borrowed when the path is
/// written that way already (a real path always is).
pub(crate) fn normalised(path: &Path) -> Cow<'_, [u8]> {
    let bytes = path.as_os_str().as_encoded_bytes();
    let body = bytes.strip_prefix(b"/").unwrap_or(bytes);
    if body.is_empty() || components_are(body, |c| c != b".") {
        return Cow::Borrowed(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len());
    for c in path.components() {
        let part: &OsStr = match c {
            Component::RootDir => {
                out.push(b'/');
                continue;
            }
            Component::CurDir | Component::Prefix(_) => continue,
            Component::ParentDir => OsStr::new(".."),
            Component::Normal(n) => n,
        };
        if !out.is_empty() && !out.ends_with(b"/") {
            out.push(b'/');
        }
        out.extend_from_slice(part.as_encoded_bytes());
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Layer;

    /// The byte comparisons agree with `Path`'s component-wise ones.
    #[test]
    fn byte_comparisons_agree_with_path() {
        let paths = [
            "/", "/a", "/a/b", "/a/bc", "/ab", "/a/./b", "/a//b", "/a/b/", "/a/../b", "a", "a/b",
            "./a", "", "/a/b/c/d",
        ];
        for p in paths {
            for d in paths {
                let (p, d) = (Path::new(p), Path::new(d));
                assert_eq!(strip_prefix(p, d), p.strip_prefix(d).ok(), "{p:?} {d:?}");
                assert_eq!(starts_with(p, d), p.starts_with(d), "{p:?} {d:?}");
            }
            let p = Path::new(p);
            if plain(p) {
                assert_eq!(crate::sandbox::lexical(p), p, "{p:?}");
            }
        }
    }

    /// The index finds the rule a linear `could_match_below` scan finds, for rules of
    /// every anchor kind and directories above, at, below and beside the bases.
    #[test]
    #[rustfmt::skip]
    fn finds_the_rule_a_linear_scan_finds() {
        let home = Path::new("/home/u");
        let specs = [
            "Read(secrets/**)", "Read(/src/gen/*.rs)", "Read(//etc/ssl/**)", "Read(~/.env)",
            "Read(=/p/exact.txt)", "Read(=docs/x.md)", "Read(./a/../b/**)", "Read(//*)",
            "Read(deep/dir/file)", "Read(*.pem)", "Read(~^/p/.*$)", "Read(!src/**)", "Read",
        ];
        let bases = vec![PathBuf::from("/p"), PathBuf::from("/p/sub")];
        let dirs = [
            "/", "/p", "/p/src", "/p/src/gen", "/p/src/gen/x", "/p/secrets", "/p/secretsx",
            "/p/sub", "/p/sub/secrets/a", "/etc", "/etc/ssl/certs", "/etc/sslx", "/home",
            "/home/u/.env", "/p/docs", "/p/a", "/p/b/c", "/q", "/p/deep/dir", "/pq",
        ];
        // Every suffix of the list, so each rule kind gets to be the first that matches.
        for start in 0..specs.len() {
            let rules: Vec<Rule> = specs[start..]
                .iter()
                .flat_map(|t| {
                    [RuleKind::Allow, RuleKind::Deny]
                        .map(|k| Rule::parse(t, k, Layer::User, Some(home)).unwrap())
                })
                .collect();
            let scopes = Scopes::build(&rules);
            for dir in dirs {
                let dir = Path::new(dir);
                let want = rules.iter().position(|r| {
                    r.kind == RuleKind::Deny && r.could_match_below(&[RuleName::Read], dir, &bases)
                });
                assert_eq!(
                    scopes.first_below(dir, &bases),
                    want,
                    "{dir:?} with rules from {}",
                    specs[start]
                );
            }
        }
    }
}
