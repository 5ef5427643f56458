//! Text fed to a command's stdin, for shells that read their program from it:
//! `echo 'git push' | bash`, `printf '…' | sh`, `bash <<< 'git push'`, `bash <<'EOF'`.
//! Literal text is parsed as a nested script; anything else (`cat f | bash`,
//! `bash <<< "$X"`) is unknown, which makes the shell opaque.

use brush_parser::ast;

use super::{Ctx, Inherit, Part, ShellError};

/// What a command's stdin holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Feed {
    /// Known text.
    Literal(String),
    /// Produced at run time (a file, a download, a variable).
    Unknown,
}

/// The text of a here-string or here-document, if `r` is one. `expanded` is the
/// here-string's word after expansion and whether it was dynamic.
pub fn here(r: &ast::IoRedirect, expanded: Option<(String, bool)>) -> Option<Feed> {
    match r {
        ast::IoRedirect::HereString(..) => Some(match expanded {
            Some((text, false)) => Feed::Literal(text),
            _ => Feed::Unknown,
        }),
        ast::IoRedirect::HereDocument(_, doc) => {
            let text = &doc.doc.value;
            // An unquoted delimiter expands `$…`, `` `…` `` and `\` escapes in the body.
            if doc.requires_expansion && text.contains(['$', '`', '\\']) {
                Some(Feed::Unknown)
            } else {
                Some(Feed::Literal(text.clone()))
            }
        }
        _ => None,
    }
}

/// What a finished part writes to stdout, when it is known without running anything:
/// `echo`, `printf` with `%s`/`%%` only, `cat` of its here-document.
pub fn output_of(part: &Part) -> Feed {
    if part.dynamic || part.argv.is_empty() || part.opaque.is_some() {
        return Feed::Unknown;
    }
    let args = &part.argv[1..];
    match part.program() {
        "echo" => {
            let mut i = 0;
            let mut escapes = false;
            let mut newline = true;
            while let Some(a) = args.get(i).filter(|a| {
                a.len() > 1 && a.starts_with('-') && a[1..].chars().all(|c| "neE".contains(c))
            }) {
                escapes |= a.contains('e');
                newline &= !a.contains('n');
                i += 1;
            }
            let text = args[i..].join(" ");
            if escapes && text.contains('\\') {
                return Feed::Unknown;
            }
            Feed::Literal(if newline { text + "\n" } else { text })
        }
        "printf" => printf(args).map_or(Feed::Unknown, Feed::Literal),
        "cat" if args.is_empty() => part.here.clone().unwrap_or(Feed::Unknown),
        _ => Feed::Unknown,
    }
}

/// `printf FORMAT ARGS…` for formats using only `%s`, `%%` and simple escapes.
fn printf(args: &[String]) -> Option<String> {
    let (format, mut values) = args.split_first()?;
    if format.starts_with('-') {
        return None;
    }
    let mut out = String::new();
    loop {
        let mut chars = format.chars();
        let mut used = false;
        while let Some(c) = chars.next() {
            match c {
                '\\' => out.push(match chars.next()? {
                    'n' => '\n',
                    't' => '\t',
                    '\\' => '\\',
                    '\'' => '\'',
                    '"' => '"',
                    _ => return None,
                }),
                '%' => match chars.next()? {
                    '%' => out.push('%'),
                    's' => {
                        used = true;
                        if let Some((v, rest)) = values.split_first() {
                            out.push_str(v);
                            values = rest;
                        }
                    }
                    _ => return None,
                },
                c => out.push(c),
            }
        }
        // printf repeats the format while arguments remain.
        if values.is_empty() || !used {
            return Some(out);
        }
    }
}

impl Ctx {
    /// A here-string's text and whether it is dynamic. Words holding `$` or a backquote
    /// count as dynamic without being expanded here: `redirect` expands them once, so
    /// their substitutions become parts exactly once.
    pub(super) fn here_string(
        &mut self,
        r: &ast::IoRedirect,
        depth: usize,
        inh: &Inherit,
    ) -> Result<Option<(String, bool)>, ShellError> {
        let ast::IoRedirect::HereString(_, w) = r else {
            return Ok(None);
        };
        if w.value.contains(['$', '`']) {
            return Ok(Some((String::new(), true)));
        }
        self.word(&w.value, depth, inh).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(argv: &[&str]) -> Part {
        Part {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            ..Part::default()
        }
    }

    #[test]
    fn echo_and_printf_output_is_known() {
        let lit = |s: &str| Feed::Literal(s.to_string());
        assert_eq!(output_of(&part(&["echo", "git push"])), lit("git push\n"));
        assert_eq!(
            output_of(&part(&["echo", "-n", "git", "push"])),
            lit("git push")
        );
        assert_eq!(
            output_of(&part(&["printf", "git push\\n"])),
            lit("git push\n")
        );
        assert_eq!(
            output_of(&part(&["printf", "%s\\n", "git push", "rm x"])),
            lit("git push\nrm x\n")
        );
        assert_eq!(output_of(&part(&["printf", "%d", "1"])), Feed::Unknown);
        assert_eq!(
            output_of(&part(&["echo", "-e", "git\\x20push"])),
            Feed::Unknown
        );
        assert_eq!(output_of(&part(&["cat", "f"])), Feed::Unknown);
        let mut dynamic = part(&["echo", "$VAR"]);
        dynamic.dynamic = true;
        assert_eq!(output_of(&dynamic), Feed::Unknown);
    }
}
