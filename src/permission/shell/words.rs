//! Word and redirection expansion for the shell parser: turns a word into literal text
//! (quotes removed, `~`/`$HOME` as `~`, substitutions as `$(…)`), parsing the commands
//! inside substitutions as parts of their own.

use brush_parser::ast;
use brush_parser::word::{self, Parameter, ParameterExpr, TildeExpr, WordPiece};

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
        let mut out = String::new();
        let mut dynamic = false;
        for p in pieces {
            self.piece(&p.piece, depth, inh, &mut out, &mut dynamic)?;
        }
        Ok((out, dynamic))
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
                self.parse_into(s, depth + 1, &inner)?;
                out.push_str("$(…)");
            }
            WordPiece::ArithmeticExpression(_) => {
                *dynamic = true;
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
                        Some(Redirect { write, target })
                    }
                    T::Duplicate(w) => Some(Redirect {
                        write: false,
                        target: format!("&{}", w.value),
                    }),
                    T::Fd(fd) => Some(Redirect {
                        write: false,
                        target: format!("&{fd}"),
                    }),
                    T::ProcessSubstitution(_, sub) => {
                        let mut inner = inh.clone();
                        inner.dynamic = true;
                        inner.substituted = true;
                        self.compound_list(&sub.list, depth + 1, &inner)?;
                        Some(Redirect {
                            write,
                            target: "<(…)".into(),
                        })
                    }
                }
            }
            ast::IoRedirect::OutputAndError(w, _) => {
                let (target, _) = self.word(&w.value, depth, inh)?;
                Some(Redirect {
                    write: true,
                    target,
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

fn is_home(expr: &ParameterExpr) -> bool {
    matches!(
        expr,
        ParameterExpr::Parameter {
            parameter: Parameter::Named(name),
            indirect: false,
        } if name == "HOME"
    )
}
