//! Builtins and assignments in which bash evaluates arithmetic or array subscripts on
//! values (`arith.rs` judges them): `let`; `declare|typeset|local -i NAME=value`; any
//! assignment to a variable that may carry the integer attribute (`NAME=v`, `export`,
//! `read`, `printf -v`, `mapfile`, `for NAME in`); indexed-array subscripts
//! (`a[sub]=v`, `a=([sub]=v)`); and the variable names `read`, `printf -v`, `unset`,
//! `declare`, `test -v` and `[[ -v ]]` take, where a subscript hidden in a value
//! (`read "$n"` with `n='a[$(rm x)]'`) runs its substitution. Name references
//! (`declare -n`) can point at such an element, so they are opaque.
//!
//! Checked against bash 5.2: `export`/`readonly` names with subscripts, `getopts`,
//! `wait -p`, `mapfile` names, `shift`/`exit`/`return` counts and `test -eq` operands
//! are not evaluated; an assignment in a command's environment (`x=$v cmd`) is not
//! arithmetic even for an integer variable.

use brush_parser::ast;
use brush_parser::word;

use super::cwd::is_name;
use super::expand::{self, Arg};
use super::{Ctx, Inherit, ShellError};

/// Whether `command` may give a variable the integer attribute: a declaration builtin
/// with an option holding `i`, or options we cannot read. Function bodies then assume
/// any variable may be an integer (a later caller may have declared it).
pub(super) fn may_declare_int(command: &str) -> bool {
    let mut declaring = false;
    for w in command.split(|c: char| c.is_whitespace() || ";&|(){}`'\"".contains(c)) {
        match w {
            "declare" | "typeset" | "local" => declaring = true,
            _ if declaring && (w.starts_with(['-', '+']) && w.contains('i')) => return true,
            _ if declaring && w.contains('$') => return true,
            _ => {}
        }
    }
    false
}

/// `name[sub]` split into the name and the subscript text.
fn split_subscript(s: &str) -> (&str, Option<&str>) {
    match (s.find('['), s.ends_with(']')) {
        (Some(open), true) => (&s[..open], Some(&s[open + 1..s.len() - 1])),
        _ => (s, None),
    }
}

/// The single known expansion of a word, if it has one.
fn known(words: &[Vec<Arg>], k: usize) -> Option<&str> {
    match words.get(k).map(Vec::as_slice) {
        Some([a]) if a.known => Some(a.text.as_str()),
        _ => None,
    }
}

impl Ctx {
    /// Judges the builtin a simple command runs, as written (`argv` quote-removed,
    /// `words` expanded, `raws` as in the source); returns the variables it leaves
    /// holding harmless integers, for after its other effects are applied.
    pub(super) fn builtin_arith(
        &mut self,
        words: &[Vec<Arg>],
        raws: &[String],
        depth: usize,
        inh: &Inherit,
    ) -> Result<Vec<String>, ShellError> {
        let mut k = 0;
        while let Some("command" | "builtin") = known(words, k) {
            k += 1;
            while known(words, k).is_some_and(|t| t.starts_with('-')) {
                k += 1;
            }
        }
        let rest = k + 1..words.len().min(raws.len());
        match known(words, k) {
            Some("let") => {
                for i in rest {
                    // What an expression the engine cannot read assigns is unknown.
                    if !self.judge(&raws[i], inh, true) {
                        self.state.forget(None);
                    }
                }
                Ok(Vec::new())
            }
            Some(p @ ("declare" | "typeset" | "local" | "export" | "readonly")) => {
                let evaluates = !matches!(p, "export" | "readonly");
                self.declare(words, raws, rest, evaluates, depth, inh)
            }
            Some("read") => {
                let mut i = rest.start;
                while let Some(t) = known(words, i).filter(|t| t.starts_with('-') && t.len() > 1) {
                    i += 1;
                    if t == "--" {
                        break;
                    }
                    // Options taking a value: the rest of the word, or the next word.
                    if let Some(at) = t[1..].find(|c| "adinNptu".contains(c)) {
                        let glued = t.len() > at + 2;
                        if t.as_bytes()[at + 1] == b'a' {
                            let w = if glued { i - 1 } else { i };
                            self.target(words, w, glued.then_some(&t[at + 2..]), depth, inh)?;
                        }
                        i += usize::from(!glued);
                    }
                }
                for w in i..rest.end {
                    self.target(words, w, None, depth, inh)?;
                }
                Ok(Vec::new())
            }
            Some("printf") => {
                match known(words, rest.start) {
                    Some("-v") => self.target(words, rest.start + 1, None, depth, inh)?,
                    Some(t) if t.starts_with("-v") => {
                        self.target(words, rest.start, Some(&t[2..]), depth, inh)?
                    }
                    Some(_) => {}
                    None if words.len() > rest.start => {
                        self.mark_opaque(inh, "`printf` options the engine cannot know");
                    }
                    None => {}
                }
                Ok(Vec::new())
            }
            Some("unset") => {
                let functions = rest.clone().any(|i| {
                    known(words, i).is_some_and(|t| t.starts_with('-') && t.contains('f'))
                });
                if !functions {
                    for i in rest.filter(|&i| known(words, i).is_none_or(|t| !t.starts_with('-'))) {
                        self.name_operand(words, i, None, depth, inh)?;
                    }
                }
                Ok(Vec::new())
            }
            Some("mapfile" | "readarray") => {
                let target = rest
                    .clone()
                    .rev()
                    .find_map(|i| known(words, i).filter(|t| is_name(t)))
                    .unwrap_or("MAPFILE");
                if self.state.num.integer_attr(target) {
                    self.mark_opaque(inh, "lines read into an integer array are evaluated");
                }
                Ok(Vec::new())
            }
            Some("test" | "[") => {
                for i in rest {
                    if known(words, i) == Some("-v") {
                        self.name_operand(words, i + 1, None, depth, inh)?;
                    }
                }
                Ok(Vec::new())
            }
            _ => Ok(Vec::new()),
        }
    }

    /// A variable a builtin assigns a value it reads (`read`, `printf -v`): its name is
    /// checked, and a variable that may be an integer evaluates the value.
    fn target(
        &mut self,
        words: &[Vec<Arg>],
        k: usize,
        glued: Option<&str>,
        depth: usize,
        inh: &Inherit,
    ) -> Result<(), ShellError> {
        if let Some(name) = self.name_operand(words, k, glued, depth, inh)?
            && self.state.num.integer_attr(&name)
        {
            self.mark_opaque(
                inh,
                "a value the engine cannot know, assigned to an integer variable, is evaluated",
            );
        }
        Ok(())
    }

    /// A variable name a builtin takes (`words[k]`, or `glued` to an option): a name
    /// that cannot be known may hold a subscript that runs a command, so the part is
    /// opaque; a subscript is judged. Returns the variable's name.
    fn name_operand(
        &mut self,
        words: &[Vec<Arg>],
        k: usize,
        glued: Option<&str>,
        depth: usize,
        inh: &Inherit,
    ) -> Result<Option<String>, ShellError> {
        let Some(text) = glued.or_else(|| known(words, k)) else {
            if k < words.len() {
                self.mark_opaque(
                    inh,
                    "a variable name the engine cannot know may hold a subscript that runs a command",
                );
            }
            return Ok(None);
        };
        let (name, sub) = split_subscript(text);
        let (name, sub) = (name.to_string(), sub.map(str::to_string));
        if let Some(sub) = sub {
            self.subscript(&name, &sub, depth, inh, false)?;
        }
        Ok(is_name(&name).then_some(name))
    }

    /// `declare`/`typeset`/`local` (`evaluates`: they know `-i`, `-n` and subscripts),
    /// `export`/`readonly`: options, then `NAME[=value]` operands.
    fn declare(
        &mut self,
        words: &[Vec<Arg>],
        raws: &[String],
        rest: std::ops::Range<usize>,
        evaluates: bool,
        depth: usize,
        inh: &Inherit,
    ) -> Result<Vec<String>, ShellError> {
        let mut flags = String::new();
        let mut i = rest.start;
        while i < rest.end {
            match known(words, i) {
                Some("--") => {
                    i += 1;
                    break;
                }
                Some(t) if t.len() > 1 && t.starts_with(['-', '+']) => flags.push_str(&t[1..]),
                Some(_) => break,
                None if !evaluates => break,
                None => {
                    self.mark_opaque(inh, "declaration options or names the engine cannot know");
                    return Ok(Vec::new());
                }
            }
            i += 1;
        }
        if evaluates && flags.contains('n') {
            self.mark_opaque(
                inh,
                "a name reference may point at an array element whose subscript runs a command",
            );
            return Ok(Vec::new());
        }
        if flags.contains(['f', 'F', 'p']) {
            return Ok(Vec::new());
        }
        let (int, assoc) = (evaluates && flags.contains('i'), flags.contains('A'));
        let mut ints = Vec::new();
        for (i, raw) in raws.iter().enumerate().take(rest.end).skip(i) {
            let Some((name, sub, value)) = operand(known(words, i), raw) else {
                if evaluates || self.state.num.int_attr_any {
                    self.mark_opaque(inh, "a declared name the engine cannot know");
                }
                continue;
            };
            if evaluates
                && !assoc
                && let Some(sub) = &sub
            {
                self.subscript(&name, sub, depth, inh, false)?;
            }
            if int {
                self.state.num.int_attr.insert(name.clone());
            }
            if assoc {
                self.state.num.assoc.insert(name.clone());
            }
            let Some(value) = value else { continue };
            let harmless = if int || self.state.num.integer_attr(&name) {
                self.judge_value(&value, inh)
            } else {
                if evaluates && !assoc && !self.state.num.assoc.contains(&name) {
                    self.compound_subscripts(&value, inh);
                }
                value.yields_integer(self)
            };
            if harmless && sub.is_none() {
                ints.push(name);
            }
        }
        Ok(ints)
    }

    /// An integer variable's new value, evaluated as arithmetic (a compound value's
    /// every element). Whether it is harmless.
    fn judge_value(&mut self, value: &Value, inh: &Inherit) -> bool {
        match value {
            Value::Known(t) => {
                let inner = compound(t).unwrap_or(t);
                let mut j = super::arith::Judge::new(&self.state, &self.env, &self.opts);
                match j.expr(inner) {
                    Ok(()) => true,
                    Err(why) => {
                        self.mark_opaque(inh, &format!("arithmetic on {why} may run any command"));
                        false
                    }
                }
            }
            Value::Raw(r) => match compound(r) {
                Some(inner) => self.judge(inner, inh, false),
                None => self.judge(r, inh, true),
            },
        }
    }

    /// The `[sub]=` subscripts of a compound indexed-array value (`([$n]=1)`).
    fn compound_subscripts(&mut self, value: &Value, inh: &Inherit) {
        let text = match value {
            Value::Known(t) | Value::Raw(t) => t,
        };
        let Some(inner) = compound(text) else { return };
        let b = inner.as_bytes();
        let mut i = 0;
        while let Some(open) = inner[i..].find('[').map(|o| o + i) {
            let Some(close) = inner[open..].find(']').map(|c| c + open) else {
                self.mark_opaque(inh, "an unclosed array subscript");
                return;
            };
            if b.get(close + 1) == Some(&b'=') || inner[close + 1..].starts_with("+=") {
                let sub = &inner[open + 1..close];
                match value {
                    Value::Raw(_) => self.judge(sub, inh, false),
                    Value::Known(_) => self.judge_expanded(sub, inh),
                };
            }
            i = close + 1;
        }
    }

    /// Judges already-expanded arithmetic text (a known value).
    fn judge_expanded(&mut self, text: &str, inh: &Inherit) -> bool {
        self.judge_value(&Value::Known(text.to_string()), inh)
    }

    /// The variable of `for NAME in …`, assigned each value in turn.
    pub(super) fn loop_variable(
        &mut self,
        var: &str,
        raws: &[String],
        integers: bool,
        inh: &Inherit,
    ) {
        if self.state.num.integer_attr(var) {
            let mut harmless = !raws.is_empty();
            for r in raws {
                harmless &= self.judge(r, inh, true);
            }
            if harmless {
                self.state.assign_int(var);
            } else {
                self.state.assign(var, None);
            }
        } else if integers {
            self.state.assign_int(var);
        } else {
            self.state.assign(var, None);
        }
    }

    /// `NAME=value`, `NAME[sub]=value` or `NAME=(…)` run as a command: subscripts of
    /// indexed arrays, and the value of a variable that may be an integer, are
    /// evaluated. Returns whether `NAME` now holds a harmless integer.
    pub(super) fn assignment(
        &mut self,
        a: &ast::Assignment,
        depth: usize,
        inh: &Inherit,
    ) -> Result<bool, ShellError> {
        let (name, sub) = match &a.name {
            ast::AssignmentName::VariableName(n) => (n.as_str(), None),
            ast::AssignmentName::ArrayElementName(n, s) => (n.as_str(), Some(s.as_str())),
        };
        if let Some(sub) = sub {
            // The whole word was parsed already: its substitutions are parts.
            self.subscript(name, sub, depth, inh, true)?;
        }
        let integer = self.state.num.integer_attr(name);
        match &a.value {
            ast::AssignmentValue::Scalar(w) if integer => {
                Ok(self.judge(&w.value, inh, true) && sub.is_none())
            }
            ast::AssignmentValue::Scalar(w) => {
                Ok(sub.is_none() && !a.append && self.yields_integer(&w.value))
            }
            ast::AssignmentValue::Array(elements) => {
                for (key, value) in elements {
                    if let Some(key) = key
                        && !self.state.num.assoc.contains(name)
                    {
                        self.judge(&key.value, inh, false);
                    }
                    if integer {
                        self.judge(&value.value, inh, true);
                    }
                }
                Ok(false)
            }
        }
    }

    /// `[[ -v WORD ]]`: WORD names a variable, maybe with a subscript.
    pub(super) fn test_variable(
        &mut self,
        raw: &str,
        depth: usize,
        inh: &Inherit,
    ) -> Result<(), ShellError> {
        let arg = match word::parse(raw, &self.opts) {
            Ok(pieces) => expand::expand_single(&expand::segs(&pieces), &self.state, &self.env),
            Err(_) => Arg::default(),
        };
        self.name_operand(&[vec![arg]], 0, None, depth, inh)?;
        Ok(())
    }
}

/// A declaration's value: known text (already expanded), or the raw source word.
enum Value {
    Known(String),
    Raw(String),
}

impl Value {
    fn yields_integer(&self, ctx: &Ctx) -> bool {
        match self {
            Value::Known(t) => super::arith::is_integer(t),
            Value::Raw(r) => ctx.yields_integer(r),
        }
    }
}

/// The text inside a compound value's parentheses.
fn compound(value: &str) -> Option<&str> {
    value.strip_prefix('(').and_then(|v| v.strip_suffix(')'))
}

/// A declaration operand `NAME[sub][=value]`: from its known expansion, or else from
/// its source when the name is written literally (`x=$v`). `None` when the name cannot
/// be known.
fn operand(known: Option<&str>, raw: &str) -> Option<(String, Option<String>, Option<Value>)> {
    let (left, value) = match known {
        Some(t) => match t.split_once('=') {
            Some((l, v)) => (l.to_string(), Some(Value::Known(v.to_string()))),
            None => (t.to_string(), None),
        },
        None => {
            let (l, v) = raw.split_once('=')?;
            let literal = l
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_[]".contains(c));
            if !literal {
                return None;
            }
            (l.to_string(), Some(Value::Raw(v.to_string())))
        }
    };
    let left = left.strip_suffix('+').unwrap_or(&left).to_string();
    let (name, sub) = split_subscript(&left);
    is_name(name).then(|| (name.to_string(), sub.map(str::to_string), value))
}
