//! Pathname expansion (`*`, `?`, `[…]`, `**`) against the real file system, for judging
//! what a command names before the shell runs it: `rm -rf /u?r` names `/usr`.
//!
//! It errs on the side of matching more, never less: hidden entries match as if `dotglob`
//! were set (a script can set it), and `**` recurses as if `globstar` were set. A pattern it
//! cannot evaluate (an extended glob, an unknown character class, a directory it cannot
//! read, too many entries) is an error, and the word stays unknown.

use std::path::{Path, PathBuf};

/// How many directory entries one pattern may visit before it counts as unknown.
const MAX_ENTRIES: usize = 20_000;

/// One character of a pattern: literal (quoted, or not a glob character) or active.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PChar {
    /// Matches itself.
    Lit(char),
    /// An unquoted character: `*`, `?` and `[` have their glob meaning.
    Active(char),
}

/// The pattern cannot be evaluated; the word stays unknown.
#[derive(Debug)]
pub(super) struct Unknowable;

/// Whether the pattern holds an active glob character or an extended glob (`@(…)`).
pub(super) fn is_glob(p: &[PChar]) -> bool {
    // A `[` without a later `]` matches itself (`[ $i -lt 5 ]`'s program is `[`).
    let bracket = |i: usize| {
        p[i + 1..]
            .iter()
            .any(|c| matches!(c, PChar::Lit(']') | PChar::Active(']')))
    };
    p.iter().enumerate().any(|(i, c)| {
        matches!(c, PChar::Active('*' | '?')) || (*c == PChar::Active('[') && bracket(i))
    }) || p
        .windows(2)
        .any(|w| matches!(w[0], PChar::Active('@' | '!' | '+')) && w[1] == PChar::Active('('))
}

/// The pattern as text (what the shell passes on when nothing matches).
pub(super) fn text(p: &[PChar]) -> String {
    p.iter()
        .map(|c| match c {
            PChar::Lit(c) | PChar::Active(c) => *c,
        })
        .collect()
}

/// Expands `pattern` relative to `dir` (absolute patterns ignore it). Matches come back
/// as the shell would pass them: absolute for absolute patterns, else relative to `dir`.
/// `Ok(empty)` when nothing matches (the shell then passes the pattern itself).
pub(super) fn expand(pattern: &[PChar], dir: Option<&Path>) -> Result<Vec<String>, Unknowable> {
    // Extended globs (`@(…)`, `!(…)`, `+(…)`, `*(…)`, `?(…)`) are not evaluated.
    if pattern.windows(2).any(|w| {
        matches!(w[0], PChar::Active('@' | '!' | '+' | '*' | '?'))
            && matches!(w[1], PChar::Active('('))
    }) {
        return Err(Unknowable);
    }
    let absolute = matches!(pattern.first(), Some(PChar::Lit('/') | PChar::Active('/')));
    let base = if absolute {
        PathBuf::from("/")
    } else {
        dir.ok_or(Unknowable)?.to_path_buf()
    };
    let comps: Vec<&[PChar]> = pattern
        .split(|c| matches!(c, PChar::Lit('/') | PChar::Active('/')))
        .filter(|c| !c.is_empty())
        .collect();
    // (shown text, real location)
    let mut found: Vec<(String, PathBuf)> =
        vec![(if absolute { "/".into() } else { String::new() }, base)];
    let mut budget = MAX_ENTRIES;
    for comp in comps {
        let mut next = Vec::new();
        let star2 = comp.len() == 2 && comp.iter().all(|c| *c == PChar::Active('*'));
        for (shown, real) in &found {
            if star2 {
                descendants(shown, real, &mut next, &mut budget)?;
            } else if is_glob(comp) {
                for name in entries(real, &mut budget)? {
                    if matches(comp, &name)? {
                        next.push((join(shown, &name), real.join(&name)));
                    }
                }
            } else {
                let name = text(comp);
                next.push((join(shown, &name), real.join(&name)));
            }
        }
        found = next;
    }
    let trailing = matches!(pattern.last(), Some(PChar::Lit('/') | PChar::Active('/')));
    Ok(found
        .into_iter()
        .filter(|(_, real)| std::fs::symlink_metadata(real).is_ok())
        .map(|(shown, _)| if trailing { format!("{shown}/") } else { shown })
        .collect())
}

fn join(shown: &str, name: &str) -> String {
    match shown {
        "" => name.to_string(),
        "/" => format!("/{name}"),
        s => format!("{s}/{name}"),
    }
}

fn entries(dir: &Path, budget: &mut usize) -> Result<Vec<String>, Unknowable> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        // Not a directory or missing: nothing below it matches.
        Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound) => return Ok(Vec::new()),
        Err(_) if !dir.is_dir() => return Ok(Vec::new()),
        Err(_) => return Err(Unknowable),
    };
    let mut out = Vec::new();
    for e in rd {
        let e = e.map_err(|_| Unknowable)?;
        *budget = budget.checked_sub(1).ok_or(Unknowable)?;
        out.push(e.file_name().to_string_lossy().into_owned());
    }
    Ok(out)
}

/// `**`: the directory itself and every directory below it (not following links).
fn descendants(
    shown: &str,
    real: &Path,
    out: &mut Vec<(String, PathBuf)>,
    budget: &mut usize,
) -> Result<(), Unknowable> {
    out.push((shown.to_string(), real.to_path_buf()));
    for name in entries(real, budget)? {
        let path = real.join(&name);
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
            descendants(&join(shown, &name), &path, out, budget)?;
        }
    }
    Ok(())
}

/// Whether one path component matches a pattern component (`*`, `?`, `[…]`).
pub(super) fn matches(pat: &[PChar], name: &str) -> Result<bool, Unknowable> {
    let name: Vec<char> = name.chars().collect();
    // Iterative matching with one backtrack point for the last `*`.
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        let step = match pat.get(p) {
            Some(PChar::Active('*')) => {
                star = Some((p, n));
                p += 1;
                continue;
            }
            Some(PChar::Active('?')) => Some(p + 1),
            Some(PChar::Active('[')) => match class(pat, p, name[n])? {
                Some((true, end)) => Some(end),
                Some((false, _)) => None,
                // An unclosed `[` is a literal character.
                None => (name[n] == '[').then_some(p + 1),
            },
            Some(PChar::Lit(c) | PChar::Active(c)) => (name[n] == *c).then_some(p + 1),
            None => None,
        };
        match (step, star) {
            (Some(next), _) => {
                p = next;
                n += 1;
            }
            (None, Some((sp, sn))) => {
                p = sp + 1;
                n = sn + 1;
                star = Some((sp, sn + 1));
            }
            (None, None) => return Ok(false),
        }
    }
    Ok(pat[p..].iter().all(|c| *c == PChar::Active('*')))
}

/// A bracket expression at `pat[start]` (`[`): whether `c` is in it and where it ends;
/// `None` when the bracket is not closed.
fn class(pat: &[PChar], start: usize, c: char) -> Result<Option<(bool, usize)>, Unknowable> {
    let ch = |i: usize| match pat.get(i) {
        Some(PChar::Lit(c) | PChar::Active(c)) => Some(*c),
        None => None,
    };
    let mut i = start + 1;
    let negate = matches!(pat.get(i), Some(PChar::Active('!' | '^')));
    if negate {
        i += 1;
    }
    let mut hit = false;
    let mut first = true;
    loop {
        let Some(cur) = ch(i) else { return Ok(None) };
        if cur == ']' && !first && pat[i] == PChar::Active(']') {
            return Ok(Some((hit != negate, i + 1)));
        }
        first = false;
        if cur == '[' && ch(i + 1) == Some(':') {
            let rest: String = (i + 2..pat.len()).map_while(ch).collect();
            let Some(end) = rest.find(":]") else {
                return Err(Unknowable);
            };
            hit |= posix_class(&rest[..end], c)?;
            i += 2 + end + 2;
            continue;
        }
        if ch(i + 1) == Some('-') && ch(i + 2).is_some_and(|e| e != ']') {
            let end = ch(i + 2).ok_or(Unknowable)?;
            hit |= (cur..=end).contains(&c);
            i += 3;
        } else {
            hit |= cur == c;
            i += 1;
        }
    }
}

fn posix_class(name: &str, c: char) -> Result<bool, Unknowable> {
    Ok(match name {
        "alpha" => c.is_alphabetic(),
        "digit" => c.is_ascii_digit(),
        "alnum" => c.is_alphanumeric(),
        "upper" => c.is_uppercase(),
        "lower" => c.is_lowercase(),
        "space" => c.is_whitespace(),
        "blank" => c == ' ' || c == '\t',
        "punct" => c.is_ascii_punctuation(),
        "xdigit" => c.is_ascii_hexdigit(),
        "print" | "graph" => !c.is_control(),
        "cntrl" => c.is_control(),
        _ => return Err(Unknowable),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pat(s: &str) -> Vec<PChar> {
        s.chars().map(PChar::Active).collect()
    }

    #[test]
    fn component_matching() {
        let m = |p: &str, n: &str| matches(&pat(p), n).unwrap();
        assert!(m("u?r", "usr"));
        assert!(m("[u]sr", "usr"));
        assert!(m("[!a]sr", "usr"));
        assert!(!m("[^u]sr", "usr"));
        assert!(m("[a-z]*", "usr"));
        assert!(m("*", ".ssh"));
        assert!(m(".ss?", ".ssh"));
        assert!(m("*.rs", "main.rs"));
        assert!(!m("*.rs", "main.rs.bak"));
        assert!(m("[[:alpha:]]sr", "usr"));
        assert!(m("a*b*c", "aXbYbc"));
        assert!(matches(&pat("[[:nope:]]"), "x").is_err());
        // A quoted star is literal.
        assert!(!matches(&[PChar::Lit('*')], "usr").unwrap());
    }

    #[test]
    fn expands_against_the_file_system() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::create_dir_all(d.join("a/.hidden")).unwrap();
        std::fs::create_dir_all(d.join("b/x")).unwrap();
        std::fs::write(d.join("a/.hidden/key"), "k").unwrap();
        let mut got = expand(&pat("*"), Some(d)).unwrap();
        got.sort();
        assert_eq!(got, ["a", "b"]);
        assert_eq!(expand(&pat("*/*/key"), Some(d)).unwrap(), ["a/.hidden/key"]);
        assert_eq!(expand(&pat("**/key"), Some(d)).unwrap(), ["a/.hidden/key"]);
        assert!(expand(&pat("nothing*"), Some(d)).unwrap().is_empty());
        assert!(
            expand(&pat("*"), None).is_err(),
            "relative glob, unknown dir"
        );
        let abs = format!("{}/?/x", d.display());
        assert_eq!(
            expand(&pat(&abs), None).unwrap(),
            [format!("{}/b/x", d.display())]
        );
        assert!(expand(&pat("@(a)"), Some(d)).is_err());
    }
}
