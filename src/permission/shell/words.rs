//! Words and redirections for the shell parser: turns a word into literal text
//! (quotes removed, `~`/`$HOME` as `~`, substitutions as `$(…)`), parsing the commands
//! inside substitutions as parts of their own.

use brush_parser::ast;
use brush_parser::word::{self, Parameter, ParameterExpr, TildeExpr, WordPiece};

use super::expand::{self, Arg};
use super::{Ctx, Inherit, Redirect, ShellError};

impl Ctx {
    /// Expands a word to literal text; substitutions inside it are parsed as parts whose
    /// parent is `inh.parent`. Returns the text and whether it was dynamic.
    pub(super) fn word(
        &mut self,
        raw: &str,
        depth: usize,
        inh: &Inherit,
    ) -> Result<(String, bool), ShellError> {
        let pieces =
            word::parse(raw, &self.opts).map_err(|e| ShellError(format!("word `{raw}`: {e}")))?;
        self.text_of(&pieces, depth, inh)
    }

    fn text_of(
        &mut self,
        pieces: &[word::WordPieceWithSource],
        depth: usize,
        inh: &Inherit,
    ) -> Result<(String, bool), ShellError> {
        let mut out = String::new();
        let mut dynamic = false;
        for p in pieces {
            self.piece(&p.piece, depth, inh, &mut out, &mut dynamic)?;
        }
        Ok((out, dynamic))
    }

    /// `word`, plus the word as bash would expand it into arguments.
    pub(super) fn word_args(
        &mut self,
        raw: &str,
        depth: usize,
        inh: &Inherit,
    ) -> Result<(String, bool, Vec<Arg>), ShellError> {
        let pieces =
            word::parse(raw, &self.opts).map_err(|e| ShellError(format!("word `{raw}`: {e}")))?;
        let (text, dynamic) = self.text_of(&pieces, depth, inh)?;
        let args = if raw.contains('{') {
            self.expand_raw(raw)
        } else {
            expand::expand(&[expand::segs(&pieces)], &self.state, &self.env)
        };
        Ok((text, dynamic, args))
    }

    /// Expands a raw word under the current state, without parsing substitutions again.
    fn expand_raw(&self, raw: &str) -> Vec<Arg> {
        let unknown = || {
            vec![Arg {
                text: raw.to_string(),
                splits: true,
                ..Arg::default()
            }]
        };
        let Some(alts) = expand::braces(raw) else {
            return unknown();
        };
        let mut words = Vec::with_capacity(alts.len());
        for alt in &alts {
            match word::parse(alt, &self.opts) {
                Ok(pieces) => words.push(expand::segs(&pieces)),
                Err(_) => return unknown(),
            }
        }
        expand::expand(&words, &self.state, &self.env)
    }

    /// The value of `NAME=value` (tilde expanded, no splitting or globbing), when known.
    pub(super) fn assigned_value(&self, a: &ast::Assignment) -> Option<String> {
        let ast::AssignmentValue::Scalar(w) = &a.value else {
            return None;
        };
        if a.append {
            return None;
        }
        let pieces = word::parse(&w.value, &self.opts).ok()?;
        let arg = expand::expand_single(&expand::segs(&pieces), &self.state, &self.env);
        arg.known.then_some(arg.text)
    }

    fn piece(
        &mut self,
        piece: &WordPiece,
        depth: usize,
        inh: &Inherit,
        out: &mut String,
        dynamic: &mut bool,
    ) -> Result<(), ShellError> {
        match piece {
            WordPiece::Text(t) | WordPiece::SingleQuotedText(t) => out.push_str(t),
            WordPiece::AnsiCQuotedText(t) => {
                out.push_str(t);
            }
            WordPiece::EscapeSequence(s) => out.push_str(s.strip_prefix('\\').unwrap_or(s)),
            WordPiece::DoubleQuotedSequence(seq) | WordPiece::GettextDoubleQuotedSequence(seq) => {
                for p in seq {
                    self.piece(&p.piece, depth, inh, out, dynamic)?;
                }
            }
            WordPiece::TildeExpansion(TildeExpr::Home) => out.push('~'),
            WordPiece::TildeExpansion(_) => {
                *dynamic = true;
                out.push('~');
            }
            WordPiece::ParameterExpansion(expr) => {
                *dynamic = true;
                self.parameter(expr, depth, inh)?;
                if is_home(expr) {
                    out.push('~');
                } else {
                    out.push_str("$VAR");
                }
            }
            WordPiece::CommandSubstitution(s) | WordPiece::BackquotedCommandSubstitution(s) => {
                *dynamic = true;
                let mut inner = inh.clone();
                inner.dynamic = true;
                inner.substituted = true;
                // A substitution runs in a subshell: its `cd` and assignments vanish.
                let saved = self.state.clone();
                self.parse_into(s, depth + 1, &inner)?;
                self.state = saved;
                out.push_str("$(…)");
            }
            WordPiece::ArithmeticExpression(e) => {
                *dynamic = true;
                self.arithmetic(&e.value, depth, inh)?;
                out.push_str("$((…))");
            }
        }
        Ok(())
    }

    pub(super) fn redirect_list(
        &mut self,
        list: Option<&ast::RedirectList>,
        depth: usize,
        inh: &Inherit,
    ) -> Result<Vec<Redirect>, ShellError> {
        let mut out = Vec::new();
        for r in list.iter().flat_map(|l| l.0.iter()) {
            if let Some(r) = self.redirect(r, depth, inh)? {
                out.push(r);
            }
        }
        Ok(out)
    }

    pub(super) fn redirect(
        &mut self,
        r: &ast::IoRedirect,
        depth: usize,
        inh: &Inherit,
    ) -> Result<Option<Redirect>, ShellError> {
        use ast::{IoFileRedirectKind as K, IoFileRedirectTarget as T};
        Ok(match r {
            ast::IoRedirect::File(_, kind, target) => {
                let write = matches!(kind, K::Write | K::Append | K::ReadAndWrite | K::Clobber);
                match target {
                    T::Filename(w) => {
                        let (target, _) = self.word(&w.value, depth, inh)?;
                        let arg = self.expand_target(&w.value);
                        Some(Redirect { write, target, arg })
                    }
                    T::Duplicate(w) => Some({
                        self.test_word(&w.value, depth, inh)?;
                        Redirect {
                            write: false,
                            target: format!("&{}", w.value),
                            arg: Arg::literal(format!("&{}", w.value)),
                        }
                    }),
                    T::Fd(fd) => Some(Redirect {
                        write: false,
                        target: format!("&{fd}"),
                        arg: Arg::literal(format!("&{fd}")),
                    }),
                    T::ProcessSubstitution(_, sub) => {
                        let mut inner = inh.clone();
                        inner.dynamic = true;
                        inner.substituted = true;
                        let saved = self.state.clone();
                        self.compound_list(&sub.list, depth + 1, &inner)?;
                        self.state = saved;
                        Some(Redirect {
                            write,
                            target: "<(…)".into(),
                            arg: Arg::default(),
                        })
                    }
                }
            }
            ast::IoRedirect::OutputAndError(w, _) => {
                let (target, _) = self.word(&w.value, depth, inh)?;
                let arg = self.expand_target(&w.value);
                Some(Redirect {
                    write: true,
                    target,
                    arg,
                })
            }
            ast::IoRedirect::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    // Unquoted here-documents expand `$(…)`: look inside.
                    let mut inner = inh.clone();
                    inner.dynamic = true;
                    self.word(&doc.doc.value, depth, &inner)?;
                }
                None
            }
            ast::IoRedirect::HereString(_, w) => {
                self.word(&w.value, depth, inh)?;
                None
            }
        })
    }
}

impl Ctx {
    /// A redirect target expanded: one argument (a glob must match exactly one file).
    fn expand_target(&self, raw: &str) -> Arg {
        let mut args = self.expand_raw(raw);
        if args.len() == 1 {
            args.remove(0)
        } else {
            Arg {
                text: raw.to_string(),
                ..Arg::default()
            }
        }
    }
}

fn is_home(expr: &ParameterExpr) -> bool {
    matches!(
        expr,
        ParameterExpr::Parameter {
            parameter: Parameter::Named(name),
            indirect: false,
        } if name == "HOME"
    )
}
