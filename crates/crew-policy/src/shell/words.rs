//! Words and redirections: a word becomes its literal text (quotes removed, a leading
//! `~` as `~`, substitutions as `$(…)`, variables as `$VAR`) and the argument the command
//! receives. A word outside the literal subset (a variable, a substitution, arithmetic,
//! an unquoted glob or brace expansion, `~user`) is unknown and says why; the commands
//! inside its substitutions are parsed as parts of their own.

use brush_parser::ast;
use brush_parser::word::{self, Parameter, ParameterExpr, TildeExpr, WordPiece};

use super::{Arg, Ctx, Inherit, Redirect, ShellError};

/// One word read.
pub(super) struct Word {
    /// The text shown for it (placeholders for what is not literal).
    pub text: String,
    /// The argument the command receives (unknown outside the literal subset).
    pub arg: Arg,
    /// Why it is outside the literal subset.
    pub why: Option<&'static str>,
}

/// Whether a piece of a word stands inside double quotes, which keeps it one word and
/// its glob characters literal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quoting {
    /// Outside any quotes.
    Bare,
    /// Inside `"…"`.
    Double,
}

/// What the pieces of one word hold, gathered piece by piece.
#[derive(Default)]
struct Scan {
    text: String,
    /// The unquoted text, with quoted text replaced by `_` (globs and braces live here).
    unquoted: String,
    why: Option<&'static str>,
    home: bool,
    quoted_expansion: bool,
}

impl Ctx {
    /// Reads a word; substitutions inside it become parts whose parent is `inh.parent`.
    pub(super) fn word(
        &mut self,
        raw: &str,
        depth: usize,
        inh: &Inherit,
    ) -> Result<Word, ShellError> {
        let pieces =
            word::parse(raw, &self.opts).map_err(|e| ShellError(format!("word `{raw}`: {e}")))?;
        let mut scan = Scan::default();
        for (i, p) in pieces.iter().enumerate() {
            self.piece(&p.piece, i == 0, Quoting::Bare, depth, inh, &mut scan)?;
        }
        let u = &scan.unquoted;
        let bracket = u.find('[').is_some_and(|i| u[i..].contains(']'));
        let extglob = ["@(", "!(", "+("].iter().any(|e| u.contains(e));
        if scan.why.is_none() && (u.contains(['*', '?']) || bracket || extglob) {
            scan.why = Some("an unquoted glob");
        }
        if scan.why.is_none()
            && let Some(open) = u.find('{')
            && u[open..].contains('}')
            && (u[open..].contains(',') || u[open..].contains(".."))
        {
            scan.why = Some("a brace expansion");
        }
        // The text with a leading `~` expanded, when the home is known.
        let expanded = match (&self.env.home, scan.home) {
            (Some(h), true) => Some(format!(
                "{}{}",
                h.to_string_lossy(),
                scan.text.strip_prefix('~').unwrap_or("")
            )),
            (None, true) => None,
            (_, false) => Some(scan.text.clone()),
        };
        let arg = match scan.why {
            Some(why) => Arg {
                text: scan.text.clone(),
                known: false,
                // A quoted expansion stays one word; anything else may split.
                splits: !scan.quoted_expansion || why != "a variable",
                // Globs and braces are judged by the blacklist from their pattern.
                pattern: matches!(why, "an unquoted glob" | "a brace expansion")
                    .then_some(expanded)
                    .flatten(),
            },
            None => match expanded {
                Some(text) => Arg::literal(text),
                None => Arg {
                    text: scan.text.clone(),
                    ..Arg::default()
                },
            },
        };
        Ok(Word {
            text: scan.text,
            arg,
            why: scan.why,
        })
    }

    fn piece(
        &mut self,
        piece: &WordPiece,
        first: bool,
        quoting: Quoting,
        depth: usize,
        inh: &Inherit,
        scan: &mut Scan,
    ) -> Result<(), ShellError> {
        let quoted = quoting == Quoting::Double;
        let why = |scan: &mut Scan, w: &'static str| {
            scan.why.get_or_insert(w);
            scan.quoted_expansion |= quoted;
        };
        match piece {
            WordPiece::Text(t) => {
                scan.text.push_str(t);
                if quoted {
                    scan.unquoted.push('_');
                } else {
                    scan.unquoted.push_str(t);
                }
            }
            WordPiece::SingleQuotedText(t) | WordPiece::AnsiCQuotedText(t) => {
                scan.text.push_str(t);
                scan.unquoted.push('_');
            }
            WordPiece::EscapeSequence(s) => {
                scan.text.push_str(s.strip_prefix('\\').unwrap_or(s));
                scan.unquoted.push('_');
            }
            WordPiece::DoubleQuotedSequence(seq) | WordPiece::GettextDoubleQuotedSequence(seq) => {
                for (i, p) in seq.iter().enumerate() {
                    let first =
                        first && i == 0 && matches!(p.piece, WordPiece::ParameterExpansion(_));
                    self.piece(&p.piece, first, Quoting::Double, depth, inh, scan)?;
                }
            }
            WordPiece::TildeExpansion(TildeExpr::Home) if first && !quoted => {
                scan.home = true;
                scan.text.push('~');
                scan.unquoted.push('_');
            }
            WordPiece::TildeExpansion(_) => {
                why(scan, "a tilde form other than a leading `~`");
                scan.text.push('~');
            }
            // `$HOME` at the start of a word reads like a leading `~`.
            WordPiece::ParameterExpansion(expr) if first && is_home(expr) => {
                scan.home = true;
                scan.text.push('~');
                scan.unquoted.push('_');
            }
            WordPiece::ParameterExpansion(_) => {
                why(scan, "a variable");
                scan.text.push_str("$VAR");
            }
            WordPiece::CommandSubstitution(s) | WordPiece::BackquotedCommandSubstitution(s) => {
                why(scan, "a command substitution");
                let mut inner = inh.clone();
                inner.dynamic = true;
                inner.substituted = true;
                inner.nested = true;
                self.parse_into(s, depth + 1, &inner)?;
                scan.text.push_str("$(…)");
            }
            WordPiece::ArithmeticExpression(_) => {
                why(scan, "arithmetic");
                scan.text.push_str("$((…))");
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
            let (redirect, _) = self.redirect(r, depth, inh)?;
            out.extend(redirect);
        }
        Ok(out)
    }

    /// One redirection, and why it is outside the literal subset if it is.
    pub(super) fn redirect(
        &mut self,
        r: &ast::IoRedirect,
        depth: usize,
        inh: &Inherit,
    ) -> Result<(Option<Redirect>, Option<&'static str>), ShellError> {
        use ast::{IoFileRedirectKind as K, IoFileRedirectTarget as T};
        // `>&2`, `<&-`: a descriptor, read as written.
        let descriptor = |target: String| Redirect {
            write: false,
            arg: Arg::literal(target.as_str()),
            target,
        };
        Ok(match r {
            ast::IoRedirect::File(_, kind, target) => {
                let write = matches!(kind, K::Write | K::Append | K::ReadAndWrite | K::Clobber);
                match target {
                    T::Filename(w) => {
                        let w = self.word(&w.value, depth, inh)?;
                        let redirect = Redirect {
                            write,
                            target: w.text,
                            arg: w.arg,
                        };
                        (Some(redirect), w.why)
                    }
                    T::Duplicate(w) => {
                        let literal = w.value.chars().all(|c| c.is_ascii_digit() || c == '-');
                        (
                            Some(descriptor(format!("&{}", w.value))),
                            (!literal).then_some("a computed descriptor"),
                        )
                    }
                    T::Fd(fd) => (Some(descriptor(format!("&{fd}"))), None),
                    T::ProcessSubstitution(_, sub) => {
                        let mut inner = inh.clone();
                        inner.dynamic = true;
                        inner.substituted = true;
                        inner.nested = true;
                        self.compound_list(&sub.list, depth + 1, &inner)?;
                        let redirect = Redirect {
                            write,
                            target: "<(…)".into(),
                            arg: Arg::default(),
                        };
                        (Some(redirect), Some("a process substitution"))
                    }
                }
            }
            ast::IoRedirect::OutputAndError(w, _) => {
                let w = self.word(&w.value, depth, inh)?;
                let redirect = Redirect {
                    write: true,
                    target: w.text,
                    arg: w.arg,
                };
                (Some(redirect), w.why)
            }
            ast::IoRedirect::HereDocument(_, doc) => {
                // An unquoted delimiter expands `$…` and backquotes in the body: its
                // substitutions run, and become parts.
                let expands = doc.requires_expansion && doc.doc.value.contains(['$', '`']);
                if expands {
                    let mut inner = inh.clone();
                    inner.dynamic = true;
                    self.word(&doc.doc.value, depth, &inner)?;
                }
                (None, expands.then_some("a here-document that expands"))
            }
            ast::IoRedirect::HereString(_, w) => {
                let w = self.word(&w.value, depth, inh)?;
                (None, w.why)
            }
        })
    }
}

/// Whether a parameter expansion is plain `$HOME` / `${HOME}`.
fn is_home(expr: &ParameterExpr) -> bool {
    matches!(
        expr,
        ParameterExpr::Parameter {
            parameter: Parameter::Named(name),
            indirect: false,
        } if name == "HOME"
    )
}
