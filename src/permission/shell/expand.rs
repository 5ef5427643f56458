//! Word expansion as bash performs it before a command runs, so that the engine judges
//! what a command really names: brace expansion, tilde, variables assigned earlier in the
//! same script, word splitting of unquoted values, and pathname globs matched against the
//! real file system relative to the part's directory. What cannot be known stays unknown
//! (`Arg::known == false`), so a destructive command can fail closed.

use brush_parser::word::{Parameter, ParameterExpr, TildeExpr, WordPiece, WordPieceWithSource};

use super::cwd::{Env, State};
use super::glob::{self, PChar};

/// How many words one brace expansion may produce before the word counts as unknown.
const MAX_BRACE_WORDS: usize = 256;

/// One argument after expansion.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Arg {
    /// The text the command receives; when unknown, the known text with placeholders
    /// (`$VAR`, `$(…)`) for what could not be evaluated.
    pub text: String,
    /// Whether `text` is exactly what the command receives.
    pub known: bool,
    /// Whether an unknown value may split into several arguments (an unquoted expansion):
    /// it may then hold options as well as operands.
    pub splits: bool,
    /// For a glob's matches (or a glob that matched nothing): the pattern, expanded.
    pub pattern: Option<String>,
}

impl Arg {
    /// A known literal argument.
    pub fn literal(text: impl Into<String>) -> Self {
        Arg {
            text: text.into(),
            known: true,
            ..Arg::default()
        }
    }
}

/// A piece of a word before expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Seg {
    /// Quoted or escaped text: glob characters are literal.
    Lit(String),
    /// Unquoted text: glob characters are active.
    Pat(String),
    /// `~` at the start of the word.
    Home,
    /// `$NAME` / `${NAME}`; `quoted` inside double quotes (no splitting, no globbing).
    Var { name: String, quoted: bool },
    /// Something we cannot evaluate (`$(…)`, `$((…))`, `${x:-y}`, `~user`, `$1`), with
    /// its placeholder and whether it was quoted.
    Unknown(&'static str, bool),
}

/// A word as pieces.
pub(super) type Word = Vec<Seg>;

/// The pieces of a parsed word, without side effects.
pub(super) fn segs(pieces: &[WordPieceWithSource]) -> Word {
    let mut out = Vec::new();
    for p in pieces {
        push_piece(&p.piece, false, &mut out);
    }
    out
}

fn push_piece(piece: &WordPiece, quoted: bool, out: &mut Word) {
    match piece {
        WordPiece::Text(t) if quoted => out.push(Seg::Lit(t.clone())),
        WordPiece::Text(t) => out.push(Seg::Pat(t.clone())),
        WordPiece::SingleQuotedText(t) | WordPiece::AnsiCQuotedText(t) => {
            out.push(Seg::Lit(t.clone()))
        }
        WordPiece::EscapeSequence(s) => {
            out.push(Seg::Lit(s.strip_prefix('\\').unwrap_or(s).to_string()))
        }
        WordPiece::DoubleQuotedSequence(seq) | WordPiece::GettextDoubleQuotedSequence(seq) => {
            for p in seq {
                push_piece(&p.piece, true, out);
            }
        }
        WordPiece::TildeExpansion(TildeExpr::Home) => out.push(Seg::Home),
        WordPiece::TildeExpansion(_) => out.push(Seg::Unknown("~", quoted)),
        WordPiece::ParameterExpansion(ParameterExpr::Parameter {
            parameter: Parameter::Named(name),
            indirect: false,
        }) => out.push(Seg::Var {
            name: name.clone(),
            quoted,
        }),
        WordPiece::ParameterExpansion(_) => out.push(Seg::Unknown("$VAR", quoted)),
        WordPiece::CommandSubstitution(_) | WordPiece::BackquotedCommandSubstitution(_) => {
            out.push(Seg::Unknown("$(…)", quoted))
        }
        WordPiece::ArithmeticExpression(_) => out.push(Seg::Unknown("$((…))", quoted)),
    }
}

/// One field being built: its characters (with glob activity), and what we know of it.
#[derive(Default)]
struct Field {
    chars: Vec<PChar>,
    known: bool,
    splits: bool,
    /// Holds something besides unquoted expansions (so an empty field survives).
    solid: bool,
}

impl Field {
    fn new() -> Self {
        Field {
            known: true,
            ..Field::default()
        }
    }
    fn push(&mut self, s: &str, active: bool) {
        self.chars.extend(s.chars().map(|c| {
            if active {
                PChar::Active(c)
            } else {
                PChar::Lit(c)
            }
        }));
    }
}

/// Expands a word's brace alternatives into arguments, under the script's state.
pub(super) fn expand(alts: &[Word], st: &State, env: &Env) -> Vec<Arg> {
    // The common case: plain text, nothing to expand.
    if let [word] = alts
        && let Some(text) = plain(word)
    {
        return vec![Arg::literal(text)];
    }
    let mut out = Vec::new();
    for w in alts {
        for f in fields(w, st, env) {
            out.extend(finish(f, st, env));
        }
    }
    out
}

/// The text of a word made only of literal text without glob characters.
fn plain(word: &Word) -> Option<String> {
    let mut text = String::new();
    for seg in word {
        match seg {
            Seg::Lit(t) => text.push_str(t),
            Seg::Pat(t) if !t.contains(['*', '?', '[', '(']) => text.push_str(t),
            _ => return None,
        }
    }
    (!word.is_empty()).then_some(text)
}

/// Expands a word where the shell does no splitting and no globbing (assignment values,
/// redirect targets): one argument.
pub(super) fn expand_single(word: &Word, st: &State, env: &Env) -> Arg {
    let mut f = Field::new();
    for seg in word {
        match seg {
            Seg::Lit(t) | Seg::Pat(t) => f.push(t, false),
            Seg::Home => match st.var("HOME", env) {
                Some(h) => f.push(&h, false),
                None => unknown(&mut f, "~", false),
            },
            Seg::Var { name, .. } => match st.var(name, env) {
                Some(v) => f.push(&v, false),
                None => unknown(&mut f, "$VAR", false),
            },
            Seg::Unknown(p, _) => unknown(&mut f, p, false),
        }
    }
    Arg {
        text: glob::text(&f.chars),
        known: f.known,
        splits: false,
        pattern: None,
    }
}

fn unknown(f: &mut Field, placeholder: &str, splits: bool) {
    f.known = false;
    f.splits |= splits;
    f.solid = true;
    f.push(placeholder, false);
}

/// Word splitting: unquoted variable values split on blanks (or on anything when the
/// script changed IFS, which we then treat as unknown).
fn fields(word: &Word, st: &State, env: &Env) -> Vec<Field> {
    let mut out = vec![Field::new()];
    let ifs_changed = st.assigned("IFS");
    for seg in word {
        let cur = out.len() - 1;
        match seg {
            Seg::Lit(t) => {
                out[cur].push(t, false);
                out[cur].solid = true;
            }
            Seg::Pat(t) => {
                out[cur].push(t, true);
                out[cur].solid = true;
            }
            Seg::Home => match st.var("HOME", env) {
                Some(h) => {
                    out[cur].push(&h, false);
                    out[cur].solid = true;
                }
                None => unknown(&mut out[cur], "~", false),
            },
            Seg::Var { name, quoted } => match st.var(name, env) {
                Some(v) if *quoted => {
                    out[cur].push(&v, false);
                    out[cur].solid = true;
                }
                Some(_) if ifs_changed => unknown(&mut out[cur], "$VAR", true),
                Some(v) => split_into(&mut out, &v),
                None => unknown(&mut out[cur], "$VAR", !quoted),
            },
            Seg::Unknown(p, quoted) => unknown(&mut out[cur], p, !quoted),
        }
    }
    out.retain(|f| f.solid || !f.chars.is_empty());
    out
}

fn split_into(out: &mut Vec<Field>, value: &str) {
    let blank = |c: char| c == ' ' || c == '\t' || c == '\n';
    let mut pieces = value.split(blank).peekable();
    let mut first = true;
    while let Some(p) = pieces.next() {
        if !first {
            out.push(Field::new());
        }
        first = false;
        let cur = out.len() - 1;
        out[cur].push(p, true);
        if pieces.peek().is_none() && p.is_empty() && value.ends_with(blank) {
            // A trailing blank ends the field: what follows starts a new one.
            out.push(Field::new());
        }
    }
}

fn finish(f: Field, st: &State, env: &Env) -> Vec<Arg> {
    let text = glob::text(&f.chars);
    if !f.known {
        return vec![Arg {
            text,
            known: false,
            splits: f.splits,
            pattern: None,
        }];
    }
    if !glob::is_glob(&f.chars) {
        return vec![Arg::literal(text)];
    }
    let dir = st.abs_dir(env);
    match glob::expand(&f.chars, dir.as_deref()) {
        Ok(found) if found.is_empty() => vec![Arg {
            pattern: Some(text.clone()),
            ..Arg::literal(text)
        }],
        Ok(found) => found
            .into_iter()
            .map(|m| Arg {
                pattern: Some(text.clone()),
                ..Arg::literal(m)
            })
            .collect(),
        Err(_) => vec![Arg {
            text: text.clone(),
            known: false,
            splits: false,
            pattern: Some(text),
        }],
    }
}

/// Bash's brace expansion of a raw word (`/{usr,etc}` → `/usr`, `/etc`; `{1..3}`),
/// respecting quotes and `$…` constructs. `None` when it would produce too many words.
pub(super) fn braces(raw: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    expand_braces(raw, &mut out, 0)?;
    Some(out)
}

fn expand_braces(raw: &str, out: &mut Vec<String>, depth: usize) -> Option<()> {
    if depth > 16 {
        return None;
    }
    let b = raw.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if let Some(end) = skip(b, i) {
            i = end;
            continue;
        }
        if b[i] == b'{'
            && let Some((close, alts)) = brace_body(raw, i)
        {
            for alt in alts? {
                let word = format!("{}{}{}", &raw[..i], alt, &raw[close + 1..]);
                expand_braces(&word, out, depth + 1)?;
                if out.len() > MAX_BRACE_WORDS {
                    return None;
                }
            }
            return Some(());
        }
        i += 1;
    }
    out.push(raw.to_string());
    Some(())
}

/// If a quoted region, escape or `$…` construct starts at `i`, the index after it.
fn skip(b: &[u8], i: usize) -> Option<usize> {
    match b[i] {
        b'\\' => Some((i + 2).min(b.len())),
        b'\'' => Some(find_close(b, i + 1, b'\'')),
        b'"' => {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            Some((j + 1).min(b.len()))
        }
        b'`' => Some(find_close(b, i + 1, b'`')),
        b'$' if matches!(b.get(i + 1), Some(b'(' | b'{')) => {
            let (open, close) = if b[i + 1] == b'(' {
                (b'(', b')')
            } else {
                (b'{', b'}')
            };
            let mut depth = 0usize;
            let mut j = i + 1;
            while j < b.len() {
                if let Some(end) = (b[j] != open && b[j] != close)
                    .then(|| skip(b, j))
                    .flatten()
                {
                    j = end;
                    continue;
                }
                if b[j] == open {
                    depth += 1;
                } else if b[j] == close {
                    depth -= 1;
                    if depth == 0 {
                        return Some(j + 1);
                    }
                }
                j += 1;
            }
            Some(b.len())
        }
        _ => None,
    }
}

fn find_close(b: &[u8], from: usize, q: u8) -> usize {
    b[from.min(b.len())..]
        .iter()
        .position(|c| *c == q)
        .map_or(b.len(), |p| from + p + 1)
}

/// The brace expression opening at `open`: its closing index and alternatives (`None`
/// for a sequence too long to expand).
fn brace_body(raw: &str, open: usize) -> Option<(usize, Option<Vec<String>>)> {
    let b = raw.as_bytes();
    let mut depth = 0usize;
    let mut commas = Vec::new();
    let mut j = open;
    while j < b.len() {
        if let Some(end) = skip(b, j) {
            j = end;
            continue;
        }
        match b[j] {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    let body = &raw[open + 1..j];
                    if commas.is_empty() {
                        return sequence(body).map(|s| (j, s));
                    }
                    let mut alts = Vec::new();
                    let mut start = open + 1;
                    for c in commas {
                        alts.push(raw[start..c].to_string());
                        start = c + 1;
                    }
                    alts.push(raw[start..j].to_string());
                    return Some((j, Some(alts)));
                }
            }
            b',' if depth == 1 => commas.push(j),
            _ => {}
        }
        j += 1;
    }
    None
}

/// `{1..5}`, `{a..e}`, `{10..1..3}`; `Some(None)` when too long.
fn sequence(body: &str) -> Option<Option<Vec<String>>> {
    let parts: Vec<&str> = body.split("..").collect();
    if !(2..=3).contains(&parts.len()) {
        return None;
    }
    let step: i64 = match parts.get(2) {
        Some(s) => s.parse::<i64>().ok()?.abs().max(1),
        None => 1,
    };
    let (a, z) = (parts[0], parts[1]);
    let (from, to, chars) = match (a.parse::<i64>(), z.parse::<i64>()) {
        (Ok(a), Ok(z)) => (a, z, false),
        _ => {
            let (mut ca, mut cz) = (a.chars(), z.chars());
            let (Some(x), None, Some(y), None) = (ca.next(), ca.next(), cz.next(), cz.next())
            else {
                return None;
            };
            (x as i64, y as i64, true)
        }
    };
    if (to - from).abs() / step > MAX_BRACE_WORDS as i64 {
        return Some(None);
    }
    let mut out = Vec::new();
    let mut v = from;
    loop {
        out.push(if chars {
            char::from_u32(u32::try_from(v).ok()?.min(0x10FFFF))
                .unwrap_or('?')
                .to_string()
        } else {
            v.to_string()
        });
        if v == to || (from < to && v + step > to) || (from > to && v - step < to) {
            break;
        }
        v += if from < to { step } else { -step };
    }
    Some(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brace_expansion_respects_quotes() {
        assert_eq!(braces("/{usr,etc}").unwrap(), ["/usr", "/etc"]);
        assert_eq!(braces("a{b,c{d,e}}f").unwrap(), ["abf", "acdf", "acef"]);
        assert_eq!(braces("x{1..3}").unwrap(), ["x1", "x2", "x3"]);
        assert_eq!(braces("{a..c}").unwrap(), ["a", "b", "c"]);
        assert_eq!(braces("'{a,b}'").unwrap(), ["'{a,b}'"]);
        assert_eq!(braces("${X}").unwrap(), ["${X}"]);
        assert_eq!(braces("$(echo {a,b})").unwrap(), ["$(echo {a,b})"]);
        assert_eq!(braces("{}").unwrap(), ["{}"]);
        assert_eq!(braces("{x}{a,b}").unwrap(), ["{x}a", "{x}b"]);
        assert!(braces("{1..100000}").is_none());
        assert!(braces("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}").is_none());
    }
}
