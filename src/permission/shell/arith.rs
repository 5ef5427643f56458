//! Arithmetic on values. bash evaluates arithmetic in `$(( ))`, `$[ ]`, `(( ))`,
//! `for (( ))`, `let`, the operands of `[[ … -eq … ]]`, indexed-array subscripts,
//! substring offsets and assignments to integer variables (`declare -i`). It evaluates a
//! variable's *value* there as an expression too, and an array subscript inside that
//! value expands its substitutions: `n='a[$(rm x)]'; echo $(( n ))` runs `rm x`, though
//! no command is written anywhere.
//!
//! So an arithmetic context is harmless only when every operand is: a literal integer, a
//! variable known to hold one (assigned a literal integer, or the result of harmless
//! arithmetic, earlier in the same script), or one bash itself keeps an integer
//! (`$#`, `$?`, `RANDOM`, `${#x}`). A substitution, a variable whose value cannot be
//! known, or an array element makes the part opaque.

use std::collections::{BTreeMap, BTreeSet};

use brush_parser::ParserOptions;
use brush_parser::word::{self, Parameter, ParameterExpr, SpecialParameter, TildeExpr, WordPiece};

use super::cwd::{Env, State};
use super::loops::Pin;
use super::{Ctx, Inherit, MAX_DEPTH, ShellError};

/// Variables bash keeps integers itself, whatever the environment held (checked in bash
/// 5.2: `UID`/`EUID` are not among them, an inherited value is evaluated).
const SHELL_INTEGERS: [&str; 9] = [
    "RANDOM",
    "SRANDOM",
    "SECONDS",
    "LINENO",
    "BASHPID",
    "PPID",
    "BASH_SUBSHELL",
    "EPOCHSECONDS",
    "OPTIND",
];

/// What a script knows about integers at one point, carried in its `State`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Numbers {
    /// Variables holding a harmless integer whose exact value is not tracked.
    pub ints: BTreeSet<String>,
    /// Variables that may carry the integer attribute (`declare -i`): assigning one
    /// evaluates the value as arithmetic.
    pub int_attr: BTreeSet<String>,
    /// Some variable may carry the integer attribute without our knowing which.
    pub int_attr_any: bool,
    /// Variables surely associative (`declare -A`): their subscripts are plain strings.
    pub assoc: BTreeSet<String>,
    /// What the loops being analysed assume about variables (`loops.rs`).
    pub pinned: BTreeMap<String, Pin>,
    /// Pinned variables something assigned a value that is not a harmless integer.
    pub broken: BTreeSet<String>,
}

impl Numbers {
    /// After a construct that may or may not have run; `both_ints` are the variables
    /// that hold harmless integers on both sides.
    pub fn merge(&mut self, other: &Numbers, both_ints: BTreeSet<String>) {
        self.ints = both_ints;
        self.int_attr.extend(other.int_attr.iter().cloned());
        self.int_attr_any |= other.int_attr_any;
        self.assoc.retain(|n| other.assoc.contains(n));
        for (k, v) in &other.pinned {
            self.pinned.entry(k.clone()).or_insert_with(|| v.clone());
        }
        self.broken.extend(other.broken.iter().cloned());
    }

    /// Whether assigning `name` evaluates the value as arithmetic.
    pub fn integer_attr(&self, name: &str) -> bool {
        self.int_attr_any || self.int_attr.contains(name)
    }
}

/// Whether a variable value is a harmless integer: blank, or a signed number (decimal,
/// `0x…`, `0…`, `BASE#…`) that names no variable and expands nothing.
pub(super) fn is_integer(v: &str) -> bool {
    let t = v.trim();
    let t = t.strip_prefix(['+', '-']).unwrap_or(t).trim_start();
    t.is_empty()
        || (t.starts_with(|c: char| c.is_ascii_digit())
            && t.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '@' | '#')))
}

/// Whether `name` is one of the integers bash maintains itself.
pub(super) fn shell_integer(name: &str) -> bool {
    SHELL_INTEGERS.contains(&name)
}

/// Judges arithmetic text against a script state, collecting the variables it assigns.
pub(super) struct Judge<'a> {
    st: &'a State,
    env: &'a Env,
    opts: &'a ParserOptions,
    /// Variables the expression assigns (to harmless integers when it is harmless).
    pub writes: Vec<String>,
    depth: usize,
}

/// Why an arithmetic context is not harmless.
pub(super) type Why = &'static str;

impl<'a> Judge<'a> {
    pub fn new(st: &'a State, env: &'a Env, opts: &'a ParserOptions) -> Self {
        Judge {
            st,
            env,
            opts,
            writes: Vec::new(),
            depth: 0,
        }
    }

    /// Raw arithmetic text as `$(( ))` expands then evaluates it.
    pub fn raw(&mut self, raw: &str) -> Result<(), Why> {
        let text = self.expand(raw)?;
        self.expr(&text)
    }

    /// A word expanded as bash expands it before evaluating it (quotes removed,
    /// parameters and nested arithmetic substituted); harmless integers become `0`.
    pub fn expand(&mut self, raw: &str) -> Result<String, Why> {
        self.enter()?;
        let pieces = word::parse(raw, self.opts).map_err(|_| "text the engine cannot parse")?;
        let mut out = String::new();
        for p in &pieces {
            self.piece(&p.piece, &mut out)?;
        }
        self.depth -= 1;
        Ok(out)
    }

    fn enter(&mut self) -> Result<(), Why> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err("arithmetic nested too deeply");
        }
        Ok(())
    }

    fn piece(&mut self, piece: &WordPiece, out: &mut String) -> Result<(), Why> {
        match piece {
            WordPiece::Text(t) | WordPiece::SingleQuotedText(t) | WordPiece::AnsiCQuotedText(t) => {
                out.push_str(t)
            }
            WordPiece::EscapeSequence(s) => out.push_str(s.strip_prefix('\\').unwrap_or(s)),
            WordPiece::DoubleQuotedSequence(seq) | WordPiece::GettextDoubleQuotedSequence(seq) => {
                for p in seq {
                    self.piece(&p.piece, out)?;
                }
            }
            // In arithmetic `~` is bitwise negation; a user name after it is an operand.
            WordPiece::TildeExpansion(TildeExpr::UserHome(u)) => {
                out.push('~');
                out.push_str(u);
            }
            WordPiece::TildeExpansion(TildeExpr::Home) => out.push('~'),
            WordPiece::TildeExpansion(_) => return Err("a directory-stack tilde"),
            WordPiece::ParameterExpansion(e) => out.push_str(&self.parameter(e)?),
            WordPiece::CommandSubstitution(_) | WordPiece::BackquotedCommandSubstitution(_) => {
                return Err("a command substitution's output");
            }
            WordPiece::ArithmeticExpression(e) => {
                self.raw(&e.value)?;
                out.push('0');
            }
        }
        Ok(())
    }

    fn parameter(&mut self, e: &ParameterExpr) -> Result<String, Why> {
        use SpecialParameter as S;
        match e {
            ParameterExpr::Parameter {
                parameter: Parameter::Named(n),
                indirect: false,
            } => {
                if self.harmless(n) {
                    Ok("0".into())
                } else {
                    self.st
                        .var(n, self.env)
                        .ok_or("a variable whose value is not known")
                }
            }
            ParameterExpr::Parameter {
                parameter:
                    Parameter::Special(
                        S::PositionalParameterCount
                        | S::LastExitStatus
                        | S::ProcessId
                        | S::LastBackgroundProcessId,
                    ),
                indirect: false,
            }
            | ParameterExpr::ParameterLength {
                indirect: false, ..
            } => Ok("0".into()),
            _ => Err("an expansion whose value is not known"),
        }
    }

    /// Whether a variable holds a harmless integer here.
    fn harmless(&self, name: &str) -> bool {
        self.st.harmless(name, self.env)
    }

    /// Judges expanded arithmetic text: every variable it reads must be harmless or
    /// hold a known expression that is; an array element's value is never known.
    pub fn expr(&mut self, text: &str) -> Result<(), Why> {
        self.enter()?;
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'$' | b'`' | b'\\' | b'\'' | b'"' => {
                    return Err("a value that expands again when evaluated");
                }
                c if c.is_ascii_digit() => {
                    while i < b.len() && (b[i].is_ascii_alphanumeric() || b"_@#".contains(&b[i])) {
                        i += 1;
                    }
                }
                c if c.is_ascii_alphabetic() || c == b'_' => {
                    let start = i;
                    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                        i += 1;
                    }
                    i = self.operand(text, start, i)?;
                }
                _ => i += 1,
            }
        }
        self.depth -= 1;
        Ok(())
    }

    /// The variable named `text[start..end]`: a subscript, a write, a read. Returns
    /// where scanning goes on.
    fn operand(&mut self, text: &str, start: usize, end: usize) -> Result<usize, Why> {
        let b = text.as_bytes();
        let name = &text[start..end];
        let after = skip_blanks(b, end);
        if b.get(after) == Some(&b'[') {
            let close = bracket_end(b, after).ok_or("an unclosed subscript")?;
            self.expr(&text[after + 1..close])?;
            let next = skip_blanks(b, close + 1);
            return match assignment_at(b, next) {
                Some(Assign::Plain) => Ok(close + 1),
                _ => Err("an array element's value"),
            };
        }
        let before = text[..start].trim_end();
        let stepped = before.ends_with("++")
            || before.ends_with("--")
            || text[after..].starts_with("++")
            || text[after..].starts_with("--");
        match assignment_at(b, after) {
            Some(Assign::Plain) => self.writes.push(name.to_string()),
            Some(Assign::Compound) => {
                self.read(name)?;
                self.writes.push(name.to_string());
            }
            None => {
                self.read(name)?;
                if stepped {
                    self.writes.push(name.to_string());
                }
            }
        }
        Ok(end)
    }

    /// A variable read in arithmetic: harmless, or a known value that is harmless
    /// evaluated as an expression itself.
    fn read(&mut self, name: &str) -> Result<(), Why> {
        if self.harmless(name) {
            return Ok(());
        }
        match self.st.var(name, self.env) {
            Some(v) => self.expr(&v),
            None => Err("a variable whose value is not known"),
        }
    }
}

enum Assign {
    /// `=`: the variable is only written.
    Plain,
    /// `+=`, `<<=`, …: read and written.
    Compound,
}

/// The assignment operator starting at `i`, if any (`==`, `<=`, `>=`, `!=` are not).
fn assignment_at(b: &[u8], i: usize) -> Option<Assign> {
    let rest = b.get(i..)?;
    if rest.first() == Some(&b'=') && rest.get(1) != Some(&b'=') {
        return Some(Assign::Plain);
    }
    const OPS: [&[u8]; 10] = [
        b"<<=", b">>=", b"+=", b"-=", b"*=", b"/=", b"%=", b"&=", b"^=", b"|=",
    ];
    OPS.iter()
        .any(|op| rest.starts_with(op))
        .then_some(Assign::Compound)
}

fn skip_blanks(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// The index of the `]` closing the `[` at `open`.
fn bracket_end(b: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, &c) in b.iter().enumerate().skip(open) {
        match c {
            b'[' => depth += 1,
            b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

impl Ctx {
    /// Raw arithmetic text bash expands then evaluates (`$(( ))`, `(( ))`, `for (( ))`,
    /// a subscript, a substring offset): its substitutions become parts, the variables
    /// it assigns are tracked, and unless it is harmless the part is opaque.
    pub(super) fn arithmetic(
        &mut self,
        raw: &str,
        depth: usize,
        inh: &Inherit,
    ) -> Result<(), ShellError> {
        self.hidden(raw, depth, inh)?;
        self.judge(raw, inh, false);
        Ok(())
    }

    /// Judges `raw` without looking for substitutions again (the caller parsed them):
    /// as arithmetic text, or (`word`) as a word bash expands before evaluating it
    /// (`[[ x -eq y ]]`, `let` operands, an integer variable's value). Returns whether
    /// it is harmless; when it is not, the part is made opaque.
    pub(super) fn judge(&mut self, raw: &str, inh: &Inherit, word: bool) -> bool {
        let mut j = Judge::new(&self.state, &self.env, &self.opts);
        let result = if word {
            j.expand(raw).and_then(|t| j.expr(&t))
        } else {
            j.raw(raw)
        };
        let writes = std::mem::take(&mut j.writes);
        match result {
            Ok(()) => {
                for w in writes {
                    self.state.assign_int(&w);
                }
                true
            }
            Err(why) => {
                for w in writes {
                    self.state.assign(&w, None);
                }
                self.mark_opaque(inh, &format!("arithmetic on {why} may run any command"));
                false
            }
        }
    }

    /// Whether a word (an assignment value) expands to a harmless integer: `$((i+1))`,
    /// `$n` for a harmless `n`, `10`.
    pub(super) fn yields_integer(&self, raw: &str) -> bool {
        let mut j = Judge::new(&self.state, &self.env, &self.opts);
        j.expand(raw).is_ok_and(|t| is_integer(&t))
    }

    /// A subscript of `name` (`a[sub]=1`, `${a[sub]}`, `read 'a[sub]'`): arithmetic
    /// unless `a` is associative; `@` and `*` select every element.
    pub(super) fn subscript(
        &mut self,
        name: &str,
        sub: &str,
        depth: usize,
        inh: &Inherit,
        parsed: bool,
    ) -> Result<(), ShellError> {
        if matches!(sub, "@" | "*") {
            return Ok(());
        }
        if !parsed {
            self.hidden(sub, depth, inh)?;
        }
        if !self.state.num.assoc.contains(name) {
            self.judge(sub, inh, false);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::is_integer;

    fn opaque(c: &str) -> bool {
        parse(c).unwrap().parts.iter().any(|p| p.opaque.is_some())
    }

    #[test]
    fn integers_are_numbers_that_name_nothing() {
        for v in ["0", " 12 ", "-3", "+ 4", "0x1f", "16#ff", "64#@_", ""] {
            assert!(is_integer(v), "{v}");
        }
        for v in ["n", "a[1]", "1+n", "$(x)", "1 2 x", "a[$(rm x)]"] {
            assert!(!is_integer(v), "{v}");
        }
    }

    #[test]
    fn arithmetic_on_unknown_values_is_opaque() {
        for c in [
            "n='a[$(rm x)]'; echo $(( n + 1 ))",
            "read n < f; [[ $n -eq 1 ]]",
            "read n < f; [[ n -lt 1 ]]",
            "echo $(( $(cat f) ))",
            "n=$(cat f); (( n ))",
            "let \"x = n\"",
            "read n < f; declare -i x=$n",
            "read n < f; s=abc; echo ${s:$n}",
            "read n < f; echo ${s:0:n}",
            "read n < f; arr[$n]=1",
            "read n < f; echo ${arr[n]}",
            "read n < f; for ((i=n; i<3; i++)); do :; done",
            "echo $(( a[0] ))",
            "echo $(( HOME ))",
            "echo $(( $1 ))",
            "x=5; x=$(cat f); echo $((x))",
            "n='y'; echo $(( n ))",
            "if c; then i=0; else i=$(cat f); fi; echo $((i))",
        ] {
            assert!(opaque(c), "{c}");
        }
    }

    #[test]
    fn arithmetic_on_known_integers_is_not() {
        for c in [
            "echo $(( 2 * 3 ))",
            "i=0; echo $(( i + 1 ))",
            "i=0; i=$((i+1)); (( i < 5 ))",
            "for ((i=0; i<3; i++)); do echo $i; done",
            "i=0; while [ $i -lt 5 ]; do i=$((i+1)); done",
            "i=0; while (( i < 5 )); do (( i++ )); done; echo $((i))",
            "for i in 1 2 3; do echo $(( i * 2 )); done",
            "[[ $# -gt 0 && $? -eq 0 ]]",
            "echo $(( RANDOM % 6 )) ${#x}",
            "x=${#y}; echo $((x))",
            "(( n = 3, m = 4 )); echo $(( n * m ))",
            "if c; then i=0; else i=1; fi; echo $((i))",
            "n='1 + 2'; echo $(( n ))",
            "s=abc; echo ${s:1} ${s: -1:1}",
        ] {
            assert!(!opaque(c), "{c}");
        }
    }

    #[test]
    fn a_loop_that_breaks_an_integer_sees_it_unknown() {
        assert!(opaque("i=0; while true; do echo $((i)); i=$(cat f); done"));
        assert!(opaque("i=0; while true; do echo $((i)); read i; done"));
        assert!(opaque(
            "i=0; for x in a b; do (( i++ )); f() { :; }; f; done"
        ));
        assert!(!opaque(
            "i=0; while true; do (i=$(cat f)); echo $((i)); done"
        ));
    }
}
