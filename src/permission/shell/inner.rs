//! Command substitutions hidden in text the word parser leaves raw: arithmetic
//! (`$(( … ))`, `(( … ))`, `for ((…))`), parameter-expansion operands (`${y:-…}`,
//! `${a[…]}`, `${x/pat/rep}`, substring offsets) and `[[ … ]]` words. bash runs the
//! `$(…)`, backquotes and `<(…)` inside them, so their commands become parts of their
//! own; text whose substitutions cannot be delimited or parsed makes the enclosing part
//! opaque (fail closed).

use brush_parser::ast;
use brush_parser::word::{Parameter, ParameterExpr};

use super::{Ctx, Inherit, Part, ShellError};

impl Ctx {
    /// Parses every substitution found in `text` as parts whose parent is `inh.parent`;
    /// marks that parent opaque when one cannot be delimited or parsed.
    pub(super) fn hidden(
        &mut self,
        text: &str,
        depth: usize,
        inh: &Inherit,
    ) -> Result<(), ShellError> {
        if !text.contains(['$', '`', '<', '>']) {
            return Ok(());
        }
        let Some(subs) = substitutions(text) else {
            self.mark_opaque(inh, "a command substitution whose end cannot be found");
            return Ok(());
        };
        for sub in subs {
            let mut inner = inh.clone();
            inner.dynamic = true;
            inner.substituted = true;
            // A substitution runs in a subshell: its `cd` and assignments vanish.
            let saved = self.state.clone();
            let parsed = self.parse_into(&sub, depth + 1, &inner);
            self.state = saved;
            if parsed.is_err() {
                self.mark_opaque(inh, "a command substitution that cannot be parsed");
            }
        }
        Ok(())
    }

    /// The substitutions run by a parameter expansion's operands (default values,
    /// patterns, array subscripts, substring offsets). An indirect `${!x}` evaluates
    /// whatever `x` holds (a subscript may run a command), so it is opaque.
    pub(super) fn parameter(
        &mut self,
        expr: &ParameterExpr,
        depth: usize,
        inh: &Inherit,
    ) -> Result<(), ShellError> {
        let (parameter, indirect, operands) = operands(expr);
        if indirect {
            self.mark_opaque(
                inh,
                "an indirect expansion `${!…}` may evaluate any command",
            );
        }
        if let Some(Parameter::NamedWithIndex { name, index }) = parameter {
            self.subscript(name, index, depth, inh, false)?;
        }
        // Operands are words: their substitutions run, their arithmetic is judged.
        for text in operands {
            self.test_word(text, depth, inh)?;
        }
        // Substring offsets and lengths are arithmetic.
        if let ParameterExpr::Substring { offset, length, .. } = expr {
            self.arithmetic(&offset.value, depth, inh)?;
            if let Some(l) = length {
                self.arithmetic(&l.value, depth, inh)?;
            }
        }
        Ok(())
    }

    /// The words of a `[[ … ]]` test, expanded as bash would (their substitutions run);
    /// a word the word parser rejects (a regex after `=~`) is scanned instead.
    pub(super) fn test_expr(
        &mut self,
        expr: &ast::ExtendedTestExpr,
        depth: usize,
        inh: &Inherit,
    ) -> Result<(), ShellError> {
        use ast::ExtendedTestExpr as T;
        match expr {
            T::And(a, b) | T::Or(a, b) => {
                self.test_expr(a, depth, inh)?;
                self.test_expr(b, depth, inh)
            }
            T::Not(e) | T::Parenthesized(e) => self.test_expr(e, depth, inh),
            T::UnaryTest(p, w) => {
                self.test_word(&w.value, depth, inh)?;
                if matches!(p, ast::UnaryPredicate::ShellVariableIsSetAndAssigned) {
                    self.test_variable(&w.value, depth, inh)?;
                }
                Ok(())
            }
            T::BinaryTest(p, a, b) => {
                self.test_word(&a.value, depth, inh)?;
                self.test_word(&b.value, depth, inh)?;
                // `-eq`, `-lt`, …: bash evaluates both operands as arithmetic.
                use ast::BinaryPredicate as B;
                if matches!(
                    p,
                    B::ArithmeticEqualTo
                        | B::ArithmeticNotEqualTo
                        | B::ArithmeticLessThan
                        | B::ArithmeticLessThanOrEqualTo
                        | B::ArithmeticGreaterThan
                        | B::ArithmeticGreaterThanOrEqualTo
                ) {
                    self.judge(&a.value, inh, true);
                    self.judge(&b.value, inh, true);
                }
                Ok(())
            }
        }
    }

    /// A word whose substitutions run and whose arithmetic is judged; text the word
    /// parser rejects (a regex, a pattern) is scanned for substitutions instead.
    pub(super) fn test_word(
        &mut self,
        raw: &str,
        depth: usize,
        inh: &Inherit,
    ) -> Result<(), ShellError> {
        if self.word(raw, depth, inh).is_err() {
            self.hidden(raw, depth, inh)?;
        }
        Ok(())
    }

    /// Makes the part enclosing `inh` opaque, or adds an opaque part when none encloses it.
    pub(super) fn mark_opaque(&mut self, inh: &Inherit, why: &str) {
        match inh.parent.and_then(|i| self.script.parts.get_mut(i)) {
            Some(part) => {
                part.opaque.get_or_insert_with(|| why.to_string());
            }
            None => {
                let part = Part {
                    argv: vec!["$(…)".into()],
                    dynamic: true,
                    opaque: Some(why.to_string()),
                    ..self.base(inh, self.next_pipeline, 0)
                };
                self.push(part);
            }
        }
    }
}

/// The parameter, whether it is indirect, and the raw operand texts of an expansion.
fn operands(expr: &ParameterExpr) -> (Option<&Parameter>, bool, Vec<&str>) {
    use ParameterExpr as E;
    match expr {
        E::Parameter {
            parameter,
            indirect,
        }
        | E::ParameterLength {
            parameter,
            indirect,
        }
        | E::Transform {
            parameter,
            indirect,
            ..
        } => (Some(parameter), *indirect, Vec::new()),
        E::UseDefaultValues {
            parameter,
            indirect,
            default_value: v,
            ..
        }
        | E::AssignDefaultValues {
            parameter,
            indirect,
            default_value: v,
            ..
        }
        | E::IndicateErrorIfNullOrUnset {
            parameter,
            indirect,
            error_message: v,
            ..
        }
        | E::UseAlternativeValue {
            parameter,
            indirect,
            alternative_value: v,
            ..
        }
        | E::RemoveSmallestSuffixPattern {
            parameter,
            indirect,
            pattern: v,
        }
        | E::RemoveLargestSuffixPattern {
            parameter,
            indirect,
            pattern: v,
        }
        | E::RemoveSmallestPrefixPattern {
            parameter,
            indirect,
            pattern: v,
        }
        | E::RemoveLargestPrefixPattern {
            parameter,
            indirect,
            pattern: v,
        }
        | E::UppercaseFirstChar {
            parameter,
            indirect,
            pattern: v,
        }
        | E::UppercasePattern {
            parameter,
            indirect,
            pattern: v,
        }
        | E::LowercaseFirstChar {
            parameter,
            indirect,
            pattern: v,
        }
        | E::LowercasePattern {
            parameter,
            indirect,
            pattern: v,
        } => (Some(parameter), *indirect, opt(v)),
        // Its offset and length are arithmetic (`Ctx::parameter`).
        E::Substring {
            parameter,
            indirect,
            ..
        } => (Some(parameter), *indirect, Vec::new()),
        E::ReplaceSubstring {
            parameter,
            indirect,
            pattern,
            replacement,
            ..
        } => {
            let mut v = vec![pattern.as_str()];
            v.extend(opt(replacement));
            (Some(parameter), *indirect, v)
        }
        E::VariableNames { .. } | E::MemberKeys { .. } => (None, false, Vec::new()),
    }
}

/// An optional operand as a list of zero or one texts.
fn opt(s: &Option<String>) -> Vec<&str> {
    s.iter().map(String::as_str).collect()
}

/// The inner source of every `$(…)`, backquote, `<(…)` and `>(…)` in `text`, looking
/// inside nested arithmetic `$((…))`. `None` when one has no end.
pub(super) fn substitutions(text: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    collect(text, &mut out, 0)?;
    Some(out)
}

fn collect(text: &str, out: &mut Vec<String>, depth: usize) -> Option<()> {
    if depth > super::MAX_DEPTH {
        return None;
    }
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'`' => {
                let end = backquote_end(b, i + 1)?;
                out.push(unescape_backquoted(&text[i + 1..end]));
                i = end + 1;
            }
            b'$' | b'<' | b'>' if b.get(i + 1) == Some(&b'(') => {
                let close = paren_end(b, i + 1)?;
                let arithmetic = b[i] == b'$'
                    && b.get(i + 2) == Some(&b'(')
                    && paren_end(b, i + 2) == Some(close - 1);
                if arithmetic {
                    collect(&text[i + 3..close - 1], out, depth + 1)?;
                } else {
                    out.push(text[i + 2..close].to_string());
                }
                i = close + 1;
            }
            _ => i += 1,
        }
    }
    Some(())
}

/// The index of the `)` closing the `(` at `open`, skipping quotes and backquotes.
fn paren_end(b: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = open;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'\'' => i = b[i + 1..].iter().position(|&c| c == b'\'')? + i + 1,
            b'"' => i = quote_end(b, i + 1)?,
            b'`' => i = backquote_end(b, i + 1)?,
            b'(' => depth += 1,
            b')' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The index of the `"` closing a double-quoted string whose text starts at `from`.
fn quote_end(b: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'"' => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

/// The index of the backquote closing one whose text starts at `from`.
fn backquote_end(b: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'`' => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

/// Inside backquotes, `\`` `\$` and `\\` stand for the character itself.
fn unescape_backquoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(&n) = chars.peek() {
                if matches!(n, '`' | '$' | '\\') {
                    out.push(n);
                    chars.next();
                    continue;
                }
            }
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::substitutions;

    /// The substituted parts' texts, each with its parent's argv[0].
    fn nested(cmd: &str) -> Vec<(String, String)> {
        let s = parse(cmd).unwrap();
        s.parts
            .iter()
            .filter(|p| p.substituted)
            .map(|p| {
                let parent = p.parent.map(|i| s.parts[i].argv[0].clone());
                (p.text(), parent.unwrap_or_default())
            })
            .collect()
    }

    #[test]
    fn substitutions_in_tests_arithmetic_and_operands_become_parts() {
        let one = |t: &str, parent: &str| vec![(t.to_string(), parent.to_string())];
        assert_eq!(nested("[[ -n $(git push) ]]"), one("git push", "[["));
        assert_eq!(nested("[[ x =~ `rm x` ]]"), one("rm x", "[["));
        assert_eq!(nested("(( $(rm x) ))"), one("rm x", "(("));
        assert_eq!(nested("echo $(( 1 + $(rm x) ))"), one("rm x", "echo"));
        assert_eq!(nested("echo $[ $(rm x) ]"), one("rm x", "echo"));
        assert_eq!(nested("echo ${y:-$(rm x)}"), one("rm x", "echo"));
        assert_eq!(nested("echo \"${a[$(rm x)]}\""), one("rm x", "echo"));
        assert_eq!(nested("echo ${y/$(rm x)/r}"), one("rm x", "echo"));
        assert_eq!(nested("echo ${y:1:$(rm x)}"), one("rm x", "echo"));
        let s = parse("case a in $(rm x)) ;; esac").unwrap();
        assert!(s.parts.iter().any(|p| p.text() == "rm x" && p.substituted));
        let s = parse("for (( i = $(rm x); i < 3; i++ )); do :; done").unwrap();
        assert!(s.parts.iter().any(|p| p.text() == "rm x" && p.substituted));
    }

    #[test]
    fn what_cannot_be_seen_into_is_opaque() {
        let opaque = |c: &str| parse(c).unwrap().parts.iter().any(|p| p.opaque.is_some());
        assert!(opaque("echo ${!x}"));
        assert!(opaque("(( $(if) ))"));
        // Plain arithmetic, tests and operands stay visible and are not opaque.
        assert!(!opaque(
            "(( 1 + 1 )); echo $(( 2 * 3 )) ${y:-d} ${#y} ${a[1]}"
        ));
        assert!(!opaque("[[ -f x && $y =~ ^(a|b)$ ]]"));
        assert!(nested("[[ -f x ]]; (( i++ )); echo ${y:-d}").is_empty());
    }

    #[test]
    fn substitutions_are_found_in_raw_text() {
        let s = |t: &str| substitutions(t);
        assert_eq!(s("1 + $(rm x)").unwrap(), ["rm x"]);
        assert_eq!(s("$(( 2 * `git push` ))").unwrap(), ["git push"]);
        assert_eq!(s("a[$(echo \")\"; rm x)]").unwrap(), ["echo \")\"; rm x"]);
        assert_eq!(s("$((rm x) )").unwrap(), ["(rm x) "]);
        assert_eq!(s("x <(rm y) >(git push)").unwrap(), ["rm y", "git push"]);
        assert_eq!(s("`echo \\`rm x\\``").unwrap(), ["echo `rm x`"]);
        assert!(s("i + 1").unwrap().is_empty());
        assert!(s("$(rm x").is_none());
        assert!(s("`rm x").is_none());
    }
}
